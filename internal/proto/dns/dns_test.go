package dns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

var (
	lo4 = netip.MustParseAddr("127.0.0.1")
	lo6 = netip.MustParseAddr("::1")
)

func testZone() Zone {
	z := Zone{}
	z.Add("www.v6lab.test", lo4)
	z.Add("www.v6lab.test", lo6)
	z.Add("v4only.v6lab.test", lo4)
	return z
}

func startServer(t *testing.T) *Server {
	t.Helper()
	s, err := Listen(context.Background(), testZone(), []netip.Addr{lo4, lo6}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func serverFor(s *Server, p path.Path) netip.AddrPort {
	for _, a := range s.Addrs() {
		if p.Accepts(a.Addr()) {
			return a
		}
	}
	panic("no server address for " + p)
}

func TestQueryPerPath(t *testing.T) {
	s := startServer(t)
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		for _, tcp := range []bool{false, true} {
			name := string(p) + "/udp"
			if tcp {
				name = string(p) + "/tcp"
			}
			t.Run(name, func(t *testing.T) {
				c := &Client{Name: "www.v6lab.test", Server: serverFor(s, p), Path: p, TCP: tcp}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				smp := c.Do(ctx, 0)
				if !smp.OK() {
					t.Fatalf("failed: %s", smp.Err)
				}
				want := "NOERROR, 1 A"
				if p.IsIPv6() {
					want = "NOERROR, 1 AAAA"
				}
				if smp.Marker != want {
					t.Errorf("marker %q, want %q", smp.Marker, want)
				}
				for _, a := range []string{smp.Local, smp.Remote} {
					ap := netip.MustParseAddrPort(a)
					if !p.Accepts(ap.Addr()) {
						t.Errorf("address %s is not %s", a, p.Family())
					}
				}
				if smp.BytesIn == 0 || smp.BytesOut == 0 || smp.TotalNS <= 0 || smp.FirstByteNS > smp.TotalNS {
					t.Errorf("bad accounting: %+v", smp)
				}
				// Over TCP the SYN starts the wire time (as root, where the
				// kernel stamps it): a second query, made after the
				// stamper is attached, has it, within the total.
				if tcp && os.Geteuid() == 0 && path.SYNReady() {
					again := c.Do(ctx, 0)
					if again.WireNS < 0 || again.WireNS > again.TotalNS || (again.WireNS == 0 && again.OK()) {
						// loopback may leave a reply without a receive stamp: try once more
						if third := c.Do(ctx, 0); third.WireNS <= 0 || third.WireNS > third.TotalNS {
							t.Errorf("over tcp: wire %d of total %d", third.WireNS, third.TotalNS)
						}
					}
				}
			})
		}
	}
}

func TestFailuresCarryTheReply(t *testing.T) {
	s := startServer(t)
	cases := []struct {
		name, host string
		p          path.Path
		want       string
	}{
		{"nxdomain", "nosuch.v6lab.test", path.IPv4, "server answered NXDOMAIN"},
		{"nodata", "v4only.v6lab.test", path.IPv6, "has no AAAA record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := &Client{Name: c.host, Server: serverFor(s, c.p), Path: c.p}
			smp := cl.Do(context.Background(), 0)
			if smp.OK() || !strings.Contains(smp.Err, c.want) || smp.ErrKind != "protocol" {
				t.Fatalf("err %q kind %q, want %q", smp.Err, smp.ErrKind, c.want)
			}
		})
	}
}

