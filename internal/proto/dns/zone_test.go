package dns

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// TestPlaceZoneGivesALabOnlyPathItsOwnAddress: the native name has the
// ipv4 and ipv6 addresses; asked on the 6in4 address, the view answers
// AAAA with the tunnel's address and A with the native IPv4 one; asked on
// nat64's, the DNS64 view has the name as an IPv4-only host, its AAAA
// synthesised. The IPv4-only name has the IPv4 address alone in every
// view but nat64's, where its AAAA is synthesised too; there ipv4only.arpa
// gives the prefix (RFC 7050). 464xlat and dslite reach the server's own
// IPv4 address: the zone answers them, with no view of their own.
func TestPlaceZoneGivesALabOnlyPathItsOwnAddress(t *testing.T) {
	v4, v6, tun := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8:6::1")
	d64 := netip.MustParseAddr("2001:db8:64::1")
	zone, views := placeZone(proto.Place{Name: proto.LocalName, Addrs: map[path.Path]netip.Addr{path.IPv4: v4, path.IPv6: v6, path.SixIn4: tun, path.NAT64: d64, path.XLAT464: v4, path.DSLite: v4},
		DNS64: netip.MustParsePrefix("64:ff9b::/96")})
	www, v4only, large := mdns.CanonicalName(proto.LocalName), mdns.CanonicalName(proto.V4OnlyName), mdns.CanonicalName(proto.LargeName)
	for _, c := range []struct {
		view      string
		z         Zone
		www, only string
	}{
		{"native", zone, "[192.0.2.1 2001:db8::1]", "[192.0.2.1]"},
		{"6in4", views[tun], "[192.0.2.1 2001:db8:6::1]", "[192.0.2.1]"},
		{"nat64", views[d64], "[192.0.2.1 64:ff9b::c000:201]", "[192.0.2.1 64:ff9b::c000:201]"},
	} {
		if got := fmt.Sprint(c.z[www]); got != c.www {
			t.Errorf("%s view: %s has %s, want %s", c.view, www, got, c.www)
		}
		if got := fmt.Sprint(c.z[v4only]); got != c.only {
			t.Errorf("%s view: %s has %s, want %s", c.view, v4only, got, c.only)
		}
		if got := fmt.Sprint(c.z[large]); got != c.www {
			t.Errorf("%s view: %s has %s, want %s's %s", c.view, large, got, www, c.www)
		}
		if want := map[string]int{"nat64": 4}[c.view]; len(c.z) != max(want, 3) {
			t.Errorf("%s view: names %v", c.view, c.z.Names())
		}
	}
	if got := fmt.Sprint(views[d64]["ipv4only.arpa."]); got != "[192.0.0.170 192.0.0.171 64:ff9b::c000:aa 64:ff9b::c000:ab]" {
		t.Errorf("ipv4only.arpa in the DNS64 view: %s", got)
	}
	if len(views) != 2 {
		t.Errorf("views %v", views)
	}
	// The expect checks' table says what the native zone holds.
	for name, addrs := range zone {
		var types []uint16
		if slices.ContainsFunc(addrs, netip.Addr.Is4) {
			types = append(types, mdns.TypeA)
		}
		if slices.ContainsFunc(addrs, netip.Addr.Is6) {
			types = append(types, mdns.TypeAAAA)
		}
		if name == large {
			types = append(types, mdns.TypeTXT) // every view's (Zone.handler)
		}
		if !slices.Equal(types, placeTypes[name]) {
			t.Errorf("%s: the zone has types %v, placeTypes says %v", name, types, placeTypes[name])
		}
	}
	if len(placeTypes) != len(zone) {
		t.Errorf("placeTypes names %d names, the zone %d", len(placeTypes), len(zone))
	}
}

