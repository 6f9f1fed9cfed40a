package path

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"v6lab/internal/testutil/servetest"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Path{"ipv4": IPv4, "IPv6": IPv6, " 6in4 ": SixIn4} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := Parse("ipv5"); err == nil || !strings.Contains(err.Error(), `unknown path "ipv5"`) {
		t.Errorf("ipv5: %v", err)
	}
	if _, err := ParseList("ipv4,ipv4"); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := ParseList(" , "); err == nil {
		t.Error("empty list accepted")
	}
	if l, err := ParseList("ipv4, ipv6"); err != nil || len(l) != 2 {
		t.Errorf("list: %v %v", l, err)
	}
}

func TestAccepts(t *testing.T) {
	cases := []struct {
		p    Path
		addr string
		want bool
	}{
		{IPv4, "127.0.0.1", true},
		{IPv4, "::ffff:127.0.0.1", true},
		{IPv4, "::1", false},
		{IPv6, "::1", true},
		{IPv6, "::ffff:127.0.0.1", false}, // IPv4 on the wire
		{IPv6, "127.0.0.1", false},
		{SixIn4, "2001:db8::1", true},
		{SixIn4, "192.0.2.1", false},
	}
	for _, c := range cases {
		if got := c.p.Accepts(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("%s accepts %s = %v", c.p, c.addr, got)
		}
	}
	if IPv4.Accepts(netip.Addr{}) {
		t.Error("invalid address accepted")
	}
}

func TestDialIsPinnedAndVerified(t *testing.T) {
	for _, p := range []Path{IPv4, IPv6} {
		t.Run(string(p), func(t *testing.T) {
			ln, err := Listen(context.Background(), p, netip.AddrPortFrom(p.Loopback(), 0).String())
			if err != nil {
				t.Fatal(err)
			}
			servetest.Each(t, ln, func(net.Conn) {})
			addr := ln.Addr().(*net.TCPAddr).AddrPort()
			c, err := Dialer{Path: p}.Dial(context.Background(), "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			// The other family's path refuses the address before dialing.
			other := IPv6
			if p == IPv6 {
				other = IPv4
			}
			if _, err := (Dialer{Path: other}).Dial(context.Background(), "tcp", addr); !errors.Is(err, ErrFamily) {
				t.Errorf("dial %s over %s: %v", addr, other, err)
			}
			if _, err := (Dialer{Path: p, Source: other.Loopback()}).Dial(context.Background(), "tcp", addr); !errors.Is(err, ErrFamily) {
				t.Errorf("source of the other family: %v", err)
			}
		})
	}
}

func TestIPv6ListenerIsIPv6Only(t *testing.T) {
	ln, err := Listen(context.Background(), IPv6, "[::]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	c, err := net.Dial("tcp4", net.JoinHostPort("127.0.0.1", itoa(port)))
	if err == nil {
		c.Close()
		t.Fatal("an IPv4 client reached the IPv6 listener through a mapped address")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

type fakeConn struct {
	net.Conn
	l, r net.Addr
}

func (f fakeConn) LocalAddr() net.Addr  { return f.l }
func (f fakeConn) RemoteAddr() net.Addr { return f.r }

func TestVerifyNamesBothEnds(t *testing.T) {
	c := fakeConn{l: &net.TCPAddr{IP: net.ParseIP("::ffff:10.0.0.1"), Port: 1}, r: &net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 80}}
	err := IPv6.Verify(c)
	if !errors.Is(err, ErrFamily) || !strings.Contains(err.Error(), "10.0.0.1") || !strings.Contains(err.Error(), "2001:db8::1") ||
		!strings.Contains(err.Error(), "(IPv4 -> IPv6)") {
		t.Fatalf("verify: %v", err)
	}
}

func TestParseResolvConf(t *testing.T) {
	got, err := ParseResolvConf(strings.NewReader("# c\nsearch x\nnameserver 192.0.2.53\nnameserver 2001:db8::53\nnameserver bogus\nnameserver\n"))
	if err != nil || len(got) != 2 || got[0].String() != "192.0.2.53:53" || got[1].String() != "[2001:db8::53]:53" {
		t.Fatalf("%v %v", got, err)
	}
}

func TestParseServer(t *testing.T) {
	for in, want := range map[string]string{"192.0.2.1": "192.0.2.1:53", "192.0.2.1:5353": "192.0.2.1:5353", "::1": "[::1]:53", "[::1]:5353": "[::1]:5353"} {
		got, err := ParseServer(in)
		if err != nil || got.String() != want {
			t.Errorf("%q = %v, %v", in, got, err)
		}
	}
	if _, err := ParseServer("dns.example"); err == nil {
		t.Error("a name was accepted as a server address")
	}
	// trial9 N14: taken as IPv4 by the family checks, then every query
	// failed from an IPv6 socket.
	for _, in := range []string{"[::ffff:127.0.0.1]:18953", "::ffff:127.0.0.1"} {
		if _, err := ParseServer(in); err == nil || !strings.Contains(err.Error(), "IPv4-mapped IPv6 address, which is IPv4: give 127.0.0.1:") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func FuzzParseResolvConf(f *testing.F) {
	f.Add("nameserver 1.2.3.4\nnameserver fe80::1%eth0\n")
	f.Fuzz(func(t *testing.T, s string) {
		got, _ := ParseResolvConf(strings.NewReader(s))
		for _, a := range got {
			if !a.IsValid() || a.Port() != 53 {
				t.Fatalf("bad server %v", a)
			}
		}
	})
}

// TestEmbedAndOneFamily: RFC 6052's /96 embedding, and a resolver that
// pins none sending its queries over its first server's family.
func TestEmbedAndOneFamily(t *testing.T) {
	if a := Embed(netip.MustParsePrefix("64:ff9b::/96"), netip.MustParseAddr("203.0.113.2")); a.String() != "64:ff9b::cb00:7102" {
		t.Errorf("Embed: %v", a)
	}
	r := Resolver{Servers: []netip.AddrPort{netip.MustParseAddrPort("192.0.2.53:53"), netip.MustParseAddrPort("[2001:db8::53]:53")}}
	if got := r.OneFamily().Over; got != IPv4 {
		t.Errorf("OneFamily: over %q", got)
	}
	r.Over = IPv6
	if got := r.OneFamily().Over; got != IPv6 {
		t.Errorf("OneFamily kept no pin: over %q", got)
	}
}
