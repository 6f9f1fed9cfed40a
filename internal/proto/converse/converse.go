// Package converse holds a conversation of commands and replies (SMTP's
// submission, IMAP's login and fetch) on one TCP connection pinned to a
// path, on the event loop: the loop's thread reads each reply and sends
// the next command, so no goroutine woken through Go's scheduler sits in
// the response time or in its wire time. The protocol supplies the
// conversation (an evloop.Continuer); this package does the rest of the
// transaction: the lookup, the connection, the phases and the stamps.
// Its Exchange (the lookup on the loop, then the connection) serves
// HTTP's pages as well.
//
// It imports evloop and the layers a protocol builds on.
package converse

import (
	"context"
	"errors"
	"io"
	"net/netip"

	"golang.org/x/sys/unix"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/evloop"
	"v6lab/internal/sock/path"
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
	x := evloop.Exchange{Remote: netip.AddrPortFrom(netip.Addr{}, uint16(s.Port)), Source: s.Source, Reply: conv, TCPInfo: load.WantsTCPInfo(ctx)}
	r := Exchange(ctx, eng, tr, s.Resolver, s.Host, s.Path, &x)
	if !r.Connected.IsZero() {
		tr.At(&tr.S.ConnectNS, r.Connected)
		tr.S.Local, tr.S.Remote = r.Local.String(), x.Remote.String()
	}
	if !r.FirstByte.IsZero() {
		tr.At(&tr.S.FirstByteNS, r.FirstByte) // the greeting's
	}
	tr.S.BytesIn, tr.S.BytesOut = r.BytesIn, r.BytesOut
	tr.TCP(ctx, r.TCP)
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
	tr.SYNAt(r.SYN)
	tr.ClientTurns(r.ClientTurns)
	if r.Reordered {
		tr.Reordered()
	}
	return tr, nil
}

// Exchange runs x on the event loop, host looked up first for path p on
// the loop too (a query to res's server): the loop's thread connects as
// soon as it has read the answer, so no goroutine woken through Go's
// scheduler sits between the answer and the SYN, and that turn is a
// client turn (evloop.Result.ClientTurns). The trace's start, DNS address,
// first packet out and resolve mark are the lookup's. x.Remote's port is
// kept and its address set to the answer's; a literal host is connected
// to as it is, with no lookup (the SYN then starts the wire time). A
// truncated answer is asked again over TCP (Go's dialer) and x run with
// its address. A failure has the result's Phase and Err set: "resolve"
// errors name the lookup.
func Exchange(ctx context.Context, eng *evloop.Engine, tr *load.Trace, res *path.Resolver, host string, p path.Path, x *evloop.Exchange) evloop.Result {
	q, r, ok := Prepare(tr, res, host, p, x)
	if !ok {
		return r
	}
	r = eng.Do(ctx, x)
	r, again := Settle(tr, q, x, r)
	if !again {
		return r
	}
	ip, err := q.OverTCP(ctx)
	tr.AddQueries(1)
	tr.Mark(&tr.S.ResolveNS)
	if err != nil {
		return evloop.Result{Phase: "resolve", Err: err}
	}
	x.Remote = netip.AddrPortFrom(ip, x.Remote.Port())
	return Direct(ctx, eng, tr, p, x)
}

// Prepare readies x for Exchange's first step on the loop: host's lookup
// (x.Lookup, with q the query), or a literal host's connection (q nil).
// ok false: it cannot be run, r says why.
func Prepare(tr *load.Trace, res *path.Resolver, host string, p path.Path, x *evloop.Exchange) (q *path.Query, r evloop.Result, ok bool) {
	fail := func(phase string, err error) (*path.Query, evloop.Result, bool) {
		return nil, evloop.Result{Phase: phase, Err: err}, false
	}
	q, ip, err := res.Prepare(host, p)
	if err != nil {
		return fail("resolve", err)
	}
	if q == nil {
		x.Remote = netip.AddrPortFrom(ip, x.Remote.Port())
		if err := (path.Dialer{Path: p, Source: x.Source}).Check(x.Remote.Addr()); err != nil {
			return fail("connect", err)
		}
		x.Cookie = tr.WantsSYN() && path.SYNReady()
		return nil, evloop.Result{}, true
	}
	if x.Source.IsValid() {
		if err := p.CheckAddr("source", x.Source); err != nil {
			return fail("connect", err)
		}
	}
	x.Lookup = &evloop.Lookup{Server: q.Server, Source: q.Source, Query: q.Wire, Answer: q.Answer, Stub: q.Stub, Start: tr.Restart,
		IPv6: q.Path.IsIPv6()}
	return q, evloop.Result{}, true
}

// Settle records in tr what the loop's run of a prepared x did of the
// lookup (q; nil: none): its address, first packet out, resolve mark and
// queries sent (dns_queries, load.MetricQueries).
// again: the answer was truncated, and the name is to be asked over TCP
// (q.OverTCP) before x is run again to the address it gives.
func Settle(tr *load.Trace, q *path.Query, x *evloop.Exchange, r evloop.Result) (evloop.Result, bool) {
	if q == nil {
		return r, false
	}
	x.Lookup = nil
	if r.LookupLocal.IsValid() {
		tr.S.DNSLocal = r.LookupLocal.String()
		tr.AddQueries(1 + r.Resent) // the query went: dns_queries
	}
	tr.Sent(r.FirstTx) // the query's: the wire time starts there
	if !r.Resolved.IsZero() {
		tr.At(&tr.S.ResolveNS, r.Resolved)
	}
	if r.Phase != "resolve" {
		return r, false
	}
	if !errors.Is(r.Err, path.ErrTruncated) {
		r.Err = q.Wrap(r.Err)
		return r, false
	}
	return r, true
}

// Direct runs x to x.Remote, checked against path p, with no lookup: when
// no lookup started the wire time, the connection's SYN does. An adopted
// socket (x.Adopt) is closed whatever happens.
func Direct(ctx context.Context, eng *evloop.Engine, tr *load.Trace, p path.Path, x *evloop.Exchange) evloop.Result {
	if err := (path.Dialer{Path: p, Source: x.Source}).Check(x.Remote.Addr()); err != nil {
		if x.Adopt > 0 {
			unix.Close(x.Adopt) // the loop would own it: nobody else will close it
		}
		return evloop.Result{Phase: "connect", Err: err}
	}
	x.Cookie = tr.WantsSYN() && path.SYNReady()
	return eng.Do(ctx, x)
}