// TestDNS64SynthesizesAAAAFromA: a name with only A records gets an AAAA
// per A under the prefix (64:ff9b::192.0.2.1); a name with its own AAAA
// keeps it and gets none made up; the zone itself is unchanged.
func TestDNS64SynthesizesAAAAFromA(t *testing.T) {
	z := Zone{}
	z.Add("v4only.test", netip.MustParseAddr("192.0.2.1"))
	z.Add("v4only.test", netip.MustParseAddr("198.51.100.7"))
	z.Add("dual.test", netip.MustParseAddr("192.0.2.2"))
	z.Add("dual.test", netip.MustParseAddr("2001:db8::2"))
	s := z.Synthesize(netip.MustParsePrefix("64:ff9b::/96"))
	if got := fmt.Sprint(s["v4only.test."]); got != "[192.0.2.1 198.51.100.7 64:ff9b::c000:201 64:ff9b::c633:6407]" {
		t.Errorf("v4only: %s", got)
	}
	if got := fmt.Sprint(s["dual.test."]); got != "[192.0.2.2 2001:db8::2]" {
		t.Errorf("dual: %s", got)
	}
	if len(z["v4only.test."]) != 2 {
		t.Errorf("the zone changed: %v", z)
	}
	if got := z.Synthesize(netip.Prefix{}); len(got["v4only.test."]) != 2 {
		t.Errorf("no prefix synthesised %v", got)
	}
}

// fakeWriter records the reply a handler writes.
type fakeWriter struct {
	mdns.ResponseWriter
	rcode chan int
}

func (f *fakeWriter) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (f *fakeWriter) WriteMsg(m *mdns.Msg) error {
	f.rcode <- m.Rcode
	return nil
}

// TestLateAnswersAreBounded: more late-AAAA queries at once than
// MaxLateAnswers: the excess is answered SERVFAIL at once, the rest late.
func TestLateAnswersAreBounded(t *testing.T) {
	z := Zone{}
	z.Add("www.v6lab.test", netip.MustParseAddr("2001:db8::1"))
	h := z.handler(nil, nil)
	const extra = 10
	rcodes := make(chan int, MaxLateAnswers+extra)
	for range MaxLateAnswers + extra {
		go func() {
			m := new(mdns.Msg)
			m.SetQuestion("aaaa-delay-300ms.www.v6lab.test.", mdns.TypeAAAA)
			h.ServeDNS(&fakeWriter{rcode: rcodes}, m)
		}()
	}
	fails := 0
	deadline := time.After(200 * time.Millisecond)
	for fails < extra {
		select {
		case rc := <-rcodes:
			if rc != mdns.RcodeServerFailure {
				t.Fatalf("an answer before the delay: rcode %d", rc)
			}
			fails++
		case <-deadline:
			t.Fatalf("%d SERVFAIL at once, want %d", fails, extra)
		}
	}
	for range MaxLateAnswers {
		if rc := <-rcodes; rc != mdns.RcodeSuccess {
			t.Fatalf("a late answer: rcode %d", rc)
		}
	}
}

// TestCheckName: the names a query asks or a record serves are held to
// DNS's bounds (a 300-character name was sent and failed "bad rdata"
// after the result was written; a control character came back as "reply
// is for another question").
func TestCheckName(t *testing.T) {
	label63 := strings.Repeat("a", MaxLabel)
	long := strings.Repeat(label63+".", 4)[:MaxName]
	for name, want := range map[string]string{
		"www.lab.test":         "",
		"www.lab.test.":        "",
		label63 + ".test":      "",
		long:                   "",
		long + "b":             "254 characters (at most 253)",
		label63 + "a.test":     "a label of 64 characters (at most 63)",
		"www\x01lab.test":      `holds '\x01' at byte 3`,
		"www.lab.test\r\n":     `holds '\r' at byte 12`,
		"www lab.test":         `holds ' ' at byte 3`,
		"www..lab.test":        "an empty label",
		".":                    "it is empty",
		"":                     "it is empty",
		"www.lab.test\x7f":     `holds '\x7f'`,
		"$(id).lab.test":       `holds '$' at byte 0`,
		"www.lab.tést":         `holds 'é' at byte 9`,
		"_dns._udp.Lab-1.test": "",
	} {
		err := CheckName(name)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%.50q: %v, want %q", name, err, want)
		}
	}
	if err := (Zone{}).ParseRecord("www\r\n.x=1.2.3.4"); err == nil || !strings.Contains(err.Error(), "is not a DNS name") {
		t.Errorf("a record with a control character: %v", err)
	}
}