// TestExpectTimesNegativeAnswers: with expect, a negative answer of the
// asked kind completes (and is timed) on every path, engine and transport,
// and every other reply fails naming what came.
func TestExpectTimesNegativeAnswers(t *testing.T) {
	s := startServer(t)
	cases := []struct {
		expect, host string
		p            path.Path
		marker, err  string // err: the failure wanted instead of marker
	}{
		{ExpectNXDomain, "nosuch.v6lab.test", path.IPv4, "NXDOMAIN, 0 A", ""},
		{ExpectNXDomain, "nosuch.v6lab.test", path.IPv6, "NXDOMAIN, 0 AAAA", ""},
		{ExpectNXDomain, "www.v6lab.test", path.IPv6, "", "server answered NOERROR with 1 AAAA record, not NXDOMAIN"},
		{ExpectNoData, "v4only.v6lab.test", path.IPv6, "NOERROR, 0 AAAA", ""},
		{ExpectNoData, "www.v6lab.test", path.IPv4, "", "www.v6lab.test. has 1 A record, not none"},
		{ExpectNoData, "nosuch.v6lab.test", path.IPv4, "", "server answered NXDOMAIN"},
		{ExpectAny, "nosuch.v6lab.test", path.IPv6, "NXDOMAIN, 0 AAAA", ""},
		{ExpectAny, "v4only.v6lab.test", path.IPv6, "NOERROR, 0 AAAA", ""},
		{ExpectAny, "www.v6lab.test", path.IPv4, "NOERROR, 1 A", ""},
		{ExpectAnswer, "nosuch.v6lab.test", path.IPv4, "", "server answered NXDOMAIN"},
	}
	for _, c := range cases {
		for _, eng := range []struct {
			name, mode string
			tcp        bool
		}{{"stub-udp", ModeStub, false}, {"stub-tcp", ModeStub, true}, {"load", ModeLoad, false}} {
			t.Run(c.expect+"/"+c.host+"/"+string(c.p)+"/"+eng.name, func(t *testing.T) {
				cl := &Client{Name: c.host, Server: serverFor(s, c.p), Path: c.p, Expect: c.expect, Mode: eng.mode, TCP: eng.tcp}
				defer cl.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				smp := cl.Do(ctx, 0)
				if c.err != "" {
					if smp.OK() || !strings.Contains(smp.Err, c.err) || smp.ErrKind != "protocol" {
						t.Fatalf("err %q kind %q, want %q", smp.Err, smp.ErrKind, c.err)
					}
					return
				}
				if !smp.OK() || smp.Marker != c.marker || smp.TotalNS <= 0 || smp.BytesIn == 0 {
					t.Fatalf("sample %+v, want completed with marker %q", smp, c.marker)
				}
				if !c.p.Accepts(netip.MustParseAddrPort(smp.Remote).Addr()) {
					t.Fatalf("remote %s is not of path %s", smp.Remote, c.p)
				}
			})
		}
	}
}

// TestNoDataFitsOnlyPathsWhoseQueryGetsNone: expect nodata is refused over
// a path whose query asks for a type the name has: the IPv4-only name's A,
// www's A or AAAA (a dns cell over nat64 asks through the translator, not
// the DNS64 view, so the IPv4-only name's AAAA is empty there);
// with where: hosts the servers are the user's and anything goes.
func TestNoDataFitsOnlyPathsWhoseQueryGetsNone(t *testing.T) {
	for _, c := range []struct {
		where       result.Where
		typ, expect string
		p           path.Path
		err         string
		query       string // default: the IPv4-only name
	}{
		{"lab", "", ExpectNoData, path.IPv6, "nodata over ipv6: its query asks for the AAAA record, which www.v6lab.test has", proto.LocalName},
		{"lab", "", ExpectNoData, path.SixIn4, "nodata over 6in4: its query asks for the AAAA record, which www.v6lab.test has", "WWW.v6lab.test."},
		{"lab", "TXT", ExpectNoData, path.IPv4, "", proto.LocalName},
		{"lab", "", ExpectNoData, path.IPv6, "", ""},
		{"lab", "", ExpectNoData, path.SixIn4, "", ""},
		{"lab", "", ExpectNoData, path.IPv4, "nodata over ipv4: its query asks for the A record", ""},
		{"lab", "", ExpectNoData, path.NAT64, "", ""},
		{"lab", "A", ExpectNoData, path.NAT64, "nodata over nat64: its query asks for the A record", ""},
		{"loopback", "A", ExpectNoData, path.IPv6, "nodata over ipv6: its query asks for the A record", ""},
		{"loopback", "AAAA", ExpectNoData, path.IPv4, "", ""},
		{"lab", "MX", ExpectNoData, path.NAT64, "", ""},
		{"lab", "", ExpectAnswer, path.NAT64, "", ""},
		{"hosts", "", ExpectNoData, path.IPv4, "", ""},
	} {
		o := &Options{Query: c.query, Expect: c.expect, Type: c.typ}
		if o.Query == "" {
			o.Query = proto.V4OnlyName
		}
		err := o.PathFit(c.where, c.p)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s, type %q, expect %s over %s: %v, want %q", c.where, c.typ, c.expect, c.p, err, c.err)
		}
		if oe, ok := proto.AsOptionError(err); err != nil && (!ok || oe.Option != "expect") {
			t.Errorf("%v: not an error of option expect", err)
		}
	}
}

