package result

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// ParquetName is the file v6lab export --format parquet writes into a
// result directory.
const ParquetName = "samples.parquet"

// ErrNotParquet is wrapped when an export would write over a file that is
// not an earlier export (a result's samples, its summary...).
var ErrNotParquet = errors.New("exists and is not a Parquet file: export writes a new file or over an earlier export, never over a result's own files")

// CheckParquetOutput refuses an export of the result in dir to name when
// name is a directory, an existing file other than a Parquet file (PAR1
// at its start and its end), or a file in another result's directory:
// the samples a result holds are the only record of a measurement, and
// its directory's samples.parquet must be its own.
func CheckParquetOutput(name, dir string) error {
	if other := filepath.Dir(name); isResultDir(other) && !sameDir(other, dir) {
		return fmt.Errorf("%s is in another result's directory (%s): export a result into its own directory or outside any result", name, other)
	}
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory (name a file)", name)
	}
	if err != nil || !isParquet(f, st.Size()) {
		return fmt.Errorf("%s %w", name, ErrNotParquet)
	}
	return nil
}

// isParquet says whether f, of size bytes, is a Parquet file: PAR1 at
// its start and its end.
func isParquet(f *os.File, size int64) bool {
	head, tail := make([]byte, 4), make([]byte, 4)
	_, herr := io.ReadFull(f, head)
	_, terr := f.ReadAt(tail, max(0, size-4))
	return herr == nil && terr == nil && size >= 12 && string(head) == "PAR1" && string(tail) == "PAR1"
}

// RemoveStaleExport removes dir's samples.parquet, an earlier export, when
// a resume is about to change the samples it was made of: left there, it
// would silently lack the samples the resume adds. It returns the file it
// removed, "" when there was none; a file of that name that is not Parquet
// is not an export of v6lab's, and is left alone. An export written
// elsewhere (export -o) is not known here.
func RemoveStaleExport(dir string) (string, error) {
	name := filepath.Join(dir, ParquetName)
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	st, err := f.Stat()
	parquet := err == nil && st.Mode().IsRegular() && isParquet(f, st.Size())
	f.Close()
	if !parquet {
		return "", nil
	}
	if err := os.Remove(name); err != nil {
		return "", err
	}
	return name, nil
}

// StaleExportNote says that a resume of dir removed name
// (RemoveStaleExport), and how to make it again.
func StaleExportNote(name, dir string) string {
	return fmt.Sprintf("removed %s, exported before this resume: it would lack the samples the resume adds (v6lab export %s writes it again)", name, dir)
}

