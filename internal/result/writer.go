package result

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Writer streams records to a samples file. Records go through a channel
// to one goroutine that encodes them and writes whenever it has caught up,
// so a burst of thousands of completions costs few system calls, while a
// quiet moment leaves every finished sample in the file (compressed: within
// FlushEvery). Sync ends a compressed file's frame, so a file cut after it
// (a kill, a resume) holds whole frames.
type Writer struct {
	w     io.Writer
	bw    *bufio.Writer
	zw    *zstd.Encoder
	ch    chan any
	done  chan struct{}
	mu    sync.Mutex // guards err
	err   error
	once  sync.Once
	every time.Duration
	// line is appendSample's buffer.
	line []byte
	// dirty says the current zstd frame holds something: only then does
	// Sync end it (an empty frame would be 13 bytes of nothing).
	dirty bool
	// samples and bytes count what was written: sample lines, and bytes
	// into w (compressed, if so).
	samples, bytes atomic.Int64
	// keep, above 1, keeps one sample row of every keep of each run;
	// totals then sums every sample of each open run (by cell and run).
	keep   int
	totals func() Totaler
	open   map[string]*openRun
}

// Totaler sums a run's samples into its RunTotals (the reports make it,
// so that the totals are summed exactly as they sum samples).
type Totaler interface {
	Add(*Sample)
	Totals() *RunTotals
}

// openRun is a run whose record has not passed the writer yet.
type openRun struct {
	seen, rows int
	t          Totaler
}

// KeepEvery makes the writer keep one sample row of every n of each run
// (the first, the n+1th, …), and put the totals of all of them, summed by
// a totals(), in the run's record. Call it before the first sample; n
// below 2 keeps every row.
func (w *Writer) KeepEvery(n int, totals func() Totaler) {
	if n > 1 {
		w.keep, w.totals, w.open = n, totals, map[string]*openRun{}
	}
}

// keepRow sums s into its run's totals and says whether its row is kept.
func (w *Writer) keepRow(s *Sample) bool {
	if w.keep < 2 {
		return true
	}
	k := runKeyOf(s.Cell, s.Run)
	o := w.open[k]
	if o == nil {
		o = &openRun{t: w.totals()}
		w.open[k] = o
	}
	o.t.Add(s)
	o.seen++
	if (o.seen-1)%w.keep != 0 {
		return false
	}
	o.rows++
	return true
}

// closeRun puts the totals of r's samples into its record.
func (w *Writer) closeRun(r *Run) {
	if w.keep < 2 {
		return
	}
	k := runKeyOf(r.Cell, r.Run)
	o := w.open[k]
	if o == nil {
		o = &openRun{t: w.totals()}
	}
	delete(w.open, k)
	r.Totals = o.t.Totals()
	r.Totals.Rows = o.rows
}

func runKeyOf(cell string, run int) string { return cell + "#" + strconv.Itoa(run) }

// FlushEvery is how long a compressed writer that has caught up may hold
// encoded samples before it writes them out: each write ends a zstd block,
// and blocks of a few samples compress poorly.
const FlushEvery = 100 * time.Millisecond

// NewWriter starts a writer of plain JSON lines on w. Close must be called
// to flush the rest.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w}
	wr.bw = bufio.NewWriterSize(counting{w, &wr.bytes}, 256<<10)
	return wr.start()
}

// NewCompressedWriter starts a writer of zstd-compressed JSON lines on w
// (samples.jsonl.zst), one frame per Sync.
func NewCompressedWriter(w io.Writer) *Writer {
	wr := &Writer{w: w, every: FlushEvery}
	zw, err := zstd.NewWriter(counting{w, &wr.bytes}, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(4<<20), zstd.WithLowerEncoderMem(true))
	if err != nil { // only for invalid options
		panic(err)
	}
	wr.zw = zw
	wr.bw = bufio.NewWriterSize(zw, 256<<10)
	return wr.start()
}

func (w *Writer) start() *Writer {
	w.ch = make(chan any, 4096)
	w.done = make(chan struct{})
	go w.loop()
	return w
}

