package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	nethttp "net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"v6lab/internal/gen/content"
	"v6lab/internal/sock/path"
)

// The embedded server's HTTP/2 and HTTP/3. HTTP/1.1 stays v6lab's own
// (plain.go); a connection that negotiates h2 by ALPN, or opens with
// h2c's preface in the clear, is handed to Go's net/http, and HTTP/3 is
// quic-go's on a UDP socket per address, the TCP listeners' port, each
// pinned to its address's family. All three answer the same routes
// (plainServer.route).

// h2cPreface is what an HTTP/2 client sends first in the clear (RFC 9113
// §3.4), up to its blank line: the plain server finds its "header" there.
var h2cPreface = []byte("PRI * HTTP/2.0\r\n\r\n")

// versions are a server's HTTP/2 (net/http, over connections handed to
// it) and HTTP/3 servers.
type versions struct {
	h2   *nethttp.Server
	ln   *handedListener
	h3   []*http3.Server
	h3ln []*quic.EarlyListener
	pcs  []net.PacketConn // HTTP/3's sockets, closed last
	log  *serverLog       // net/http's error log of h2 (HTTP/3's has none: quic-go logs only to a Logger given)
	done sync.WaitGroup
}

// serverLog takes the lines net/http's HTTP/2 server logs ("http2:
// server: error reading preface from client …: connection reset by
// peer": a Happy Eyeballs attempt that lost, reset by the client as it
// should be). They are no error of the run, and a library's log line
// must never reach the user's terminal: it counts them and keeps the
// last, which a test or a caller can read (Server.Logged).
type serverLog struct {
	mu    sync.Mutex
	lines int
	last  string
}

func (l *serverLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	l.lines++
	l.last = string(b)
	l.mu.Unlock()
	return len(b), nil
}

// Logged is how many lines net/http's HTTP/2 server logged, and the last.
func (s *Server) Logged() (int, string) {
	l := s.versions.log
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines, l.last
}

// startVersions starts HTTP/2 for s's connections and HTTP/3 on pcs
// (QUIC over each UDP socket, none when pcs is empty), advertising h3 on
// port in Alt-Svc.
func startVersions(s *plainServer, cfg ServerConfig, pcs []net.PacketConn, port int) *versions {
	v := &versions{ln: newHandedListener(), pcs: pcs, log: &serverLog{}}
	var ps nethttp.Protocols
	ps.SetHTTP2(true)
	ps.SetUnencryptedHTTP2(true)
	v.h2 = &nethttp.Server{Handler: s, Protocols: &ps, ReadHeaderTimeout: plainHeaderTime, IdleTimeout: plainIdle,
		ErrorLog: log.New(v.log, "", 0),
		ConnState: func(c net.Conn, st nethttp.ConnState) {
			if st == nethttp.StateClosed || st == nethttp.StateHijacked {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
			}
		}}
	if cfg.TLS != nil {
		v.h2.TLSConfig = cfg.TLS.Clone() // net/http edits it
	}
	if cfg.KeepaliveRequests > 0 {
		v.h2.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, servedKey{}, new(atomic.Int64))
		}
	}
	s.h2 = func(c net.Conn, read []byte) {
		if len(read) > 0 { // h2c: the preface and what followed it, again
			s.mu.Lock()
			delete(s.conns, c)
			c = &replayConn{Conn: c, read: read}
			s.conns[c] = struct{}{}
			s.mu.Unlock()
		}
		v.ln.hand(c)
	}
	v.done.Add(1)
	go func() { defer v.done.Done(); _ = v.h2.Serve(v.ln) }()
	if len(pcs) == 0 {
		return v
	}
	alt := `h3=":` + strconv.Itoa(port) + `"; ma=86400`
	s.altSvc = []byte("Alt-Svc: " + alt + "\r\n")
	s.altSvcValue = alt
	for _, pc := range pcs {
		ln, err := quic.ListenEarly(pc, http3.ConfigureTLSConfig(cfg.TLS.Clone()),
			&quic.Config{Allow0RTT: true, InitialPacketSize: QUICPacketSize})
		if err != nil {
			continue // the socket is closed: nothing to serve on it
		}
		h3 := &http3.Server{Handler: s}
		v.h3, v.h3ln = append(v.h3, h3), append(v.h3ln, ln)
		for range acceptLoops {
			v.done.Add(1)
			go func() { defer v.done.Done(); _ = h3.ServeListener(ln) }()
		}
	}
	return v
}

// acceptLoops accept each QUIC listener's connections at once: quic-go
// holds at most 32 handshaked connections not yet accepted and refuses
// the next ones (CONNECTION_REFUSED), and one accept loop, waiting for a
// CPU behind the handshakes of hundreds of users arriving together,
// lets that queue fill (500 users' handshakes on two CPUs refused up to
// 145 of them). Loops parked on Accept take a connection each as it is
// ready, before it would queue.
const acceptLoops = 64

