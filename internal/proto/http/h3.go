package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// HTTP/3 transactions: v6lab looks the name up with the path's record
// type, opens a UDP socket of the path's family connected to the server
// (path.DialStamped: both ends checked), and hands it to quic-go as the
// one socket of a quic.Transport of the transaction's own: no lookup and
// no dial inside the library can choose the family. The page and its
// objects are streams of the one QUIC connection.

// QUICPacketSize is the UDP payload of the first packets of a QUIC
// connection, client and server alike, on every path: 1232 bytes fit the
// IPv6 minimum MTU (1280, a 6in4 tunnel's) with the IPv6 and UDP headers,
// and the same size over IPv4 keeps the families' packets alike. Path MTU
// discovery (DPLPMTUD, quic-go's) may grow them where the path allows.
const QUICPacketSize = 1232

// quicConfig is the QUIC configuration of a client's connections.
func (c *Client) quicConfig() *quic.Config {
	timeout := c.QUICTimeout
	if timeout <= 0 {
		timeout = DefaultQUICTimeout
	}
	return &quic.Config{HandshakeIdleTimeout: timeout, InitialPacketSize: QUICPacketSize}
}

// doH3 is one HTTP/3 transaction.
func (c *Client) doH3(ctx context.Context, tr *load.Trace, user int) result.Sample {
	if s, ok := c.onKept(ctx, tr, user, "h3"); ok {
		return s
	}
	host := c.URL.Hostname()
	ip, err := tr.Lookup(ctx, c.Resolver, host, c.Path)
	if err != nil {
		return tr.Fail(ctx, "resolve", err)
	}
	if _, notLiteral := netip.ParseAddr(strings.Trim(host, "[]")); notLiteral != nil {
		tr.Mark(&tr.S.ResolveNS)
	}
	pc, err := path.DialStamped(ctx, path.Dialer{Path: c.Path, Source: c.Source}, netip.AddrPortFrom(ip, c.port()))
	if err != nil {
		return tr.Fail(ctx, "connect", err)
	}
	tr.S.Local, tr.S.Remote = pc.LocalAddr().String(), pc.RemoteAddr().String()
	qt := &quic.Transport{Conn: pc}
	k := &h3Kept{pc: pc, qt: qt}
	kept := false
	defer func() {
		if !kept {
			k.close()
		}
	}()
	cfg := &tls.Config{}
	if c.TLS != nil {
		cfg = c.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	cfg.NextProtos = []string{http3.NextProtoH3}
	var conn *quic.Conn
	if c.ZeroRTT {
		conn, err = qt.DialEarly(ctx, pc.RemoteAddr(), cfg, c.quicConfig())
	} else {
		conn, err = qt.Dial(ctx, pc.RemoteAddr(), cfg, c.quicConfig())
	}
	if err != nil {
		c.recordQUIC(tr, pc)
		return tr.Fail(ctx, "connect", c.quicError(err, pc))
	}
	k.conn = conn
	method := nethttp0RTT(c.ZeroRTT)
	var handshake <-chan time.Time
	if c.ZeroRTT {
		handshake = handshakeEnd(conn)
	} else {
		tr.Mark(&tr.S.TLSNS) // the QUIC handshake, TLS inside it
	}
	if k.h3Conn, err = newH3Conn(conn, c.URL, c.UserAgent); err != nil {
		c.recordQUIC(tr, pc)
		return tr.Fail(ctx, "connect", err)
	}
	f, err := c.streams(ctx, tr, k, method)
	markHandshake(tr, conn, handshake)
	c.recordQUIC(tr, pc)
	if err != nil {
		return c.failStreams(ctx, tr, nil, err)
	}
	if c.Keep {
		kept = true
		c.kept.keep(user, k)
	}
	st := conn.ConnectionState()
	setTLS(tr, st.TLS)
	more := "QUIC " + st.Version.String()
	if tr.S.ZeroRTT = st.Used0RTT; st.Used0RTT {
		more += ", 0-RTT"
	}
	return c.done(tr, f, "h3", more)
}

// handshakeEnd watches a connection dialled with DialEarly, whose dial
// returns before its handshake ends: it says when the handshake ended (as
// the client saw it: when quic-go closed HandshakeComplete, a goroutine's
// wake later), or the zero time when the connection ended first. It says
// it exactly once.
func handshakeEnd(conn *quic.Conn) <-chan time.Time {
	end := make(chan time.Time, 1)
	go func() {
		select {
		case <-conn.HandshakeComplete():
			end <- time.Now()
		case <-conn.Context().Done():
			end <- time.Time{}
		}
	}()
	return end
}

// markHandshake records the handshake's end that handshakeEnd watched
// (none: it was marked at the dial). A 0-RTT request left before the
// handshake ended; the reply's 1-RTT packets come after it, so it has
// ended once the reply came, but the watcher may not have said when yet.
func markHandshake(tr *load.Trace, conn *quic.Conn, handshake <-chan time.Time) {
	if handshake == nil {
		return
	}
	select {
	case <-conn.HandshakeComplete():
		if at := <-handshake; !at.IsZero() {
			tr.At(&tr.S.TLSNS, at)
		}
	default:
	}
}

// h3Kept is a user's HTTP/3 connection: its socket, QUIC transport and
// connection, and its requests (h3Conn).
type h3Kept struct {
	*h3Conn
	pc   *path.StampedPacketConn
	qt   *quic.Transport
	conn *quic.Conn
	// local, remote: the connection's two ends as samples carry them,
	// made once (keptEnds).
	local, remote string
}

func (k *h3Kept) alive() bool { return k.h3Conn != nil && k.h3Conn.alive() }
func (k *h3Kept) close() {
	if k.conn != nil {
		k.conn.CloseWithError(0, "")
	}
	k.qt.Close()
	k.pc.Close()
}

// nethttp0RTT is the page request's method: quic-go's GET_0RTT sends it
// in 0-RTT data when the connection resumes with early data.
func nethttp0RTT(zero bool) string {
	if zero {
		return http3.MethodGet0RTT
	}
	return "GET"
}

// recordQUIC gives the trace the socket's stamps and bytes: the wire time
// from the first datagram out (without a lookup) to the last in.
func (c *Client) recordQUIC(tr *load.Trace, pc *path.StampedPacketConn) {
	if at := pc.FirstSent(); !at.IsZero() {
		tr.Sent(at)
	}
	first, last := pc.Received()
	tr.FirstReceived(first)
	if !last.IsZero() {
		tr.Received(time.Time{}, last)
	}
	tr.S.BytesIn, tr.S.BytesOut = pc.Bytes()
}

// quicError says what a failed QUIC dial means: a handshake that heard
// nothing is "no QUIC answer over PATH in 3 s", with the UDP port that
// kept silent (a server that serves HTTP/1.1 and 2 on the port's TCP alone
// fails so).
func (c *Client) quicError(err error, pc *path.StampedPacketConn) error {
	var idle *quic.IdleTimeoutError
	var hs *quic.HandshakeTimeoutError
	if errors.As(err, &idle) || errors.As(err, &hs) {
		timeout := c.quicConfig().HandshakeIdleTimeout
		if pc.Refused() {
			// Classified as refused, as a TCP connection to a closed port
			// is; the handshake still waited its time, as QUIC clients do
			// (an ICMP message is easily forged).
			return refusedError(fmt.Sprintf("no QUIC answer over %s in %s: UDP port %d was refused (ICMP port unreachable: nothing listens there)", c.Path, seconds(timeout), c.port()))
		}
		return fmt.Errorf("no QUIC answer over %s in %s: nothing answered HTTP/3 on UDP port %d (%w)", c.Path, seconds(timeout), c.port(), err)
	}
	var te *quic.TransportError
	switch {
	case errors.Is(err, proto.ErrPin):
		return fmt.Errorf("QUIC handshake: %w", err)
	case errors.As(err, &te) && te.ErrorCode.IsCryptoError() && te.Remote:
		return fmt.Errorf("QUIC handshake refused by the server's TLS: %w (is it an HTTP/3 server, with ALPN h3?)", err)
	case errors.As(err, &te) && te.ErrorCode.IsCryptoError():
		return fmt.Errorf("QUIC handshake: the server's TLS was not accepted here: %w", err)
	}
	return err
}

// refusedError is a failure that says why in its own words and is
// ECONNREFUSED to errors.Is (the failure's class: refused).
type refusedError string

func (e refusedError) Error() string { return string(e) }
func (e refusedError) Unwrap() error { return syscall.ECONNREFUSED }

// seconds prints a duration as "3 s".
func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}