func TestWrongFamilyServerIsRefusedBeforeSending(t *testing.T) {
	s := startServer(t)
	cl := &Client{Name: "www.v6lab.test", Server: serverFor(s, path.IPv4), Path: path.IPv6}
	smp := cl.Do(context.Background(), 0)
	if smp.OK() || smp.ErrKind != "family" {
		t.Fatalf("err %q kind %q, want a family error", smp.Err, smp.ErrKind)
	}
}

// hostile runs a UDP server on ::1 that answers every query with reply(query).
func hostile(t *testing.T, reply func([]byte) []byte) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := reply(buf[:n]); out != nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).AddrPort()
}

func TestHostileServers(t *testing.T) {
	cases := []struct {
		name  string
		reply func([]byte) []byte
		want  string
		kind  result.ErrKind
	}{
		{"garbage", func([]byte) []byte { return []byte("garbage!") }, "undecodable reply", "protocol"},
		{"silent", func([]byte) []byte { return nil }, "timed out", "timeout"},
		{"wrong id", func(q []byte) []byte {
			m := new(mdns.Msg)
			m.Unpack(q)
			r := new(mdns.Msg)
			r.SetReply(m)
			r.Id++
			b, _ := r.Pack()
			return b
		}, "does not match query id", "protocol"},
		{"not a response", func(q []byte) []byte { return q }, "not a response", "protocol"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := hostile(t, c.reply)
			cl := &Client{Name: "www.v6lab.test", Server: srv, Path: path.IPv6}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			smp := cl.Do(ctx, 0)
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %v, past its timeout", time.Since(start))
			}
			if smp.OK() || !strings.Contains(smp.Err, c.want) || smp.ErrKind != c.kind {
				t.Fatalf("err %q kind %q, want %q (%s)", smp.Err, smp.ErrKind, c.want, c.kind)
			}
		})
	}
}

func TestResolverPinsRecordTypeAndQueryFamily(t *testing.T) {
	s := startServer(t)
	r := &path.Resolver{Servers: s.Addrs()}
	ctx := context.Background()
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		a, err := r.Lookup(ctx, "www.v6lab.test", p)
		if err != nil || a != p.Loopback() {
			t.Errorf("%s: got %v, %v", p, a, err)
		}
	}
	// The query itself travels over IPv4 while asking for AAAA.
	r.Over = path.IPv4
	if a, err := r.Lookup(ctx, "www.v6lab.test", path.IPv6); err != nil || a != lo6 {
		t.Errorf("AAAA over IPv4: %v, %v", a, err)
	}
	_, err := r.Lookup(ctx, "v4only.v6lab.test", path.IPv6)
	if !errors.Is(err, path.ErrNoAddress) || !strings.Contains(err.Error(), "v4only.v6lab.test has no AAAA record") {
		t.Errorf("missing AAAA: %v", err)
	}
	r6 := &path.Resolver{Servers: []netip.AddrPort{serverFor(s, path.IPv4)}, Over: path.IPv6}
	if _, err := r6.Lookup(ctx, "www.v6lab.test", path.IPv6); err == nil || !strings.Contains(err.Error(), "no IPv6 DNS server") {
		t.Errorf("missing IPv6 server: %v", err)
	}
	if _, err := r.Lookup(ctx, "127.0.0.1", path.IPv6); !errors.Is(err, path.ErrFamily) {
		t.Errorf("IPv4 literal on ipv6 path: %v", err)
	}
}