// isResultDir says whether dir holds a result's samples.
func isResultDir(dir string) bool {
	for _, n := range []string{SamplesName, PlainSamplesName} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// sameDir says whether a and b are one directory.
func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// parquetRow is one sample as a row of the Parquet export: one typed
// column per field of a sample line (a phase that did not happen, or a
// string a sample does not have, is 0 or empty, as in the JSON), and
// counted, which says whether the sample's run counts in the figures
// (recorded, finished, its wire proven, not a warm-up).
type parquetRow struct {
	Cell            string             `parquet:"cell,dict"`
	Proto           string             `parquet:"proto,dict"`
	Path            string             `parquet:"path,dict"`
	Conns           int64              `parquet:"conns"`
	Run             int64              `parquet:"run"`
	Warmup          bool               `parquet:"warmup"`
	Counted         bool               `parquet:"counted"`
	User            int64              `parquet:"user"`
	Local           string             `parquet:"local"`
	Remote          string             `parquet:"remote,dict"`
	DNSLocal        string             `parquet:"dns_local"`
	Start           int64              `parquet:"start,timestamp(nanosecond)"`
	ResolveNS       int64              `parquet:"resolve_ns"`
	ConnectNS       int64              `parquet:"connect_ns"`
	TLSNS           int64              `parquet:"tls_ns"`
	FirstByteNS     int64              `parquet:"first_byte_ns"`
	TotalNS         int64              `parquet:"total_ns"`
	WireNS          int64              `parquet:"wire_ns"`
	WireFirstByteNS int64              `parquet:"wire_first_byte_ns"`
	ClientTurnNS    int64              `parquet:"client_turn_ns"`
	BytesIn         int64              `parquet:"bytes_in"`
	BytesOut        int64              `parquet:"bytes_out"`
	Negotiated      string             `parquet:"negotiated,dict"`
	TLS             string             `parquet:"tls,dict"`
	Kept            bool               `parquet:"kept"`
	Resumed         bool               `parquet:"resumed"`
	ZeroRTT         bool               `parquet:"zero_rtt"`
	Again           int64              `parquet:"again"`
	AgainConns      int64              `parquet:"again_conns"`
	Marker          string             `parquet:"marker,dict"`
	Err             string             `parquet:"err"`
	ErrKind         string             `parquet:"err_kind,dict"`
	Metrics         map[string]float64 `parquet:"metrics"`
	Intervals       []parquetInterval  `parquet:"intervals,list"`
}

type parquetInterval struct {
	StartNS int64 `parquet:"start_ns"`
	EndNS   int64 `parquet:"end_ns"`
	Bytes   int64 `parquet:"bytes"`
	Retrans int64 `parquet:"retrans"`
	RTTUS   int64 `parquet:"rtt_us"`
	Cwnd    int64 `parquet:"cwnd"`
	Omitted bool  `parquet:"omitted"`
}

// parquetGroup is how many rows a row group holds: the writer keeps one
// group in memory (about 40 MB of samples).
const parquetGroup = 1 << 17

// ExportParquet writes the samples of the samples file name (either form)
// as Parquet (zstd pages) to w, in two streaming passes: the runs' records
// first (whether each counts), then the rows. Its memory is a row group,
// whatever the file's size. Every sample is vetted as a report vets it
// (Visitor.Vet, and check: the paths v6lab measures).
func ExportParquet(name string, w io.Writer, check func(*Sample) error) (rows int64, err error) {
	counts := map[string]bool{}
	if err := scanName(name, Visitor{Run: func(r *Run) {
		counts[runKeyOf(r.Cell, r.Run)] = r.Err == "" && !r.Warmup
	}}); err != nil {
		return 0, err
	}
	pw := parquet.NewGenericWriter[parquetRow](w, parquet.Compression(&zstd.Codec{}), parquet.MaxRowsPerRowGroup(parquetGroup),
		parquet.CreatedBy("v6lab", "", ""))
	batch := make([]parquetRow, 0, 1024)
	var werr error
	flush := func() {
		if werr == nil && len(batch) > 0 {
			_, werr = pw.Write(batch)
		}
		rows += int64(len(batch))
		batch = batch[:0]
	}
	err = scanName(name, Visitor{Vet: true, Check: check, Sample: func(s *Sample) {
		batch = append(batch, rowOf(s, counts[runKeyOf(s.Cell, s.Run)]))
		if len(batch) == cap(batch) {
			flush()
		}
	}})
	flush()
	return rows, errors.Join(err, werr, pw.Close())
}

func rowOf(s *Sample, counted bool) parquetRow {
	r := parquetRow{Cell: s.Cell, Proto: s.Protocol, Path: s.Path, Conns: int64(s.Conns), Run: int64(s.Run), Warmup: s.Warmup,
		Counted: counted, User: int64(s.User), Local: s.Local, Remote: s.Remote, DNSLocal: s.DNSLocal, Start: s.Start.UnixNano(),
		ResolveNS: s.ResolveNS, ConnectNS: s.ConnectNS, TLSNS: s.TLSNS, FirstByteNS: s.FirstByteNS, TotalNS: s.TotalNS,
		WireNS: s.WireNS, WireFirstByteNS: s.WireFirstByteNS, ClientTurnNS: s.ClientTurnNS, BytesIn: s.BytesIn, BytesOut: s.BytesOut,
		Negotiated: s.Negotiated, TLS: s.TLS, Kept: s.Kept, Resumed: s.Resumed, ZeroRTT: s.ZeroRTT,
		Again: int64(s.Again), AgainConns: int64(s.AgainConns), Marker: s.Marker, Err: s.Err, ErrKind: string(s.ErrKind), Metrics: s.Metrics}
	if s.Start.IsZero() {
		r.Start = 0
	}
	for _, iv := range s.Intervals {
		r.Intervals = append(r.Intervals, parquetInterval{StartNS: iv.StartNS, EndNS: iv.EndNS, Bytes: iv.Bytes,
			Retrans: int64(iv.Retrans), RTTUS: int64(iv.RTTUS), Cwnd: int64(iv.Cwnd), Omitted: iv.Omitted})
	}
	return r
}

func scanName(name string, v Visitor) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("result: %w", err)
	}
	defer f.Close()
	_, err = Scan(f, name, v)
	return err
}
