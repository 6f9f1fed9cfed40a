package http

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
)

// Shared connections (option streams; HTTP/2 with keepalive): each user's
// one connection carries Shared transactions at once, as h2load's -m
// keeps that many streams in flight on each of its connections. The load
// engine runs Shared workers a user (load.Multiplexer), worker w being
// user w/Shared's. The first of a user's workers to find no connection
// dials one and runs its transaction on it alone, handshake and all, as
// any user's first; the others wait for it, then every worker runs its
// transactions on it at once, kept, while a goroutine of the connection's
// reads it (h2conn.readLoop).

// Streams is how many workers run each user (load.Multiplexer). Shared
// is the options' PerUser, which says where streams applies; a client
// made otherwise (tests) shares only kept HTTP/2 connections too.
func (c *Client) Streams() int {
	if c.Version != Version2 || !c.Keep {
		return 1
	}
	return max(c.Shared, 1)
}

// sharedConns are the users' shared connections, a slot each.
type sharedConns struct {
	mu    sync.Mutex
	slots map[int]*sharedSlot
}

// sharedSlot is a user's connection and its workers' reuse.
type sharedSlot struct {
	mu      sync.Mutex
	h       *h2conn       // nil: none open
	dialing chan struct{} // closed when the worker dialing is done (nil: none dials)
	runners []*h2reuse    // by worker, each only its worker's
}

// slot is user's slot (made at its first use), for m workers.
func (sc *sharedConns) slot(user, m int) *sharedSlot {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	s := sc.slots[user]
	if s == nil {
		if sc.slots == nil {
			sc.slots = map[int]*sharedSlot{}
		}
		s = &sharedSlot{runners: make([]*h2reuse, m)}
		sc.slots[user] = s
	}
	return s
}

// take is the slot's open connection; else dial says the caller dials it
// (and calls dialed after), or wait is closed once another worker has.
func (s *sharedSlot) take() (h *h2conn, dial bool, wait chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h != nil {
		if s.h.alive() {
			return s.h, false, nil
		}
		s.h.retire() // a GOAWAY came, or it failed: its transactions end on it
		s.h = nil
	}
	if s.dialing != nil {
		return nil, false, s.dialing
	}
	s.dialing = make(chan struct{})
	return nil, true, nil
}

// dialed ends the dial take asked for (its connection kept, or not).
func (s *sharedSlot) dialed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.dialing)
	s.dialing = nil
}

// keep makes h, a connection whose first transaction ended, the slot's
// (shared by m), unless the slot holds one open (h is then closed).
func (s *sharedSlot) keep(h *h2conn, m int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h != nil && s.h != h {
		if s.h.alive() {
			h.close()
			return
		}
		s.h.retire()
	}
	s.h = h
	if !h.isShared() {
		h.share(m)
	}
}

// runner is worker k's reuse: a new one after it abandoned streams.
func (s *sharedSlot) runner(k int) *h2reuse {
	r := s.runners[k]
	if r == nil || r.abandoned {
		r = &h2reuse{slot: s}
		s.runners[k] = r
	}
	return r
}

// againOn is the connection the requests old's server did not process go
// on: a new one of the same path, or, when old is the user's shared
// connection, the user's next one, which the first of its transactions to
// need it opens (the others wait for it) and all then share: the user
// keeps one connection, as conns says.
func (c *Client) againOn(ctx context.Context, tr *load.Trace, old *h2conn, r *h2reuse) (*h2conn, error) {
	s := r.slot
	if s == nil || !old.isShared() {
		return c.redialH2(ctx, tr, old)
	}
	for {
		s.mu.Lock()
		if h := s.h; h != nil && h != old && h.alive() {
			s.mu.Unlock()
			return h, nil
		}
		if wait := s.dialing; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		s.dialing = make(chan struct{})
		s.mu.Unlock()
		nh, err := c.redialH2(ctx, tr, old)
		if err == nil {
			s.keep(nh, c.Streams())
		}
		s.dialed()
		return nh, err
	}
}

// closeAll closes every shared connection.
func (sc *sharedConns) closeAll() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for _, s := range sc.slots {
		s.mu.Lock()
		if s.h != nil {
			s.h.close()
			s.h = nil
		}
		s.mu.Unlock()
	}
}

// keepH2 keeps h, a connection worker w's transaction ended on, for the
// user's next transactions: its own, or shared by its workers.
func (c *Client) keepH2(w int, h *h2conn) {
	if m := c.Streams(); m > 1 {
		c.shared.slot(w/m, m).keep(h, m)
		return
	}
	c.kept.keep(w, h)
}

// doShared is worker w's transaction on its user's shared connection: the
// connection's first (dialed, alone on it), or one of the many at once.
func (c *Client) doShared(ctx context.Context, tr *load.Trace, w int) result.Sample {
	m := c.Streams()
	s := c.shared.slot(w/m, m)
	for {
		h, dial, wait := s.take()
		switch {
		case h != nil:
			return c.onShared(ctx, tr, s, w%m, h)
		case dial:
			defer s.dialed()
			return c.dialH2(ctx, tr, w)
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return tr.Fail(ctx, "connect", fmt.Errorf("HTTP/2: waiting for another of the user's transactions to open its shared connection: %w", context.Cause(ctx)))
		}
	}
}

// onShared runs worker k's transaction on h, its user's shared connection.
// A failed transaction leaves the connection to the others, unless the
// connection failed.
func (c *Client) onShared(ctx context.Context, tr *load.Trace, s *sharedSlot, k int, h *h2conn) result.Sample {
	tr.Restart()
	r := s.runner(k)
	f, nh, err := c.h2fetch(ctx, tr, h, r) // after the server's GOAWAY, nh is the user's next connection (againOn)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return tr.Fail(ctx, "io", err)
		}
		return c.failStreams(ctx, tr, nil, err)
	}
	c.keptEnds(tr, nh)
	tr.S.Kept = true
	return c.done(tr, f, c.h2Name(), "kept connection shared by "+strconv.Itoa(c.Streams()))
}