func TestZoneParseRecord(t *testing.T) {
	z := Zone{}
	if err := z.ParseRecord("a.test=192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a.test", "=1.2.3.4", "a.test=notanip", "a.test=fe80::1%eth0"} {
		if err := z.ParseRecord(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// trial6 F9: a v4-mapped address was served as an A, silently.
	for bad, want := range map[string]string{
		"a.test=::ffff:127.0.0.1": "::ffff:127.0.0.1 is an IPv4-mapped IPv6 address: served as an AAAA record it would send an IPv6 socket over IPv4, which measures no IPv6 path; give 127.0.0.1 for an A record",
		"a.test=0.0.0.0":          "0.0.0.0 is the unspecified address",
		"a.test=::":               ":: is the unspecified address",
	} {
		if err := z.ParseRecord(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
	if len(z) != 1 || len(z["a.test."]) != 1 {
		t.Errorf("a refused record was added: %v", z)
	}
}

func FuzzParseReply(f *testing.F) {
	q := new(mdns.Msg)
	q.SetQuestion("www.v6lab.test.", mdns.TypeAAAA)
	wire, _ := q.Pack()
	f.Add(wire)
	r := new(mdns.Msg)
	r.SetReply(q)
	r.Answer = append(r.Answer, &mdns.AAAA{Hdr: mdns.RR_Header{Name: "www.v6lab.test.", Rrtype: mdns.TypeAAAA, Class: 1}, AAAA: net.ParseIP("::1")})
	good, _ := r.Pack()
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x80"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrReply) {
				t.Fatalf("error not wrapped: %v", err)
			}
			return
		}
		for _, e := range []string{ExpectAnswer, ExpectNoData, ExpectNXDomain, ExpectAny} {
			_ = check(q, m, e) // must not panic on any decodable message
		}
	})
}

// TestBurstOfSimultaneousQueries releases thousands of users at once, as
// the closed model does: the server must not drop their datagrams.
func TestBurstOfSimultaneousQueries(t *testing.T) {
	s := startServer(t)
	const n = 3000
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		t.Run(string(p), func(t *testing.T) {
			var failed atomic.Int32
			var first atomic.Value
			load.Closed(context.Background(), &Client{Name: "www.v6lab.test", Server: serverFor(s, p), Path: p}, load.All(n), 5*time.Second,
				func(smp result.Sample) {
					if !smp.OK() {
						failed.Add(1)
						first.CompareAndSwap(nil, smp.Err)
					}
				})
			if f := failed.Load(); f > 0 {
				t.Fatalf("%d of %d queries failed, first: %v", f, n, first.Load())
			}
		})
	}
}

func TestViewsAnswerByTheAddressAsked(t *testing.T) {
	def := Zone{}
	def.Add("www.v6lab.test", lo6)
	other := netip.MustParseAddr("2001:db8:46::1")
	view := Zone{}
	view.Add("www.v6lab.test", other)
	// The view is keyed by 127.0.0.1: queries sent there get the view's AAAA.
	s, err := ListenViews(context.Background(), def, Views{lo4: view}, []netip.Addr{lo4, lo6}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		server netip.AddrPort
		want   netip.Addr
	}{{serverFor(s, path.IPv4), other}, {serverFor(s, path.IPv6), lo6}} {
		r := &path.Resolver{Servers: []netip.AddrPort{c.server}, Over: path.OfAddr(c.server.Addr())}
		got, err := r.Lookup(context.Background(), "www.v6lab.test", path.IPv6)
		if err != nil || got != c.want {
			t.Errorf("asked %s: %v, %v; want %s", c.server, got, err, c.want)
		}
	}
}