// close stops both, and every connection they serve.
func (v *versions) close() {
	v.h2.Close()
	for _, h3 := range v.h3 {
		h3.Close()
	}
	for _, ln := range v.h3ln {
		ln.Close()
	}
	v.done.Wait()
	for _, pc := range v.pcs {
		pc.Close()
	}
}

// negotiated completes a TLS connection's handshake and, when it chose h2,
// hands it to net/http: true when the connection is no longer the plain
// server's (handed over, or closed after a failed handshake).
func (s *plainServer) negotiated(c net.Conn) bool {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return false
	}
	tc.SetDeadline(time.Now().Add(plainHeaderTime))
	err := tc.Handshake()
	tc.SetDeadline(time.Time{})
	if err == nil && tc.ConnectionState().NegotiatedProtocol != "h2" {
		return false
	}
	if err != nil {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		return true
	}
	s.h2(c, nil)
	return true
}

// servedKey keys an HTTP/2 connection's count of requests in its
// requests' context (with KeepaliveRequests).
type servedKey struct{}

// lastOnConn counts r on its HTTP/2 connection and says whether it is
// the last KeepaliveRequests allows: its reply makes net/http send GOAWAY
// (NO_ERROR, last stream the highest it took), as nginx does after
// keepalive_requests; streams the client opened after it are not
// processed, a client sends them again on a new connection.
func (s *plainServer) lastOnConn(r *nethttp.Request) bool {
	n, ok := r.Context().Value(servedKey{}).(*atomic.Int64)
	return ok && n.Add(1) >= int64(s.cfg.KeepaliveRequests)
}

// ServeHTTP answers HTTP/2 and HTTP/3 requests with the routes HTTP/1.1
// has (GET and HEAD), generated content written a block at a time.
func (s *plainServer) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	h := w.Header()
	if s.altSvcValue != "" {
		h.Set("Alt-Svc", s.altSvcValue)
	}
	if s.cfg.KeepaliveRequests > 0 && r.ProtoMajor == 2 && s.lastOnConn(r) {
		h.Set("Connection", "close") // net/http's HTTP/2: GOAWAY (NO_ERROR), the connection closed once idle
	}
	if r.Method != nethttp.MethodGet && r.Method != nethttp.MethodHead {
		nethttp.Error(w, "405 Method Not Allowed", nethttp.StatusMethodNotAllowed)
		return
	}
	rt := s.route(r.URL.Path)
	h.Set("Content-Type", rt.ctype)
	h.Set("Content-Length", strconv.FormatInt(rt.size, 10))
	w.WriteHeader(rt.code)
	if r.Method == nethttp.MethodHead {
		return
	}
	if rt.body != nil {
		if _, err := w.Write(rt.body); err == nil && len(rt.tail) > 0 {
			w.Write(rt.tail)
		}
		return
	}
	block := content.Block() // byte o is block[o % len(block)] (content.Fill)
	for sent := int64(0); sent < rt.size; {
		start := sent % int64(len(block))
		k := min(int64(len(block))-start, rt.size-sent)
		if _, err := w.Write(block[start : start+k]); err != nil {
			return
		}
		sent += k
	}
}

// handedListener is the listener net/http's HTTP/2 server accepts from:
// the connections the plain server hands it.
type handedListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newHandedListener() *handedListener {
	return &handedListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *handedListener) hand(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.closed:
		c.Close()
	}
}

func (l *handedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *handedListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *handedListener) Addr() net.Addr { return &net.TCPAddr{} }

// replayConn is an h2c connection whose first bytes the plain server read:
// net/http reads them again first.
type replayConn struct {
	net.Conn
	read []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.read) > 0 {
		n := copy(p, c.read)
		c.read = c.read[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// listenTCPUDP opens, on every address, a TCP listener and a UDP socket of
// the address's family (a udp6 socket IPv6-only), one port for all of them
// (0 picks one).
func listenTCPUDP(ctx context.Context, addrs []netip.Addr, port int) ([]net.Listener, []net.PacketConn, int, error) {
	closers, got, err := path.BindSamePort(addrs, port, func(a netip.Addr, p int) (io.Closer, int, error) {
		ln, err := path.Listen(ctx, path.OfAddr(a), netip.AddrPortFrom(a, uint16(p)).String())
		if err != nil {
			return nil, 0, err
		}
		p = ln.Addr().(*net.TCPAddr).Port
		pc, err := path.ListenPacket(ctx, path.OfAddr(a), netip.AddrPortFrom(a, uint16(p)).String())
		if err != nil {
			ln.Close()
			return nil, 0, err
		}
		return pair{ln, pc}, p, nil
	})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("http: listen: %w", err)
	}
	var lns []net.Listener
	var pcs []net.PacketConn
	for _, c := range closers {
		lns, pcs = append(lns, c.(pair).ln), append(pcs, c.(pair).pc)
	}
	return lns, pcs, got, nil
}

// pair is a TCP listener and the UDP socket on its port.
type pair struct {
	ln net.Listener
	pc net.PacketConn
}

func (p pair) Close() error { return errors.Join(p.ln.Close(), p.pc.Close()) }
