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

// Writer streams records to a samples file. Records go through a queue
// to one goroutine that encodes them and writes whenever it has caught up,
// so a burst of thousands of completions costs few system calls, while a
// quiet moment leaves every finished sample in the file (compressed: within
// FlushEvery). Samples do not wake it one by one: while they come it takes
// the queue every GatherEvery (or at wakeBatch of them), so a user's
// sample costs a locked append, not a hand-off to another goroutine that
// takes the CPU the measured network's ends need. Sync ends a compressed
// file's frame, so a file cut after it (a kill, a resume) holds whole
// frames.
type Writer struct {
	w  io.Writer
	bw *bufio.Writer
	zw *zstd.Encoder
	// q holds the records not yet taken by the loop, in order (samples
	// copied in, not boxed: a channel of any allocated each one), at most
	// queueMax; wake tells the loop that q is no longer empty, room the
	// senders that it has space.
	qmu     sync.Mutex
	q       []item
	room    sync.Cond
	wake    chan struct{}
	closing bool
	// gathering says the loop takes the queue on its own within
	// GatherEvery: a sample need not wake it (batches counts its takes).
	gathering bool
	batches   atomic.Int64
	done      chan struct{}
	mu        sync.Mutex // guards err
	err       error
	once      sync.Once
	every     time.Duration
	// line is appendSample's buffer.
	line []byte
	// dirty says the current zstd frame holds something: only then does
	// Sync end it (an empty frame would be 13 bytes of nothing); pending
	// that something was encoded since the last flush.
	dirty, pending bool
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
	// Not WithLowerEncoderMem: its history buffer is the window plus one
	// block, so the encoder moved the whole window back every 128 KiB of
	// samples (a third of the writer's CPU with a 4 MiB window); the
	// default buffer is twice the window, moved once per window. A window
	// of 512 KiB rather than 4 MiB: half the CPU per sample (0.7 us
	// against 1.5 on 30,000 samples of a close run, its matches within
	// the CPU's caches) and 2.5% smaller (far matches' long offsets cost
	// more than they save in these rows).
	zw, err := zstd.NewWriter(counting{w, &wr.bytes}, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(512<<10))
	if err != nil { // only for invalid options
		panic(err)
	}
	wr.zw = zw
	wr.bw = bufio.NewWriterSize(zw, 256<<10)
	return wr.start()
}

// item is a record in the writer's queue: a sample (v nil) or another
// record (v).
type item struct {
	s Sample
	v any
}

// queueMax is how many records may wait for the writer before senders
// wait for it; wakeBatch wakes it before GatherEvery ends.
const (
	queueMax  = 4096
	wakeBatch = 512
)

// GatherEvery is how long samples may wait in the queue while the writer
// gathers them: at 20,000 samples a second, batches of 200 and 100
// wake-ups, where one a sample took 0.5-1 context switch each.
const GatherEvery = 10 * time.Millisecond

func (w *Writer) start() *Writer {
	w.room.L = &w.qmu
	w.wake = make(chan struct{}, 1)
	w.done = make(chan struct{})
	go w.loop()
	return w
}

// put queues a record for the loop, waiting while the queue is full.
func (w *Writer) put(it *item) {
	w.qmu.Lock()
	for len(w.q) >= queueMax && !w.closing {
		w.room.Wait()
	}
	if w.closing {
		w.qmu.Unlock()
		panic("result: a record sent to a closed writer")
	}
	w.q = append(w.q, *it)
	n := len(w.q)
	wake := it.v != nil || n >= wakeBatch || n == 1 && !w.gathering
	w.qmu.Unlock()
	if wake {
		select {
		case w.wake <- struct{}{}:
		default: // the loop is already told
		}
	}
}

