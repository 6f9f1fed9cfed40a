package http

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"v6lab/internal/gen/content"
	"v6lab/internal/proto"
	"v6lab/internal/proto/dns"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/servetest"
)

var (
	lo4 = netip.MustParseAddr("127.0.0.1")
	lo6 = netip.MustParseAddr("::1")
)

// rig is an embedded HTTP server on both loopbacks (one port) and a DNS
// server that names it.
type rig struct {
	srv *Server
	res *path.Resolver
}

func newRig(t *testing.T, cfg ServerConfig) *rig {
	t.Helper()
	ctx := context.Background()
	srv, err := Listen(ctx, cfg, []netip.Addr{lo4, lo6}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	z := dns.Zone{}
	z.Add("www.v6lab.test", lo4)
	z.Add("www.v6lab.test", lo6)
	z.Add("v4only.v6lab.test", lo4)
	d, err := dns.Listen(ctx, z, []netip.Addr{lo4, lo6}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &rig{srv: srv, res: &path.Resolver{Servers: d.Addrs()}}
}

func (r *rig) client(t *testing.T, p path.Path, rawURL string) *Client {
	u, err := ParseURL(fmt.Sprintf(rawURL, r.srv.Port))
	if err != nil {
		t.Fatal(err)
	}
	return &Client{URL: u, Path: p, Resolver: r.res, Objects: true}
}

func do(c *Client, timeout time.Duration) result.Sample {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.Do(ctx, 0)
}

func TestPageWithObjectsPerPath(t *testing.T) {
	cfg := DefaultServerConfig
	r := newRig(t, cfg)
	page := Page(cfg)
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		t.Run(string(p), func(t *testing.T) {
			s := do(r.client(t, p, "http://www.v6lab.test:%d/"), 5*time.Second)
			if !s.OK() {
				t.Fatalf("failed: %s", s.Err)
			}
			if s.Marker != "200 OK, 4 objects" {
				t.Errorf("marker %q", s.Marker)
			}
			if min := int64(len(page)) + 4*cfg.ObjectSize; s.BytesIn < min {
				t.Errorf("bytes in %d < %d: not every object arrived", s.BytesIn, min)
			}
			if !(0 < s.ResolveNS && s.ResolveNS <= s.ConnectNS && s.ConnectNS <= s.FirstByteNS && s.FirstByteNS <= s.TotalNS) {
				t.Errorf("phases out of order: resolve %d connect %d first %d total %d", s.ResolveNS, s.ConnectNS, s.FirstByteNS, s.TotalNS)
			}
			for _, a := range []string{s.Local, s.Remote} {
				if !p.Accepts(netip.MustParseAddrPort(a).Addr()) {
					t.Errorf("address %s is not %s", a, p.Family())
				}
			}
		})
	}
}

func TestGeneratedFile(t *testing.T) {
	r := newRig(t, DefaultServerConfig)
	c := r.client(t, path.IPv6, "http://[::1]:%d/files/3M")
	s := do(c, 5*time.Second)
	if !s.OK() || s.BytesIn < 3<<20 || s.ResolveNS != 0 {
		t.Fatalf("sample %+v", s)
	}
}

func TestFailuresAreSamplesWithReasons(t *testing.T) {
	r := newRig(t, DefaultServerConfig)
	dead, _ := net.Listen("tcp4", "127.0.0.1:0")
	deadPort := dead.Addr().(*net.TCPAddr).Port
	dead.Close()
	cases := []struct {
		name, url string
		p         path.Path
		want      string
		kind      result.ErrKind
	}{
		{"not found", "http://www.v6lab.test:%d/missing", path.IPv4, "status 404 Not Found", "protocol"},
		{"no AAAA", "http://v4only.v6lab.test:%d/", path.IPv6, "v4only.v6lab.test has no AAAA record", "resolve"},
		{"unknown host", "http://nosuch.v6lab.test:%d/", path.IPv4, "NXDOMAIN", "resolve"},
		{"literal of other family", "http://127.0.0.1:%d/", path.IPv6, "needs IPv6", "family"},
		{"refused", "http://127.0.0.1:" + fmt.Sprint(deadPort) + "/?%d", path.IPv4, "connection refused", "refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := do(r.client(t, c.p, c.url), 3*time.Second)
			if s.OK() || !strings.Contains(s.Err, c.want) || s.ErrKind != c.kind {
				t.Fatalf("err %q kind %q; want %q kind %q", s.Err, s.ErrKind, c.want, c.kind)
			}
		})
	}
}

