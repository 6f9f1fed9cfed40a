package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/proto/converse"
	"v6lab/internal/result"
	"v6lab/internal/sock/evloop"
	"v6lab/internal/sock/path"
)

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
	t := txns.Get().(*evTxn)
	defer txns.Put(t)
	c.newTxn(t, addr, adopt, load.WantsTCPInfo(ctx))
	var r evloop.Result
	switch {
	case host != "" && c.Path.Kind().Dual:
		t.x.Remote = netip.AddrPortFrom(netip.Addr{}, c.port())
		r = c.race(ctx, eng, tr, host, &t.x)
	case host != "":
		t.x.Remote = netip.AddrPortFrom(netip.Addr{}, c.port())
		r = converse.Exchange(ctx, eng, tr, c.Resolver, host, c.Path, &t.x)
	default:
		r = converse.Direct(ctx, eng, tr, c.Path, &t.x)
	}
	return c.endTxn(ctx, tr, t, r, adopt > 0)
}

// remoteName is ap as a string, kept for the next transaction to the
// same address (every one, but on the dual path).
func (c *Client) remoteName(ap netip.AddrPort) string {
	if n := c.lastRemote.Load(); n != nil && n.ap == ap {
		return n.s
	}
	n := &addrName{ap, ap.String()}
	c.lastRemote.Store(n)
	return n.s
}

type addrName struct {
	ap netip.AddrPort
	s  string
}

// mainRequest is the URL's request URI and the transaction's first
// request (Connection: close when no objects follow), kept for the next
// transaction of the same URL (no string built, no lookup, per
// transaction).
func (c *Client) mainRequest() (string, []byte) {
	closeAfter := !c.Objects
	if m := c.lastMain.Load(); m != nil && m.url == c.URL && m.closeAfter == closeAfter {
		return m.uri, m.req
	}
	uri := c.URL.RequestURI()
	m := &mainReq{url: c.URL, closeAfter: closeAfter, uri: uri, req: c.request(uri, closeAfter)}
	c.lastMain.Store(m)
	return m.uri, m.req
}

type mainReq struct {
	url        *url.URL
	closeAfter bool
	uri        string
	req        []byte
}

// evTxn is a transaction on the event loop: its exchange, and the parser
// of its replies (with a page's objects, the page exchange around it).
type evTxn struct {
	x    evloop.Exchange
	p    replyParser
	page pageExchange
}

var txns = sync.Pool{New: func() any { return new(evTxn) }}

// newTxn readies t for a transaction: GET the URL (Connection: close when
// no objects follow), its reply read by t's parser.
func (c *Client) newTxn(t *evTxn, addr netip.AddrPort, adopt int, tcpInfo bool) {
	maxBody := c.MaxBody
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	uri, req := c.mainRequest()
	t.p.reset(uri, maxBody, c.checks(), c.Expect)
	t.x = evloop.Exchange{Remote: addr, Source: c.Source, Request: req, Reply: &t.p, Adopt: adopt, TCPInfo: tcpInfo}
	if c.Objects {
		t.p.keep = true
		t.page = pageExchange{c: c, p: &t.p, maxBody: maxBody}
		t.x.Reply = &t.page
	}
}

