package lab

import (
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"v6lab/internal/sock/path"
)

// TestIPv6OnlyAccessPathsThroughAStatefulPLAT: with a stateful NAT64 and a
// PLAT prefix of its own, the client's CLAT learns the prefix from r1's
// PREF64, and the server sees the nat64 and 464xlat clients from the
// pool's one address (they share it by port) and the dslite client from
// the AFTR's address; the client's IPv4 applications send from RFC 7335's
// addresses; lab status shows the programs' and the NATs' counters.
func TestIPv6OnlyAccessPathsThroughAStatefulPLAT(t *testing.T) {
	requireRoot(t)
	requireNft(t)
	pref := netip.MustParsePrefix("2001:db8:6464::/96")
	pool := netip.MustParsePrefix("198.18.0.64/30")
	l := up(t, Config{NAT64: NAT64{Stateful: true, Prefix: pref, Pool: pool, Ports: [2]uint16{2000, 2999}}})
	if l.XlatWhy != "" || !strings.Contains(l.Pref64From, "PREF64 (RFC 8781)") || !strings.HasSuffix(l.Pref64From, pref.String()) || l.Addr.Pref64 != pref {
		t.Fatalf("why %q, prefix %q, %v", l.XlatWhy, l.Pref64From, l.Addr.Pref64)
	}
	want := map[path.Path]netip.Addr{path.NAT64: pool.Addr(), path.XLAT464: pool.Addr(), path.DSLite: netip.MustParseAddr("203.0.113.1")}
	for p, from := range want {
		if l.Addr.Client(p) != from {
			t.Errorf("%s: Client %v, want %v", p, l.Addr.Client(p), from)
		}
		port := echoServer(t, l, serverBind(l, p))
		seen := dialFromClient(t, l, p, netip.AddrPortFrom(l.Addr.Server(p), uint16(port)))
		ap, err := netip.ParseAddrPort(seen)
		switch {
		case err != nil:
			t.Errorf("%s: the server saw %q", p, seen)
		case p == path.DSLite && ap.Addr() != from:
			t.Errorf("dslite: the server saw the client as %v, want the AFTR's %v", ap, from)
		case p != path.DSLite && (!pool.Contains(ap.Addr()) || ap.Port() < 2000 || ap.Port() > 2999):
			t.Errorf("%s: the server saw the client as %v, want the pool %v, ports 2000-2999", p, ap, pool)
		}
	}
	if l.Addr.Source(path.XLAT464) != CLAT4 || l.Addr.Source(path.DSLite) != B4v4 || !RFC7335.Contains(CLAT4) || !RFC7335.Contains(B4v4) {
		t.Errorf("sources %v %v", l.Addr.Source(path.XLAT464), l.Addr.Source(path.DSLite))
	}
	st, err := Inspect(l.Name)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, h := range st.Hosts {
		for _, p := range h.BPF {
			all = append(all, h.Role+" "+p.Describe())
		}
		all = append(all, h.Role+" nat "+h.NAT)
	}
	text := strings.Join(all, "\n")
	for _, w := range []string{
		"client eth-r1 egress (tcx): CLAT (4 to 6): 4 IPv4 to IPv6, 4 IPv6 to IPv4",
		"client eth-r1 egress (tcx): DS-Lite softwire (IPv4 in IPv6): 4 encapsulated, 4 decapsulated, dropped 0",
		"r2 eth-r1 ingress (tcx): DS-Lite softwire (IPv4 in IPv6): 4 encapsulated, 4 decapsulated, dropped 0",
		"r1 nat stateful NAT64 (nftables snat after the translator): ip saddr 100.64.0.0/29 oifname \"eth-r2\" meta l4proto { tcp, udp } snat to 198.18.0.64/30:2000-2999 persistent; ",
		"r2 nat DS-Lite AFTR (nftables masquerade)",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("status lacks %q:\n%s", w, text)
		}
	}
}

// requireNft skips a test of the stateful NAT64 or the AFTR where
// nftables is missing.
func requireNft(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft here: the stateful NAT64 and the AFTR need nftables (scripts/install-deps --lab)")
	}
}

