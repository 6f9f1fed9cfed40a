package http

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/servetest"
)

// h3Rig is the https rig with HTTP/3 on its port's UDP.
func h3Rig(t *testing.T) *rig {
	t.Helper()
	cfg := DefaultServerConfig
	tc, err := proto.SelfSigned([]string{"www.v6lab.test"}, []netip.Addr{lo4, lo6})
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS, cfg.H3 = tc, true
	return newRig(t, cfg)
}

// TestVersionsPerPath: over each loopback path, HTTP/2 by ALPN, HTTP/2 in
// the clear (h2c) and HTTP/3 fetch the page and its four objects on one
// connection, name the protocol they spoke, keep both ends of the
// connection to the path's family, and time the handshake, the first
// byte and the wire.
func TestVersionsPerPath(t *testing.T) {
	tlsRig, plainRig := h3Rig(t), newRig(t, DefaultServerConfig)
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		for _, v := range []struct {
			version, url, negotiated string
			r                        *rig
		}{
			{Version2, "https://www.v6lab.test:%d/", "h2", tlsRig},
			{Version2, "http://www.v6lab.test:%d/", "h2c", plainRig},
			{Version3, "https://www.v6lab.test:%d/", "h3", tlsRig},
			{Version11, "https://www.v6lab.test:%d/", "http/1.1", tlsRig},
		} {
			c := v.r.client(t, p, v.url)
			c.Version, c.Phases, c.TLS = v.version, true, &tls.Config{InsecureSkipVerify: true}
			s := do(c, 5*time.Second)
			for try := 0; try < 3 && s.OK() && s.WireNS == 0; try++ {
				s = do(c, 5*time.Second) // the kernel's receive stamps may come on late (kstamp.Hold)
			}
			name := string(p) + " " + v.negotiated
			if !s.OK() || !strings.Contains(s.Marker, "200 OK, 4 objects") || s.Negotiated != v.negotiated {
				t.Fatalf("%s: %+v", name, s)
			}
			for _, a := range []string{s.Local, s.Remote} {
				ap, err := netip.ParseAddrPort(a)
				if err != nil || !p.Accepts(ap.Addr()) {
					t.Errorf("%s: address %q is not of path %s", name, a, p)
				}
			}
			if s.Metrics["handshake_ms"] <= 0 || s.Metrics["ttfb_ms"] <= s.Metrics["handshake_ms"] || s.FirstByteNS > s.TotalNS {
				t.Errorf("%s: phases %v, first byte %d of %d", name, s.Metrics, s.FirstByteNS, s.TotalNS)
			}
			if s.WireNS <= 0 || s.WireNS > s.TotalNS+int64(time.Millisecond) || s.BytesIn < 4*8<<10 || s.BytesOut == 0 {
				t.Errorf("%s: wire %d of %d ns, %d bytes in, %d out", name, s.WireNS, s.TotalNS, s.BytesIn, s.BytesOut)
			}
			if v.version == Version3 && !strings.Contains(s.Marker, "QUIC v1") {
				t.Errorf("%s: marker %q names no QUIC version", name, s.Marker)
			}
		}
	}
}