// endTxn turns the loop's result of t into the transaction's sample
// (adopted: the connection was Go's dialer's, which set its phases).
func (c *Client) endTxn(ctx context.Context, tr *load.Trace, t *evTxn, r evloop.Result, adopted bool) result.Sample {
	p := &t.p
	if !r.Connected.IsZero() && !adopted { // an adopted socket's dial set them
		tr.At(&tr.S.ConnectNS, r.Connected)
		tr.S.Local, tr.S.Remote = r.Local.String(), c.remoteName(t.x.Remote)
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
		if c.Objects && t.page.pageDone {
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
	tr.SYNAt(r.SYN)
	tr.ClientTurns(r.ClientTurns)
	if r.Reordered {
		tr.Reordered()
	}
	objs := 0
	if c.Objects {
		objs = t.page.objs
	}
	return tr.Done(okMarker(objs))
}

// okMarkers are the markers of pages with few objects, made once.
var okMarkers = func() (m [17]string) {
	for i := range m {
		m[i] = "200 OK, " + strconv.Itoa(i) + " objects"
	}
	return m
}()

// okMarker is a completed page's marker: 200 OK and how many objects.
func okMarker(objs int) string {
	if objs >= 0 && objs < len(okMarkers) {
		return okMarkers[objs]
	}
	return "200 OK, " + strconv.Itoa(objs) + " objects"
}

// Sustain runs the users back to back on the event loop itself
// (load.Sustainer; evloop.Engine.Sustain): the loop that reads a
// transaction's last reply records its sample and starts the user's next
// transaction there and then, as wrk does, so no goroutine per user waits
// and wakes for each one. Every transaction is timed and recorded as Do's
// are. ok false: not for this client (another engine, the dual path).
func (c *Client) Sustain(ctx context.Context, us load.Users, duration, timeout time.Duration, emit func(result.Sample)) (int64, bool) {
	ev, err := c.useEvloop()
	if err != nil || !ev || c.goDial() || c.Path.Kind().Dual {
		return 0, false
	}
	eng, err := evloop.Default()
	if err != nil {
		return 0, false
	}
	host := c.URL.Hostname()
	end := time.Now().Add(duration)
	type slot struct {
		tr       *load.Trace
		trace    load.Trace // tr's, reused
		t        evTxn
		q        *path.Query // the transaction's lookup, until its result is in
		deadline time.Time
	}
	slots := make([]slot, us.N)
	var started atomic.Int64
	eng.Sustain(ctx, us.N, func(i int, prev *evloop.Result) *evloop.Exchange {
		s := &slots[i]
		if prev != nil {
			q := s.q
			s.q = nil
			r, again := converse.Settle(s.tr, q, &s.t.x, *prev)
			if again {
				// A truncated answer: asked again over TCP, in the loop
				// (it blocks it; no embedded server truncates), then the
				// connection to the address it gives.
				tctx, cancel := context.WithDeadline(ctx, s.deadline)
				ip, err := q.OverTCP(tctx)
				cancel()
				s.tr.AddQueries(1)
				s.tr.Mark(&s.tr.S.ResolveNS)
				if err == nil {
					s.t.x.Remote = netip.AddrPortFrom(ip, s.t.x.Remote.Port())
					s.t.x.Cookie = s.tr.WantsSYN() && path.SYNReady()
					return &s.t.x
				}
				r = evloop.Result{Phase: "resolve", Err: err}
			}
			// The run's context classifies a failure (a deadline the
			// loop enforced is ErrTimeout: context.DeadlineExceeded).
			smp := c.endTxn(ctx, s.tr, &s.t, r, false)
			smp.User = us.First + i
			emit(smp)
		}
		for ctx.Err() == nil && time.Now().Before(end) {
			s.trace.Reset("http", c.Path)
			s.tr = &s.trace
			c.newTxn(&s.t, netip.AddrPort{}, 0, load.WantsTCPInfo(ctx))
			s.t.x.Remote = netip.AddrPortFrom(netip.Addr{}, c.port())
			q, r, ok := converse.Prepare(s.tr, c.Resolver, host, c.Path, &s.t.x)
			started.Add(1)
			if !ok {
				smp := c.endTxn(ctx, s.tr, &s.t, r, false)
				smp.User = us.First + i
				emit(smp)
				continue
			}
			s.q = q
			s.deadline = time.Now().Add(timeout)
			s.t.x.Deadline = s.deadline
			return &s.t.x
		}
		return nil
	})
	return started.Load(), true
}

// pageExchange is a page and then its embedded objects, one request after
// another on the event loop (evloop.Continuer).
type pageExchange struct {
	c        *Client
	p        *replyParser
	maxBody  int64
	refs     []string
	reqs     [][]byte // refs' requests (Client.objectRequests)
	next     int      // the next object's index in refs
	objs     int      // objects fetched
	pageDone bool     // p now reads objects
	eof      bool     // the server closed the connection
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
			x.refs, x.reqs = x.c.objectRequests(x.p.page)
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
	return x.reqs[x.next-1], reconnect
}
