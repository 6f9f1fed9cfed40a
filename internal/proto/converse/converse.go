// Package converse holds a conversation of commands and replies (SMTP's
// submission, IMAP's login and fetch) on one TCP connection pinned to a
// path, on the event loop: the loop's thread reads each reply and sends
// the next command, so no goroutine woken through Go's scheduler sits in
// the response time or in its wire time. The protocol supplies the
// conversation (an evloop.Continuer); this package does the rest of the
// transaction: the lookup, the connection, the phases and the stamps.
//
// It imports evloop and the layers a protocol builds on.
package converse

import (
	"context"
	"errors"
	"io"
	"net/netip"

	"v6lab/internal/evloop"
	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/result"
)

// Server is where a conversation goes, and over what.
type Server struct {
	Host     string
	Port     int
	Path     path.Path
	Source   netip.Addr
	Resolver *path.Resolver
}

// Run begins a transaction of protocol proto, looks the server up,
// connects pinned to its path and holds conv on the event loop; the
// server speaks first. It returns the trace to end the transaction with
// (Done), or the failed sample: a Feed error that wraps refused is a
// "protocol" failure, a connection that closed early an "io" one.
func Run(ctx context.Context, proto string, s Server, conv evloop.Continuer, refused error) (*load.Trace, *result.Sample) {
	fail := func(tr *load.Trace, phase string, err error) (*load.Trace, *result.Sample) {
		smp := tr.Fail(ctx, phase, err)
		return tr, &smp
	}
	eng, err := evloop.Default() // before the start: the loop's first start is not the network's
	tr := load.Begin(proto, s.Path)
	if err != nil {
		return fail(tr, "connect", err)
	}
	ip, err := tr.Lookup(ctx, s.Resolver, s.Host, s.Path)
	tr.Mark(&tr.S.ResolveNS)
	if err != nil {
		return fail(tr, "resolve", err)
	}
	addr := netip.AddrPortFrom(ip, uint16(s.Port))
	if err := (path.Dialer{Path: s.Path, Source: s.Source}).Check(addr.Addr()); err != nil {
		return fail(tr, "connect", err)
	}
	x := evloop.Exchange{Remote: addr, Source: s.Source, Reply: conv, Cookie: tr.WantsSYN() && path.SYNReady()}
	r := eng.Do(ctx, &x)
	if !r.Connected.IsZero() {
		tr.At(&tr.S.ConnectNS, r.Connected)
		tr.S.Local, tr.S.Remote = r.Local.String(), addr.String()
	}
	if !r.FirstByte.IsZero() {
		tr.At(&tr.S.FirstByteNS, r.FirstByte) // the greeting's
	}
	tr.S.BytesIn, tr.S.BytesOut = r.BytesIn, r.BytesOut
	if r.Err != nil {
		phase := r.Phase
		switch {
		case phase == "reply" && errors.Is(r.Err, refused):
			phase = "protocol"
		case phase == "reply" && errors.Is(r.Err, io.ErrUnexpectedEOF):
			phase = "io"
		}
		return fail(tr, phase, r.Err)
	}
	if err := s.Path.CheckAddr("local", r.Local.Addr()); err != nil {
		return fail(tr, "connect", err)
	}
	tr.Received(r.LastRead, r.LastRx) // the end, and the wire's, at the last reply
	tr.FirstReceived(r.FirstRx)
	tr.SYN(r.Cookie)
	tr.ClientTurns(r.ClientTurns)
	return tr, nil
}
