package http

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"v6lab/internal/sock/path"
)

var benchReply = []byte("HTTP/1.1 200 OK\r\nContent-Length: 4096\r\nContent-Type: text/html; charset=utf-8\r\nDate: Sun, 22 Nov 2026 14:00:00 GMT\r\nConnection: close\r\n\r\n" + string(bytes.Repeat([]byte("x"), 4096)))

// BenchmarkReadReply measures parsing one reply (no network).
func BenchmarkReadReply(b *testing.B) {
	u, _ := url.Parse("http://h/")
	c := &Client{URL: u}
	b.ReportAllocs()
	br := bufio.NewReaderSize(nil, 32<<10)
	for b.Loop() {
		cr := &countReader{r: bytes.NewReader(benchReply), tr: newTrace()}
		br.Reset(cr)
		if _, _, err := c.get(br, cr, &countWriter{w: io.Discard}, "/", false, true, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransaction is one whole transaction per engine and path
// against the embedded server on loopback (connection per transaction).
func BenchmarkTransaction(b *testing.B) {
	srv, err := Listen(context.Background(), ServerConfig{PageSize: 4096}, []netip.Addr{lo4, lo6}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for _, engine := range []Engine{EngineGo, EngineEvloop} {
		for _, p := range []path.Path{path.IPv4, path.IPv6} {
			b.Run(string(engine)+"/"+string(p), func(b *testing.B) {
				u, _ := ParseURL("http://" + netip.AddrPortFrom(p.Loopback(), uint16(srv.Port)).String() + "/")
				c := &Client{URL: u, Path: p, Resolver: &path.Resolver{}, Engine: engine}
				b.ReportAllocs()
				for b.Loop() {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					s := c.Do(ctx, 0)
					cancel()
					if !s.OK() {
						b.Fatal(s.Err)
					}
				}
			})
		}
	}
}

// BenchmarkKeptVersions is one request per transaction on a kept HTTP/2
// and HTTP/3 connection (keepalive), against the embedded server on
// loopback: the client's cost per request beside the peers'.
func BenchmarkKeptVersions(b *testing.B) {
	cfg := tlsConfig(&testing.T{})
	cfg.H3, cfg.Objects = true, 0
	srv, err := Listen(context.Background(), cfg, []netip.Addr{lo4}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for _, v := range []string{Version2, Version3} {
		b.Run("http"+v, func(b *testing.B) {
			u, _ := ParseURL("https://" + netip.AddrPortFrom(lo4, uint16(srv.Port)).String() + "/")
			c := &Client{URL: u, Path: path.IPv4, Resolver: &path.Resolver{}, Version: v, Keep: true, TLS: &tls.Config{InsecureSkipVerify: true}}
			defer c.Close()
			keptLoop(b, c, "")
		})
	}
}

// BenchmarkKeptH2Page is bench/h2-vs-h2load's transaction: the page and
// its 4 objects (8 KB each) on a kept HTTP/2 connection over TLS, against
// the embedded server on loopback (client and server in one process: its
// allocations per page are the client's and the server's).
func BenchmarkKeptH2Page(b *testing.B) {
	srv, err := Listen(context.Background(), tlsConfig(&testing.T{}), []netip.Addr{lo4}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	u, _ := ParseURL("https://" + netip.AddrPortFrom(lo4, uint16(srv.Port)).String() + "/")
	c := &Client{URL: u, Path: path.IPv4, Resolver: &path.Resolver{}, Version: Version2, Keep: true, Objects: true,
		TLS: &tls.Config{InsecureSkipVerify: true}}
	defer c.Close()
	keptLoop(b, c, "200 OK, 4 objects, h2")
}

// keptLoop runs user 0's transactions on c for the benchmark, each to
// complete with a marker that begins with marker.
func keptLoop(b *testing.B, c *Client, marker string) {
	b.ReportAllocs()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s := c.Do(ctx, 0)
		cancel()
		if !s.OK() || !strings.HasPrefix(s.Marker, marker) {
			b.Fatalf("%v, %s", s.Err, s.Marker)
		}
	}
}
