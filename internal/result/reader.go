package result

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// File is everything read back from a samples file. Reading a whole file
// holds every sample in memory: the reports and merge stream it instead
// (Scan); File is for tests and small files.
type File struct {
	Header  Header
	Runs    []Run
	Samples []Sample
	// Truncated is set when the last line was cut off (a killed run); the
	// complete lines before it are kept.
	Truncated bool
}

// ErrNoHeader is returned when the first line is not a header.
var ErrNoHeader = errors.New("first line is not a v6lab header")

var errNoHeaderLine = errors.New("no header")

// maxLine bounds one line so a corrupt file cannot exhaust memory.
const maxLine = 1 << 20

// MaxLine bounds one line of a samples file.
const MaxLine = maxLine

// Visitor receives a samples file's records in order (Scan). The pointers
// are valid during the call only.
type Visitor struct {
	Header func(*Header) error
	Run    func(*Run)
	Sample func(*Sample)
	// Site receives a survey's site records.
	Site func(*Site)
	// Check, when set, vets each sample before Sample sees it, with what
	// the format alone cannot know (the path names v6lab measures): its
	// error stops the scan, naming the file and line.
	Check func(*Sample) error
	// Vet checks every sample and run record against the header's plan
	// and each run's record against its samples (vet.go): an error stops
	// the scan, naming the file and line.
	Vet bool
}

// Read decodes a samples file (plain or zstd-compressed) into memory.
// name is used in errors, which give the line. Unknown fields are errors
// (a file from a newer format must not be read silently wrong); a cut-off
// last line is tolerated and flagged.
func Read(r io.Reader, name string) (*File, error) {
	f := &File{}
	truncated, err := Scan(r, name, Visitor{
		Header: func(h *Header) error { f.Header = *h; return nil },
		Run:    func(r *Run) { f.Runs = append(f.Runs, *r) },
		Sample: func(s *Sample) { f.Samples = append(f.Samples, *s) },
	})
	f.Truncated = truncated
	return f, err
}

// Scan reads a samples file (plain or zstd-compressed) record by record,
// in constant memory, handing each to v in the file's order; it stops at
// the first error, or when v.Header returns one. Lines are decoded on
// every CPU, in batches, and handed over in order. It reports whether the
// last line was cut off (a killed run; the lines before it count).
func Scan(r io.Reader, name string, v Visitor) (truncated bool, err error) {
	rc, err := Decompress(r)
	if err != nil {
		return false, badFile(fmt.Errorf("result: %s: %w", name, err))
	}
	defer rc.Close()
	// Without a Sample visitor, sample lines are only recognised, never
	// decoded (a pass that wants the header and runs reads at the speed
	// of decompression); their errors are then not found.
	p := startPipeline(rc, v.Sample == nil)
	defer p.stop()
	sawHeader := false
	var vet *vetter
	for b := range p.out {
		<-b.done
		for i := range b.recs {
			rec := &b.recs[i]
			if rec.err != nil {
				if b.truncatedAt(i) {
					break // a cut-off last line: every line before it counts
				}
				return false, wrapLineErr(name, rec.line, rec.err)
			}
			switch rec.kind {
			case KindHeader:
				sawHeader = true
				if v.Vet && v.Sample != nil { // counts need the samples decoded
					vet = newVetter(rec.header)
				}
				if v.Header != nil {
					if err := v.Header(rec.header); err != nil {
						return false, err
					}
				}
			case KindRun:
				if vet != nil {
					if err := vet.run(rec.run); err != nil {
						return false, wrapLineErr(name, rec.line, err)
					}
				}
				if v.Run != nil {
					v.Run(rec.run)
				}
			case KindSample:
				if err := check(v, vet, &rec.sample); err != nil {
					return false, wrapLineErr(name, rec.line, err)
				}
				if v.Sample != nil {
					v.Sample(&rec.sample)
				}
			case KindSite:
				if v.Site != nil {
					v.Site(rec.site)
				}
			}
		}
		if b.readErr != nil {
			return false, badFile(fmt.Errorf("result: %s:%d: %w", name, b.nextLine, b.readErr))
		}
		truncated = b.cut
		batches.Put(b)
	}
	if !sawHeader {
		return false, &BadFileError{fmt.Errorf("result: %s: %w", name, ErrNoHeader)}
	}
	return truncated || rc.Cut(), nil
}