// rawServer answers each connection on ::1 with serve(conn).
func rawServer(t *testing.T, serve func(net.Conn)) int {
	t.Helper()
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	servetest.Each(t, ln, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
		serve(c)
	})
	return ln.Addr().(*net.TCPAddr).Port
}

func TestHostileServersAreBounded(t *testing.T) {
	endless := func(prefix string, line []byte) func(net.Conn) {
		return func(c net.Conn) {
			io.WriteString(c, prefix)
			for {
				if _, err := c.Write(line); err != nil {
					return
				}
			}
		}
	}
	cases := []struct {
		name    string
		serve   func(net.Conn)
		maxBody int64
		want    string
		kind    result.ErrKind
	}{
		{"garbage", func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH\r\n\r\n") }, 0, `with text (its first bytes "SSH-2.0-OpenSSH\r"…), not an HTTP status line`, "protocol"},
		// Another protocol's server that answers and then waits (trial6
		// F3: an FTP port was failed as a stall after the timeout).
		{"ftp banner", func(c net.Conn) {
			io.WriteString(c, "220 v6lab embedded FTP server ready\r\n")
			c.Read(make([]byte, 512))
			io.WriteString(c, "500 Unknown command \"GET\"\r\n")
			time.Sleep(3 * time.Second)
		}, 0, `its first bytes "220 v6lab embedd"…), not an HTTP status line: it does not speak HTTP on this port`, "protocol"},
		{"tls alert", func(c net.Conn) {
			c.Write([]byte{0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46})
			time.Sleep(3 * time.Second)
		}, 0, "it speaks TLS on this port, give an https:// url", "protocol"},
		{"stall", func(c net.Conn) { time.Sleep(3 * time.Second) }, 0, "timed out", "timeout"},
		{"endless headers", endless("HTTP/1.1 200 OK\r\n", []byte("X-Junk: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n")), 0, "exceeds limit", "protocol"},
		{"endless chunked body", endless("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", []byte("1000\r\n"+strings.Repeat("x", 4096)+"\r\n")), 1 << 20, "exceeds the 1048576-byte limit", "protocol"},
		{"short body", func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this") }, 0, "unexpected EOF", "io"},
		{"huge declared body", func(c net.Conn) { io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n") }, 1 << 20, "exceeds the 1048576-byte limit", "protocol"},
	}
	for _, engine := range []Engine{EngineGo, EngineEvloop, EngineGoDial} {
		for _, c := range cases {
			t.Run(string(engine)+"/"+c.name, func(t *testing.T) {
				port := rawServer(t, c.serve)
				u, _ := ParseURL(fmt.Sprintf("http://[::1]:%d/", port))
				cl := &Client{URL: u, Path: path.IPv6, Resolver: &path.Resolver{}, MaxBody: c.maxBody, Engine: engine}
				start := time.Now()
				s := do(cl, 500*time.Millisecond)
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("took %v: not bounded by the timeout", d)
				}
				if s.OK() || !strings.Contains(s.Err, c.want) || s.ErrKind != c.kind {
					t.Fatalf("err %q kind %q; want %q kind %q", s.Err, s.ErrKind, c.want, c.kind)
				}
			})
		}
	}
}

// TestEnginesAgree fetches the same page and file over each path with both
// engines: same bytes, phases in order, addresses of the path's family.
func TestEnginesAgree(t *testing.T) {
	r := newRig(t, DefaultServerConfig)
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		for _, target := range []string{"http://www.v6lab.test:%d/", "http://www.v6lab.test:%d/files/300K"} {
			var got [3]result.Sample
			for i, engine := range []Engine{EngineGo, EngineEvloop, EngineGoDial} {
				c := r.client(t, p, target)
				c.Objects, c.Engine = false, engine
				s := do(c, 5*time.Second)
				if !s.OK() {
					t.Fatalf("%s %s %s: %s", p, engine, target, s.Err)
				}
				if !(0 < s.ResolveNS && s.ResolveNS <= s.ConnectNS && s.ConnectNS <= s.FirstByteNS && s.FirstByteNS <= s.TotalNS) {
					t.Errorf("%s %s: phases out of order: resolve %d connect %d first %d total %d", p, engine, s.ResolveNS, s.ConnectNS, s.FirstByteNS, s.TotalNS)
				}
				for _, a := range []string{s.Local, s.Remote} {
					if ap, err := netip.ParseAddrPort(a); err != nil || !p.Accepts(ap.Addr()) {
						t.Errorf("%s %s: address %q is not %s", p, engine, a, p.Family())
					}
				}
				got[i] = s
			}
			for _, o := range got[1:] {
				if got[0].BytesIn != o.BytesIn || got[0].BytesOut != o.BytesOut || got[0].Marker != o.Marker {
					t.Errorf("%s %s: go engine in/out %d/%d %q, another %d/%d %q", p, target,
						got[0].BytesIn, got[0].BytesOut, got[0].Marker, o.BytesIn, o.BytesOut, o.Marker)
				}
			}
		}
	}
}

func TestEngineChoice(t *testing.T) {
	plain, _ := ParseURL("http://h/")
	tls, _ := ParseURL("https://h/")
	cases := []struct {
		c    *Client
		want Engine
		err  string
	}{
		{&Client{URL: plain}, EngineEvloop, ""},
		{&Client{URL: plain, Objects: true}, EngineEvloop, ""},
		{&Client{URL: tls}, EngineGo, ""},
		{&Client{URL: plain, Engine: EngineGo}, EngineGo, ""},
		{&Client{URL: plain, Objects: true, Engine: EngineGo}, EngineGo, ""},
		{&Client{URL: tls, Engine: EngineEvloop}, "", "runs plain http"},
		{&Client{URL: plain, Engine: EngineGoDial}, EngineGoDial, ""},
		{&Client{URL: tls, Engine: EngineGoDial}, "", "runs plain http"},
		{&Client{URL: plain, Engine: "epoll"}, "", `unknown engine "epoll"`},
	}
	for _, c := range cases {
		got, err := c.c.EngineUsed()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s objects=%v engine %q: err %v, want %q", c.c.URL, c.c.Objects, c.c.Engine, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s objects=%v engine %q: %q %v, want %q", c.c.URL, c.c.Objects, c.c.Engine, got, err, c.want)
		}
	}
}

