package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// HTTP/2 transactions: v6lab looks the name up and connects pinned to the
// path as for HTTP/1.1 (TLS with ALPN h2 alone, or h2c in the clear), then
// hands its connection to Go's net/http (Transport.NewClientConn) for
// the page and its objects, each a stream of that one connection.

// h2Transport makes HTTP/2 client connections over a connection the
// transaction made itself, never one of its own.
type h2Transport struct {
	once sync.Once
	t    *nethttp.Transport
}

// givenConn carries a transaction's connection to the transport's dial.
type givenConn struct{}

func (h *h2Transport) get() *nethttp.Transport {
	h.once.Do(func() {
		given := func(ctx context.Context, _, _ string) (net.Conn, error) {
			if c, ok := ctx.Value(givenConn{}).(net.Conn); ok {
				return c, nil
			}
			return nil, errors.New("http: no connection for HTTP/2")
		}
		var ps nethttp.Protocols
		ps.SetHTTP2(true)
		ps.SetUnencryptedHTTP2(true) // h2c by prior knowledge, for http://
		h.t = &nethttp.Transport{DialContext: given, DialTLSContext: given, Protocols: &ps,
			DisableCompression: true, MaxResponseHeaderBytes: MaxHeaderBytes}
	})
	return h.t
}

// doH2 is one HTTP/2 transaction.
func (c *Client) doH2(ctx context.Context, tr *load.Trace, user int) result.Sample {
	if s, ok := c.onKept(ctx, tr, user, c.h2Name()); ok {
		return s
	}
	var conn, raw net.Conn
	var err error
	if c.Path.Kind().Dual {
		if conn, raw, err = c.dialEyeballs(ctx, tr); err != nil {
			return tr.Fail(ctx, "connect", err)
		}
	} else {
		host := c.URL.Hostname()
		ip, err := tr.Lookup(ctx, c.Resolver, host, c.Path)
		if err != nil {
			return tr.Fail(ctx, "resolve", err)
		}
		if _, notLiteral := netip.ParseAddr(strings.Trim(host, "[]")); notLiteral != nil {
			tr.Mark(&tr.S.ResolveNS)
		}
		if conn, raw, err = c.dial(ctx, tr, netip.AddrPortFrom(ip, c.port())); err != nil {
			if strings.Contains(err.Error(), "no application protocol") {
				err = fmt.Errorf("the server refused ALPN h2: it does not speak HTTP/2 over TLS (%w)", err)
			}
			return tr.Fail(ctx, "connect", err)
		}
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
	bc := newBatchConn(conn)
	defer func() {
		if !kept {
			bc.detach() // after cc.Close, deferred below (so run before)
		}
	}()
	cc, err := c.h2.get().NewClientConn(context.WithValue(context.WithoutCancel(ctx), givenConn{}, net.Conn(bc)), c.URL.Scheme, hostPort(c.URL, c.port()))
	if err != nil {
		return c.failStreams(ctx, tr, st, err)
	}
	f, err := c.streams(ctx, tr, cc, nethttp.MethodGet, bc)
	st.record(tr)
	if c.Keep && err == nil {
		kept = true
		c.kept.keep(user, h2Kept{cc, raw, bc})
	} else {
		defer cc.Close()
	}
	if err != nil {
		if negotiated == "h2c" && st != nil {
			switch st.said() {
			case "http/1":
				err = fmt.Errorf("the server answered HTTP/2's connection preface with HTTP/1.1: it does not speak h2c (HTTP/2 in the clear by prior knowledge); give an https:// url for h2 by ALPN, or http_version 1.1 (%w)", err)
			case "tls":
				err = fmt.Errorf("the server answered HTTP/2's connection preface with a TLS alert: it speaks TLS on this port, give an https:// url (%w)", err)
			}
		}
		return c.failStreams(ctx, tr, st, err)
	}
	return c.done(tr, f, negotiated, "")
}

// h2Name is what HTTP/2 transactions speak: h2 over TLS, h2c in the clear.
func (c *Client) h2Name() string {
	if c.URL.Scheme == "https" {
		return "h2"
	}
	return "h2c"
}

// h2Kept is a user's kept HTTP/2 connection.
type h2Kept struct {
	*nethttp.ClientConn
	raw net.Conn
	bc  *batchConn
}

func (k h2Kept) batch() *batchConn { return k.bc }

func (k h2Kept) alive() bool { return k.Err() == nil }
func (k h2Kept) close() {
	k.ClientConn.Close()
	load.CloseAbort(k.raw)
	k.bc.detach()
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
// transaction's own), for HTTP/2 through a syncStamp, as net/http reads
// it on a goroutine of its own.
func (c *Client) stampRaw(tr *load.Trace, raw net.Conn) net.Conn {
	if c.Version != Version2 {
		return tr.Turns(tr.Stamp(raw))
	}
	sc, ok := path.Stamped(raw)
	if !ok {
		return &syncStamp{Conn: raw}
	}
	if tr.WantsSYN() && path.SYNReady() {
		tr.SYN(sc.Cookie()) // no lookup: the wire time starts at the SYN
	}
	return &syncStamp{Conn: sc, sc: sc}
}

// syncStamp is a connection read on another goroutine than the
// transaction's: it keeps what the trace needs (the kernel's receive
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
}

func (s *syncStamp) Read(p []byte) (int, error) {
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
	}
	return ""
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