// check vets a decoded sample (never one only recognised: nothing reads
// it).
func check(v Visitor, vet *vetter, s *Sample) error {
	if v.Sample == nil {
		return nil
	}
	if v.Check != nil {
		if err := v.Check(s); err != nil {
			return err
		}
	}
	if vet != nil {
		return vet.sample(s)
	}
	return nil
}

func wrapLineErr(name string, line int, err error) error {
	if err == errNoHeaderLine {
		return &BadFileError{fmt.Errorf("result: %s: %w", name, ErrNoHeader)}
	}
	return &BadFileError{fmt.Errorf("result: %s:%d: %w", name, line, err)}
}

// BadFileError is a samples file that is not one v6lab wrote, or is
// damaged (the error names the file, and the line where one is known):
// bad input, exit status 2, as NotResultError. A file that could not be
// read (an I/O error) is not one.
type BadFileError struct{ Err error }

func (e *BadFileError) Error() string { return e.Err.Error() }
func (e *BadFileError) Unwrap() error { return e.Err }

// ExitCode is 2, the status of bad input.
func (e *BadFileError) ExitCode() int { return 2 }

// badFile makes err a BadFileError unless reading failed (an I/O error,
// whose *fs.PathError or errno says so).
func badFile(err error) error {
	var pe *fs.PathError
	var errno syscall.Errno
	if errors.As(err, &pe) || errors.As(err, &errno) {
		return err
	}
	return &BadFileError{err}
}

// record is one decoded line.
type record struct {
	kind   string
	line   int
	header *Header
	run    *Run
	site   *Site
	sample Sample
	err    error
}

// batch is a run of lines read together and decoded by one worker.
type batch struct {
	buf   []byte
	ends  []int // end of each line in buf
	first int   // number of the first line
	// last says the batch ends the file; open, that its last line had no
	// newline (possibly cut off by a kill); cut, that it was cut off and
	// left out.
	last, open, cut bool
	readErr         error
	nextLine        int
	recs            []record
	done            chan struct{}
}

// truncatedAt says whether a decoding error at record i is a cut-off last
// line, to be ignored: the file's last line, unterminated, not ending in
// "}", and not its first.
func (b *batch) truncatedAt(i int) bool {
	r := &b.recs[i]
	if !b.open || i != len(b.ends)-1 || r.line == 1 || r.err == errNoHeaderLine {
		return false
	}
	start := 0
	if i > 0 {
		start = b.ends[i-1]
	}
	if bytes.HasSuffix(b.buf[start:b.ends[i]], []byte("}")) {
		return false
	}
	b.cut = true
	return true
}

type pipeline struct {
	out  chan *batch
	quit chan struct{}
	wg   sync.WaitGroup
}

const batchLines, batchBytes = 2048, 1 << 20

func startPipeline(r io.Reader, skipSamples bool) *pipeline {
	workers := min(runtime.GOMAXPROCS(0), 4)
	p := &pipeline{out: make(chan *batch, 2*workers), quit: make(chan struct{})}
	work := make(chan *batch, 2*workers)
	for range workers {
		p.wg.Go(func() {
			d := fastDec{skip: skipSamples} // its interned strings live as long as the scan
			for b := range work {
				b.decode(&d)
				close(b.done)
			}
		})
	}
	p.wg.Go(func() {
		defer close(p.out)
		defer close(work)
		br := bufio.NewReaderSize(r, 256<<10)
		line := 1
		for {
			b := readBatch(br, line)
			line = b.nextLine
			// Read before handing b over: once out, the reader may put it
			// back in the pool, where another scan takes it.
			end := b.last || b.readErr != nil
			select {
			case work <- b:
			case <-p.quit:
				return
			}
			select {
			case p.out <- b:
			case <-p.quit:
				return
			}
			if end {
				return
			}
		}
	})
	return p
}

// stop ends the pipeline early (after an error) and waits for it.
func (p *pipeline) stop() {
	close(p.quit)
	for b := range p.out {
		<-b.done
	}
	p.wg.Wait()
}

