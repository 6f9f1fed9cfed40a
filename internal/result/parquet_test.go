package result

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestParquetHasAColumnPerSampleField: every field of a sample line (its
// JSON name; kind, the line's type, aside) is a column of the export, so
// a field added to Sample cannot be left out of it unnoticed.
func TestParquetHasAColumnPerSampleField(t *testing.T) {
	cols := map[string]bool{}
	for _, f := range parquet.SchemaOf(parquetRow{}).Fields() {
		cols[f.Name()] = true
	}
	st := reflect.TypeOf(Sample{})
	for i := 0; i < st.NumField(); i++ {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if name != "kind" && !cols[name] {
			t.Errorf("sample field %s (json %q) has no Parquet column", st.Field(i).Name, name)
		}
	}
}

// TestParquetKeepsTheConnectionFields: an exported row says what its
// transaction's connection did (version, TLS, kept, resumed, 0-RTT,
// requests sent again), as its sample line does.
func TestParquetKeepsTheConnectionFields(t *testing.T) {
	s := sample(0, "")
	s.Negotiated, s.TLS, s.Kept, s.Resumed, s.ZeroRTT, s.Again, s.AgainConns = "h3", "TLS 1.3", true, true, true, 2, 1
	s.Metrics = map[string]float64{"dns_queries": 2}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Header(Header{Name: "t"})
	w.Sample(s)
	w.Run(Run{Cell: s.Cell, Protocol: s.Protocol, Path: s.Path, Conns: 1, Completed: 1})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), PlainSamplesName)
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if n, err := ExportParquet(name, &out, nil); err != nil || n != 1 {
		t.Fatalf("exported %d rows: %v", n, err)
	}
	rows, err := parquet.Read[parquetRow](bytes.NewReader(out.Bytes()), int64(out.Len()))
	if err != nil || len(rows) != 1 {
		t.Fatalf("read back %d rows: %v", len(rows), err)
	}
	r := rows[0]
	if r.Negotiated != "h3" || r.TLS != "TLS 1.3" || !r.Kept || !r.Resumed || !r.ZeroRTT || r.Again != 2 || r.AgainConns != 1 {
		t.Errorf("row %+v lacks the sample's connection fields", r)
	}
	if r.Metrics["dns_queries"] != 2 || !r.Counted {
		t.Errorf("metrics %v, counted %v", r.Metrics, r.Counted)
	}
}
