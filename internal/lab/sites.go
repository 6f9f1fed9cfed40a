package lab

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"v6lab/internal/input/specfile"
)

// A lab of sites (v6lab lab up --sites) gives each site an address per
// family from these prefixes: the server host takes every address of
// SitesV4 and SitesV6 as its own (AnyIP: a local route for the whole
// prefix, so its servers' wildcard sockets answer any of them), and r2
// drops every packet to SitesV6Blackhole without a word (a blackhole
// route): the IPv6 of a site whose IPv6 is broken. The IPv4 prefix is part
// of the benchmarking range (RFC 2544; the generator hosts use 198.18/16),
// the IPv6 ones of the documentation prefix (RFC 3849).
var (
	SitesV4          = netip.MustParsePrefix("198.19.0.0/16")
	SitesV6          = netip.MustParsePrefix("2001:db8:5e::/48")
	SitesV6Blackhole = netip.MustParsePrefix("2001:db8:5f::/48")
)

// MaxSites is how many sites a lab of sites holds: an address each in
// SitesV4, of which every 256th (x.y.z.0) and its neighbour (.255) are
// left out.
const MaxSites = 254 * 256

// SiteAddrs are site i's addresses (i from 0): its IPv4 one, and its IPv6
// one, in SitesV6Blackhole when blackholed.
func SiteAddrs(i int, blackholed bool) (v4, v6 netip.Addr) {
	b := SitesV4.Addr().As4()
	b[2], b[3] = byte(i/254), byte(i%254+1)
	v4 = netip.AddrFrom4(b)
	prefix := SitesV6
	if blackholed {
		prefix = SitesV6Blackhole
	}
	s := prefix.Addr().As16()
	s[13], s[14], s[15] = 1, byte(i>>8), byte(i) // ::1:xxxx, never the prefix's ::
	return v4, netip.AddrFrom16(s)
}

// AddSites routes the sites' prefixes to the server host: r1 sends them
// to r2, r2 to the server (and drops SitesV6Blackhole), and the server
// holds every address of SitesV4 and SitesV6 (local routes on lo). They go
// with the namespaces when the lab is removed.
func (l *Lab) AddSites() error {
	b, c := links[1], links[2]
	v6Both := netip.PrefixFrom(SitesV6.Addr(), 47) // 5e and 5f
	add := func(role string, routes ...*netlink.Route) error {
		h, err := handle(NS(l.Name, role))
		if err != nil {
			return err
		}
		defer h.Close()
		for _, r := range routes {
			if err := h.RouteAdd(r); err != nil {
				return fmt.Errorf("lab: %s: sites' route %v: %w", role, r, err)
			}
		}
		return nil
	}
	via := func(dst netip.Prefix, gw netip.Addr) *netlink.Route {
		return &netlink.Route{Dst: ipnet(dst), Gw: gw.AsSlice()}
	}
	if err := add(R1, via(SitesV4, hostAddr(b.v4, b.bHost)), via(v6Both, hostAddr(b.v6, b.bHost))); err != nil {
		return err
	}
	if err := add(R2, via(SitesV4, hostAddr(c.v4, c.bHost)), via(SitesV6, hostAddr(c.v6, c.bHost)),
		&netlink.Route{Dst: ipnet(SitesV6Blackhole), Type: unix.RTN_BLACKHOLE}); err != nil {
		return err
	}
	h, err := handle(NS(l.Name, Server))
	if err != nil {
		return err
	}
	lo, err := h.LinkByName("lo")
	h.Close()
	if err != nil {
		return fmt.Errorf("lab: server: %w", err)
	}
	local := func(dst netip.Prefix) *netlink.Route {
		return &netlink.Route{Dst: ipnet(dst), LinkIndex: lo.Attrs().Index, Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST}
	}
	return add(Server, local(SitesV4), local(SitesV6))
}

// EtcNetns is where ip netns exec finds a namespace's own /etc files: it
// mounts EtcNetns/NS/resolv.conf over /etc/resolv.conf for what it runs.
// (A variable for tests.)
var EtcNetns = "/etc/netns"

// SitesResolvConf is the resolv.conf of lab name's client host while the
// lab serves sites: a command run there by ip netns exec asks the sites'
// DNS servers in the server host.
func SitesResolvConf(name string) string {
	return filepath.Join(EtcNetns, NS(name, Client), "resolv.conf")
}

// addSites, for a lab of sites (Config.Sites), routes the sites to the
// server (AddSites) and writes the client's SitesResolvConf naming the
// server's addresses, its directory in the owner record (lab down
// removes it).
func (l *Lab) addSites() error {
	if l.Sites == "" {
		return nil
	}
	if err := l.AddSites(); err != nil {
		return err
	}
	if l.rec != nil {
		l.rec.Sites = l.Sites // saved with the directory, next
	}
	if err := l.rec.AddDir(filepath.Dir(SitesResolvConf(l.Name))); err != nil {
		return err
	}
	return writeSitesResolvConf(l.Name, l.Addr.ServerV4, l.Addr.ServerV6)
}