// TestHTTP3ResumesWithZeroRTT: returning users resume, and with ZeroRTT
// the page's request leaves in 0-RTT data, its first byte before the
// handshake's end.
func TestHTTP3ResumesWithZeroRTT(t *testing.T) {
	r := h3Rig(t)
	c := r.client(t, path.IPv6, "https://www.v6lab.test:%d/")
	c.Version, c.ZeroRTT = Version3, true
	c.TLS = ResumeTLS(&tls.Config{InsecureSkipVerify: true})
	first := do(c, 5*time.Second)
	if !first.OK() || strings.Contains(first.Marker, "0-RTT") || !strings.HasSuffix(first.Marker, "full handshake") || first.ZeroRTT || first.Resumed || first.TLS == "" {
		t.Fatalf("first user: %+v", first)
	}
	s := do(c, 5*time.Second)
	if !s.OK() || !strings.Contains(s.Marker, "0-RTT") || !strings.HasSuffix(s.Marker, "resumed") || !s.ZeroRTT || !s.Resumed {
		t.Fatalf("returning user: %+v", s)
	}
	// The handshake ends by the page's first byte, long before its four
	// objects are fetched: its time is not the transaction's.
	for name, s := range map[string]result.Sample{"first user": first, "returning user": s} {
		if s.TLSNS <= 0 || s.TLSNS > s.FirstByteNS+(s.TotalNS-s.FirstByteNS)/2 {
			t.Errorf("%s: handshake ended at %v, first byte %v, the transaction's end %v",
				name, time.Duration(s.TLSNS), time.Duration(s.FirstByteNS), time.Duration(s.TotalNS))
		}
	}
}

// TestServerAdvertisesHTTP3: the https server's HTTP/1.1 and HTTP/2
// replies carry Alt-Svc naming h3 on its own port.
func TestServerAdvertisesHTTP3(t *testing.T) {
	r := h3Rig(t)
	want := fmt.Sprintf(`h3=":%d"; ma=86400`, r.srv.Port)
	for _, h2 := range []bool{false, true} {
		var ps nethttp.Protocols
		ps.SetHTTP1(!h2)
		ps.SetHTTP2(h2)
		cl := &nethttp.Client{Transport: &nethttp.Transport{Protocols: &ps, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := cl.Get(fmt.Sprintf("https://127.0.0.1:%d/health", r.srv.Port))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Alt-Svc"); got != want || resp.ProtoMajor != map[bool]int{false: 1, true: 2}[h2] {
			t.Errorf("h2=%v: %s, Alt-Svc %q, want %q", h2, resp.Proto, got, want)
		}
		cl.CloseIdleConnections()
	}
}

// TestVersionFailuresAreClear: an HTTP/1.1-only server refuses h2c, a
// TLS server without h2 refuses h2, a server that never answers QUIC
// fails the transaction in the QUIC timeout with the path named, never a
// hang.
func TestVersionFailuresAreClear(t *testing.T) {
	// An HTTP/1.1 server that answers anything with 400, as nginx does
	// on a port without http2.
	port := rawServer(t, func(c net.Conn) {
		c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
	})
	c := &Client{URL: mustURL(t, fmt.Sprintf("http://[::1]:%d/", port)), Path: path.IPv6, Version: Version2, Objects: true}
	if s := do(c, 5*time.Second); s.OK() || !strings.Contains(s.Err, "does not speak h2c") {
		t.Errorf("h2c to an HTTP/1.1 server: %+v", s)
	}
	// A server that answers with a bare page, no status line (Python's
	// http.server to HTTP/2's preface).
	port = rawServer(t, func(c net.Conn) {
		c.Write([]byte("<!DOCTYPE HTML>\n<html><body>505</body></html>\n"))
	})
	c = &Client{URL: mustURL(t, fmt.Sprintf("http://[::1]:%d/", port)), Path: path.IPv6, Version: Version2, Objects: true}
	if s := do(c, 5*time.Second); s.OK() || !strings.Contains(s.Err, `with text (its first bytes "<!DOCTYP"…)`) || !strings.Contains(s.Err, "does not speak h2c") {
		t.Errorf("h2c to a server answering a bare page: %+v", s)
	}
	// A TLS server that offers no h2 (ALPN http/1.1 alone).
	cfg := tlsConfig(t).TLS
	cfg.NextProtos = nil // chooses none, as an HTTP/1.1 server that knows no ALPN
	ln, err := tls.Listen("tcp4", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	servetest.Each(t, ln, func(c net.Conn) { c.(*tls.Conn).Handshake() })
	c = &Client{URL: mustURL(t, fmt.Sprintf("https://127.0.0.1:%d/", ln.Addr().(*net.TCPAddr).Port)), Path: path.IPv4,
		Version: Version2, Objects: true, TLS: &tls.Config{InsecureSkipVerify: true}}
	if s := do(c, 5*time.Second); s.OK() || !strings.Contains(s.Err, "did not choose h2 by ALPN (it chose none: HTTP/1.1)") || s.ErrKind != "protocol" {
		t.Errorf("h2 from a server without it: %+v", s)
	}
	// A UDP port that swallows every datagram.
	pc, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		b := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(b); err != nil {
				return
			}
		}
	}()
	c = &Client{URL: mustURL(t, fmt.Sprintf("https://[::1]:%d/", pc.LocalAddr().(*net.UDPAddr).Port)), Path: path.IPv6,
		Version: Version3, QUICTimeout: 300 * time.Millisecond, TLS: &tls.Config{InsecureSkipVerify: true}}
	start := time.Now()
	s := do(c, 10*time.Second)
	if s.OK() || !strings.Contains(s.Err, "no QUIC answer over ipv6 in 300ms") || s.ErrKind != "timeout" || time.Since(start) > 5*time.Second {
		t.Errorf("a silent QUIC server: %+v after %v", s, time.Since(start))
	}
	// A closed port: its ICMP port unreachable is a lost datagram to the
	// handshake, which times out the same way, but the failure says the
	// port was refused, and counts as refused.
	port = pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	c.URL = mustURL(t, fmt.Sprintf("https://[::1]:%d/", port))
	if s := do(c, 10*time.Second); s.OK() || s.ErrKind != "refused" ||
		!strings.Contains(s.Err, fmt.Sprintf("no QUIC answer over ipv6 in 300ms: UDP port %d was refused (ICMP port unreachable: nothing listens there)", port)) {
		t.Errorf("a closed QUIC port: %+v", s)
	}
	// A server of HTTP/1.1 and 2 over TCP alone: nothing listens on its
	// UDP port.
	tcpOnly := rawServer(t, func(c net.Conn) {})
	c.URL = mustURL(t, fmt.Sprintf("https://[::1]:%d/", tcpOnly))
	if s := do(c, 10*time.Second); s.OK() || !strings.Contains(s.Err, fmt.Sprintf("no QUIC answer over ipv6 in 300ms: UDP port %d was refused", tcpOnly)) {
		t.Errorf("HTTP/3 to a TCP-only server: %+v", s)
	}
	if DefaultQUICTimeout != 3*time.Second || seconds(DefaultQUICTimeout) != "3 s" {
		t.Errorf("the default QUIC timeout reads %q", seconds(DefaultQUICTimeout))
	}
}

