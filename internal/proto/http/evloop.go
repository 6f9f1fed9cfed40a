package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"

	"v6lab/internal/evloop"
	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/result"
)

var parsers = sync.Pool{New: func() any { return new(replyParser) }}

// doEvloop runs the transaction's connection on the event loop: connect
// pinned to the path, GET with Connection: close, read the reply to its
// end, close with a reset.
func (c *Client) doEvloop(ctx context.Context, tr *load.Trace, addr netip.AddrPort) result.Sample {
	if err := (path.Dialer{Path: c.Path, Source: c.Source}).Check(addr.Addr()); err != nil {
		return tr.Fail(ctx, "connect", err)
	}
	eng, err := evloop.Default()
	if err != nil {
		return tr.Fail(ctx, "connect", err)
	}
	maxBody := c.MaxBody
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	uri := c.URL.RequestURI()
	p := parsers.Get().(*replyParser)
	defer parsers.Put(p)
	p.reset(uri, maxBody, c.checks(), c.Expect)
	x := evloop.Exchange{Remote: addr, Source: c.Source, Request: c.request(uri, true), Reply: p}
	r := eng.Do(ctx, &x)
	if !r.Connected.IsZero() {
		tr.At(&tr.S.ConnectNS, r.Connected)
		tr.S.Local, tr.S.Remote = r.Local.String(), addr.String()
	}
	if !r.FirstByte.IsZero() {
		tr.At(&tr.S.FirstByteNS, r.FirstByte)
	}
	tr.S.BytesIn, tr.S.BytesOut = r.BytesIn, r.BytesOut
	if r.Err != nil {
		phase := r.Phase
		if phase == "reply" && errors.Is(r.Err, io.ErrUnexpectedEOF) {
			phase = "io"
		}
		return tr.Fail(ctx, phase, r.Err)
	}
	// The socket's family is the path's by construction; the check keeps
	// the promise every other dialer keeps.
	if !c.Path.Accepts(r.Local.Addr()) {
		return tr.Fail(ctx, "connect", fmt.Errorf("local address %s is not %s: %w", r.Local, c.Path.Family(), path.ErrFamily))
	}
	if c.Sum {
		tr.S.Metrics = bodyMetrics(&p.check)
	}
	tr.Received(r.LastRead, r.LastRx) // the end, and the wire's, at the last bytes
	return tr.Done("200 OK, 0 objects")
}
