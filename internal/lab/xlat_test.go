package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/servetest"
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
		// Both directions share one map: its counts are printed once.
		"client eth-r1 ingress (tcx): CLAT (6 to 4), counted on the line of eth-r1 egress (one map for both directions)",
		"r2 eth-r1 egress (tcx): DS-Lite softwire (IPv4 in IPv6): 4 encapsulated, 4 decapsulated, dropped 0",
		"r2 eth-r1 ingress (tcx): DS-Lite softwire decap, counted on the line of eth-r1 egress",
		// Both NAT rules: ports for TCP and UDP, the address for ICMP.
		"r1 nat stateful NAT64 (nftables snat after the translator): ip saddr 100.64.0.0/29 oifname \"eth-r2\" meta l4proto { tcp, udp } snat to 198.18.0.64/30:2000-2999 persistent; ip saddr 100.64.0.0/29 oifname \"eth-r2\" snat to 198.18.0.64/30 persistent; ",
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

// TestPref64SurvivesLossOnTheClientsLink: the lab's loss is in place
// when the client reads r1's advertisement (run --loss 3 once failed to
// build: the one advertisement's send was dropped, ENOBUFS); r1 repeats
// it as a router does, so half the packets lost on that link still give
// the client its PREF64.
func TestPref64SurvivesLossOnTheClientsLink(t *testing.T) {
	requireRoot(t)
	requireNft(t)
	requireBPF(t)
	l := up(t, Config{Name: testName(t) + "p", NAT64: NAT64{Stateful: true},
		Links: map[string]Link{"client-r1": {Shaping: Shaping{Loss: 50}}}})
	if l.LossImpl == "" {
		t.Fatal("no loss on the client's link")
	}
	if l.XlatWhy != "" || !strings.HasSuffix(l.Pref64From, Nat64Prefix.String()) || l.Addr.Pref64 != Nat64Prefix {
		t.Fatalf("why %q, prefix %q, %v", l.XlatWhy, l.Pref64From, l.Addr.Pref64)
	}
	// Again, so that one advertisement alone would fail (each send is
	// dropped one time in two) all but once in hundreds.
	for i := range 8 {
		if p, err := l.discoverPref64(); err != nil || p != Nat64Prefix {
			t.Errorf("discovery %d: %v %v", i+2, p, err)
		}
	}
}

// TestBadNAT64SettingsAreRefused: a PREF64 that is not an IPv6 /96 of its
// own, a pool that is not IPv4, a pool or prefix of addresses that are no
// routed unicast (unspecified, loopback, broadcast, multicast,
// link-local), ports that are no FIRST-LAST range or have blanks.
func TestBadNAT64SettingsAreRefused(t *testing.T) {
	for want, n := range map[string]NAT64{
		"nat64 prefix: 64:ff9b::/64: the translator takes a /96":       {Prefix: netip.MustParsePrefix("64:ff9b::/64")},
		"nat64 prefix: 198.18.0.0/24 is not an IPv6 prefix":            {Prefix: netip.MustParsePrefix("198.18.0.0/24")},
		"nat64 prefix: 2001:db8:64:1::/96 overlaps the lab's own":      {Prefix: netip.MustParsePrefix("2001:db8:64:1::/96")},
		"nat64 pool: 2001:db8::/128 is not IPv4":                       {Stateful: true, Pool: netip.MustParsePrefix("2001:db8::/128")},
		"nat64 pool: 192.0.2.9/32 overlaps the lab's own 192.0.2.0/24": {Stateful: true, Pool: netip.MustParsePrefix("192.0.2.9/32")},
		"nat64: a pool and ports need mode stateful":                   {Pool: netip.MustParsePrefix("198.18.0.9/32")},
		"nat64 ports: 9-8 is not a range of ports":                     {Stateful: true, Ports: [2]uint16{9, 8}},
		"nat64 pool: 0.0.0.0/32 holds unspecified":                     {Stateful: true, Pool: netip.MustParsePrefix("0.0.0.0/32")},
		"nat64 pool: 127.0.0.1/32 holds loopback":                      {Stateful: true, Pool: netip.MustParsePrefix("127.0.0.1/32")},
		"nat64 pool: 255.255.255.255/32 holds broadcast":               {Stateful: true, Pool: netip.MustParsePrefix("255.255.255.255/32")},
		"nat64 pool: 240.0.0.0/24 holds reserved (class E)":            {Stateful: true, Pool: netip.MustParsePrefix("240.0.0.0/24")},
		"nat64 pool: 224.0.0.0/24 holds multicast":                     {Stateful: true, Pool: netip.MustParsePrefix("224.0.0.0/24")},
		"nat64 pool: 169.254.1.0/24 holds link-local":                  {Stateful: true, Pool: netip.MustParsePrefix("169.254.1.0/24")},
		"nat64 prefix: ::/96 holds unspecified":                        {Prefix: netip.MustParsePrefix("::/96")},
		"nat64 prefix: fe80::/96 holds link-local":                     {Prefix: netip.MustParsePrefix("fe80::/96")},
		"nat64 prefix: ff02::/96 holds multicast":                      {Prefix: netip.MustParsePrefix("ff02::/96")},
	} {
		c := Config{Name: "a", NAT64: n}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", n, err, want)
		}
	}
	for s, want := range map[string]string{
		"1024-":        "is not a range of ports FIRST-LAST",
		"5000":         "is not a range of ports FIRST-LAST",
		"-5000":        "is not a range of ports FIRST-LAST",
		"+1-+2":        "is not a range of ports FIRST-LAST",
		" 5000 - 5001": "has blanks",
		"5000-5001 ":   "has blanks",
		"1-65536":      "ports run from 1 to 65535",
	} {
		if p, err := ParsePorts(s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ports %q: %v %v, want %q", s, p, err, want)
		}
	}
	for s, want := range map[string][2]uint16{"1024-65535": {1024, 65535}, "5000-5000": {5000, 5000}} {
		if p, err := ParsePorts(s); err != nil || p != want {
			t.Errorf("ports %q: %v %v", s, p, err)
		}
	}
	// Unicast pools and prefixes of the documentation's and the
	// benchmarking ranges pass.
	for _, n := range []NAT64{{Stateful: true, Pool: netip.MustParsePrefix("198.18.0.64/30")}, {Prefix: netip.MustParsePrefix("2001:db8:6464::/96")}} {
		c := Config{Name: "a", NAT64: n}
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", n, err)
		}
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