func tlsConfig(t *testing.T) ServerConfig {
	cfg := DefaultServerConfig
	tc, err := proto.SelfSigned([]string{"www.v6lab.test"}, []netip.Addr{lo4, lo6})
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = tc
	return cfg
}

func mustURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestVersionOptions: http_version and zero_rtt's rules, each a clear
// error naming the option.
func TestVersionOptions(t *testing.T) {
	none := func(string) bool { return false }
	opts := func(version string, set func(o *Options)) *Options {
		o := &Options{HTTPVersion: version}
		if set != nil {
			set(o)
		}
		return o
	}
	cases := []struct {
		name  string
		o     *Options
		where result.Where
		want  string
	}{
		{"unknown", opts("4", nil), result.Lab, `http_version: "4" is not an HTTP version v6lab speaks: want 1.1, 2 or 3`},
		{"a flag's list", opts("1.1,2,3", nil), result.Lab, `http_version: "1.1,2,3" is a list: give one version, 1.1, 2 or 3 (a list, [1.1, 2, 3], is for a cell's http_version in an experiment file`},
		{"h3 over http", opts("3", func(o *Options) { o.URL = "http://www.example.org/" }), result.Hosts, "http_version: 3 runs over QUIC, which is always TLS, but the url is http://"},
		{"curl", opts("2", func(o *Options) { o.Client, o.File = "curl", "1M" }), result.Lab, "http_version: 2 is spoken by v6lab's own client: client: curl"},
		{"wget", opts("3", func(o *Options) { o.Client, o.File = "wget", "1M" }), result.Lab, "http_version: 3 is spoken by v6lab's own client: client: wget"},
		{"0-RTT without 3", opts("2", func(o *Options) { o.ZeroRTT, o.TLSResume = true, true }), result.Lab, "zero_rtt: sends the first request in QUIC's 0-RTT data: give http_version: 3"},
		{"0-RTT without resume", opts("3", func(o *Options) { o.ZeroRTT = true }), result.Lab, "zero_rtt: needs a session to resume"},
		{"keepalive without 2 or 3", opts("", func(o *Options) { o.Keepalive = true }), result.Lab, "keepalive: keeps each user's HTTP/2 or HTTP/3 connection"},
		{"evloop", opts("3", func(o *Options) { o.Engine = "evloop" }), result.Lab, "engine: http: the evloop engine speaks HTTP/1.1"},
		{"streams of 3", opts("3", func(o *Options) { o.Streams, o.Keepalive = 4, true }), result.Lab, "streams: 4 runs transactions at once as streams of one HTTP/2 connection: give http_version: 2"},
		{"streams of 1.1", opts("", func(o *Options) { o.Streams = 4 }), result.Lab, "streams: 4 runs transactions at once as streams of one HTTP/2 connection: give http_version: 2"},
		{"streams not kept", opts("2", func(o *Options) { o.Streams = 4 }), result.Lab, "streams: 4 shares each user's connection among its transactions: give keepalive too"},
		{"streams negative", opts("2", func(o *Options) { o.Streams, o.Keepalive = -1, true }), result.Lab, "streams: -1: want 1 to 100 transactions at once"},
		{"streams too many", opts("2", func(o *Options) { o.Streams, o.Keepalive = 101, true }), result.Lab, "streams: 101: want 1 to 100"},
		{"streams v3", opts("2", func(o *Options) { o.Streams, o.Keepalive, o.Dialer = 4, true, DialerV3 }), result.Lab, "streams: 4: dialer v3 keeps the connection each user's race won"},
		{"streams of a file", opts("2", func(o *Options) { o.Streams, o.Keepalive, o.File = 4, true, "1M" }), result.Lab, "streams: 4: a file cell measures a transfer's throughput"},
	}
	h3clear := opts("3", nil) // trial6 F10: accepted, and run over TLS regardless
	if err := h3clear.Check(result.Lab, func(o string) bool { return o == "tls" }); err == nil || !strings.Contains(err.Error(), "tls: false: HTTP/3 runs over QUIC, which is always TLS") {
		t.Errorf("h3 with tls: false: %v", err)
	}
	h3tls := opts("3", func(o *Options) { o.TLS = true })
	if err := h3tls.Check(result.Lab, func(o string) bool { return o == "tls" }); err != nil {
		t.Errorf("h3 with tls: true: %v", err)
	}
	for _, c := range cases {
		err := c.o.Check(c.where, none)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
	ok := opts("3.0", func(o *Options) { o.TLSResume, o.ZeroRTT = true, true })
	if err := ok.Check(result.Lab, none); err != nil || ok.HTTPVersion != "3" || ok.ServerFor() != ServerKeyH3 {
		t.Errorf("3.0 with 0-RTT: %v, %+v", err, ok)
	}
	if err := ok.PathFit(result.Lab, path.Dual); err == nil || !strings.Contains(err.Error(), "not QUIC") {
		t.Errorf("h3 over dual: %v", err)
	}
	h2 := opts("2", nil)
	if err := h2.Check(result.Lab, none); err != nil || !h2.TLS || h2.ServerFor() != ServerKeyTLS {
		t.Errorf("h2 in the lab is over TLS: %v, %+v", err, h2)
	}
	shared := opts("2", func(o *Options) { o.Streams, o.Keepalive = 4, true })
	if err := shared.Check(result.Lab, none); err != nil || shared.PerUser() != 4 {
		t.Errorf("streams 4 of kept h2: %v, %d a user", err, shared.PerUser())
	}
	zero := opts("2", func(o *Options) { o.Keepalive = true })
	if err := zero.Check(result.Lab, func(o string) bool { return o == "streams" }); err == nil || !strings.Contains(err.Error(), "streams: 0: want 1 to 100") {
		t.Errorf("streams: 0 given: %v", err)
	}
	if err := zero.Check(result.Lab, none); err != nil || zero.PerUser() != 1 {
		t.Errorf("streams not given: %v, %d a user", err, zero.PerUser())
	}
	h2c := opts("2", nil)
	if err := h2c.Check(result.Lab, func(o string) bool { return o == "tls" }); err != nil || h2c.TLS {
		t.Errorf("h2c with tls: false: %v, %+v", err, h2c)
	}
}

// TestHTTP2CarriesManyStreamsAndKeeps: one connection carries a page of
// MaxObjects objects, and kept connections carry a user's transactions
// one after another (hundreds of requests on one connection: none may
// stall), each after the first without lookup or handshake.
func TestHTTP2CarriesManyStreamsAndKeeps(t *testing.T) {
	r := newRig(t, DefaultServerConfig)
	c := r.client(t, path.IPv4, fmt.Sprintf("http://www.v6lab.test:%%d/pages/%d", MaxObjects))
	c.Version = Version2
	for range 3 {
		if s := do(c, 5*time.Second); !s.OK() || !strings.Contains(s.Marker, fmt.Sprintf("%d objects", MaxObjects)) {
			t.Fatalf("a page of %d objects: %+v", MaxObjects, s)
		}
	}
	for _, v := range []string{Version2, Version3} {
		k := h3Rig(t).client(t, path.IPv6, "https://www.v6lab.test:%d/")
		k.Version, k.Keep, k.TLS = v, true, &tls.Config{InsecureSkipVerify: true}
		for i := range 300 {
			s := do(k, 5*time.Second)
			kept := strings.Contains(s.Marker, "kept connection")
			if !s.OK() || kept != (i > 0) || s.Kept != kept || (i > 0 && (s.ResolveNS != 0 || s.TLSNS != 0)) {
				t.Fatalf("%s, transaction %d: %+v", v, i, s)
			}
		}
		k.Close()
	}
}

// TestSustainedVersionsSpeakTheirVersion: a sustained run (--duration)
// of HTTP/2 in the clear speaks h2c on every transaction, as a run of
// single transactions does: the event loop (HTTP/1.1 only) never takes
// it over, so no sample measures HTTP/1.1 under an HTTP/2 label.
func TestSustainedVersionsSpeakTheirVersion(t *testing.T) {
	r := newRig(t, DefaultServerConfig)
	c := r.client(t, path.IPv4, "http://www.v6lab.test:%d/")
	c.Version = Version2
	if _, ok := c.Sustain(context.Background(), load.All(0), 0, 0, nil); ok {
		t.Fatal("the HTTP/1.1 event loop took over a sustained h2c run")
	}
	if e, err := c.EngineUsed(); err != nil || e != EngineGo {
		t.Fatalf("engine %q, %v", e, err)
	}
	var mu sync.Mutex
	var smps []result.Sample
	load.Sustained(context.Background(), c, load.All(2), 200*time.Millisecond, 5*time.Second, func(s result.Sample) {
		mu.Lock()
		smps = append(smps, s)
		mu.Unlock()
	})
	if len(smps) == 0 {
		t.Fatal("no samples")
	}
	for _, s := range smps {
		if !s.OK() || s.Negotiated != "h2c" {
			t.Fatalf("a sustained h2c transaction: %+v", s)
		}
	}
}
