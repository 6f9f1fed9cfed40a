package lab

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"unicode"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"

	"v6lab/internal/input/specfile"
	"v6lab/internal/lab/bpf"
	"v6lab/internal/sock/path"
)

// IPv6-only access networks as operators run them: 464XLAT (RFC 6877: a
// CLAT on the client host, the PLAT, a NAT64, at r1) and DS-Lite (RFC
// 6333: a B4 on the client host tunnels IPv4 in IPv6 to the AFTR at r2,
// a NAT44). The client's IPv4 applications use the addresses of RFC 7335's
// 192.0.0.0/29; on its link to r1 the paths' packets are IPv6 only.

// NAT64 is how r1 translates (the nat64 and 464xlat paths' PLAT).
type NAT64 struct {
	// Stateful shares the pool among the clients by port (RFC 6146),
	// with the kernel's NAT after the stateless translator; false maps
	// each client to an IPv4 address of its own (SIIT, RFC 7757).
	Stateful bool `json:"stateful,omitempty"`
	// Prefix is the PLAT's prefix (RFC 6052), advertised to the client
	// as PREF64 (RFC 8781); unset: the well-known 64:ff9b::/96.
	Prefix netip.Prefix `json:"prefix,omitzero"`
	// Pool and Ports are the stateful PLAT's IPv4 addresses and port
	// range; unset: DefaultPool, 1024-65535.
	Pool  netip.Prefix `json:"pool,omitzero"`
	Ports [2]uint16    `json:"ports,omitzero"`
}

// DefaultPool is the stateful PLAT's pool unless set: the address the
// stateless one maps the nat64 client to.
var DefaultPool = netip.MustParsePrefix("198.18.0.2/32")

// Defaults fills what is unset.
func (n *NAT64) Defaults() {
	if !n.Prefix.IsValid() {
		n.Prefix = Nat64Prefix
	}
	if n.Stateful && !n.Pool.IsValid() {
		n.Pool = DefaultPool
	}
	if n.Stateful && n.Ports == [2]uint16{} {
		n.Ports = [2]uint16{1024, 65535}
	}
}

// labNets are the lab's own networks, which neither the prefix nor the
// pool may overlap.
func labNets() []netip.Prefix {
	out := []netip.Prefix{nat64Client, nat64DNS, clatNet, b4Net, RFC7335, platPrivate}
	for _, lk := range append(append([]link{}, links...), genLinks...) {
		for _, p := range []netip.Prefix{lk.v4, lk.v6, lk.tun6} {
			if p.IsValid() {
				out = append(out, p)
			}
		}
	}
	return out
}