// counting counts the bytes written to the file.
type counting struct {
	w io.Writer
	n *atomic.Int64
}

func (c counting) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (w *Writer) loop() {
	defer close(w.done)
	enc := json.NewEncoder(w.bw)
	enc.SetEscapeHTML(false)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	last := time.Now()
	for {
		var v any
		var ok bool
		select {
		case v, ok = <-w.ch:
		case <-timer.C:
			armed = false
			w.flush(false)
			last = time.Now()
			continue
		}
		if !ok {
			break
		}
		if ack, isSync := v.(syncMark); isSync {
			w.flush(true)
			last = time.Now()
			close(ack)
			continue
		}
		switch r := v.(type) {
		case Sample:
			if !w.keepRow(&r) {
				continue
			}
		case Run:
			w.closeRun(&r)
			v = r
		}
		if err := w.encode(enc, v); err != nil {
			w.setErr(err)
		}
		w.dirty = true
		switch v.(type) {
		case Sample:
			w.samples.Add(1)
		case Header:
			// The header is a frame of its own: a file cut back to its
			// last finished run (a resume) keeps it however early the
			// cut.
			w.flush(true)
			last = time.Now()
			continue
		}
		if len(w.ch) > 0 {
			continue
		}
		switch wait := w.every - time.Since(last); {
		case wait <= 0:
			w.flush(false)
			last = time.Now()
		case !armed:
			timer.Reset(wait)
			armed = true
		}
	}
	timer.Stop()
	w.flush(true)
}

// encode writes one record as a line: a sample by appendSample, the rest
// (and samples it leaves) by encoding/json.
func (w *Writer) encode(enc *json.Encoder, v any) error {
	if s, ok := v.(Sample); ok {
		var done bool
		if w.line, done = appendSample(w.line[:0], &s); done {
			_, err := w.bw.Write(w.line)
			return err
		}
	}
	return enc.Encode(v)
}

// flush writes out what is encoded; frame also ends a compressed file's
// frame (and starts the next).
func (w *Writer) flush(frame bool) {
	if err := w.bw.Flush(); err != nil {
		w.setErr(err)
		return
	}
	if w.zw == nil {
		return
	}
	var err error
	switch {
	case frame && w.dirty:
		if err = w.zw.Close(); err == nil {
			w.zw.Reset(counting{w.w, &w.bytes})
			w.dirty = false
		}
	case frame:
	default:
		err = w.zw.Flush()
	}
	if err != nil {
		w.setErr(err)
	}
}

func (w *Writer) setErr(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = fmt.Errorf("result: write samples: %w", err)
	}
	w.mu.Unlock()
}

// Err returns the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Written is how many sample lines and bytes (as stored: compressed, if
// so) the writer has written so far.
func (w *Writer) Written() (samples, bytes int64) {
	return w.samples.Load(), w.bytes.Load()
}

// Header writes the header line.
func (w *Writer) Header(h Header) {
	h.Kind = KindHeader
	if h.FormatVersion == 0 {
		h.FormatVersion = FormatVersion
	}
	w.ch <- h
}

// Sample writes one sample line.
func (w *Writer) Sample(s Sample) {
	s.Kind = KindSample
	w.ch <- s
}

// Run writes one run record.
func (w *Writer) Run(r Run) {
	r.Kind = KindRun
	w.ch <- r
}

// Site writes one site record (a survey's).
func (w *Writer) Site(s Site) {
	s.Kind = KindSite
	w.ch <- s
}

// Sync waits until everything sent so far is written and flushed (and a
// compressed file's frame ended).
func (w *Writer) Sync() error {
	ack := make(chan struct{})
	w.ch <- syncMark(ack)
	<-ack
	return w.Err()
}

// syncMark asks the writer loop to flush and close the channel when done.
type syncMark chan struct{}

// Close flushes and stops the writer; it returns the first write error.
func (w *Writer) Close() error {
	w.once.Do(func() { close(w.ch) })
	<-w.done
	return w.Err()
}
