package http

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// HTTP/2 transactions: v6lab looks the name up and connects pinned to the
// path as for HTTP/1.1 (TLS with ALPN h2 alone, or h2c in the clear), then
// speaks HTTP/2 over it with its own framing (h2conn): the page and its
// objects, each a stream of that one connection.

// doH2 is one HTTP/2 transaction.
func (c *Client) doH2(ctx context.Context, tr *load.Trace, user int) result.Sample {
	if c.Streams() > 1 {
		return c.doShared(ctx, tr, user)
	}
	if s, ok := c.onKept(ctx, tr, user, c.h2Name()); ok {
		return s
	}
	return c.dialH2(ctx, tr, user)
}

// dialH2 is an HTTP/2 transaction on a new connection (kept for the
// user's next ones, with keepalive).
func (c *Client) dialH2(ctx context.Context, tr *load.Trace, user int) result.Sample {
	conn, raw, failed := c.openH2(ctx, tr)
	if failed != nil {
		return *failed
	}
	kept := false
	defer func() {
		if !kept {
			load.CloseAbort(raw)
		}
	}()
	if !c.Keep {
		stop := load.Deadline(ctx, raw)
		defer stop()
	}
	st := stampsOf(conn)
	negotiated := "h2c"
	if tc, ok := conn.(*tls.Conn); ok {
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			return tr.Fail(ctx, "protocol", fmt.Errorf("the server did not choose h2 by ALPN (it chose %s): it does not speak HTTP/2 over TLS", orNone(p)))
		}
		negotiated = "h2"
	}
	h0 := newH2Conn(conn, raw)
	f, h, err := c.h2fetch(ctx, tr, h0, &h0.reuse)
	st.record(tr)
	if h != h0 { // the server's GOAWAY: the rest went on a new connection
		recordToo(tr, stampsOf(h.conn))
		if !c.Keep || err != nil {
			defer h.close()
		}
	}
	if c.Keep && err == nil {
		kept = h == h0
		c.keepH2(user, h)
	}
	if err != nil {
		if negotiated == "h2c" && st != nil {
			switch st.said() {
			case "http/1":
				err = fmt.Errorf("the server answered HTTP/2's connection preface with HTTP/1.1: it does not speak h2c (HTTP/2 in the clear by prior knowledge); give an https:// url for h2 by ALPN, or http_version 1.1 (%w)", err)
			case "tls":
				err = fmt.Errorf("the server answered HTTP/2's connection preface with a TLS alert: it speaks TLS on this port, give an https:// url (%w)", err)
			case "":
				if st.in.Load() == 0 {
					err = fmt.Errorf("the server closed the connection without a byte in answer to HTTP/2's connection preface: it does not speak h2c (HTTP/2 in the clear by prior knowledge); if it speaks TLS on this port give an https:// url, else http_version 1.1 (%w)", err)
				}
			case "text":
				err = fmt.Errorf("the server answered HTTP/2's connection preface with text (its first bytes %s…), not HTTP/2's SETTINGS: it does not speak h2c (HTTP/2 in the clear by prior knowledge); give an https:// url for h2 by ALPN, or http_version 1.1 (%w)", st.firstBytes(), err)
			}
		}
		return c.failStreams(ctx, tr, st, err)
	}
	return c.done(tr, f, negotiated, "")
}

// openH2 connects for an HTTP/2 transaction: the dual path's race, or the
// pinned path's lookup and dial (failed, when not nil, is the sample of a
// connection that could not be made).
func (c *Client) openH2(ctx context.Context, tr *load.Trace) (conn, raw net.Conn, failed *result.Sample) {
	fail := func(phase string, err error) (net.Conn, net.Conn, *result.Sample) {
		s := tr.Fail(ctx, phase, err)
		return nil, nil, &s
	}
	var err error
	if c.Path.Kind().Dual {
		if conn, raw, err = c.dialEyeballs(ctx, tr); err != nil {
			return fail("connect", err)
		}
		return conn, raw, nil
	}
	host := c.URL.Hostname()
	ip, err := tr.Lookup(ctx, c.Resolver, host, c.Path)
	if err != nil {
		return fail("resolve", err)
	}
	if _, notLiteral := netip.ParseAddr(strings.Trim(host, "[]")); notLiteral != nil {
		tr.Mark(&tr.S.ResolveNS)
	}
	if conn, raw, err = c.dial(ctx, tr, netip.AddrPortFrom(ip, c.port())); err != nil {
		if strings.Contains(err.Error(), "no application protocol") {
			err = fmt.Errorf("the server refused ALPN h2: it does not speak HTTP/2 over TLS (%w)", err)
		}
		return fail("connect", err)
	}
	return conn, raw, nil
}

