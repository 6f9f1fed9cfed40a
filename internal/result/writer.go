package result

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Writer streams records to a samples file. Samples go through a channel to
// one goroutine that writes and flushes whenever it has caught up, so a burst
// of thousands of completions costs few system calls, while a quiet moment
// leaves every finished sample in the file.
type Writer struct {
	w    io.Writer
	bw   *bufio.Writer
	ch   chan any
	done chan struct{}
	mu   sync.Mutex // guards err and closed
	err  error
	once sync.Once
}

// NewWriter starts a writer on w. Close must be called to flush the rest.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{w: w, bw: bufio.NewWriterSize(w, 256<<10), ch: make(chan any, 4096), done: make(chan struct{})}
	go wr.loop()
	return wr
}

func (w *Writer) loop() {
	defer close(w.done)
	enc := json.NewEncoder(w.bw)
	enc.SetEscapeHTML(false)
	for v := range w.ch {
		if ack, ok := v.(syncMark); ok {
			if err := w.bw.Flush(); err != nil {
				w.setErr(err)
			}
			close(ack)
			continue
		}
		if err := enc.Encode(v); err != nil {
			w.setErr(err)
		}
		if len(w.ch) == 0 {
			if err := w.bw.Flush(); err != nil {
				w.setErr(err)
			}
		}
	}
	if err := w.bw.Flush(); err != nil {
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

// Sync waits until everything sent so far is written and flushed.
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
