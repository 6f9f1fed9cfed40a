package evloop

import (
	"context"
	"errors"
	"sync/atomic"
)

// Sustain runs exchanges back to back on the engine's loops, slots of them
// in flight: for each slot, next(slot, nil) gives the first exchange, and
// as soon as an exchange is over (completed, failed, past its Deadline or
// cut by ctx) the loop that ran it calls next(slot, its result) in its own
// thread and starts the exchange next returns there and then; nil ends the
// slot. Sustain returns when every slot has ended.
//
// This is how a C load generator (wrk) runs its connections: no goroutine
// waits for each exchange, so none is woken through Go's scheduler between
// one exchange and the next (on a two-vCPU VM those wake-ups, and the
// runtime's threads parking and spinning for them, cost more CPU than the
// exchange's own system calls: docs/performance-history.md). next runs in a loop:
// it must not block (it may record a sample), and a completed exchange's
// socket is closed before it is called.
func (e *Engine) Sustain(ctx context.Context, slots int, next func(slot int, prev *Result) *Exchange) {
	if slots <= 0 {
		return
	}
	s := &sustained{ctx: ctx, next: next, done: make(chan struct{})}
	s.left.Store(int64(slots))
	e.inflight.Add(int64(slots)) // no loop spins for one exchange among them
	defer e.inflight.Add(-int64(slots))
	byLoop := make([][]sustainSlot, len(e.loops))
	for i := range slots {
		k := i % len(e.loops)
		byLoop[k] = append(byLoop[k], sustainSlot{s, i})
	}
	for k, l := range e.loops {
		l.add(byLoop[k]...)
	}
	stop := context.AfterFunc(ctx, func() {
		for _, l := range e.loops {
			l.poke()
		}
	})
	<-s.done
	stop()
}

type sustained struct {
	ctx  context.Context
	next func(int, *Result) *Exchange
	left atomic.Int64
	done chan struct{}
}

// sustainSlot is a slot of a sustained run waiting to start.
type sustainSlot struct {
	s    *sustained
	slot int
}

// slotDone ends a slot.
func (s *sustained) slotDone() {
	if s.left.Add(-1) == 0 {
		close(s.done)
	}
}

// add queues slots for the loop to start.
func (l *loop) add(slots ...sustainSlot) {
	l.mu.Lock()
	l.added = append(l.added, slots...)
	l.mu.Unlock()
	l.poke()
}

// deliver hands an exchange that is over to whoever waits for it: Do's
// goroutine, or the loop's next step of its sustained run (after the
// batch: sustain).
func (l *loop) deliver(c *conn) {
	if c.sus == nil {
		close(c.done)
		return
	}
	l.ended = append(l.ended, c)
}

// sustain starts the slots added, and the next exchange of each sustained
// exchange over in this batch.
func (l *loop) sustain() {
	l.mu.Lock()
	added := l.added
	l.added = nil
	l.mu.Unlock()
	for _, a := range added {
		l.startNext(a.s, a.slot, nil, nil)
	}
	for len(l.ended) > 0 {
		ended := l.ended
		l.ended = l.spare[:0] // the other buffer: no allocation per batch
		for _, c := range ended {
			if c.closeFD >= 0 {
				rawClose(c.closeFD)
				c.closeFD = -1
			}
			if errors.Is(c.res.Err, errCut) {
				if err := c.sus.ctx.Err(); err != nil {
					c.res.Err = c.cut(err)
				} else {
					c.res.Err = errCut
				}
			}
			l.startNext(c.sus, c.slot, &c.res, c)
		}
		clear(ended)
		l.spare = ended[:0]
	}
}

// startNext asks the run for the slot's next exchange and starts it. over,
// when not nil, is the exchange that just ended (prev is its result): its
// conn is reused for the next one unless a race was in it (a late answer
// or an attempt may still point at it), rather than one allocated per
// exchange (700 bytes: a tenth of the allocation per request).
func (l *loop) startNext(s *sustained, slot int, prev *Result, over *conn) {
	c := over
	if c != nil && (c.x.Race != nil || c.race != nil || c.closeFD >= 0 || c.ready >= 0) {
		c = nil // asked before next, which may reuse the Exchange
	}
	x := s.next(slot, prev)
	if x == nil {
		s.slotDone()
		return
	}
	if c == nil {
		c = new(conn)
	}
	*c = conn{x: x, req: x.Request, ready: -1, closeFD: -1, sus: s, slot: slot, deadline: x.Deadline}
	if err := l.start(c); err != nil {
		return // delivered: its next step comes in this batch (sustain)
	}
}

// endSustained ends what the loop holds of sustained runs when it stops:
// their exchanges over are reported, and no more start.
func (l *loop) endSustained() {
	l.mu.Lock()
	added := l.added
	l.added = nil
	l.mu.Unlock()
	for _, a := range added {
		a.s.slotDone()
	}
	for len(l.ended) > 0 {
		ended := l.ended
		l.ended = nil
		for _, c := range ended {
			if c.closeFD >= 0 {
				rawClose(c.closeFD)
			}
			c.sus.next(c.slot, &c.res) // recorded; nothing more starts
			c.sus.slotDone()
		}
	}
}