// h2fetch fetches the page on h and then, with objects, every object it
// links at once, each a stream of the one connection, as a browser does
// (as many at once as the server allows). It marks the first byte of the
// page's reply, and the end of the last reply (the transaction's end).
//
// The requests the server did not process (a GOAWAY's, a REFUSED_STREAM,
// a kept connection's close while idle) go again on a new connection of
// the same path (h2run): the connection h2fetch returns is the one it
// ended on. r is the runner's (h's own, unless h is shared).
func (c *Client) h2fetch(ctx context.Context, tr *load.Trace, h *h2conn, r *h2reuse) (fetched, *h2conn, error) {
	var f fetched
	h.newTx()
	if c.checks() {
		f.check = content.NewCheck(c.Expect)
	}
	maxBody := c.MaxBody
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	uri := c.URL.RequestURI()
	stop := h.watch(ctx, r)
	ss := r.pageStream(h2stream{uri: uri, block: c.h2Block(uri), keep: c.Objects, check: f.check, maxBody: maxBody})
	page := ss[0]
	last, err := c.h2run(ctx, tr, &h, ss, &f, r)
	if !page.first.IsZero() {
		tr.At(&tr.S.FirstByteNS, page.first)
	}
	if err == nil && c.Objects && page.html {
		refs := c.objectsOf(page.body)
		objs, ss := r.objectStreams(len(refs))
		for i, ref := range refs {
			objs[i] = h2stream{uri: ref, block: c.h2Block(ref), object: true, maxBody: maxBody}
		}
		if len(ss) > 0 {
			last, err = c.h2run(ctx, tr, &h, ss, &f, r)
		}
		f.objects = len(refs)
	}
	if !stop() && err == nil { // ctx ended with the transaction: so did its connection's deadline
		err = fmt.Errorf("HTTP/2: %w", context.Cause(ctx))
		h.fail(err)
	}
	if err == nil {
		tr.Received(last, time.Time{}) // the transaction ends at its last frame read
	}
	return f, h, err
}

// h2run runs ss on *hp. The streams the server did not process (RFC 9113
// §6.8, §8.7) go again on a new connection of the same path, dialed as
// the first was: *hp becomes the new connection, the old one closed, and
// f counts the requests and the connections. A new connection's server
// that processes none of them fails the transaction (a server that
// refuses everything cannot loop it); one that processes some (a limit
// of requests a connection below one page's, as nginx's
// keepalive_requests 1) gets the rest on a next one, as a browser does:
// at most as many new connections as the transaction has requests.
//
// A shared connection the server sent GOAWAY on is left to its other
// transactions (retired), not closed.
func (c *Client) h2run(ctx context.Context, tr *load.Trace, hp **h2conn, ss []*h2stream, f *fetched, r *h2reuse) (time.Time, error) {
	for {
		last, err := (*hp).run(ctx, ss, r)
		again := asAgain(err)
		if again == nil {
			return last, err
		}
		if f.againConns > 0 && (*hp).answered == 0 {
			return last, fmt.Errorf("%s (on new connection %d, which answered none of the transaction's requests: no further one)", again.why, f.againConns)
		}
		nh, err := c.againOn(ctx, tr, *hp, r)
		if err != nil {
			return last, fmt.Errorf("%s; a new connection for its %d unprocessed requests failed: %w", again.why, len(again.ss), err)
		}
		if f.againConns > 0 && !nh.isShared() { // not the transaction's first: its counts go on in the new one's
			nh.carry(*hp)
		}
		r.on.Store(nh) // for watch
		if (*hp).isShared() {
			(*hp).retire()
		} else {
			(*hp).close()
		}
		*hp = nh
		f.again += len(again.ss)
		f.againConns++
		if !strings.Contains(f.againAfter, again.what) {
			f.againAfter = strings.TrimPrefix(f.againAfter+" and "+again.what, " and ")
		}
		for _, s := range again.ss {
			s.unsent()
		}
		ss = again.ss
	}
}