// TestXlatRoutesFollowASmallerLink: in a lab whose r1-r2 link carries 1400
// bytes, the client's routes for the CLAT's and the B4's IPv4 (and r2's
// back into the softwire) carry the path's MTU, read back from the
// kernel; a datagram with DF one byte above it is refused at once
// (EMSGSIZE), not lost on the way, one that fits arrives, and a 256 KiB
// upload over each path completes.
func TestXlatRoutesFollowASmallerLink(t *testing.T) {
	requireRoot(t)
	requireNft(t)
	l := up(t, Config{Name: testName(t) + "m", Links: map[string]Link{"r1-r2": {MTU: 1400}}})
	if l.XlatWhy != "" {
		t.Skip(l.XlatWhy)
	}
	want := map[path.Path]int{path.XLAT464: 1400, path.DSLite: 1360}
	got := map[path.Path]int{path.XLAT464: tableMTU(t, l, Client, clatTable), path.DSLite: tableMTU(t, l, Client, b4Table)}
	if got[path.XLAT464] != want[path.XLAT464] || got[path.DSLite] != want[path.DSLite] {
		t.Fatalf("the client's route MTUs: %v, want %v", got, want)
	}
	if r2 := routeMTU(t, l, R2, 0, netip.PrefixFrom(B4v4, 32)); r2 != want[path.DSLite] {
		t.Errorf("r2's route into the softwire: MTU %d, want %d", r2, want[path.DSLite])
	}
	for p, mtu := range want {
		src := l.Addr.Source(p)
		if err := sendDF(l, src, mtu-28+1); !errors.Is(err, unix.EMSGSIZE) {
			t.Errorf("%s: a %d-byte IPv4 packet with DF from %v: %v, want EMSGSIZE", p, mtu+1, src, err)
		}
		if err := sendDF(l, src, mtu-28); err != nil {
			t.Errorf("%s: a %d-byte IPv4 packet with DF: %v", p, mtu, err)
		}
		port := countServer(t, l, l.Addr.ServerV4)
		if n := uploadFromClient(t, l, p, netip.AddrPortFrom(l.Addr.ServerV4, uint16(port)), 256<<10); n != 256<<10 {
			t.Errorf("%s: the server read %d of a 256 KiB upload", p, n)
		}
	}
}

// tableMTU is the MTU of the default route of an IPv4 routing table in
// the lab's host role.
func tableMTU(t *testing.T, l *Lab, role string, table int) int {
	return routeMTU(t, l, role, table, netip.MustParsePrefix("0.0.0.0/0"))
}

