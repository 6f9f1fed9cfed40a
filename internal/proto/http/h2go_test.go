package http

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"v6lab/internal/sock/path"
)

// goH2Server serves HTTP/2 with Go's own server (net/http): h2c, or h2
// over TLS, at most maxStreams streams at once per connection. "/" is a
// page of n objects of 8 KB; "/big" 9 MiB (the stream's window refilled
// twice); "/gone" a 404; "/abort" a stream the server resets; "/huge" a
// reply with 70 KB of headers.
func goH2Server(t *testing.T, useTLS bool, maxStreams, n int) (string, *nethttp.Server) {
	t.Helper()
	mux := nethttp.NewServeMux()
	mux.HandleFunc("/", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>")
		for i := range n {
			fmt.Fprintf(w, `<img src="/obj/%d">`, i)
		}
	})
	mux.HandleFunc("/obj/", func(w nethttp.ResponseWriter, r *nethttp.Request) { w.Write(make([]byte, 8000)) })
	mux.HandleFunc("/big", func(w nethttp.ResponseWriter, r *nethttp.Request) { w.Write(make([]byte, 9<<20)) })
	mux.HandleFunc("/gone", func(w nethttp.ResponseWriter, r *nethttp.Request) { nethttp.NotFound(w, r) })
	mux.HandleFunc("/abort", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Write([]byte("partial"))
		w.(nethttp.Flusher).Flush()
		panic(nethttp.ErrAbortHandler)
	})
	mux.HandleFunc("/huge", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("X-Huge", strings.Repeat("h", 70<<10))
	})
	var ps nethttp.Protocols
	ps.SetHTTP2(true)
	ps.SetUnencryptedHTTP2(!useTLS)
	srv := &nethttp.Server{Handler: mux, Protocols: &ps, HTTP2: &nethttp.HTTP2Config{MaxConcurrentStreams: maxStreams},
		ErrorLog: nil}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "http"
	if useTLS {
		srv.TLSConfig = tlsConfig(t).TLS.Clone()
		srv.TLSConfig.NextProtos = []string{"h2"}
		ln = tls.NewListener(ln, srv.TLSConfig)
		scheme = "https"
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return scheme + "://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), srv
}

// TestH2AgainstGoServer: v6lab's HTTP/2 client against Go's own server,
// over TLS and in the clear: a page's objects, more of them than the
// server allows streams at once; a long reply (its window refilled); and
// what the server refuses or breaks, each a clear error.
func TestH2AgainstGoServer(t *testing.T) {
	for _, useTLS := range []bool{true, false} {
		base, _ := goH2Server(t, useTLS, 3, 10)
		neg := map[bool]string{true: "h2", false: "h2c"}[useTLS]
		client := func(uri string, objects bool) *Client {
			return &Client{URL: mustURL(t, base+uri), Path: path.IPv4, Version: Version2, Objects: objects,
				TLS: &tls.Config{InsecureSkipVerify: true}}
		}
		s := do(client("/", true), 10*time.Second)
		if !s.OK() || !strings.HasPrefix(s.Marker+",", "200 OK, 10 objects, "+neg+",") || s.Negotiated != neg {
			t.Errorf("%s page: %+v", neg, s)
		}
		if s.FirstByteNS <= 0 || s.FirstByteNS > s.TotalNS || s.BytesIn < 80000 || s.BytesOut == 0 {
			t.Errorf("%s page: first byte %d of %d ns, %d bytes in, %d out", neg, s.FirstByteNS, s.TotalNS, s.BytesIn, s.BytesOut)
		}
		big := client("/big", false)
		big.Sum = true
		if s := do(big, 20*time.Second); !s.OK() || s.Metrics["body_bytes"] != 9<<20 {
			t.Errorf("%s 9 MiB: %+v", neg, s)
		}
		for uri, want := range map[string]string{
			"/gone":  "status 404 Not Found for /gone",
			"/abort": "reset stream 1 of /abort (INTERNAL_ERROR)",
			"/huge":  "response header larger than 65536 bytes",
		} {
			if s := do(client(uri, false), 10*time.Second); s.OK() || !strings.Contains(s.Err, want) {
				t.Errorf("%s %s: %q, want %q", neg, uri, s.Err, want)
			}
		}
	}
}

// TestH2KeptConnectionGoAway: a kept connection carries a user's next
// transactions; once Go's server says GOAWAY (shutting down), it takes
// no more.
func TestH2KeptConnectionGoAway(t *testing.T) {
	base, srv := goH2Server(t, true, 100, 4)
	c := &Client{URL: mustURL(t, base+"/"), Path: path.IPv4, Version: Version2, Objects: true, Keep: true,
		TLS: &tls.Config{InsecureSkipVerify: true}}
	defer c.Close()
	for i := range 3 {
		s := do(c, 5*time.Second)
		if kept := strings.Contains(s.Marker, "kept connection"); !s.OK() || kept != (i > 0) {
			t.Fatalf("transaction %d: %+v", i, s)
		}
	}
	h := c.kept.take(0).(*h2conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go srv.Shutdown(ctx)
	for h.alive() {
		if ctx.Err() != nil {
			t.Fatal("the kept connection is still alive after the server's GOAWAY")
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.close()
}