// special are the address blocks that no pool or prefix may overlap:
// they are never routed between hosts as unicast.
var special = []struct {
	p    netip.Prefix
	what string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (\"this network\")"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (class E)"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

// checkSpecial says why p, a pool or a prefix, overlaps an address block
// that is no routed unicast (special), or nil.
func checkSpecial(p netip.Prefix) error {
	for _, s := range special {
		if s.p.Overlaps(p) {
			return fmt.Errorf("%v holds %s addresses (%v), which are not routed unicast", p, s.what, s.p)
		}
	}
	return nil
}

// CheckPrefix says why p cannot be the PLAT's prefix.
func CheckPrefix(p netip.Prefix) error {
	switch {
	case !p.IsValid() || !p.Addr().Is6() || p.Addr().Is4In6():
		return fmt.Errorf("%v is not an IPv6 prefix", p)
	case p.Bits() != 96:
		return fmt.Errorf("%v: the translator takes a /96 (RFC 6052 also has /32 to /64, which v6lab's translator does not build)", p)
	case p.Masked() != p:
		return fmt.Errorf("%v has bits set past its /96 (%v)", p, p.Masked())
	}
	if err := checkSpecial(p); err != nil {
		return err
	}
	for _, n := range labNets() {
		if n.Overlaps(p) {
			return fmt.Errorf("%v overlaps the lab's own %v", p, n)
		}
	}
	return nil
}

// CheckPool says why p cannot be the stateful PLAT's pool.
func CheckPool(p netip.Prefix) error {
	switch {
	case !p.IsValid() || !p.Addr().Is4():
		return fmt.Errorf("%v is not IPv4: the pool holds the IPv4 addresses the clients share", p)
	case p.Bits() < 24:
		return fmt.Errorf("%v holds more than 256 addresses (at most a /24)", p)
	case p.Masked() != p:
		return fmt.Errorf("%v has bits set past its /%d (%v)", p, p.Bits(), p.Masked())
	}
	if err := checkSpecial(p); err != nil {
		return err
	}
	for _, n := range labNets() {
		if n.Overlaps(p) && n != nat64Pool {
			return fmt.Errorf("%v overlaps the lab's own %v", p, n)
		}
	}
	return nil
}

// Validate checks the PLAT's settings.
func (n NAT64) Validate() error {
	if n.Prefix.IsValid() {
		if err := CheckPrefix(n.Prefix); err != nil {
			return fmt.Errorf("nat64 prefix: %w", err)
		}
	}
	if !n.Stateful {
		if n.Pool.IsValid() || n.Ports != [2]uint16{} {
			return fmt.Errorf("nat64: a pool and ports need mode stateful (the stateless translator maps each client to an address of its own)")
		}
		return nil
	}
	if n.Pool.IsValid() {
		if err := CheckPool(n.Pool); err != nil {
			return fmt.Errorf("nat64 pool: %w", err)
		}
	}
	if n.Ports != [2]uint16{} && (n.Ports[0] == 0 || n.Ports[0] > n.Ports[1]) {
		return fmt.Errorf("nat64 ports: %d-%d is not a range of ports from 1 to 65535", n.Ports[0], n.Ports[1])
	}
	return nil
}

// String describes the PLAT: "stateful, pool 198.18.0.2/32 ports 1024-65535, prefix 64:ff9b::/96".
func (n NAT64) String() string {
	n.Defaults()
	if !n.Stateful {
		return "stateless, prefix " + n.Prefix.String()
	}
	return fmt.Sprintf("stateful, pool %v ports %d-%d, prefix %v", n.Pool, n.Ports[0], n.Ports[1], n.Prefix)
}

// ParsePorts reads a range of ports, FIRST-LAST ("1024-65535"; one port
// is "5000-5000"), with no blanks.
func ParsePorts(s string) ([2]uint16, error) {
	lo, hi, found := strings.Cut(s, "-")
	if strings.ContainsFunc(s, unicode.IsSpace) {
		return [2]uint16{}, fmt.Errorf("%q has blanks: write FIRST-LAST, such as 1024-65535", s)
	}
	a, err1 := strconv.ParseUint(lo, 10, 32)
	b, err2 := strconv.ParseUint(hi, 10, 32)
	switch {
	case !found || err1 != nil || err2 != nil:
		return [2]uint16{}, fmt.Errorf("%q is not a range of ports FIRST-LAST such as 1024-65535 (one port: 5000-5000)", s)
	case a == 0 || b > 65535:
		return [2]uint16{}, fmt.Errorf("%q: ports run from 1 to 65535", s)
	case a > b:
		return [2]uint16{}, fmt.Errorf("%q: the first port is above the last", s)
	}
	return [2]uint16{uint16(a), uint16(b)}, nil
}

// ParsePrefix reads a prefix, or an address as its single-address prefix.
func ParsePrefix(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if p, err := netip.ParsePrefix(s); err == nil {
		return p, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an address or a prefix", s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

var (
	// RFC7335 is the IPv4 Service Continuity Prefix, 192.0.0.0/29: the
	// CLAT's and the B4's IPv4 addresses.
	RFC7335 = netip.MustParsePrefix("192.0.0.0/29")
	// CLAT4 is the CLAT's IPv4 address (192.0.0.4, as Android's), B4v4
	// the B4's (192.0.0.2, RFC 6333 §5.7).
	CLAT4 = netip.MustParseAddr("192.0.0.4")
	B4v4  = netip.MustParseAddr("192.0.0.2")
	// clatNet and b4Net are the client link's prefixes of the CLAT's and
	// the B4's IPv6 addresses (r1 is ::1).
	clatNet = netip.MustParsePrefix("2001:db8:464:1::/64")
	b4Net   = netip.MustParsePrefix("2001:db8:d5:1::/64")
	// platPrivate holds the stateful PLAT's per-client IPv4 addresses,
	// between its translator and its NAT (RFC 6598 shared space).
	platPrivate = netip.MustParsePrefix("100.64.0.0/29")
)

// Routing tables of the client's IPv4 over IPv6 paths, chosen by source:
// numbered after their RFCs.
const (
	clatTable = 6877
	b4Table   = 6333
	// clatMTU leaves room for the translation's 20 bytes, b4MTU for the
	// softwire's IPv6 header (RFC 6333 §5.3: 1460 inside 1500): the
	// routes' MTUs in a lab of 1500-byte links (ClatMTU, B4MTU).
	clatMTU = 1480
	b4MTU   = 1460
)

// ClatMTU is the MTU of the client's route for the CLAT's IPv4 in a lab
// of config c: clatMTU, or less where a link of the path is smaller, as
// Nat64MTU. The CLAT's packets are IPv6, 20 bytes longer, on the client's
// link, and IPv4 again past the PLAT at r1 (r1-r2, r2-server). Neither
// the CLAT nor the PLAT turns an ICMP error into one of the other family,
// so a packet too big for a link past the client's would be lost unseen:
// with the route's MTU, the client's IPv4 stack refuses or fragments it
// before it goes (EMSGSIZE with DF), and its TCP offers an MSS that fits.
func ClatMTU(c *Config) int {
	return min(clatMTU, c.Link("client-r1").MTU-20, c.Link("r1-r2").MTU, c.Link("r2-server").MTU)
}

// B4MTU is the softwire's inner MTU, the client's route for the B4's
// IPv4 and r2's back to it, in a lab of config c: b4MTU, or less where a
// link of the path is smaller. The softwire's packets are IPv6, 40 bytes
// longer, on client-r1 and r1-r2, and IPv4 past the AFTR at r2; neither
// end passes a Packet Too Big on, so the IPv4 stack at the softwire's
// entry must refuse (DF) or fragment what would not fit.
func B4MTU(c *Config) int {
	return min(b4MTU, c.Link("client-r1").MTU-40, c.Link("r1-r2").MTU-40, c.Link("r2-server").MTU)
}

// Names of the nftables tables of the stateful PLAT (r1) and the AFTR (r2).
const (
	platTable = "v6lab_plat"
	aftrTable = "v6lab_aftr"
)

// xlatOK says whether the lab can build the IPv4-over-IPv6 paths.
func xlatOK() error {
	if err := bpf.Check(); err != nil {
		return fmt.Errorf("their CLAT and B4 need tc BPF (%v)", err)
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return fmt.Errorf("their NATs need nftables (the nft program; scripts/install-deps --lab installs it)")
	}
	return nil
}

// platMappings are the PLAT's explicit mappings: the nat64 client and the
// CLAT, each to an IPv4 address of its own (stateless), or to an address
// in platPrivate that the kernel's NAT then shares (stateful).
func (l *Lab) platMappings(client6 netip.Addr) []bpf.Mapping {
	if l.NAT64.Stateful {
		return []bpf.Mapping{{V6: client6, V4: hostAddr(platPrivate, 2)}, {V6: hostAddr(clatNet, 2), V4: hostAddr(platPrivate, 4)}}
	}
	return []bpf.Mapping{{V6: client6, V4: hostAddr(nat64Pool, 2)}, {V6: hostAddr(clatNet, 2), V4: hostAddr(nat64Pool, 4)}}
}

// addStatefulPLAT puts the kernel's NAT behind r1's translator: the
// translated IPv4 from platPrivate leaves toward r2 from the pool (nft
// snat, paired: one pool address per client), the answers come back
// to platPrivate, which r1 routes to the client, where the translator
// turns them into IPv6 at the egress. Conntrack's timeouts are RFC
// 6146's (§4), and it tracks no other traffic (notrack), so the other
// paths through r1 are forwarded as before.
func (l *Lab) addStatefulPLAT(h *netlink.Handle) error {
	a := links[0]
	ln, err := h.LinkByName(a.bIf)
	if err != nil {
		return err
	}
	// The answers, once the NAT has undone its mapping, go to the client
	// by its IPv6 neighbour (an IPv4 route via IPv6, RFC 5549).
	rt := &netlink.Route{Dst: ipnet(platPrivate), LinkIndex: ln.Attrs().Index,
		Via: &netlink.Via{AddrFamily: netlink.FAMILY_V6, Addr: hostAddr(nat64Client, a.aHost).AsSlice()}}
	if err := h.RouteAdd(rt); err != nil {
		return fmt.Errorf("route %v: %w", rt, err)
	}
	n := l.NAT64
	first, last := n.Pool.Addr(), lastAddr(n.Pool)
	to := first.String()
	if last != first {
		to += "-" + last.String()
	}
	rules := fmt.Sprintf(`table ip %s {
	chain raw {
		type filter hook prerouting priority raw; policy accept;
		ip saddr != %v ip daddr != %v notrack
	}
	chain post {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr %v oifname %q meta l4proto { tcp, udp } snat to %s:%d-%d persistent
		ip saddr %v oifname %q snat to %s persistent
	}
}
`, platTable, platPrivate, n.Pool, platPrivate, links[1].aIf, to, n.Ports[0], n.Ports[1], platPrivate, links[1].aIf, to)
	if err := nft(NS(l.Name, R1), rules); err != nil {
		return err
	}
	return Do(NS(l.Name, R1), func() error { return setSysctls(rfc6146Timeouts) })
}

// rfc6146Timeouts are RFC 6146 §4's session lifetimes as conntrack's:
// UDP 5 min, TCP established 2 h 4 min, TCP transitory 4 min, ICMP query
// 60 s.
var rfc6146Timeouts = map[string]string{
	"net/netfilter/nf_conntrack_udp_timeout":             "300",
	"net/netfilter/nf_conntrack_udp_timeout_stream":      "300",
	"net/netfilter/nf_conntrack_tcp_timeout_established": "7440",
	"net/netfilter/nf_conntrack_tcp_timeout_syn_sent":    "240",
	"net/netfilter/nf_conntrack_tcp_timeout_syn_recv":    "240",
	"net/netfilter/nf_conntrack_tcp_timeout_fin_wait":    "240",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait":  "240",
	"net/netfilter/nf_conntrack_tcp_timeout_last_ack":    "240",
	"net/netfilter/nf_conntrack_tcp_timeout_time_wait":   "240",
	"net/netfilter/nf_conntrack_tcp_timeout_close":       "240",
	"net/netfilter/nf_conntrack_icmp_timeout":            "60",
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// addXlat builds the 464xlat and dslite paths: the client's addresses,
// its routes by source, the CLAT and the B4 on its link to r1 (their
// prefix learnt from r1's PREF64), and the AFTR at r2. The PLAT is the
// nat64 path's translator (addNat64). Without tc BPF or nftables the
// lab has neither path, and says why.
func (l *Lab) addXlat(hs map[string]*netlink.Handle) error {
	if !l.Addr.ServerNat64.IsValid() {
		l.XlatWhy = "no 464xlat or dslite path: " + l.Nat64Why
		return nil
	}
	if err := xlatOK(); err != nil {
		l.XlatWhy = "no 464xlat or dslite path: " + err.Error()
		return nil
	}
	a, b := links[0], links[1]
	clat6, b4v6 := hostAddr(clatNet, a.aHost), hostAddr(b4Net, a.aHost)
	r1on := func(p netip.Prefix) netip.Addr { return hostAddr(p, a.bHost) }
	aftr6 := hostAddr(b.v6, b.bHost)
	for _, ad := range []struct {
		role, ifname string
		p            netip.Prefix
	}{
		{Client, a.aIf, netip.PrefixFrom(clat6, 64)}, {Client, a.aIf, netip.PrefixFrom(b4v6, 64)},
		{Client, "lo", netip.PrefixFrom(CLAT4, 32)}, {Client, "lo", netip.PrefixFrom(B4v4, 32)},
		{R1, a.bIf, netip.PrefixFrom(r1on(clatNet), 64)}, {R1, a.bIf, netip.PrefixFrom(r1on(b4Net), 64)},
	} {
		h := hs[ad.role]
		ln, err := h.LinkByName(ad.ifname)
		if err == nil {
			err = addAddr(h, ln, ad.p)
		}
		if err != nil {
			return fmt.Errorf("lab: %s %s: xlat: %w", ad.role, ad.ifname, err)
		}
	}
	if err := l.clientXlatRoutes(hs[Client]); err != nil {
		return fmt.Errorf("lab: client: %w", err)
	}
	if err := l.aftrRoutes(hs[R2]); err != nil {
		return fmt.Errorf("lab: r2: %w", err)
	}
	pref64, err := l.discoverPref64()
	if err != nil {
		return fmt.Errorf("lab: the client's PREF64: %w", err)
	}
	l.Pref64From = fmt.Sprintf("PREF64 (RFC 8781) in r1's router advertisement: %v", pref64)
	if err := l.attachB4(pref64, clat6, b4v6, aftr6); err != nil {
		return err
	}
	aftr4, err := l.attachAFTR(b4v6, aftr6)
	if err != nil {
		return err
	}
	l.Addr.CLAT6, l.Addr.B4v6, l.Addr.AFTR6, l.Addr.AFTR4 = clat6, b4v6, aftr6, aftr4
	l.Addr.XLATFrom = l.platAddr(hostAddr(clatNet, 2))
	return nil
}

// attachB4 loads the client's CLAT (its prefix pref64) and B4 and
// attaches both to its link to r1.
func (l *Lab) attachB4(pref64 netip.Prefix, clat6, b4v6, aftr6 netip.Addr) error {
	err := Do(NS(l.Name, Client), func() error {
		ifc, err := net.InterfaceByName(links[0].aIf)
		if err != nil {
			return err
		}
		clat, err := bpf.NewNat64(bpf.Translator{Prefix: pref64, Client6: clat6, Client4: CLAT4, CLAT: true})
		if err != nil {
			return err
		}
		l.bpfObjs, l.clat = append(l.bpfObjs, clat), clat
		if err := clat.AttachAt(bpf.Hookpoint{Ifindex: ifc.Index}, bpf.Hookpoint{Ifindex: ifc.Index, Egress: true}, l.hook()); err != nil {
			return err
		}
		b4, err := bpf.NewSoftwire(bpf.Softwire{Local6: b4v6, Remote6: aftr6, B4: B4v4})
		if err != nil {
			return err
		}
		l.bpfObjs, l.b4 = append(l.bpfObjs, b4), b4
		return b4.Attach(ifc.Index, l.hook())
	})
	if err != nil {
		return fmt.Errorf("lab: client: CLAT and B4 over tc BPF: %w", err)
	}
	return nil
}

// attachAFTR loads the AFTR's softwire end at r2 and its nftables
// masquerade toward the server, and returns the address it masquerades
// to.
func (l *Lab) attachAFTR(b4v6, aftr6 netip.Addr) (netip.Addr, error) {
	b, c := links[1], links[2]
	err := Do(NS(l.Name, R2), func() error {
		ifc, err := net.InterfaceByName(b.bIf)
		if err != nil {
			return err
		}
		aftr, err := bpf.NewSoftwire(bpf.Softwire{Local6: aftr6, Remote6: b4v6, B4: B4v4, AFTR: true})
		if err != nil {
			return err
		}
		l.bpfObjs, l.aftr = append(l.bpfObjs, aftr), aftr
		return aftr.Attach(ifc.Index, l.hook())
	})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("lab: r2: AFTR over tc BPF: %w", err)
	}
	aftr4 := hostAddr(c.v4, c.aHost)
	if err := nft(NS(l.Name, R2), fmt.Sprintf(`table ip %s {
	chain raw {
		type filter hook prerouting priority raw; policy accept;
		ip saddr != %v ip daddr != %v notrack
	}
	chain post {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr %v oifname %q masquerade
	}
}
`, aftrTable, B4v4, aftr4, B4v4, c.aIf)); err != nil {
		return netip.Addr{}, fmt.Errorf("lab: r2: AFTR: %w", err)
	}
	return aftr4, nil
}

// PLATMapping is the IPv4 address r1's translator maps a client's IPv6
// address to (with a stateful PLAT, the one its NAT then shares).
func (l *Lab) PLATMapping(client6 netip.Addr) netip.Addr {
	for _, m := range l.platMappings(l.Addr.ClientNat64) {
		if m.V6 == client6 {
			return m.V4
		}
	}
	return netip.Addr{}
}

// platAddr is the IPv4 address the server sees a PLAT client's packets
// from: the pool's (stateful; with several, its first: the NAT gives each
// client one of them), or the client's own mapping's.
func (l *Lab) platAddr(client6 netip.Addr) netip.Addr {
	if l.NAT64.Stateful {
		return l.NAT64.Pool.Addr()
	}
	return l.PLATMapping(client6)
}

// clientXlatRoutes sends the client's IPv4 from the CLAT's and the B4's
// addresses to r1 over IPv6 (routes by source, via r1's IPv6 address on
// the link, RFC 5549): the link carries no IPv4 of these paths, and the
// programs on its egress turn them into IPv6.
func (l *Lab) clientXlatRoutes(h *netlink.Handle) error {
	a := links[0]
	ln, err := h.LinkByName(a.aIf)
	if err != nil {
		return err
	}
	for _, r := range []struct {
		src   netip.Addr
		table int
		mtu   int
		via   netip.Prefix
	}{{CLAT4, clatTable, ClatMTU(&l.Config), clatNet}, {B4v4, b4Table, B4MTU(&l.Config), b4Net}} {
		rule := netlink.NewRule()
		rule.Src, rule.Table, rule.Priority, rule.Family = ipnet(netip.PrefixFrom(r.src, 32)), r.table, 100, netlink.FAMILY_V4
		if err := h.RuleAdd(rule); err != nil {
			return fmt.Errorf("rule from %v: %w", r.src, err)
		}
		rt := &netlink.Route{Dst: ipnet(netip.MustParsePrefix("0.0.0.0/0")), LinkIndex: ln.Attrs().Index, Table: r.table, MTU: r.mtu,
			Src: r.src.AsSlice(), Via: &netlink.Via{AddrFamily: netlink.FAMILY_V6, Addr: hostAddr(r.via, a.bHost).AsSlice()}}
		if err := h.RouteAdd(rt); err != nil {
			return fmt.Errorf("route %v: %w", rt, err)
		}
	}
	return nil
}

// aftrRoutes are r2's: the B4's IPv6 prefix through r1, and the B4's IPv4
// address, once the NAT has undone its mapping, to r1 over IPv6 with the
// softwire's inner MTU, where the AFTR's egress program puts it in IPv6.
func (l *Lab) aftrRoutes(h *netlink.Handle) error {
	b := links[1]
	ln, err := h.LinkByName(b.bIf)
	if err != nil {
		return err
	}
	r1 := hostAddr(b.v6, b.aHost)
	for _, rt := range []*netlink.Route{
		{Dst: ipnet(b4Net), Gw: r1.AsSlice()},
		{Dst: ipnet(netip.PrefixFrom(B4v4, 32)), LinkIndex: ln.Attrs().Index, MTU: B4MTU(&l.Config),
			Via: &netlink.Via{AddrFamily: netlink.FAMILY_V6, Addr: r1.AsSlice()}},
	} {
		if err := h.RouteAdd(rt); err != nil {
			return fmt.Errorf("route %v: %w", rt, err)
		}
	}
	return nil
}

// ConntrackStat reads a counter of conntrack's statistics (insert_failed,
// drop, …) in namespace ns, summed over the CPUs: how the stateful PLAT's
// and the AFTR's NAT fared.
func ConntrackStat(ns, name string) (uint64, error) {
	var total uint64
	err := Do(ns, func() error {
		b, err := os.ReadFile("/proc/thread-self/net/stat/nf_conntrack")
		if err != nil {
			return err
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		col := -1
		for i, f := range strings.Fields(lines[0]) {
			if f == name {
				col = i
			}
		}
		if col < 0 {
			return fmt.Errorf("conntrack has no statistic %q", name)
		}
		for _, ln := range lines[1:] {
			fs := strings.Fields(ln)
			if col < len(fs) {
				v, err := strconv.ParseUint(fs[col], 16, 64)
				if err != nil {
					return err
				}
				total += v
			}
		}
		return nil
	})
	return total, err
}

// Addresses of the IPv4-over-IPv6 paths (set when the lab has them).
type xlatAddrs struct {
	// CLAT6 and B4v6 are the client's IPv6 addresses of the CLAT and
	// the B4; AFTR6 the AFTR's (r2), AFTR4 the address its NAT gives
	// the server; XLATFrom the one the PLAT gives the CLAT's packets.
	CLAT6, B4v6, AFTR6, AFTR4, XLATFrom netip.Addr
	// Pref64 is the PLAT's prefix.
	Pref64 netip.Prefix
	// Wire64 are the prefixes whose packets are the PLAT's on the
	// checked link: the mapped addresses (stateless), the pool
	// (stateful), the DNS64 view's prefix.
	Wire64 []netip.Prefix
}

// xlatPaths maps the IPv4-over-IPv6 paths to their addresses: where the
// client connects (the server's own IPv4 address), what the server sees,
// and the source the client sends from.
func (a Addresses) xlat(p path.Path) (server, client, source netip.Addr) {
	switch p {
	case path.XLAT464:
		if a.XLATFrom.IsValid() {
			return a.ServerV4, a.XLATFrom, CLAT4
		}
	case path.DSLite:
		if a.AFTR4.IsValid() {
			return a.ServerV4, a.AFTR4, B4v4
		}
	}
	return netip.Addr{}, netip.Addr{}, netip.Addr{}
}

// nat64File is the topology file's nat64 section.
type nat64File struct {
	Mode   string `yaml:"mode"`
	Prefix string `yaml:"prefix"`
	Pool   string `yaml:"pool"`
	Ports  string `yaml:"ports"`
}

// UnmarshalShorthand reads `nat64: stateful` as `nat64: {mode: stateful}`.
func (f *nat64File) UnmarshalShorthand(text string) error {
	f.Mode = text
	return nil
}

// nat64FromFile reads the nat64 section, each field checked where it is.
func nat64FromFile(doc *specfile.Doc, f nat64File) (NAT64, error) {
	var n NAT64
	mode := "nat64.mode"
	if !doc.Has(mode) {
		mode = "nat64" // the shorthand
	}
	switch f.Mode {
	case "", "stateless":
	case "stateful":
		n.Stateful = true
	default:
		return n, doc.Errorf(mode, "%q is not a mode: want stateless (SIIT, an IPv4 address per client) or stateful (RFC 6146, the clients share a pool by port)", f.Mode)
	}
	if doc.Has("nat64.prefix") {
		p, err := netip.ParsePrefix(strings.TrimSpace(f.Prefix))
		if err == nil {
			err = CheckPrefix(p)
		} else {
			err = fmt.Errorf("%q is not a prefix such as 64:ff9b::/96", f.Prefix)
		}
		if err != nil {
			return n, doc.Errorf("nat64.prefix", "%v", err)
		}
		n.Prefix = p
	}
	for _, field := range []string{"pool", "ports"} {
		if doc.Has("nat64."+field) && !n.Stateful {
			return n, doc.Errorf("nat64."+field, "needs mode: stateful (the stateless translator maps each client to an address of its own)")
		}
	}
	if doc.Has("nat64.pool") {
		p, err := ParsePrefix(f.Pool)
		if err == nil {
			err = CheckPool(p)
		}
		if err != nil {
			return n, doc.Errorf("nat64.pool", "%v", err)
		}
		n.Pool = p
	}
	if doc.Has("nat64.ports") {
		ports, err := ParsePorts(f.Ports)
		if err != nil {
			return n, doc.Errorf("nat64.ports", "%v", err)
		}
		n.Ports = ports
	}
	return n, nil
}

// natStatus describes the NAT of r1 (the stateful PLAT) or r2 (the AFTR),
// if the host has one: its rule and conntrack's counters.
func natStatus(role, ns string) string {
	table := map[string]string{R1: platTable, R2: aftrTable}[role]
	if table == "" {
		return ""
	}
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", "ip", table).Output()
	if err != nil {
		return ""
	}
	what := "stateful NAT64 (nftables snat after the translator)"
	if role == R2 {
		what = "DS-Lite AFTR (nftables masquerade)"
	}
	var rules []string // the PLAT's two (ports for TCP and UDP, the address for ICMP)
	for _, ln := range strings.Split(string(out), "\n") {
		if f := strings.TrimSpace(ln); strings.Contains(f, " snat to ") || strings.HasSuffix(f, " masquerade") {
			rules = append(rules, f)
		}
	}
	if len(rules) > 0 {
		what += ": " + strings.Join(rules, "; ")
	}
	entries, _ := ConntrackStat(ns, "entries")
	failed, _ := ConntrackStat(ns, "insert_failed")
	return fmt.Sprintf("%s; %d connections tracked, %d packets of new connections dropped with no free port (conntrack insert_failed)", what, entries/uint64(max(1, cpus())), failed)
}

// cpus is how many CPUs conntrack's statistics have a line for.
func cpus() int {
	b, err := os.ReadFile("/proc/net/stat/nf_conntrack")
	if err != nil {
		return 1
	}
	return len(strings.Split(strings.TrimSpace(string(b)), "\n")) - 1
}

// Datapath names a counters map of a path's datapath: what a run's
// record counts of it (Datapaths).
type Datapath struct {
	// Name is the record's prefix: plat, clat, b4 or aftr.
	Name  string     `json:"name"`
	MapID ebpf.MapID `json:"map_id"`
	// Softwire: the map holds a softwire end's counters, not a
	// translator's.
	Softwire bool `json:"softwire,omitempty"`
}

// Datapaths are, per path, the datapaths whose counters its runs record:
// nat64 the PLAT's, 464xlat the CLAT's and the PLAT's, dslite the B4's and
// the AFTR's.
func (l *Lab) Datapaths() map[path.Path][]Datapath {
	out := map[path.Path][]Datapath{}
	if l.plat != nil {
		plat := Datapath{Name: "plat", MapID: l.plat.MapID()}
		out[path.NAT64] = []Datapath{plat}
		if l.clat != nil {
			out[path.XLAT464] = []Datapath{{Name: "clat", MapID: l.clat.MapID()}, plat}
		}
	}
	if l.b4 != nil && l.aftr != nil {
		out[path.DSLite] = []Datapath{{Name: "b4", MapID: l.b4.MapID(), Softwire: true}, {Name: "aftr", MapID: l.aftr.MapID(), Softwire: true}}
	}
	return out
}

// Count reads the datapath's counters as a run record names them:
// NAME_4to6, NAME_6to4 and NAME_dropped for a translator, NAME_encap,
// NAME_decap and NAME_dropped for a softwire end, and the dropped by kind
// (NAME_dropped_KIND, DropKinds).
func (d Datapath) Count() (map[string]uint64, error) {
	n := bpf.NumTranslatorCounters
	kinds := translatorDrops
	if d.Softwire {
		n, kinds = bpf.NumSoftwireCounters, softwireDrops
	}
	c, err := bpf.ReadCounters(d.MapID, n)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	if d.Softwire {
		out[d.Name+"_encap"], out[d.Name+"_decap"] = c[bpf.Encapsulated], c[bpf.Decapsulated]
	} else {
		out[d.Name+"_4to6"], out[d.Name+"_6to4"] = c[bpf.Translated46], c[bpf.Translated64]
	}
	dropped := uint64(0)
	for _, k := range kinds {
		dropped += c[k.counter]
		out[d.Name+"_dropped_"+k.name] = c[k.counter]
	}
	out[d.Name+"_dropped"] = dropped
	return out, nil
}

// A drop kind: its counter, and its name in a run record.
type dropKind struct {
	name    string
	counter int
}

// The kinds of drops a translator and a softwire end count.
var (
	translatorDrops = []dropKind{{"unmapped", bpf.DroppedUnmapped}, {"unsupported", bpf.DroppedUnsupported},
		{"hoplimit", bpf.DroppedHopLimit}, {"zerocsum", bpf.DroppedZeroChecksum}, {"fail", bpf.TranslateFailed}}
	softwireDrops = []dropKind{{"spoofed", bpf.DroppedSpoofed}, {"bad", bpf.DroppedBad},
		{"encap_fail", bpf.EncapFailed}, {"decap_fail", bpf.DecapFailed}}
)

// sourceRules describes the host's routing rules by source address and
// the routes of their tables: "from 192.0.0.4 table 6877: default via
// inet6 2001:db8:464:1::1 dev eth-r1 mtu 1480".
func sourceRules(h *netlink.Handle, names map[int]string) []string {
	rules, err := h.RuleList(netlink.FAMILY_V4)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range rules {
		if r.Src == nil || r.Table <= 0 || r.Table >= 253 && r.Table <= 255 {
			continue
		}
		rs, _ := h.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: r.Table}, netlink.RT_FILTER_TABLE)
		var routes []string
		for _, rt := range rs {
			dst := "default"
			if rt.Dst != nil && !rt.Dst.IP.IsUnspecified() {
				dst = rt.Dst.String()
			}
			via := ""
			if v, ok := rt.Via.(*netlink.Via); ok && v != nil {
				via = " via inet6 " + v.Addr.String()
			} else if rt.Gw != nil {
				via = " via " + rt.Gw.String()
			}
			mtu := ""
			if rt.MTU > 0 {
				mtu = fmt.Sprintf(" mtu %d", rt.MTU)
			}
			routes = append(routes, dst+via+" dev "+names[rt.LinkIndex]+mtu)
		}
		out = append(out, fmt.Sprintf("from %v table %d: %s", r.Src, r.Table, strings.Join(routes, "; ")))
	}
	return out
}
