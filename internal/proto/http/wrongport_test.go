package http

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/servetest"
)

// TestWrongProtocolSaysSo: a server that reads what the client sent and
// closes without a byte (a plain HTTP server given a ClientHello, a TLS
// server given h2c's preface) fails the transaction with an error that
// names the likely cause, at once.
func TestWrongProtocolSaysSo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	servetest.Each(t, ln, func(c net.Conn) {
		buf := make([]byte, 4096)
		c.Read(buf)
		time.Sleep(10 * time.Millisecond)
	})
	for _, tc := range []struct{ scheme, want string }{
		{"https", "does it speak TLS on this port? (an http:// url for a plain HTTP server)"},
		{"http", "if it speaks TLS on this port give an https:// url"},
	} {
		u, err := ParseURL(fmt.Sprintf("%s://%s/", tc.scheme, ln.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		c := &Client{URL: u, Path: path.IPv4, Resolver: &path.Resolver{}, Version: Version2, TLS: &tls.Config{InsecureSkipVerify: true}}
		s := do(c, 5*time.Second)
		if s.OK() || !strings.Contains(s.Err, tc.want) {
			t.Errorf("%s to a server that closes: %q, want %q", tc.scheme, s.Err, tc.want)
		}
	}
}