// readBatch reads up to batchLines lines (batchBytes), skipping blank
// ones; a line over maxLine ends the batch with readErr.
func readBatch(br *bufio.Reader, line int) *batch {
	b := batches.Get().(*batch)
	*b = batch{buf: b.buf[:0], ends: b.ends[:0], recs: b.recs[:0], first: line, done: make(chan struct{})}
	defer func() { b.nextLine = line }()
	for len(b.ends) < batchLines && len(b.buf) < batchBytes {
		start := len(b.buf)
		var err error
		b.buf, err = appendLine(br, b.buf)
		if err != nil && err != io.EOF {
			b.buf = b.buf[:start]
			b.readErr = err
			return b
		}
		terminated := err == nil
		body := b.buf[start:]
		if terminated {
			body = bytes.TrimRight(body, "\r\n")
		}
		b.buf = b.buf[:start+len(body)]
		if len(bytes.TrimSpace(body)) == 0 {
			b.buf = b.buf[:start]
		} else {
			b.ends = append(b.ends, len(b.buf))
			b.recs = append(b.recs, record{line: line})
			b.open = !terminated
		}
		line++
		if err == io.EOF {
			b.last = true
			return b
		}
	}
	return b
}

// batches are reused once their records were handed over: a file of
// millions of samples reads in a few batches' memory.
var batches = sync.Pool{New: func() any {
	return &batch{buf: make([]byte, 0, batchBytes+64<<10), ends: make([]int, 0, batchLines), recs: make([]record, 0, batchLines)}
}}

// appendLine appends one line, its newline included, to buf; io.EOF comes
// with a final line that had no newline (possibly cut off) or nothing.
func appendLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	start := len(buf)
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf)-start > maxLine {
			return buf, fmt.Errorf("a line longer than %d bytes (v6lab writes none so long: the file is not a samples file, or is damaged)", maxLine)
		}
		switch err {
		case nil:
			return buf, nil
		case bufio.ErrBufferFull:
			continue
		default:
			return buf, err
		}
	}
}

func (b *batch) decode(d *fastDec) {
	start := 0
	for i, end := range b.ends {
		r := &b.recs[i]
		r.err = r.decode(d, b.buf[start:end])
		start = end
		if r.err != nil {
			return // the reader stops here; the lines after stay undecoded
		}
	}
}

func (r *record) decode(d *fastDec, line []byte) error {
	if d.skip && r.line != 1 && bytes.HasPrefix(line, []byte(samplePrefix)) {
		r.kind = KindSample
		return nil
	}
	if r.line != 1 && d.sample(line, &r.sample) {
		r.kind = KindSample
		return r.checkSample()
	}
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if r.line == 1 && probe.Kind != KindHeader {
		return errNoHeaderLine
	}
	r.kind = probe.Kind
	switch probe.Kind {
	case KindHeader:
		if r.line != 1 {
			return fmt.Errorf("second header")
		}
		r.header = &Header{}
		if err := strict(line, r.header); err != nil {
			return err
		}
		if v := r.header.FormatVersion; v < 1 || v > FormatVersion {
			return fmt.Errorf("format_version %d not supported (this v6lab reads %d)", v, FormatVersion)
		}
	case KindRun:
		r.run = &Run{}
		return strict(line, r.run)
	case KindSite:
		r.site = &Site{}
		return strict(line, r.site)
	case KindSample:
		r.sample = Sample{}
		if err := strict(line, &r.sample); err != nil {
			return err
		}
		return r.checkSample()
	default:
		return fmt.Errorf("field kind: unknown record kind %q", probe.Kind)
	}
	return nil
}

// MaxTotal bounds a sample's total_ns: no measurement v6lab makes is
// longer than a 24 h transport trial with its 2 h timeout, so a longer one
// is an edited or corrupt line, not a figure.
const MaxTotal = 26 * time.Hour

func (r *record) checkSample() error {
	t := r.sample.TotalNS
	if t < 0 {
		return fmt.Errorf("field total_ns: negative duration %d", t)
	}
	if t > int64(MaxTotal) {
		return fmt.Errorf("field total_ns: %d ns is longer than any measurement v6lab makes (at most %v)", t, MaxTotal)
	}
	if r.sample.Path == "" {
		return fmt.Errorf("field path: missing")
	}
	return nil
}

func strict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