// asAgain is err's h2Again, or nil.
func asAgain(err error) *h2Again {
	if err == nil {
		return nil // no allocation: again escapes, made only here below
	}
	var again *h2Again
	if !errors.As(err, &again) {
		return nil
	}
	return again
}

// carry adds old's byte counts to h's: old is a connection of the
// transaction's that is neither its first (the trace records that one)
// nor its last (h, recorded with recordToo).
func (h *h2conn) carry(old *h2conn) {
	from, to := stampsOf(old.conn), stampsOf(h.conn)
	if from != nil && to != nil {
		to.in.Add(from.in.Load())
		to.out.Add(from.out.Load())
	}
}

// redialH2 connects again to old's server, pinned to the same family and
// over the same TLS configuration (ALPN h2), for a transaction's requests
// old's server did not process. It marks no phase: the transaction's
// connect, handshake and first packet are its first connection's (a kept
// connection's transaction has none; its time includes this one).
func (c *Client) redialH2(ctx context.Context, tr *load.Trace, old *h2conn) (*h2conn, error) {
	to := netip.AddrPortFrom(path.AddrOf(old.raw.RemoteAddr()), c.port())
	raw, err := path.Dialer{Path: path.OfAddr(to.Addr()), Source: c.Source}.Dial(ctx, "tcp", to)
	if err != nil {
		return nil, err
	}
	tr.Watch(ctx, raw)
	tlsNS := tr.S.TLSNS
	conn, raw, err := c.tlsOver(ctx, tr, stampH2(raw), raw)
	tr.S.TLSNS = tlsNS
	if err != nil {
		return nil, err
	}
	if tc, ok := conn.(*tls.Conn); ok {
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			load.CloseAbort(raw)
			return nil, fmt.Errorf("the server did not choose h2 by ALPN (it chose %s)", orNone(p))
		}
	}
	return newH2Conn(conn, raw), nil
}

// recordToo adds a second connection's stamps and byte counts to the
// trace's (record gave it the first's).
func recordToo(tr *load.Trace, st *syncStamp) {
	if st == nil {
		return
	}
	in, out := tr.S.BytesIn, tr.S.BytesOut
	st.record(tr)
	tr.S.BytesIn += in
	tr.S.BytesOut += out
}

// h2Block is the HPACK block of a GET of uri: made once per URI and kept
// (at most maxRequests of them, with HTTP/1.1's requests), never changed
// once made.
func (c *Client) h2Block(uri string) []byte {
	k := h2Key(uri)
	if b, ok := c.requests.Load(k); ok {
		return b.([]byte)
	}
	ua := c.UserAgent
	if ua == "" {
		ua = "v6lab"
	}
	b := requestBlock(c.URL.Scheme == "https", c.URL.Host, uri, ua)
	if c.nrequests.Add(1) <= maxRequests {
		c.requests.Store(k, b)
	}
	return b
}

// h2Key keys an HTTP/2 request block among the client's requests.
type h2Key string

// h2Name is what HTTP/2 transactions speak: h2 over TLS, h2c in the clear.
func (c *Client) h2Name() string {
	if c.URL.Scheme == "https" {
		return "h2"
	}
	return "h2c"
}

func orNone(s string) string {
	if s == "" {
		return "none: HTTP/1.1"
	}
	return s
}

// failStreams ends a failed transaction of the streams' versions.
func (c *Client) failStreams(ctx context.Context, tr *load.Trace, st *syncStamp, err error) result.Sample {
	st.record(tr)
	phase := "reply"
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		phase = "io"
	}
	return tr.Fail(ctx, phase, err)
}

// stampRaw reads a transaction's connection with the kernel's receive
// stamps: for HTTP/1.1 through the trace (its reads are the
// transaction's own), for HTTP/2 through a syncStamp (its connection,
// h2conn, is read by each transaction in turn and by alive).
func (c *Client) stampRaw(tr *load.Trace, raw net.Conn) net.Conn {
	if c.Version != Version2 {
		return tr.Turns(tr.Stamp(raw))
	}
	st := stampH2(raw)
	if st.sc != nil && tr.WantsSYN() && path.SYNReady() {
		tr.SYN(st.sc.Cookie()) // no lookup: the wire time starts at the SYN
	}
	return st
}