func TestParseURL(t *testing.T) {
	for _, bad := range []string{"ftp://x/", "http://", "http://x:0/", "http://x:99999/", "::::", "http://bücher.lab.test:18080/", "http://a;id.test/"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, good := range []string{"https://example.test/a?b", "http://xn--bcher-kva.lab.test/", "http://[::1]:8080/", "http://127.0.0.1/", "http://[fe80::1%25eth0]/"} {
		if _, err := ParseURL(good); err != nil {
			t.Error(err)
		}
	}
}

func TestObjects(t *testing.T) {
	base, _ := url.Parse("http://h:8080/dir/page.html")
	page := `<html><head><link rel="stylesheet" href="s.css"><link rel="alternate" href="feed">
<script src="/app.js"></script></head><body><img src="a.png"><img src="a.png"><img src="http://other/x.png">
<img src="https://h:8080/tls.png"><img src="data:image/png;base64,AA"><video poster="p.jpg" src="v.mp4"></video></body></html>`
	got := strings.Join(Objects([]byte(page), base), " ")
	want := "/dir/s.css /app.js /dir/a.png /dir/v.mp4 /dir/p.jpg"
	if got != want {
		t.Errorf("objects %q, want %q", got, want)
	}
}

// FuzzObjects parses arbitrary pages for their objects. The seeds are
// small pages holding every tag kind Objects reads: the engine mutates
// every byte of a seed, and the 4 KiB embedded page as a seed held it to
// about a thousand inputs a second.
func FuzzObjects(f *testing.F) {
	f.Add([]byte(`<html><head><link rel="stylesheet icon" href="/a.css"><script src="/s.js"></script></head>` +
		`<body><img src="i.png"><iframe src="/f"></iframe><embed src="e"><video src="v.mp4" poster="p.jpg"><source src="s.webm"></video>` +
		`<audio src="a.ogg"></audio><input type="image" src="b.gif"><img src="data:x"><img src="#x"><img src="http://other/x"></body></html>`))
	f.Add([]byte(`<img src="` + strings.Repeat("../", 100) + `">`))
	f.Add([]byte("<link rel=stylesheet href=x><<<>>>"))
	base, _ := url.Parse("http://h/")
	f.Fuzz(func(t *testing.T, b []byte) {
		objs := Objects(b, base)
		if len(objs) > MaxObjects {
			t.Fatalf("%d objects", len(objs))
		}
		for _, o := range objs {
			if !strings.HasPrefix(o, "/") {
				t.Fatalf("object %q is not a request URI on the same host", o)
			}
		}
	})
}

// FuzzReply feeds arbitrary server replies to the response reader.
func FuzzReply(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 404 Not Found\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<img src=/x>"))
	f.Add([]byte("garbage"))
	u, _ := url.Parse("http://h/")
	c := &Client{URL: u, MaxBody: 1 << 16}
	f.Fuzz(func(t *testing.T, reply []byte) {
		tr := &countReader{r: bytes.NewReader(reply), tr: newTrace()}
		br := bufio.NewReaderSize(tr, 4096)
		page, _, err := c.get(br, tr, &countWriter{w: io.Discard}, "/", true, false, nil)
		if err == nil && len(page) > MaxPageParse {
			t.Fatalf("page of %d bytes kept", len(page))
		}
		if tr.n > int64(len(reply)) {
			t.Fatalf("read %d of %d bytes", tr.n, len(reply))
		}
		if err != nil && errors.Is(err, io.ErrShortWrite) {
			t.Fatal(err)
		}
	})
}

// TestCorruptBodyFails: a body of the right length but wrong content is a
// failed sample on both engines when the content is known; a good one
// passes with its CRC-32C recorded.
func TestCorruptBodyFails(t *testing.T) {
	body := content.Bytes(300_000)
	bad := append([]byte(nil), body...)
	bad[250_000] = '!'
	serveBody := func(b []byte) func(net.Conn) {
		return func(c net.Conn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(b))
			c.Write(b)
		}
	}
	want := content.NewCheck(content.Unknown)
	want.Write(body)
	for _, engine := range []Engine{EngineGo, EngineEvloop, EngineGoDial} {
		for _, c := range []struct {
			name string
			body []byte
			err  string
		}{{"good", body, ""}, {"corrupt", bad, "byte 250000 is 0x21"}} {
			port := rawServer(t, serveBody(c.body))
			u, _ := ParseURL(fmt.Sprintf("http://[::1]:%d/files/300000", port))
			cl := &Client{URL: u, Path: path.IPv6, Resolver: &path.Resolver{}, Engine: engine, Expect: content.Generated, Sum: true}
			s := do(cl, 5*time.Second)
			if c.err == "" {
				if !s.OK() || s.Metrics["body_crc32c"] != float64(want.Sum()) || s.Metrics["body_bytes"] != float64(len(body)) {
					t.Errorf("%s %s: err %q crc %v body %v bytes, want %v, %d", engine, c.name, s.Err, s.Metrics["body_crc32c"], s.Metrics["body_bytes"], want.Sum(), len(body))
				}
				continue
			}
			if s.OK() || !strings.Contains(s.Err, c.err) || !strings.Contains(s.Err, "content differs") || s.ErrKind != "protocol" {
				t.Errorf("%s %s: err %q kind %q", engine, c.name, s.Err, s.ErrKind)
			}
		}
	}
}

