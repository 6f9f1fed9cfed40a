package lab

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"

	"github.com/vishvananda/netlink"

	"v6lab/internal/lab/bpf"
	"v6lab/internal/sock/path"
)

// The nat64 path: the client speaks IPv6 from an address of its own to the
// RFC 6052 well-known prefix, r1 translates statelessly (SIIT, RFC 7915)
// with one explicit mapping of that address to an IPv4 one (RFC 7757),
// and the server answers over IPv4. Names on the path come from a DNS64
// view (RFC 6147) on an IPv6 address of the server host, reached natively,
// as a DNS64 resolver is.
var (
	// Nat64Prefix is the RFC 6052 well-known prefix.
	Nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	// nat64Client is the client link's prefix for the path (r1 is ::1).
	nat64Client = netip.MustParsePrefix("2001:db8:64:1::/64")
	// nat64DNS is the server link's prefix for the DNS64 view (r2 ::1).
	nat64DNS = netip.MustParsePrefix("2001:db8:64:3::/64")
	// nat64Pool holds the client's mapped IPv4 address: the benchmarking
	// range (RFC 2544), which the generator links use from 198.18.1.0 on.
	nat64Pool = netip.MustParsePrefix("198.18.0.0/24")
	// Nat64Wire are the prefixes whose packets belong to the nat64 path on
	// the checked link of a stateless lab: the mapped IPv4 addresses, and
	// the DNS64 view's prefix (its lookups). Native IPv6 from the client's
	// nat64 address to the server would be IPv6, and fail the path's
	// proof. (A lab's own: Addresses.Wire64.)
	Nat64Wire = []netip.Prefix{nat64Pool, nat64DNS}
)

// nat64MTU is the client's MTU toward the prefix: a full 1500-byte IPv4
// packet from the server grows by 20 bytes as IPv6, so the client's TCP
// must offer an MSS that leaves room for it (as a NAT64 operator clamps).
const nat64MTU = 1480

// Nat64MTU is the client's route MTU toward the prefix in a lab of config
// c: nat64MTU, or less where a link of the path is smaller, since the
// translator turns ICMPv4 errors into nothing (no Packet Too Big ever
// reaches the client from the IPv4 side): an IPv6 packet of the route's
// MTU must fit the client's link as it is, and the links past r1 once it
// is 20 bytes shorter as IPv4, as an operator's NAT64 sets its IPv6 MTU.
// The MSS the client offers stays nat64MTU's (nat64AdvMSS): what the
// server sends finds a smaller link by IPv4's own path MTU discovery, as
// it would behind a real translator.
func Nat64MTU(c *Config) int {
	return min(nat64MTU, c.Link("client-r1").MTU, c.Link("r1-r2").MTU+20, c.Link("r2-server").MTU+20)
}

// nat64AdvMSS is the MSS the client offers toward the prefix: nat64MTU
// less the IPv6 and TCP headers.
const nat64AdvMSS = nat64MTU - 60

// R1ClientIf is r1's interface toward the client: the nat64 path's IPv6
// side.
var R1ClientIf = links[0].bIf

// addNat64 builds the nat64 path: addresses, routes, and the translator
// on r1 (tc BPF: without it the lab has no nat64 path, and says why).
func (l *Lab) addNat64(hs map[string]*netlink.Handle) error {
	if err := bpf.Check(); err != nil {
		l.Nat64Why = fmt.Sprintf("no nat64 path: its translator needs tc BPF (%v)", err)
		return nil
	}
	a, c := links[0], links[2]
	client6, r1on6 := hostAddr(nat64Client, a.aHost), hostAddr(nat64Client, a.bHost)
	dns64, r2on64 := hostAddr(nat64DNS, c.bHost), hostAddr(nat64DNS, c.aHost)
	for _, ad := range []struct {
		role, ifname string
		p            netip.Prefix
	}{
		{Client, a.aIf, netip.PrefixFrom(client6, 64)}, {R1, a.bIf, netip.PrefixFrom(r1on6, 64)},
		{R2, c.aIf, netip.PrefixFrom(r2on64, 64)}, {Server, c.bIf, netip.PrefixFrom(dns64, 64)},
	} {
		h := hs[ad.role]
		ln, err := h.LinkByName(ad.ifname)
		if err == nil {
			err = addAddr(h, ln, ad.p)
		}
		if err != nil {
			return fmt.Errorf("lab: %s %s: nat64: %w", ad.role, ad.ifname, err)
		}
	}
	wire := []netip.Prefix{nat64Pool}
	if l.NAT64.Stateful && !nat64Pool.Overlaps(l.NAT64.Pool) {
		wire = append(wire, l.NAT64.Pool)
	}
	for _, rt := range l.nat64Routes(client6, r1on6, wire) {
		if err := hs[rt.role].RouteAdd(rt.r); err != nil {
			return fmt.Errorf("lab: %s: nat64 route %v: %w", rt.role, rt.r, err)
		}
	}
	if err := l.attachPLAT(hs, client6); err != nil {
		return err
	}
	l.Addr.ClientNat64, l.Addr.DNS64 = client6, dns64
	l.Addr.Mapped4 = l.platAddr(client6)
	l.Addr.ServerNat64 = path.Embed(l.NAT64.Prefix, l.Addr.ServerV4)
	l.Addr.Pref64, l.Addr.Wire64 = l.NAT64.Prefix, append(wire, nat64DNS)
	return nil
}