// TestLateAAAADoesNotHoldOtherQueries: the UDP responder answers a
// delayed AAAA late and every other query at once meanwhile; a closed
// server frees its port soon.
func TestLateAAAADoesNotHoldOtherQueries(t *testing.T) {
	s, err := Listen(context.Background(), testZone(), []netip.Addr{lo4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	addr := serverFor(s, path.IPv4).String()
	ask := func(name string, qtype uint16) (time.Duration, *mdns.Msg, error) {
		m := new(mdns.Msg)
		m.SetQuestion(name, qtype)
		c := &mdns.Client{Net: "udp", Timeout: 2 * time.Second}
		start := time.Now()
		in, _, err := c.Exchange(m, addr)
		return time.Since(start), in, err
	}
	late := make(chan time.Duration, 1)
	go func() {
		d, in, err := ask("aaaa-delay-300ms.www.v6lab.test.", mdns.TypeAAAA)
		if err != nil || len(in.Answer) != 1 {
			t.Errorf("the late AAAA: %v %v", err, in)
		}
		late <- d
	}()
	time.Sleep(20 * time.Millisecond)
	d, in, err := ask("www.v6lab.test.", mdns.TypeA)
	if err != nil || len(in.Answer) != 1 || d > 100*time.Millisecond {
		t.Errorf("an A asked meanwhile: %v after %v (%v)", in, d, err)
	}
	if d := <-late; d < 300*time.Millisecond || d > 500*time.Millisecond {
		t.Errorf("the late AAAA came after %v", d)
	}
	start := time.Now()
	s.Close()
	if took := time.Since(start); took > time.Second {
		t.Errorf("Close took %v", took)
	}
	pc, err := net.ListenPacket("udp4", addr)
	if err != nil {
		t.Errorf("the port is not free after Close: %v", err)
	} else {
		pc.Close()
	}
}

// TestLargeAnswer: the large name's TXT answer is proto.LargeAnswer bytes
// with EDNS; a query advertising 4096 gets it whole over UDP, one
// advertising 1232 (DNS Flag Day 2020) or none gets it truncated and asks
// again over TCP, and each sample says how its answer came.
func TestLargeAnswer(t *testing.T) {
	z := testZone()
	large(z, "www.v6lab.test")
	s, err := Listen(context.Background(), z, []netip.Addr{lo4, lo6}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		for _, tc := range []struct {
			edns  uint16
			tcp   bool
			bytes int64
		}{{4096, false, proto.LargeAnswer}, {1232, true, proto.LargeAnswer + 2}, {0, true, proto.LargeAnswer - 11 + 2}} {
			t.Run(fmt.Sprintf("%s/edns%d", p, tc.edns), func(t *testing.T) {
				c := &Client{Name: proto.LargeName, Server: serverFor(s, p), Path: p, Type: mdns.TypeTXT, EDNS: tc.edns}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				smp := c.Do(ctx, 0)
				if !smp.OK() {
					t.Fatalf("failed: %s", smp.Err)
				}
				if !strings.HasPrefix(smp.Marker, "NOERROR, 6 TXT") {
					t.Errorf("marker %q", smp.Marker)
				}
				wantTCP := 0.0
				if tc.tcp {
					wantTCP = 1
				}
				if tc.edns > 0 && smp.Metrics[MetricTCP] != wantTCP {
					t.Errorf("dns_tcp %v, want %v (marker %q)", smp.Metrics[MetricTCP], wantTCP, smp.Marker)
				}
				if tc.tcp != strings.HasSuffix(smp.Marker, ", over TCP") && tc.edns > 0 {
					t.Errorf("marker %q does not say how the answer came", smp.Marker)
				}
				// The answer's own bytes (and over TCP its length
				// prefix), after the truncated one over UDP.
				if got := smp.BytesIn; !tc.tcp && got != tc.bytes || tc.tcp && got <= tc.bytes {
					t.Errorf("bytes in %d, want %d", got, tc.bytes)
				}
			})
		}
	}
}

// TestResend: a stub query whose reply does not come is sent again after
// Resend, and the sample counts it.
func TestResend(t *testing.T) {
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() { // answer only the second copy of each query
		buf := make([]byte, 4096)
		seen := map[uint16]bool{}
		for {
			n, from, err := pc.ReadFromUDP(buf)
			if err != nil {
				return
			}
			q := new(mdns.Msg)
			if q.Unpack(buf[:n]) != nil {
				continue
			}
			if !seen[q.Id] {
				seen[q.Id] = true
				continue
			}
			m := new(mdns.Msg)
			m.SetReply(q)
			m.Answer = append(m.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: q.Question[0].Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.IPv4(127, 0, 0, 1)})
			b, _ := m.Pack()
			pc.WriteToUDP(b, from)
		}
	}()
	c := &Client{Name: "www.v6lab.test", Server: pc.LocalAddr().(*net.UDPAddr).AddrPort(), Path: path.IPv4, EDNS: 1232, Resend: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	smp := c.Do(ctx, 0)
	if !smp.OK() {
		t.Fatalf("failed: %s", smp.Err)
	}
	if smp.Metrics[MetricResent] != 1 || smp.Total() < 50*time.Millisecond {
		t.Errorf("resent %v after %v, want once after 50ms", smp.Metrics[MetricResent], smp.Total())
	}
	c.Resend = 0
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if smp := c.Do(ctx, 1); smp.OK() || smp.Metrics[MetricResent] != 0 {
		t.Errorf("without resend: %+v", smp)
	}
}
