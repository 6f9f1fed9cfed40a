package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/proto/converse"
	"v6lab/internal/result"
	"v6lab/internal/sock/evloop"
)

var parsers = sync.Pool{New: func() any { return new(replyParser) }}

// handOver runs the transaction's requests on the event loop over raw, a
// connection Go's dialer made (EngineGoDial, the dual path).
func (c *Client) handOver(ctx context.Context, tr *load.Trace, raw net.Conn, addr netip.AddrPort) result.Sample {
	fd, err := detach(raw)
	if err != nil {
		load.CloseAbort(raw)
		return tr.Fail(ctx, "connect", err)
	}
	return c.doEvloop(ctx, tr, "", addr, fd)
}

// detach takes a Go connection's socket for the event loop
// (evloop.Exchange.Adopt): a duplicate of its descriptor, the Go side
// closed, which sends nothing (the socket lives on in the duplicate).
func detach(c net.Conn) (int, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("http: %T has no socket to hand to the event loop", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, os.NewSyscallError("fcntl", derr)
	}
	c.Close()
	return fd, nil
}

// doEvloop runs the transaction on the event loop: host's lookup, when
// host is set (converse.Exchange: the loop connects as soon as it reads the
// answer), or else addr (adopt, when above 0: a socket already connected
// to addr, see handOver); connect pinned to the path, GET (with
// Connection: close on the last request), read the reply to its end,
// then each embedded object's in turn on the same connection (a new one
// when the server closes), close with a reset.
func (c *Client) doEvloop(ctx context.Context, tr *load.Trace, host string, addr netip.AddrPort, adopt int) result.Sample {
	eng, err := evloop.Default()
	if err != nil {
		if adopt > 0 {
			unix.Close(adopt)
		}
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
	x := evloop.Exchange{Remote: addr, Source: c.Source, Request: c.request(uri, !c.Objects), Reply: p, Adopt: adopt, TCPInfo: load.WantsTCPInfo(ctx)}
	var page *pageExchange
	if c.Objects {
		p.keep = true
		page = &pageExchange{c: c, p: p, maxBody: maxBody}
		x.Reply = page
	}
	var r evloop.Result
	switch {
	case host != "" && c.Path.Kind().Dual:
		x.Remote = netip.AddrPortFrom(netip.Addr{}, c.port())
		r = c.race(ctx, eng, tr, host, &x)
	case host != "":
		x.Remote = netip.AddrPortFrom(netip.Addr{}, c.port())
		r = converse.Exchange(ctx, eng, tr, c.Resolver, host, c.Path, &x)
	default:
		r = converse.Direct(ctx, eng, tr, c.Path, &x)
	}
	if !r.Connected.IsZero() && adopt <= 0 { // an adopted socket's dial set them
		tr.At(&tr.S.ConnectNS, r.Connected)
		tr.S.Local, tr.S.Remote = r.Local.String(), x.Remote.String()
	}
	if !r.FirstByte.IsZero() {
		tr.At(&tr.S.FirstByteNS, r.FirstByte)
	}
	tr.S.BytesIn, tr.S.BytesOut = r.BytesIn, r.BytesOut
	tr.TCP(ctx, r.TCP)
	if r.Err != nil {
		phase := r.Phase
		if phase == "reply" && errors.Is(r.Err, io.ErrUnexpectedEOF) {
			phase = "io"
		}
		err := r.Err
		if page != nil && page.pageDone {
			what := "object "
			if r.Phase == "connect" {
				what = "reconnect for object "
			}
			err = fmt.Errorf("%s%s: %w", what, p.uri, err)
		}
		return tr.Fail(ctx, phase, err)
	}
	// The socket's family is the path's by construction; the check keeps
	// the promise every other dialer keeps.
	if err := c.Path.CheckAddr("local", r.Local.Addr()); err != nil {
		return tr.Fail(ctx, "connect", err)
	}
	if c.Sum {
		if tr.S.Metrics == nil {
			tr.S.Metrics = map[string]float64{}
		}
		maps.Copy(tr.S.Metrics, bodyMetrics(&p.check)) // beside the race's, on the dual path
	}
	tr.Received(r.LastRead, r.LastRx) // the end, and the wire's, at the last bytes
	tr.FirstReceived(r.FirstRx)
	tr.SYN(r.Cookie)
	tr.ClientTurns(r.ClientTurns)
	objs := 0
	if page != nil {
		objs = page.objs
	}
	return tr.Done("200 OK, " + strconv.Itoa(objs) + " objects")
}

// pageExchange is a page and then its embedded objects, one request after
// another on the event loop (evloop.Continuer).
type pageExchange struct {
	c        *Client
	p        *replyParser
	maxBody  int64
	refs     []string
	next     int  // the next object's index in refs
	objs     int  // objects fetched
	pageDone bool // p now reads objects
	eof      bool // the server closed the connection
}

func (x *pageExchange) Feed(b []byte, eof bool) (bool, error) {
	x.eof = x.eof || eof
	return x.p.Feed(b, eof)
}

// Next is the request for the next object, after the page's reply or an
// object's; reconnect when the server closes after the reply just read.
func (x *pageExchange) Next() ([]byte, bool) {
	if !x.pageDone {
		x.pageDone = true
		if x.p.html {
			x.refs = x.c.objectsOf(x.p.page)
		}
	} else {
		x.objs++
	}
	if x.next >= len(x.refs) {
		return nil, false
	}
	uri := x.refs[x.next]
	x.next++
	reconnect := x.p.closes || x.eof
	x.eof = false
	x.p.reset(uri, x.maxBody, false, content.Unknown)
	return x.c.request(uri, x.next == len(x.refs)), reconnect
}