// TestEnginesKeepToThePath: neither engine dials an address, or binds a
// source, of the other family.
func TestEnginesKeepToThePath(t *testing.T) {
	u, _ := ParseURL("http://127.0.0.1:9/")
	for _, engine := range []Engine{EngineGo, EngineEvloop, EngineGoDial} {
		for _, c := range []*Client{
			{URL: u, Path: path.IPv6, Resolver: &path.Resolver{}, Engine: engine},
			{URL: u, Path: path.IPv4, Resolver: &path.Resolver{}, Engine: engine, Source: lo6},
		} {
			s := do(c, time.Second)
			if s.OK() || s.ErrKind != "family" || !strings.Contains(s.Err, "needs IPv") {
				t.Errorf("%s over %s from %v: err %q kind %q", engine, c.Path, c.Source, s.Err, s.ErrKind)
			}
		}
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// TestPageAndObjectsOnBothEngines fetches the page and its four objects
// from servers that close after every k requests: both engines fetch every
// object, reconnect exactly when the server closes, and count the same
// bytes; a missing object fails the transaction naming it.
func TestPageAndObjectsOnBothEngines(t *testing.T) {
	for _, k := range []int{0, 1, 2, 5} {
		var got []result.Sample
		for _, engine := range []Engine{EngineGo, EngineEvloop, EngineGoDial} {
			ln, err := net.Listen("tcp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cl := &countingListener{Listener: ln}
			cfg := DefaultServerConfig
			cfg.KeepaliveRequests = k
			srv := newPlainServer(cfg)
			go srv.serve(cl)
			u, _ := ParseURL("http://" + ln.Addr().String() + "/")
			c := &Client{URL: u, Path: path.IPv4, Resolver: &path.Resolver{}, Objects: true, Engine: engine}
			s := do(c, 5*time.Second)
			srv.close()
			ln.Close()
			if !s.OK() || s.Marker != "200 OK, 4 objects" {
				t.Fatalf("keepalive %d, %s: %q %s", k, engine, s.Marker, s.Err)
			}
			want := int32(1)
			if k > 0 {
				want = int32((5 + k - 1) / k)
			}
			if n := cl.n.Load(); n != want {
				t.Errorf("keepalive %d, %s: %d connections, want %d", k, engine, n, want)
			}
			if !(s.ConnectNS <= s.FirstByteNS && s.FirstByteNS <= s.TotalNS && s.WireNS <= s.TotalNS) {
				t.Errorf("keepalive %d, %s: connect %d first %d wire %d total %d", k, engine, s.ConnectNS, s.FirstByteNS, s.WireNS, s.TotalNS)
			}
			got = append(got, s)
		}
		if got[0].BytesIn != got[1].BytesIn || got[0].BytesOut != got[1].BytesOut {
			t.Errorf("keepalive %d: go in/out %d/%d, evloop %d/%d", k, got[0].BytesIn, got[0].BytesOut, got[1].BytesIn, got[1].BytesOut)
		}
	}

	missing := nethttp.NewServeMux()
	missing.HandleFunc("GET /{$}", func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		io.WriteString(w, `<html><img src="/a.png"><img src="/gone.png"></html>`)
	})
	missing.HandleFunc("GET /a.png", func(w nethttp.ResponseWriter, _ *nethttp.Request) { io.WriteString(w, "png") })
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &nethttp.Server{Handler: missing}
	go srv.Serve(ln)
	defer srv.Close()
	u, _ := ParseURL("http://" + ln.Addr().String() + "/")
	for _, engine := range []Engine{EngineGo, EngineEvloop, EngineGoDial} {
		s := do(&Client{URL: u, Path: path.IPv4, Resolver: &path.Resolver{}, Objects: true, Engine: engine}, 5*time.Second)
		if s.OK() || !strings.Contains(s.Err, "object /gone.png: status 404") || s.ErrKind != "protocol" {
			t.Errorf("%s: err %q kind %q, want the missing object named", engine, s.Err, s.ErrKind)
		}
	}
}

// TestObjectsParsedOnce: the same page is tokenized once per client, a
// different page again.
func TestObjectsParsedOnce(t *testing.T) {
	u, _ := ParseURL("http://h/")
	c := &Client{URL: u}
	a := []byte(`<img src="/a"><img src="/b">`)
	first := c.objectsOf(a)
	if again := c.objectsOf(bytes.Clone(a)); &again[0] != &first[0] {
		t.Error("the same page was parsed again")
	}
	if other := c.objectsOf([]byte(`<img src="/c">`)); len(other) != 1 || other[0] != "/c" {
		t.Errorf("another page gave %v", other)
	}
	if back := c.objectsOf(a); len(back) != 2 || back[1] != "/b" {
		t.Errorf("the first page again gave %v", back)
	}
}

// TestCellWithDualPathUsesOneEngine: a cell that races the families with
// Go's dialer runs its pinned paths the way its dual path connects too
// (go-dial), unless an engine was asked for; with v6lab's dialer every
// path runs on the event loop, the race included.
func TestCellWithDualPathUsesOneEngine(t *testing.T) {
	engineOf := func(o *Options) string {
		t.Helper()
		pr, err := o.Probe(proto.Endpoint{}, path.IPv4)
		if err != nil {
			t.Fatal(err)
		}
		return pr.(proto.Recorder).Record()["engine"]
	}
	o := &Options{}
	o.URL = "http://h/"
	if got := engineOf(o); got != "evloop" {
		t.Errorf("pinned paths alone: %q", got)
	}
	o.RacesFamilies = true
	if got := engineOf(o); got != "evloop" {
		t.Errorf("beside a dual path racing on the loop: %q", got)
	}
	o.Dialer = "go"
	if got := engineOf(o); got != "go-dial" {
		t.Errorf("beside a dual path racing with Go's dialer: %q", got)
	}
	o.Engine = "evloop"
	if got := engineOf(o); got != "evloop" {
		t.Errorf("asked for evloop beside a dual path: %q", got)
	}
	// Its dual path cannot: Go's dialer is asked for.
	if err := o.Check(result.Hosts, func(string) bool { return false }); err == nil || !strings.Contains(err.Error(), "use go-dial") {
		t.Errorf("evloop with dialer go: %v", err)
	}
	o.Dialer = ""
	if err := o.Check(result.Hosts, func(string) bool { return false }); err != nil {
		t.Errorf("evloop with v6lab's dialer: %v", err)
	}
	o.Dialer = "go"
	o.Engine = "go"
	if got := engineOf(o); got != "go" {
		t.Errorf("asked for go beside a dual path: %q", got)
	}
	o.URL = "https://h/"
	o.Engine = ""
	if got := engineOf(o); got != "go" {
		t.Errorf("https: %q", got)
	}
	// The dual path itself: v6lab's race on the loop; Go's dialer's
	// Happy Eyeballs dial, then the loop.
	dual := func(engine, url string, goDialer bool) (Engine, error) {
		u, _ := ParseURL(url)
		return (&Client{URL: u, Path: path.Dual, Engine: Engine(engine), GoDialer: goDialer}).EngineUsed()
	}
	for _, c := range []struct {
		engine, url string
		goDialer    bool
		want        Engine
		err         error
	}{
		{"", "http://h/", false, EngineEvloop, nil},
		{"", "http://h/", true, EngineGoDial, nil},
		{"evloop", "http://h/", false, EngineEvloop, nil},
		{"go-dial", "http://h/", false, EngineGoDial, nil},
		{"go", "http://h/", false, EngineGo, nil},
		{"", "https://h/", false, EngineGo, nil},
		{"evloop", "http://h/", true, EngineGo, ErrEngine},
		{"go-dial", "https://h/", false, EngineGo, ErrGoDialEngine},
	} {
		if got, err := dual(c.engine, c.url, c.goDialer); got != c.want || !errors.Is(err, c.err) {
			t.Errorf("dual, engine %q, %s, Go's dialer %v: %q, %v", c.engine, c.url, c.goDialer, got, err)
		}
	}
}

// FuzzRequestLine: for any URL the client accepts, its GET is one request
// line and the fixed header lines: nothing in the URL adds a line or a
// header of its own.
func FuzzRequestLine(f *testing.F) {
	for _, s := range []string{"http://www.v6lab.test/", "http://h/a%0d%0aX-Injected:%201", "http://h/?q=%0a", "https://[::1]:8443/files/1M"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := ParseURL(raw)
		if err != nil {
			return
		}
		c := &Client{URL: u}
		req := c.request(u.RequestURI(), false)
		r := string(req)
		// GET, Host, User-Agent, Accept, then the empty line: five CRLFs,
		// and no other CR, LF or NUL.
		if !strings.HasPrefix(r, "GET ") || strings.Count(r, "\r\n") != 5 || strings.Count(r, "\n") != 5 || strings.Count(r, "\r") != 5 || strings.Contains(r, "\x00") {
			t.Fatalf("%q: request %q", raw, req)
		}
	})
}