// stampH2 reads raw, an HTTP/2 connection, through a syncStamp.
func stampH2(raw net.Conn) *syncStamp {
	if sc, ok := path.Stamped(raw); ok {
		return &syncStamp{Conn: sc, sc: sc}
	}
	return &syncStamp{Conn: raw}
}

// syncStamp is a connection read by the transactions of a kept HTTP/2
// connection in turn: it keeps what the trace needs (the kernel's receive
// stamps of the first and last bytes, bytes each way, the first bytes
// themselves) where the transaction can read them at any time.
type syncStamp struct {
	net.Conn
	sc          *path.StampedConn
	first, last atomic.Int64
	in, out     atomic.Int64
	mu          sync.Mutex // guards head
	head        []byte
	headFull    atomic.Bool // head holds its 8 bytes: reads need no lock
	noWait      atomic.Bool // reads return os.ErrDeadlineExceeded at once, the socket untouched (peekSealed)
}

func (s *syncStamp) Read(p []byte) (int, error) {
	if s.noWait.Load() {
		return 0, os.ErrDeadlineExceeded
	}
	n, err := s.Conn.Read(p)
	if n > 0 {
		if s.sc != nil && !s.sc.LastRx.IsZero() {
			s.last.Store(s.sc.LastRx.UnixNano())
			s.first.CompareAndSwap(0, s.sc.FirstRx.UnixNano())
		}
		if !s.headFull.Load() {
			s.mu.Lock()
			s.head = append(s.head, p[:min(n, 8-len(s.head))]...)
			s.headFull.Store(len(s.head) == 8)
			s.mu.Unlock()
		}
		s.in.Add(int64(n))
	}
	return n, err
}

func (s *syncStamp) Write(p []byte) (int, error) {
	n, err := s.Conn.Write(p)
	s.out.Add(int64(n))
	return n, err
}

// peekSealed says whether the TLS connection over s holds a whole record
// it read off the socket (through br, the reader over it): a Peek of one
// byte that may take what TLS holds but not read the socket. crypto/tls
// takes the read's os.ErrDeadlineExceeded as temporary (a net.Error whose
// Temporary is true: not kept as the connection's error) and keeps what
// it had read of a record, so the connection reads on after it; bufio
// hands the error back once and keeps nothing of it. No system call, no
// deadline, no timer.
func (s *syncStamp) peekSealed(br *bufio.Reader) bool {
	s.noWait.Store(true)
	_, err := br.Peek(1)
	s.noWait.Store(false)
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// said names what the server's first bytes were, when they were not
// HTTP/2: "http/1" (a reply), "tls" (a TLS record: an alert), or "".
func (s *syncStamp) said() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case bytes.HasPrefix(s.head, []byte("HTTP/")):
		return "http/1"
	case len(s.head) >= 3 && s.head[0] >= 0x14 && s.head[0] <= 0x17 && s.head[1] == 3:
		return "tls"
	case len(s.head) >= 4 && printable(s.head):
		return "text" // an HTTP/2 frame starts with its length's high byte, 0 in practice
	}
	return ""
}

// printable says whether b is text: printable ASCII and white space.
func printable(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 || c > 0x7e) && c != '\r' && c != '\n' && c != '\t' {
			return false
		}
	}
	return true
}

// firstBytes are the first bytes the server sent, quoted.
func (s *syncStamp) firstBytes() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%q", s.head)
}

// record gives the trace the connection's stamps and byte counts (for a
// TLS connection, its records: what the wire carried).
func (s *syncStamp) record(tr *load.Trace) {
	if s == nil {
		return
	}
	if f := s.first.Load(); f != 0 {
		tr.FirstReceived(time.Unix(0, f))
	}
	if l := s.last.Load(); l != 0 {
		tr.Received(time.Time{}, time.Unix(0, l))
	}
	tr.S.BytesIn, tr.S.BytesOut = s.in.Load(), s.out.Load()
}

// stampsOf finds the syncStamp under a connection (beneath its TLS).
func stampsOf(c net.Conn) *syncStamp {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	s, _ := c.(*syncStamp)
	return s
}
