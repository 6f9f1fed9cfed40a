package http

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestH2ServerLogStaysOff: a client that negotiates h2 and resets before
// its preface (a Happy Eyeballs attempt that lost) makes net/http's
// HTTP/2 server log "error reading preface"; the embedded server takes
// that line (counted, the last kept), so it never reaches the terminal
// of a lab run through the standard logger.
func TestH2ServerLogStaysOff(t *testing.T) {
	srv, err := Listen(context.Background(), tlsConfig(t), []netip.Addr{lo4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	addr := srv.Addrs()[0].String()
	for range 2 {
		tcp, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		c := tls.Client(tcp, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		if got := c.ConnectionState().NegotiatedProtocol; got != "h2" {
			t.Fatalf("ALPN %q, want h2", got)
		}
		// net/http's HTTP/2 server sends its SETTINGS first, then reads
		// the client's preface: once they arrive it is reading.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 64)); err != nil {
			t.Fatalf("no SETTINGS from the HTTP/2 server: %v", err)
		}
		tcp.(*net.TCPConn).SetLinger(0)
		tcp.Close() // a reset, before the preface
	}
	deadline := time.Now().Add(5 * time.Second)
	n, last := srv.Logged()
	for n < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		n, last = srv.Logged()
	}
	if n < 2 || !strings.Contains(last, "http2: server: error reading preface") {
		t.Errorf("the HTTP/2 server's log took %d lines (last %q), want 2 of the resets", n, last)
	}
}