// writeSitesResolvConf writes lab name's SitesResolvConf naming servers,
// its directories made without following a link (mkdirNoLink: a link at
// EtcNetns or at the namespace's directory is refused, not followed).
func writeSitesResolvConf(name string, servers ...netip.Addr) error {
	conf := SitesResolvConf(name)
	if err := mkdirNoLink(filepath.Dir(EtcNetns), filepath.Dir(conf)); err != nil {
		return fmt.Errorf("lab: sites: %w", err)
	}
	mark := fmt.Sprintf("# v6lab lab %s: its sites' DNS servers", name)
	text := mark + ", in the server host\n"
	for _, a := range servers {
		text += fmt.Sprintf("nameserver %s\n", a)
	}
	if err := writeOwn(conf, mark, text); err != nil {
		return fmt.Errorf("lab: sites: %w", err)
	}
	return nil
}

// writeOwn creates file name holding text, never through a symbolic link
// (O_NOFOLLOW) nor over a file someone else made (O_EXCL): one there
// already is replaced only when it is a regular file whose first line is
// mark (a lab of that name's, left by a crash); anything else is refused.
func writeOwn(name, mark, text string) error {
	if st, err := os.Lstat(name); err == nil {
		old, rerr := os.ReadFile(name)
		if !st.Mode().IsRegular() || rerr != nil || !bytes.HasPrefix(old, []byte(mark)) {
			return fmt.Errorf("%s is there already and is not v6lab's (%s): remove it, or give the lab another --name", name, specfile.Kind(st.Mode()))
		}
		if err := os.Remove(name); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// SitesHere readies this process's own network namespace (a fresh one, as
// v6lab survey --lab-sites makes) for a lab of sites on loopback: lo up,
// every address of SitesV4 and SitesV6 local (AnyIP), SitesV6Blackhole
// routed into a veth pair where its packets are dropped in silence, as a
// real black hole's are: a client's connect to it times out (a blackhole
// route would refuse it at once, EINVAL, trial6 F17). Nothing is left
// behind: the namespace, and the pair, go with the process.
func SitesHere() error {
	h, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("lab: sites: %w", err)
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("lab: sites: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("lab: sites: lo up: %w", err)
	}
	for _, r := range []*netlink.Route{
		{Dst: ipnet(SitesV4), LinkIndex: lo.Attrs().Index, Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST},
		{Dst: ipnet(SitesV6), LinkIndex: lo.Attrs().Index, Type: unix.RTN_LOCAL, Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST},
	} {
		if err := h.RouteAdd(r); err != nil {
			return fmt.Errorf("lab: sites: route %v: %w", r.Dst, err)
		}
	}
	return blackholeHere(h)
}

// holeGateway is the black hole's next hop: a neighbour that is never
// there (a fixed link-layer address no interface has, so no discovery).
var holeGateway, holeMAC = netip.MustParseAddr("fe80::1"), net.HardwareAddr{0x02, 0, 0, 0, 0, 0x01}

// blackholeHere routes SitesV6Blackhole out of one end of a veth pair to
// holeGateway: the other end receives its packets for a link-layer address
// not its own and drops them, answering nothing.
func blackholeHere(h *netlink.Handle) error {
	pair := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v6lab-hole"}, PeerName: "v6lab-hole1"}
	if err := h.LinkAdd(pair); err != nil {
		return fmt.Errorf("lab: sites: blackhole6's veth pair: %w", err)
	}
	var out netlink.Link
	for _, name := range []string{pair.PeerName, pair.Name} {
		l, err := h.LinkByName(name)
		if err == nil {
			err = h.LinkSetUp(l)
		}
		if err != nil {
			return fmt.Errorf("lab: sites: blackhole6's %s: %w", name, err)
		}
		out = l
	}
	idx := out.Attrs().Index
	if err := h.NeighAdd(&netlink.Neigh{LinkIndex: idx, Family: unix.AF_INET6, State: netlink.NUD_PERMANENT,
		IP: holeGateway.AsSlice(), HardwareAddr: holeMAC}); err != nil {
		return fmt.Errorf("lab: sites: blackhole6's neighbour: %w", err)
	}
	if err := h.RouteAdd(&netlink.Route{Dst: ipnet(SitesV6Blackhole), Gw: holeGateway.AsSlice(), LinkIndex: idx}); err != nil {
		return fmt.Errorf("lab: sites: route %v: %w", SitesV6Blackhole, err)
	}
	return nil
}