// TestBadNAT64SettingsAreRefused: a PREF64 that is not an IPv6 /96 of its
// own, a pool that is not IPv4, ports that are no range.
func TestBadNAT64SettingsAreRefused(t *testing.T) {
	for want, n := range map[string]NAT64{
		"nat64 prefix: 64:ff9b::/64: the translator takes a /96":       {Prefix: netip.MustParsePrefix("64:ff9b::/64")},
		"nat64 prefix: 198.18.0.0/24 is not an IPv6 prefix":            {Prefix: netip.MustParsePrefix("198.18.0.0/24")},
		"nat64 prefix: 2001:db8:64:1::/96 overlaps the lab's own":      {Prefix: netip.MustParsePrefix("2001:db8:64:1::/96")},
		"nat64 pool: 2001:db8::/128 is not IPv4":                       {Stateful: true, Pool: netip.MustParsePrefix("2001:db8::/128")},
		"nat64 pool: 192.0.2.9/32 overlaps the lab's own 192.0.2.0/24": {Stateful: true, Pool: netip.MustParsePrefix("192.0.2.9/32")},
		"nat64: a pool and ports need mode stateful":                   {Pool: netip.MustParsePrefix("198.18.0.9/32")},
		"nat64 ports: 9-8 is not a range of ports":                     {Stateful: true, Ports: [2]uint16{9, 8}},
	} {
		c := Config{Name: "a", NAT64: n}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", n, err, want)
		}
	}
	if _, err := ParsePorts("1024-"); err == nil {
		t.Error("ports 1024- accepted")
	}
	if p, err := ParsePrefix("198.18.0.9"); err != nil || p.Bits() != 32 {
		t.Errorf("an address as a pool: %v %v", p, err)
	}
}

// TestPref64OptionReadsBack: the option r1 sends reads back as its
// prefix; an RA without one has none.
func TestPref64OptionReadsBack(t *testing.T) {
	p := netip.MustParsePrefix("2001:db8:6464::/96")
	got, ok, err := ParsePref64(routerAdvert(Pref64Option(p)))
	if err != nil || !ok || got != p {
		t.Errorf("%v %v %v", got, ok, err)
	}
	if _, ok, err := ParsePref64(routerAdvert([]byte{1, 1, 2, 0, 0, 0, 0, 1})); ok || err != nil {
		t.Errorf("no PREF64: %v %v", ok, err)
	}
	if _, _, err := ParsePref64(routerAdvert([]byte{38, 0})); err == nil {
		t.Error("an option of length 0 accepted")
	}
}

// TestBadPref64IsRefused: a PREF64 option the client cannot use (an
// unknown prefix length code, the wrong size, cut short) or a message
// that is no router advertisement is an error that says which, never a
// prefix.
func TestBadPref64IsRefused(t *testing.T) {
	good := Pref64Option(netip.MustParsePrefix("64:ff9b::/96"))
	plc7 := append([]byte{}, good...)
	plc7[3] |= 7
	long := append(append([]byte{}, good...), make([]byte, 8)...)
	long[1] = 3
	for want, msg := range map[string][]byte{
		"PREF64 with an unknown prefix length code 7": routerAdvert(plc7),
		"PREF64 of 24 bytes, not 16":                  routerAdvert(long),
		"an option of length 16 in 8 bytes":           routerAdvert(good[:8]),
		"not a router advertisement":                  append([]byte{133}, make([]byte, 15)...),
	} {
		p, ok, err := ParsePref64(msg)
		if err == nil || ok || p.IsValid() || err.Error() != want {
			t.Errorf("%x: %v %v %v, want %q", msg, p, ok, err, want)
		}
	}
	// A PREF64 of another length reads back as that prefix; the client
	// refuses it for its CLAT (discoverPref64), which translates with a
	// /96 only.
	b := append([]byte{}, good...)
	b[3] |= 1
	if p, ok, err := ParsePref64(routerAdvert(b)); err != nil || !ok || p.Bits() != 64 {
		t.Errorf("a /64 PREF64: %v %v %v", p, ok, err)
	}
}

// TestNat64ShorthandIsStateful: `nat64: stateful` is `nat64: {mode:
// stateful}`, with the default pool and ports.
func TestNat64ShorthandIsStateful(t *testing.T) {
	for _, f := range []string{"nat64: stateful\n", "nat64:\n  mode: stateful\n"} {
		cfg, err := ParseTopology("s.yaml", []byte(f))
		if err != nil {
			t.Fatalf("%q: %v", f, err)
		}
		cfg.Name = "s"
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		if !cfg.NAT64.Stateful || cfg.NAT64.Pool != DefaultPool || cfg.NAT64.Ports != [2]uint16{1024, 65535} || cfg.NAT64.Prefix != Nat64Prefix {
			t.Errorf("%q: %+v", f, cfg.NAT64)
		}
	}
	cfg, err := ParseTopology("s.yaml", []byte("nat64: stateless\n"))
	if err != nil || cfg.NAT64.Stateful {
		t.Errorf("stateless: %+v %v", cfg.NAT64, err)
	}
}
