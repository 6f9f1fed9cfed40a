package http

import (
	"cmp"
	"context"
	"errors"
	"net"
	"sync"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Kept connections (option keepalive, HTTP/2 and HTTP/3): each user keeps
// the connection of its first transaction for its next ones, as a browser
// tab that stays open, or as wrk, h2load and oha measure. A transaction
// on a kept connection has no lookup and no handshake; its time is its
// requests' (wire_ns is not recorded for it: its first packet out is not
// stamped).

// keptConn is a user's open connection.
type keptConn interface {
	alive() bool
	close()
}

// keptConns are the users' kept connections, by user: a slot each, made
// at the user's first keep and then only locked by that user, so a
// transaction takes and keeps its connection without a lock all users
// wait on and without allocating.
type keptConns struct {
	mu    sync.RWMutex
	slots map[int]*keptSlot
}

type keptSlot struct {
	mu sync.Mutex
	kc keptConn // nil: none kept
	// tr is the user's Trace, reset for each of its HTTP/3 transactions
	// (begin): nothing of a transaction's outlives it there, and a Trace
	// made for each was a tenth of the allocations of v6lab's own.
	tr load.Trace
}

// slot is user's slot; made when create is set, else nil when it has none.
func (k *keptConns) slot(user int, create bool) *keptSlot {
	k.mu.RLock()
	s := k.slots[user]
	k.mu.RUnlock()
	if s != nil || !create {
		return s
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if s = k.slots[user]; s == nil {
		if k.slots == nil {
			k.slots = map[int]*keptSlot{}
		}
		s = &keptSlot{}
		k.slots[user] = s
	}
	return s
}

// begin starts timing user's transaction: on the user's own Trace for
// HTTP/3 with kept connections on one family, else on a new one (HTTP/2
// connections hold their first transaction's Trace, the dual path's race
// may leave attempts running).
func (c *Client) begin(user int) *load.Trace {
	if !c.Keep || c.Version != Version3 || c.V3 != nil || c.Path.Kind().Dual {
		return load.Begin("http", c.Path)
	}
	tr := &c.kept.slot(user, true).tr
	tr.Reset("http", c.Path)
	return tr
}

// swap puts kc in the slot and returns what it held.
func (s *keptSlot) swap(kc keptConn) keptConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.kc
	s.kc = kc
	return old
}

// take removes and returns user's kept connection, when it is still open.
func (k *keptConns) take(user int) keptConn {
	s := k.slot(user, false)
	if s == nil {
		return nil
	}
	kc := s.swap(nil)
	if kc == nil {
		return nil
	}
	if !kc.alive() {
		kc.close()
		return nil
	}
	return kc
}

// keep keeps user's connection for its next transaction.
func (k *keptConns) keep(user int, kc keptConn) {
	if old := k.slot(user, true).swap(kc); old != nil && old != kc {
		old.close()
	}
}

// closeAll closes every kept connection.
func (k *keptConns) closeAll() {
	k.mu.RLock()
	defer k.mu.RUnlock()
	for _, s := range k.slots {
		if kc := s.swap(nil); kc != nil {
			kc.close()
		}
	}
}

// Close closes the users' kept connections (the experiment closes every
// probe after its last run).
func (c *Client) Close() error {
	c.kept.closeAll()
	c.shared.closeAll()
	return nil
}

// onKept runs a transaction on user's kept connection, when it has one
// (ok false: it has none, dial). negotiated names its protocol; empty, it
// is the kept connection's (h2 or h3: a version 3 race kept either).
func (c *Client) onKept(ctx context.Context, tr *load.Trace, user int, negotiated string) (result.Sample, bool) {
	if !c.Keep {
		return result.Sample{}, false
	}
	kc := c.kept.take(user)
	if kc == nil {
		return result.Sample{}, false
	}
	tr.Restart()
	var f fetched
	var err error
	switch k := kc.(type) {
	case *h2conn:
		negotiated = cmp.Or(negotiated, "h2")
		var h *h2conn
		f, h, err = c.h2fetch(ctx, tr, k, &k.reuse) // a write blocked, or a read, ends with ctx (watch)
		kc = h                                      // the new connection, after the server's GOAWAY
	case *h3Kept:
		negotiated = cmp.Or(negotiated, "h3")
		f, err = c.streams(ctx, tr, k, "GET")
	}
	if err != nil {
		kc.close()
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return tr.Fail(ctx, "io", err), true
		}
		return c.failStreams(ctx, tr, nil, err), true
	}
	c.kept.keep(user, kc)
	c.keptEnds(tr, kc)
	tr.S.Kept = true
	return c.done(tr, f, negotiated, "kept connection"), true
}

// keptEnds records a kept connection's two ends in its transaction's
// sample, as its first transaction's are, and on the dual path the family
// the race chose then: the figures of a kept connection stay the
// family's they were measured over.
func (c *Client) keptEnds(tr *load.Trace, kc keptConn) {
	var remote net.Addr
	switch kc := kc.(type) {
	case *h2conn:
		local := kc.conn.LocalAddr()
		if remote = kc.conn.RemoteAddr(); local == nil || remote == nil {
			return
		}
		if kc.local == "" { // made once a connection: the same every transaction
			kc.local, kc.remote = local.String(), remote.String()
		}
		tr.S.Local, tr.S.Remote = kc.local, kc.remote
	case *h3Kept:
		if kc.local == "" { // made once a connection: the same every transaction
			kc.local, kc.remote = kc.conn.LocalAddr().String(), kc.conn.RemoteAddr().String()
		}
		tr.S.Local, tr.S.Remote = kc.local, kc.remote
		remote = kc.conn.RemoteAddr()
	}
	if c.Path.Kind().Dual && remote != nil {
		if tr.S.Metrics == nil {
			tr.S.Metrics = map[string]float64{}
		}
		tr.S.Metrics["ipv6_won"] = won(path.AddrOf(remote).Is6())
		if c.V3 != nil { // a version 3 race chose the transport too
			_, quic := kc.(*h3Kept)
			tr.S.Metrics["quic_won"] = won(quic)
		}
	}
}
