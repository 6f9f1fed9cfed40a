package load

import (
	"context"
	"slices"
	"sync"
	"time"
)

// txContext is one user's transaction context, made once and reused for
// each of its transactions in a sustained run: it ends at the current
// transaction's deadline or with its parent (the run's), as a
// context.WithTimeout of the parent would. A WithTimeout per transaction
// costs a timer, a cancel context and an entry in the parent's table of
// children, made and removed each time, and each AfterFunc of the
// transaction another context: about 3 µs a transaction at 100 HTTP/3
// users on 2 CPUs, a tenth of what v6lab's client spends beside the
// protocol's library. Here a transaction's start sets a deadline; the one
// timer fires at most once per timeout and re-arms itself while the
// deadline has moved on; AfterFunc keeps a slice entry.
//
// It implements AfterFunc, so context.AfterFunc and the contexts derived
// from it (WithCancel, WithTimeout) register with it rather than starting
// a goroutine to watch Done.
type txContext struct {
	parent  context.Context
	timeout time.Duration
	stop    func() bool // ends the watch of the parent

	mu       sync.Mutex
	done     chan struct{} // closed when the transaction's context ends
	err      error         // why (nil: not ended)
	deadline time.Time     // the current transaction's
	timer    *time.Timer
	armed    bool        // timer will fire
	funcs    []afterFunc // registered for the current transaction
	next     uint64      // the next registration's id
	// running counts the functions the ended transaction's end started
	// that have not returned: the next transaction begins after them, as
	// they read the context's Err (a context derived from it, WithCancel,
	// cancels its child with it, and Go's context panics on a nil one).
	running int
	ran     sync.Cond // signalled (on mu) as running reaches 0
}

type afterFunc struct {
	id uint64
	f  func()
}

// newTxContext is a user's transaction context under parent, each
// transaction bounded by timeout. close must be called at the end.
func newTxContext(parent context.Context, timeout time.Duration) *txContext {
	t := &txContext{parent: parent, timeout: timeout, done: make(chan struct{})}
	t.ran.L = &t.mu
	t.stop = context.AfterFunc(parent, func() { t.end(parent.Err()) })
	return t
}

// begin starts a transaction at now: its deadline is now + timeout. A
// context ended by the last transaction's deadline is made anew (one
// ended by the parent stays ended).
func (t *txContext) begin(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.running > 0 {
		t.ran.Wait()
	}
	if t.err != nil && t.parent.Err() == nil {
		t.err, t.done = nil, make(chan struct{})
	}
	t.deadline = now.Add(t.timeout)
	t.funcs = t.funcs[:0]
	if !t.armed && t.err == nil {
		t.armed = true
		if t.timer == nil {
			t.timer = time.AfterFunc(t.timeout, t.expire)
		} else {
			t.timer.Reset(t.timeout)
		}
	}
}

// finish ends a transaction: what it registered and did not stop is
// dropped, it will not run for the next one's end.
func (t *txContext) finish() {
	t.mu.Lock()
	clear(t.funcs)
	t.funcs = t.funcs[:0]
	t.mu.Unlock()
}

// close stops the timer and the watch of the parent.
func (t *txContext) close() {
	t.stop()
	t.mu.Lock()
	if t.timer != nil {
		t.timer.Stop()
	}
	t.armed = false
	t.mu.Unlock()
}

// expire is the timer's: the context ends if the deadline has passed,
// else the timer waits for the deadline of the transaction now running.
func (t *txContext) expire() {
	t.mu.Lock()
	if t.err != nil {
		t.armed = false
		t.mu.Unlock()
		return
	}
	if left := time.Until(t.deadline); left > 0 {
		t.timer.Reset(left)
		t.mu.Unlock()
		return
	}
	t.armed = false
	t.mu.Unlock()
	t.end(context.DeadlineExceeded)
}

// end ends the context with err and runs what was registered, each in its
// own goroutine (as context.AfterFunc does).
func (t *txContext) end(err error) {
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return
	}
	t.err = err
	close(t.done)
	funcs := slices.Clone(t.funcs)
	clear(t.funcs)
	t.funcs = t.funcs[:0]
	t.running += len(funcs)
	t.mu.Unlock()
	for _, a := range funcs {
		go t.run(a.f)
	}
}

// run runs f, which the transaction's end started (running counts it).
func (t *txContext) run(f func()) {
	defer func() {
		t.mu.Lock()
		if t.running--; t.running == 0 {
			t.ran.Broadcast()
		}
		t.mu.Unlock()
	}()
	f()
}

func (t *txContext) Deadline() (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deadline, true
}

func (t *txContext) Done() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done
}

func (t *txContext) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *txContext) Value(key any) any { return t.parent.Value(key) }

// AfterFunc calls f in its own goroutine once the context ends (at once
// if it has), unless stop is called first; stop reports whether it
// stopped f. What the transaction leaves registered is dropped at its
// finish.
func (t *txContext) AfterFunc(f func()) (stop func() bool) {
	t.mu.Lock()
	if t.err != nil {
		t.running++
		t.mu.Unlock()
		go t.run(f)
		return func() bool { return false }
	}
	id := t.next
	t.next++
	t.funcs = append(t.funcs, afterFunc{id, f})
	t.mu.Unlock()
	return func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		for i := range t.funcs {
			if t.funcs[i].id == id {
				t.funcs = slices.Delete(t.funcs, i, i+1)
				return true
			}
		}
		return false
	}
}

// AfterFunc is context.AfterFunc, through ctx's own AfterFunc when it has
// one (a transaction's context in a sustained run: no context is made).
func AfterFunc(ctx context.Context, f func()) (stop func() bool) {
	if a, ok := ctx.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(ctx, f)
}
