package dns

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"v6lab/internal/lab/servers"
	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil"
)

// TestParseService: a record in presentation form, checked; a
// ServiceMode record without alpn is refused naming the record.
func TestParseService(t *testing.T) {
	rr, err := ParseService("www.lab.test=1 . alpn=h3,h2 port=8443 ipv6hint=2001:db8::1", mdns.TypeHTTPS)
	if err != nil {
		t.Fatal(err)
	}
	h := rr.(*mdns.HTTPS)
	if h.Hdr.Name != "www.lab.test." || h.Priority != 1 || h.Target != "." || len(h.Value) != 3 {
		t.Errorf("record %v", rr)
	}
	if rr, err := ParseService("alias.lab.test=0 www.lab.test.", mdns.TypeHTTPS); err != nil || rr.(*mdns.HTTPS).Priority != 0 {
		t.Errorf("an alias: %v %v", rr, err)
	}
	if rr, err := ParseService("_8443._svc.lab.test=1 svc.lab.test. alpn=h2", mdns.TypeSVCB); err != nil || rr.Header().Rrtype != mdns.TypeSVCB {
		t.Errorf("SVCB: %v %v", rr, err)
	}
	for in, want := range map[string]string{
		"www.lab.test=1 . port=8443":    `dns: HTTPS record for www.lab.test. "1 . port=8443" has no alpn: give alpn=h3,h2`,
		"www.lab.test":                  `dns: bad HTTPS record "www.lab.test" (want NAME=RDATA`,
		"www.lab.test=1 . alpn=h3 bad=": `dns: bad HTTPS record for www.lab.test. "1 . alpn=h3 bad=": param bad= is not valid: unknown key "bad"`,
		// trial6 F13: the param refused, in v6lab's words, not miekg/dns's
		// "dns: : ... at line: 1:48"; a repeated alpn id or key refused.
		"www.lab.test=1 . alpn=h3 port=99999":    `dns: bad HTTPS record for www.lab.test. "1 . alpn=h3 port=99999": param port=99999 is not valid: port takes a port number, 0 to 65535`,
		"www.lab.test=1 . alpn=h3 ipv4hint=::1":  `dns: bad HTTPS record for www.lab.test. "1 . alpn=h3 ipv4hint=::1": param ipv4hint=::1 is not valid: ipv4hint takes IPv4 addresses`,
		"www.lab.test=x . alpn=h3":               `dns: bad HTTPS record for www.lab.test. "x . alpn=h3": "x ." is not PRIORITY TARGET`,
		"www.lab.test=1 . alpn=h3,h2,h3":         `dns: bad HTTPS record for www.lab.test. "1 . alpn=h3,h2,h3": alpn lists h3 twice`,
		"www.lab.test=1 . alpn=h3 port=1 port=2": `dns: bad HTTPS record for www.lab.test. "1 . alpn=h3 port=1 port=2": param port is given twice`,
	} {
		if _, err := ParseService(in, mdns.TypeHTTPS); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// TestServerAnswersHTTPS: the server's own records for its https ports
// (alpn, port, hints; the name asked as TargetName under a port prefix),
// the labels that change them, the records given, and negative answers.
func TestServerAnswersHTTPS(t *testing.T) {
	alias, _ := ParseService("alias.v6lab.test=0 www.v6lab.test.", mdns.TypeHTTPS)
	svc := &Services{Ports: map[int][]string{8443: {"h3", "h2"}, 443: {"h2"}},
		Records: map[string][]mdns.RR{"alias.v6lab.test.": {alias}}}
	s, err := ListenServices(context.Background(), testZone(), nil, svc, []netip.Addr{lo4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ask := func(name string, qtype uint16) *mdns.Msg {
		t.Helper()
		m := new(mdns.Msg)
		m.SetQuestion(name, qtype)
		in, _, err := (&mdns.Client{Timeout: 2 * time.Second}).Exchange(m, serverFor(s, path.IPv4).String())
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	in := ask("_8443._https.www.v6lab.test.", mdns.TypeHTTPS)
	if len(in.Answer) != 1 {
		t.Fatalf("%v", in)
	}
	got := in.Answer[0].String()
	for _, want := range []string{"HTTPS\t1 www.v6lab.test. ", `alpn="h3,h2"`, "port=\"8443\"", "ipv4hint=\"127.0.0.1\"", "ipv6hint=\"::1\""} {
		if !strings.Contains(got, want) {
			t.Errorf("record %s lacks %s", got, want)
		}
	}
	if got := ask("www.v6lab.test.", mdns.TypeHTTPS).Answer[0].String(); !strings.Contains(got, "HTTPS\t1 . alpn=\"h2\"") {
		t.Errorf("port 443: %s", got)
	}
	in = ask("_8443._https.https-nohints.aaaa-delay-1s.www.v6lab.test.", mdns.TypeHTTPS)
	if got := in.Answer[0].String(); strings.Contains(got, "hint=") || !strings.Contains(got, " https-nohints.aaaa-delay-1s.www.v6lab.test. ") {
		t.Errorf("nohints: %s", got)
	}
	for name, rcode := range map[string]int{
		"_8443._https.https-none.www.v6lab.test.": mdns.RcodeSuccess,
		"_9999._https.www.v6lab.test.":            mdns.RcodeSuccess,
		"_8443._https.nosuch.v6lab.test.":         mdns.RcodeNameError,
	} {
		if in := ask(name, mdns.TypeHTTPS); in.Rcode != rcode || len(in.Answer) != 0 {
			t.Errorf("%s: %v, want rcode %d and no answer", name, in, rcode)
		}
	}
	if in := ask("alias.v6lab.test.", mdns.TypeHTTPS); len(in.Answer) != 1 || in.Answer[0].(*mdns.HTTPS).Target != "www.v6lab.test." {
		t.Errorf("the alias: %v", in)
	}
	// A name given only an HTTPS record exists: its A and AAAA are NODATA,
	// not NXDOMAIN (trial6 F13; RFC 8020); a name with nothing is NXDOMAIN.
	for name, rcode := range map[string]int{"alias.v6lab.test.": mdns.RcodeSuccess, "nosuch.v6lab.test.": mdns.RcodeNameError} {
		for _, qt := range []uint16{mdns.TypeA, mdns.TypeAAAA} {
			if in := ask(name, qt); in.Rcode != rcode || len(in.Answer) != 0 {
				t.Errorf("%s %s: %v, want rcode %d and no answer", name, mdns.TypeToString[qt], in, rcode)
			}
		}
	}
}

// TestDelaysPerRecordType: each label delays its own type's answer only.
func TestDelaysPerRecordType(t *testing.T) {
	s, err := ListenServices(context.Background(), testZone(), nil, &Services{Ports: map[int][]string{443: {"h2"}}}, []netip.Addr{lo4}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	name := "https-delay-200ms.a-delay-200ms.www.v6lab.test."
	for _, c := range []struct {
		qtype uint16
		late  bool
	}{{mdns.TypeA, true}, {mdns.TypeHTTPS, true}, {mdns.TypeAAAA, false}} {
		m := new(mdns.Msg)
		m.SetQuestion(name, c.qtype)
		start := time.Now()
		in, _, err := (&mdns.Client{Timeout: 2 * time.Second}).Exchange(m, serverFor(s, path.IPv4).String())
		took := time.Since(start)
		if err != nil || len(in.Answer) != 1 {
			t.Fatalf("%s: %v %v", mdns.TypeToString[c.qtype], in, err)
		}
		if late := took >= 200*time.Millisecond; late != c.late {
			t.Errorf("%s answered after %v, want late %v", mdns.TypeToString[c.qtype], took, c.late)
		}
	}
}

// TestServeTakesThePlacesHTTPSPorts: serve (the descriptor's) gives the
// place's https servers their records, and refuses a record without alpn
// naming the option.
func TestServeTakesThePlacesHTTPSPorts(t *testing.T) {
	at := proto.Place{Addrs: map[path.Path]netip.Addr{path.IPv4: lo4}, Name: "www.v6lab.test", HTTPS: map[int][]string{8443: {"h3", "h2"}}}
	r, err := serve(context.Background(), at)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	m := new(mdns.Msg)
	m.SetQuestion("_8443._https.www.v6lab.test.", mdns.TypeHTTPS)
	in, _, err := (&mdns.Client{Timeout: 2 * time.Second}).Exchange(m, r.Addrs()[0].String())
	if err != nil || len(in.Answer) != 1 {
		t.Errorf("%v %v", in, err)
	}
	at.Settings = &ServerSettings{HTTPS: []string{"www.v6lab.test=1 . port=1"}}
	if _, err := serve(context.Background(), at); err == nil || !strings.Contains(err.Error(), "https: dns: HTTPS record for www.v6lab.test. \"1 . port=1\" has no alpn") {
		t.Errorf("no alpn: %v", err)
	}
}

// TestRealHTTPS: Unbound is given the records the embedded server makes,
// in presentation form, at RFC 9460's owner names.
func TestRealHTTPS(t *testing.T) {
	at := proto.Place{Addrs: map[path.Path]netip.Addr{path.IPv4: lo4, path.IPv6: lo6}, Name: "www.v6lab.test", HTTPS: map[int][]string{8443: {"h3", "h2"}, 443: {"h2"}}}
	got := realHTTPS(at, lo4, lo6)
	if len(got) != 2 || got[0].Name != "www.v6lab.test" || got[1].Name != "_8443._https.www.v6lab.test" || got[1].Type != "HTTPS" ||
		got[1].Data != `1 www.v6lab.test. alpn="h3,h2" port="8443" ipv4hint="127.0.0.1" ipv6hint="::1"` {
		t.Errorf("%+v", got)
	}
}

// TestRealTunnelViewOnlyFor6in4 (trial10 T8): the real Unbound gets the
// tunnel's view, and its header line says so, only when a cell runs over
// 6in4, though the lab always has the tunnel.
func TestRealTunnelViewOnlyFor6in4(t *testing.T) {
	at := proto.RealPlace{Place: proto.Place{Name: "www.v6lab.test",
		Addrs: map[path.Path]netip.Addr{path.IPv4: lo4, path.IPv6: lo6, path.SixIn4: netip.MustParseAddr("2001:db8:46::10")}},
		Sources: map[path.Path]netip.Addr{path.SixIn4: lo6}, Paths: []path.Path{path.IPv4, path.IPv6}}
	if _, views, about := realRecords(at); len(views) != 0 || about != "" {
		t.Errorf("no cell over 6in4: views %+v, header %q", views, about)
	}
	at.Paths = append(at.Paths, path.SixIn4)
	if _, views, about := realRecords(at); len(views) != 1 || about == "" {
		t.Errorf("a cell over 6in4: views %+v, header %q", views, about)
	}
}

// TestRealRecordsServeHTTPS (trial9 N12): the records startReal gives
// Unbound hold the HTTPS record of the https servers started before it,
// in the default zone (the name's IPv6 address as its hint) and in the
// tunnel's view (the tunnel address): a running Unbound answers type 65
// of _8443._https.www.v6lab.test to each, not NXDOMAIN.
func TestRealRecordsServeHTTPS(t *testing.T) {
	testutil.RequireRoot(t, "Unbound is run as the lab runs it, as root")
	if err := servers.CheckInstalled([]servers.Program{{Name: "unbound", Package: "unbound"}}); err != nil {
		t.Skipf("Unbound is not installed (scripts/install-deps installs it): %v", err)
	}
	v4, v6, tun := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:46::10")
	at := proto.RealPlace{Place: proto.Place{Name: "www.v6lab.test", HTTPS: map[int][]string{8443: {"h3", "h2"}, 443: {"h2"}},
		Addrs: map[path.Path]netip.Addr{path.IPv4: v4, path.IPv6: v6, path.SixIn4: tun}},
		Sources: map[path.Path]netip.Addr{path.SixIn4: lo6}, Paths: []path.Path{path.IPv4, path.IPv6, path.SixIn4}}
	records, views, _ := realRecords(at)
	if len(views) != 1 || !views[0].Clients.Contains(lo6) {
		t.Fatalf("views %+v", views)
	}
	// Unbound's own default "access-control: ::1 allow" is more specific
	// than the view's ::/64, so here the view names ::1 alone (in the lab
	// the tunnel's clients are no loopback address).
	views[0].Clients = netip.PrefixFrom(lo6, 128)
	port := testutil.FreePort(t)
	ub, err := servers.StartUnbound(context.Background(), servers.Place{}, []netip.Addr{lo4, lo6}, port, "v6lab.test", records, views)
	if err != nil {
		t.Fatal(err)
	}
	defer ub.Stop()
	for _, c := range []struct {
		from  netip.Addr
		qname string
		want  string
	}{
		{lo4, "_8443._https.www.v6lab.test.", `1 www.v6lab.test. alpn="h3,h2" port="8443" ipv4hint="192.0.2.10" ipv6hint="2001:db8::10"`},
		{lo6, "_8443._https.www.v6lab.test.", `1 www.v6lab.test. alpn="h3,h2" port="8443" ipv4hint="192.0.2.10" ipv6hint="2001:db8:46::10"`},
		{lo4, "www.v6lab.test.", `1 . alpn="h2" port="443" ipv4hint="192.0.2.10" ipv6hint="2001:db8::10"`},
	} {
		m := new(mdns.Msg)
		m.SetQuestion(c.qname, mdns.TypeHTTPS)
		in, _, err := (&mdns.Client{Timeout: 2 * time.Second}).Exchange(m, netip.AddrPortFrom(c.from, uint16(port)).String())
		if err != nil || in.Rcode != mdns.RcodeSuccess || len(in.Answer) != 1 || !strings.HasSuffix(in.Answer[0].String(), "HTTPS\t"+c.want) {
			t.Errorf("HTTPS %s asked at %s: %v %v", c.qname, c.from, in, err)
		}
	}
}

// TestAboutSaysTheViewsOfTheMeasuredPaths (t10names' aside): the embedded
// server's description in the header names the views of the lab-only
// paths the run measures, not every path the lab has: none for a run of
// ipv4 alone, 6in4's for a run over it, DNS64 for nat64, both for both.
func TestAboutSaysTheViewsOfTheMeasuredPaths(t *testing.T) {
	at := proto.Place{Name: "www.v6lab.test", Addrs: map[path.Path]netip.Addr{path.IPv4: lo4, path.IPv6: lo6,
		path.SixIn4: netip.MustParseAddr("2001:db8:46::10"), path.NAT64: netip.MustParseAddr("2001:db8:64::10")}}
	for _, tc := range []struct {
		measured []path.Path
		want     string
	}{
		{[]path.Path{path.IPv4}, about},
		{[]path.Path{path.IPv4, path.IPv6, path.XLAT464}, about},
		{[]path.Path{path.IPv4, path.SixIn4}, about + ", a view on the 6in4 path's address (its tunnel address as the AAAA)"},
		{[]path.Path{path.NAT64}, about + ", a DNS64 view on the nat64 path's address"},
		{[]path.Path{path.SixIn4, path.NAT64}, about + ", a view per tunnel address (DNS64 on the nat64 path's)"},
		{nil, about + ", a view per tunnel address (DNS64 on the nat64 path's)"},
	} {
		at.Measured = tc.measured
		if got := aboutAt(at); got != tc.want {
			t.Errorf("measuring %v: %q, want %q", tc.measured, got, tc.want)
		}
	}
}
