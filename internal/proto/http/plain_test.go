package http

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"v6lab/internal/gen/content"
	"v6lab/internal/sock/path"
)

// plainAt starts the plain server on IPv4 loopback and returns its address.
func plainAt(t *testing.T, cfg ServerConfig) string {
	t.Helper()
	srv, err := Listen(context.Background(), cfg, []netip.Addr{lo4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addrs()[0].String()
}

// exchange sends raw on a new connection and returns every reply read
// with net/http's parser until the server closes (or wait passes); the
// replies numbered in head answer HEAD requests.
func exchange(t *testing.T, addr, raw string, wait time.Duration, head ...int) (replies []*nethttp.Response, bodies []string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	br := bufio.NewReader(c)
	for {
		var req *nethttp.Request
		if slices.Contains(head, len(replies)) {
			req = &nethttp.Request{Method: "HEAD"}
		}
		r, err := nethttp.ReadResponse(br, req)
		if err != nil {
			return replies, bodies, !isTimeout(err)
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Fatalf("body of reply %d: %v", len(replies), err)
		}
		replies, bodies = append(replies, r), append(bodies, string(b))
	}
}

// TestPlainServerRoutes: every route answers as the net/http handler did,
// pipelined requests are answered in order on one connection, HEAD gets
// the header alone, generated bodies are the content package's bytes.
func TestPlainServerRoutes(t *testing.T) {
	addr := plainAt(t, DefaultServerConfig)
	get := func(p string) string { return "GET " + p + " HTTP/1.1\r\nHost: x\r\n\r\n" }
	raw := get("http://x/") + get("/index.html?x=1") + get("/obj/3") + get("/pages/2") + get("/files/70001") + get("/files/5") +
		get("/health") + get("/obj/999") + get("/nothing") + get("/files/huge") + "HEAD /obj/0 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" + get("/never")
	replies, bodies, closed := exchange(t, addr, raw, 5*time.Second, 10)
	if !closed {
		t.Error("the server kept the connection after Connection: close")
	}
	want := []struct {
		status int
		ctype  string
		size   int
	}{
		{200, "text/html; charset=utf-8", len(Page(DefaultServerConfig))},
		{200, "text/html; charset=utf-8", len(Page(DefaultServerConfig))},
		{200, "image/png", int(DefaultServerConfig.ObjectSize)},
		{200, "text/html; charset=utf-8", len(Page(ServerConfig{Objects: 2, PageSize: DefaultServerConfig.PageSize}))},
		{200, "application/octet-stream", 70001},
		{200, "application/octet-stream", 5},
		{200, "text/plain; charset=utf-8", 3},
		{404, "text/plain; charset=utf-8", 19},
		{404, "text/plain; charset=utf-8", 19},
		{400, "text/plain; charset=utf-8", 9},
		{200, "image/png", 0}, // HEAD: Content-Length says 8192, no body
		{200, "text/plain; charset=utf-8", 3},
	}
	if len(replies) != len(want) {
		t.Fatalf("%d replies, want %d (the request after Connection: close must not be answered)", len(replies), len(want))
	}
	for i, w := range want {
		r := replies[i]
		if r.StatusCode != w.status || r.Header.Get("Content-Type") != w.ctype || len(bodies[i]) != w.size || r.Header.Get("Date") == "" {
			t.Errorf("reply %d: %d %q %d bytes (date %q), want %d %q %d", i, r.StatusCode, r.Header.Get("Content-Type"), len(bodies[i]), r.Header.Get("Date"), w.status, w.ctype, w.size)
		}
	}
	if replies[10].ContentLength != DefaultServerConfig.ObjectSize {
		t.Errorf("HEAD's Content-Length %d", replies[10].ContentLength)
	}
	if !strings.Contains(bodies[3], `src="/obj/1"`) || strings.Contains(bodies[3], `src="/obj/2"`) {
		t.Error("/pages/2 does not link exactly two objects")
	}
	gen := make([]byte, 70001)
	content.Fill(gen, 0)
	if bodies[4] != string(gen) || bodies[5] != string(gen[:5]) {
		t.Error("generated bodies are not the content package's bytes")
	}
}

// TestPlainServerKeepaliveRequests: with KeepaliveRequests 2 the second
// reply says Connection: close and the server closes after it.
func TestPlainServerKeepaliveRequests(t *testing.T) {
	addr := plainAt(t, ServerConfig{Objects: 1, ObjectSize: 10, PageSize: 100, KeepaliveRequests: 2})
	get := "GET /obj/0 HTTP/1.1\r\nHost: x\r\n\r\n"
	replies, _, closed := exchange(t, addr, get+get+get, 5*time.Second)
	if len(replies) != 2 || !closed {
		t.Fatalf("%d replies, closed %v: want 2 and closed", len(replies), closed)
	}
	if replies[0].Close || !replies[1].Close {
		t.Errorf("Connection: close on the first %v, on the second %v", replies[0].Close, replies[1].Close)
	}
}

// TestPlainServerRefusesWhatItDoesNotServe: bad requests get their status
// and the connection closes; HTTP/1.0 closes unless it asks keep-alive.
func TestPlainServerRefusesWhatItDoesNotServe(t *testing.T) {
	addr := plainAt(t, DefaultServerConfig)
	cases := []struct {
		name, raw string
		status    int
	}{
		{"no host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"post", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 405},
		{"a body", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 400},
		{"chunked", "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
		{"version", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
		{"no colon", "GET / HTTP/1.1\r\nHost x\r\n\r\n", 400},
		{"folded", "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400},
		{"not a path", "GET x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"huge header", "GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", plainMaxHeader) + "\r\n\r\n", 431},
	}
	for _, c := range cases {
		replies, _, closed := exchange(t, addr, c.raw+"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 5*time.Second)
		if len(replies) != 1 || replies[0].StatusCode != c.status || !closed {
			got := 0
			if len(replies) > 0 {
				got = replies[0].StatusCode
			}
			t.Errorf("%s: %d replies, first %d, closed %v; want one %d and closed", c.name, len(replies), got, closed, c.status)
		}
	}
	if replies, _, closed := exchange(t, addr, "GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n", 5*time.Second); len(replies) != 1 || !closed {
		t.Errorf("HTTP/1.0: %d replies, closed %v", len(replies), closed)
	}
	if replies, _, closed := exchange(t, addr, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", time.Second); len(replies) != 2 || closed {
		t.Errorf("HTTP/1.0 keep-alive: %d replies, closed %v", len(replies), closed)
	}
}

// TestPlainServerTimesOutSlowAndIdleClients: a header trickled a byte at a
// time is cut at the header time from its first byte, and a silent
// connection at the idle time.
func TestPlainServerTimesOutSlowAndIdleClients(t *testing.T) {
	oldIdle, oldHeader := plainIdle, plainHeaderTime
	plainIdle, plainHeaderTime = 400*time.Millisecond, 300*time.Millisecond
	t.Cleanup(func() { plainIdle, plainHeaderTime = oldIdle, oldHeader })
	addr := plainAt(t, DefaultServerConfig)

	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	var cut time.Duration
	for i := 0; i < 40; i++ { // up to 2 s of one byte every 50 ms
		if _, err := c.Write([]byte("G")); err != nil {
			cut = time.Since(start)
			break
		}
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF || (err != nil && !isTimeout(err)) {
			cut = time.Since(start)
			break
		}
	}
	if cut == 0 || cut > time.Second {
		t.Errorf("a trickled header was cut after %v, want about 300 ms", cut)
	}

	idle, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	start = time.Now()
	idle.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = idle.Read(make([]byte, 1))
	if took := time.Since(start); err != io.EOF || took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("an idle connection: %v after %v, want EOF after about 400 ms", err, took)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestPlainServerCloseEndsConnections: Close returns with connections
// open and closes them.
func TestPlainServerCloseEndsConnections(t *testing.T) {
	srv, err := Listen(context.Background(), DefaultServerConfig, []netip.Addr{lo4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp4", srv.Addrs()[0].String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	r, err := nethttp.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("health: %v %v", r, err)
	}
	io.Copy(io.Discard, r.Body)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
		t.Errorf("after Close the connection read %d, %v: want it closed", n, err)
	}
}

// TestIPLiteralWireStartsAtTheSYN: without a lookup the page's wire time
// starts at its connection's SYN, on both engines.
func TestIPLiteralWireStartsAtTheSYN(t *testing.T) {
	testutil.RequireRoot(t, "needs root: the SYN stamp is a BPF program")
	if !path.SYNReady() {
		t.Skip("no SYN stamps on this host (cgroup v2, sockops)")
	}
	addr := plainAt(t, DefaultServerConfig)
	u, _ := ParseURL("http://" + addr + "/")
	for _, engine := range []Engine{EngineGo, EngineEvloop} {
		c := &Client{URL: u, Path: path.IPv4, Resolver: &path.Resolver{}, Objects: true, Engine: engine}
		stamped := 0
		// On loopback a reply now and then carries no receive stamp.
		for try := 0; try < 5 && stamped == 0; try++ {
			s := do(c, 5*time.Second)
			if !s.OK() {
				t.Fatalf("%s: %s", engine, s.Err)
			}
			if s.WireNS > s.TotalNS || s.WireNS < 0 {
				t.Fatalf("%s: wire %d total %d", engine, s.WireNS, s.TotalNS)
			}
			if s.WireNS > 0 {
				stamped++
				if s.WireFirstByteNS <= 0 || s.WireFirstByteNS > s.WireNS {
					t.Errorf("%s: wire first byte %d of wire %d", engine, s.WireFirstByteNS, s.WireNS)
				}
			}
		}
		if stamped == 0 {
			t.Errorf("%s: no transaction to an IP literal had a wire time", engine)
		}
	}
}

// The /pages/N of a server share one page's filler: serving all of them
// holds about one page, not MaxObjects+1 pages (257 MiB of 1 MiB pages
// before), and each is still Page's, byte for byte.
func TestPagesShareTheirFiller(t *testing.T) {
	cfg := ServerConfig{Objects: 4, PageSize: 1 << 20}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := newPlainServer(cfg)
	routes := make([]routed, MaxObjects+1)
	for n := range routes {
		routes[n] = s.route(fmt.Sprintf("/pages/%d", n))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 4*int64(cfg.PageSize) {
		t.Errorf("serving the %d pages holds %d bytes, pages of %d", len(routes), grew, cfg.PageSize)
	}
	for _, n := range []int{0, 1, 9, 10, 99, 100, MaxObjects} {
		c := cfg
		c.Objects = n
		got := append(append([]byte{}, routes[n].body...), routes[n].tail...)
		if want := Page(c); !bytes.Equal(got, want) || routes[n].size != int64(len(want)) {
			t.Errorf("/pages/%d: %d bytes (size %d), want Page's %d", n, len(got), routes[n].size, len(want))
		}
	}
	runtime.KeepAlive(routes)
}