// routeMTU reads back from the kernel the MTU of the IPv4 route to dst in
// table (0: main) of the lab's host role.
func routeMTU(t *testing.T, l *Lab, role string, table int, dst netip.Prefix) int {
	t.Helper()
	h, err := handle(NS(l.Name, role))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	filter, mask := &netlink.Route{Table: table}, uint64(netlink.RT_FILTER_TABLE)
	if table == 0 {
		filter.Table, mask = unix.RT_TABLE_MAIN, netlink.RT_FILTER_TABLE
	}
	rs, err := h.RouteListFiltered(netlink.FAMILY_V4, filter, mask)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		d := netip.MustParsePrefix("0.0.0.0/0")
		if r.Dst != nil {
			a, _ := netip.AddrFromSlice(r.Dst.IP.To4())
			ones, _ := r.Dst.Mask.Size()
			d = netip.PrefixFrom(a, ones)
		}
		if d == dst {
			return r.MTU
		}
	}
	t.Fatalf("%s: no route to %v in table %d: %v", role, dst, table, rs)
	return 0
}

// sendDF sends one UDP datagram of size bytes with DF, from src in the
// client's namespace to the server's discard port: the error of its send.
func sendDF(l *Lab, src netip.Addr, size int) error {
	return Do(NS(l.Name, Client), func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO); err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: src.As4()}); err != nil {
			return err
		}
		return unix.Sendto(fd, make([]byte, size), 0, &unix.SockaddrInet4{Port: 9, Addr: netip.MustParseAddr(server4).As4()})
	})
}

// countServer listens in the server namespace on addr and answers each
// connection, once the client has closed its side, with how many bytes
// it read.
func countServer(t *testing.T, l *Lab, addr netip.Addr) int {
	t.Helper()
	var ln net.Listener
	err := Do(NS(l.Name, Server), func() error {
		var err error
		ln, err = path.Listen(context.Background(), path.OfAddr(addr), netip.AddrPortFrom(addr, 0).String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	servetest.Each(t, ln, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(20 * time.Second))
		n, _ := io.Copy(io.Discard, c)
		fmt.Fprint(c, n)
	})
	return ln.Addr().(*net.TCPAddr).Port
}

// uploadFromClient sends size bytes over path p to dst and returns the
// count the server answers with (-1 if it answered none).
func uploadFromClient(t *testing.T, l *Lab, p path.Path, dst netip.AddrPort, size int) int {
	t.Helper()
	d := path.Dialer{Path: p, Source: l.Addr.Source(p)}
	var c net.Conn
	err := Do(NS(l.Name, Client), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		c, err = d.Dial(ctx, "tcp", dst)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(make([]byte, size)); err != nil {
		t.Errorf("%s: upload: %v", p, err)
		return -1
	}
	c.(*net.TCPConn).CloseWrite()
	b, _ := io.ReadAll(c)
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return -1
	}
	return n
}

// TestTranslatorDropsAreCountedByKind (trial8 F8): a UDP datagram over
// nat64 to a port the server has closed gets an ICMPv4 port unreachable,
// which the PLAT does not translate (ICMP other than echo): its counters
// say so by kind, plat_dropped_unsupported, and plat_dropped sums the
// kinds.
func TestTranslatorDropsAreCountedByKind(t *testing.T) {
	l := up(t, Config{})
	dps := l.Datapaths()[path.NAT64]
	if len(dps) != 1 {
		t.Fatalf("nat64's datapaths %v", dps)
	}
	before, err := dps[0].Count()
	if err != nil {
		t.Fatal(err)
	}
	// A port nothing listens on: the server answers port unreachable.
	dst := netip.AddrPortFrom(l.Addr.Server(path.NAT64), 9)
	d := path.Dialer{Path: path.NAT64, Source: l.Addr.Source(path.NAT64)}
	err = Do(NS(l.Name, Client), func() error {
		c, err := d.Dial(context.Background(), "udp", dst)
		if err != nil {
			return err
		}
		defer c.Close()
		for range 3 {
			if _, err := c.Write([]byte("late")); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var after map[string]uint64
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if after, err = dps[0].Count(); err != nil {
			t.Fatal(err)
		}
		if after["plat_dropped_unsupported"] > before["plat_dropped_unsupported"] {
			break
		}
	}
	if n := after["plat_dropped_unsupported"] - before["plat_dropped_unsupported"]; n == 0 {
		t.Errorf("no unsupported drop counted: before %v, after %v", before, after)
	}
	sum := uint64(0)
	for _, k := range []string{"unmapped", "unsupported", "hoplimit", "zerocsum", "fail"} {
		sum += after["plat_dropped_"+k]
	}
	if after["plat_dropped"] != sum || after["plat_6to4"] <= before["plat_6to4"] {
		t.Errorf("counts %v", after)
	}
}