// roleRoute is a route to add in one host of the lab.
type roleRoute struct {
	role string
	r    *netlink.Route
}

// nat64Routes are the nat64 path's routes: the client's to the prefix,
// the routers' between the client's link and the DNS64 view, and back to
// the translator for each wire prefix (the mapped addresses, the pool).
func (l *Lab) nat64Routes(client6, r1on6 netip.Addr, wire []netip.Prefix) []roleRoute {
	b, c := links[1], links[2]
	routes := []roleRoute{
		// The client reaches the prefix through r1, from its nat64
		// address, with room for the translation's 20 bytes.
		{Client, &netlink.Route{Dst: ipnet(l.NAT64.Prefix), Gw: r1on6.AsSlice(), Src: client6.AsSlice(), MTU: Nat64MTU(&l.Config), AdvMSS: nat64AdvMSS}},
		{R1, &netlink.Route{Dst: ipnet(nat64DNS), Gw: hostAddr(b.v6, b.bHost).AsSlice()}},
		{R2, &netlink.Route{Dst: ipnet(nat64Client), Gw: hostAddr(b.v6, b.aHost).AsSlice()}},
	}
	for _, p := range wire {
		routes = append(routes,
			// IPv4 to the mapped addresses (or the pool) goes back to
			// the translator.
			roleRoute{R2, &netlink.Route{Dst: ipnet(p), Gw: hostAddr(b.v4, b.aHost).AsSlice()}},
			// The server sends them packets that still fit the client's
			// link once IPv6 has added 20 bytes (and a fragment its
			// Fragment Header's 8): a translator cannot split a packet.
			roleRoute{Server, &netlink.Route{Dst: ipnet(p), Gw: hostAddr(c.v4, c.aHost).AsSlice(), MTU: 1500 - 28}},
		)
	}
	return routes
}

// attachPLAT loads the translator at r1 (after the stateful PLAT's
// nftables NAT, when the lab's NAT64 is stateful) and attaches it.
func (l *Lab) attachPLAT(hs map[string]*netlink.Handle, client6 netip.Addr) error {
	a, b := links[0], links[1]
	ms := l.platMappings(client6)
	x := bpf.Translator{Prefix: l.NAT64.Prefix, Client6: ms[0].V6, Client4: ms[0].V4, More: ms[1:]}
	if l.NAT64.Stateful {
		if _, err := exec.LookPath("nft"); err != nil {
			return fmt.Errorf("lab: the stateful NAT64 needs nftables (the nft program; scripts/install-deps --lab installs it)")
		}
		if err := l.addStatefulPLAT(hs[R1]); err != nil {
			return fmt.Errorf("lab: r1: stateful NAT64: %w", err)
		}
	}
	err := Do(NS(l.Name, R1), func() error {
		n, err := bpf.NewNat64(x)
		if err != nil {
			return err
		}
		l.bpfObjs, l.plat = append(l.bpfObjs, n), n
		from6, err := net.InterfaceByName(a.bIf)
		if err != nil {
			return err
		}
		from4, err := net.InterfaceByName(b.aIf)
		if err != nil {
			return err
		}
		if l.NAT64.Stateful {
			// Back to IPv6 after the kernel's NAT: at the egress
			// toward the client.
			return n.AttachAt(bpf.Hookpoint{Ifindex: from6.Index}, bpf.Hookpoint{Ifindex: from6.Index, Egress: true}, l.hook())
		}
		return n.Attach(from6.Index, from4.Index, l.hook())
	})
	if err != nil {
		return fmt.Errorf("lab: r1: nat64 over tc BPF: %w", err)
	}
	return nil
}

// Listen is the server host's own address for path p: where servers bind
// (for nat64, the DNS64 view's address: the path's server address is the
// translator's, which no host holds).
func (a Addresses) Listen(p path.Path) netip.Addr {
	if p.Kind().Translated {
		return a.DNS64
	}
	return a.Server(p)
}