// take is the queue's records, in order (spare: a slice to queue the next
// in), and whether the writer is closing.
func (w *Writer) take(spare []item) ([]item, bool) {
	w.qmu.Lock()
	batch := w.q
	w.q = spare[:0]
	closing := w.closing
	w.gathering = len(batch) > 0 // an empty take: the next sample wakes the loop
	w.batches.Add(1)
	if len(batch) >= queueMax {
		w.room.Broadcast()
	}
	w.qmu.Unlock()
	return batch, closing
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
	last := time.Now() // the last flush
	var spare []item
	for {
		select {
		case <-w.wake:
		case <-timer.C:
		}
		batch, closing := w.take(spare)
		if closing && len(batch) == 0 {
			break
		}
		for i := range batch {
			if w.record(enc, &batch[i]) {
				last = time.Now()
			}
		}
		took := len(batch) > 0
		clear(batch) // no strings or maps kept alive by the spare slice
		spare = batch[:0]
		if closing {
			select { // take what came before Close, to the end
			case w.wake <- struct{}{}:
			default:
			}
			continue
		}
		now := time.Now()
		if w.pending && now.Sub(last) >= w.every {
			w.flush(false)
			last = now
		}
		timer.Reset(w.nextTake(now, last, took))
	}
	timer.Stop()
	w.flush(true)
}

// nextTake is how long the loop sleeps unless woken: GatherEvery while
// samples come (took), until the flush is due while some wait encoded,
// else as good as for ever (the next sample wakes it).
func (w *Writer) nextTake(now, last time.Time, took bool) time.Duration {
	d := time.Hour
	if took {
		d = GatherEvery
	}
	if w.pending {
		d = min(d, max(last.Add(w.every).Sub(now), 0))
	}
	return d
}

// record writes one queued record; flushed says it also flushed the
// file (a Sync, a header).
func (w *Writer) record(enc *json.Encoder, it *item) (flushed bool) {
	var v any = it.v
	switch r := it.v.(type) {
	case nil:
		if !w.keepRow(&it.s) {
			return false
		}
		if err := w.encodeSample(enc, &it.s); err != nil {
			w.setErr(err)
		}
		w.dirty, w.pending = true, true
		w.samples.Add(1)
		return false
	case syncMark:
		w.flush(true)
		close(r)
		return true
	case Run:
		w.closeRun(&r)
		v = r
	}
	if err := enc.Encode(v); err != nil {
		w.setErr(err)
	}
	w.dirty, w.pending = true, true
	if _, ok := v.(Header); ok {
		// The header is a frame of its own: a file cut back to its last
		// finished run (a resume) keeps it however early the cut.
		w.flush(true)
		return true
	}
	return false
}

// encodeSample writes one sample as a line: by appendSample, or by
// encoding/json for the samples it leaves.
func (w *Writer) encodeSample(enc *json.Encoder, s *Sample) error {
	var done bool
	if w.line, done = appendSample(w.line[:0], s); done {
		_, err := w.bw.Write(w.line)
		return err
	}
	return enc.Encode(s)
}

// flush writes out what is encoded; frame also ends a compressed file's
// frame (and starts the next).
func (w *Writer) flush(frame bool) {
	w.pending = false
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
	w.put(&item{v: h})
}

// Sample writes one sample line.
func (w *Writer) Sample(s Sample) {
	s.Kind = KindSample
	w.put(&item{s: s})
}

// Run writes one run record.
func (w *Writer) Run(r Run) {
	r.Kind = KindRun
	w.put(&item{v: r})
}

// Site writes one site record (a survey's).
func (w *Writer) Site(s Site) {
	s.Kind = KindSite
	w.put(&item{v: s})
}

// Sync waits until everything sent so far is written and flushed (and a
// compressed file's frame ended).
func (w *Writer) Sync() error {
	ack := make(chan struct{})
	w.put(&item{v: syncMark(ack)})
	<-ack
	return w.Err()
}

// syncMark asks the writer loop to flush and close the channel when done.
type syncMark chan struct{}

// Close flushes and stops the writer; it returns the first write error.
func (w *Writer) Close() error {
	w.once.Do(func() {
		w.qmu.Lock()
		w.closing = true
		w.room.Broadcast()
		w.qmu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	})
	<-w.done
	return w.Err()
}
