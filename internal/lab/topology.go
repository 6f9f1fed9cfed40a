package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"v6lab/internal/lab/bpf"
	"v6lab/internal/sock/path"
)

// Roles of the four hosts of the default topology, in path order.
const (
	Client = "client"
	R1     = "r1"
	R2     = "r2"
	Server = "server"
)

// Hosts lists the roles in path order.
var Hosts = []string{Client, R1, R2, Server}

// Roles of the background traffic hosts (Config.Generators): an IPv4 and an
// IPv6 generator on each side of the routers, as the Towson study's two
// MGEN pairs.
const (
	Gen4C = "gen4c" // client side, attached to r1
	Gen6C = "gen6c"
	Gen4S = "gen4s" // server side, attached to r2
	Gen6S = "gen6s"
)

// GenHosts lists the generator roles.
var GenHosts = []string{Gen4C, Gen6C, Gen4S, Gen6S}

// Config chooses what varies between labs.
type Config struct {
	// Name tells labs apart; namespaces are named v6lab-<Name>-<role>.
	Name string
	// TunnelMTU is the MTU of the 6in4 tunnel (1280 … 1480).
	TunnelMTU int
	// Tunnel forces "sit" (kernel device), "bpf" (tc BPF programs, the
	// kernel datapath where there is no sit) or "userspace"; empty picks
	// the first of these that works. "vxlan" replaces 6in4 with the
	// kernel's vxlan (IPv6 in UDP) as a reference for benchmarks.
	Tunnel string
	// BPFHook forces how BPF programs attach ("tcx" or "clsact"); empty
	// is TCX where the kernel has it.
	BPFHook string `json:"bpf_hook,omitempty"`
	// Shaping limits every link (rate, queue; delay and loss with netem)
	// that Links does not set.
	Shaping Shaping `json:"shaping"`
	// Links sets single links by name (LinkNames), whole: shaping and MTU.
	Links map[string]Link `json:"links,omitempty"`
	// Generators adds the four background traffic hosts (GenHosts).
	Generators bool `json:"generators,omitempty"`
	// BareServer turns SACK, timestamps and window scaling off in the
	// server host's own TCP stack (its namespace's sysctls), standing in
	// for the Towson study's bare-PC web server.
	BareServer bool `json:"bare_server,omitempty"`
	// NoTunnel builds the lab without the 6in4 tunnel (where this user can
	// make none, see CanTunnel): ipv4 and ipv6 only.
	NoTunnel bool `json:"no_tunnel,omitempty"`
	// Congestion is the TCP congestion control of every host of the lab
	// (each namespace's own sysctl); empty is DefaultCongestion. The
	// studies ran Reno/CUBIC-era stacks: a host's BBR would change them.
	Congestion string `json:"congestion,omitempty"`
	// NAT64 is how r1 translates for the nat64 and 464xlat paths
	// (stateless or stateful, its prefix and pool).
	NAT64 NAT64 `json:"nat64,omitzero"`
	// PMTU is what the lab does to path MTU discovery and fragments, and
	// the mitigations in force, for every run (cell groups add their own).
	PMTU PMTU `json:"pmtu,omitzero"`
	// Sites is a lab of sites' file (v6lab lab up --sites): the lab routes
	// the sites' addresses to the server host (AddSites) and points the
	// client's resolver at the server (SitesResolvConf); the servers are
	// the keeper's to start.
	Sites string `json:"sites,omitempty"`
}

// DefaultCongestion is the lab's TCP congestion control unless set.
const DefaultCongestion = "cubic"

var congestionName = regexp.MustCompile(`^[a-z0-9_]{1,16}$`)

// Link is one link's settings.
type Link struct {
	Shaping Shaping `json:"shaping"`
	// MTU of both veth ends; 0 is 1500.
	MTU int `json:"mtu,omitempty"`
}

// DefaultLinkMTU is the MTU of a lab link unless set.
const DefaultLinkMTU = 1500

// LinkNames are the links of the topology, client side first.
var LinkNames = []string{"client-r1", "r1-r2", "r2-server"}

// LinkSummary describes every link's shaping and MTU in one line.
func (c *Config) LinkSummary() string {
	var parts []string
	for _, name := range LinkNames {
		l := c.Link(name)
		parts = append(parts, name+" "+l.String())
	}
	return strings.Join(parts, "; ")
}

// String describes a link: "10 Mbit/s, queue 65536 B, mtu 1500".
func (l Link) String() string {
	s := l.Shaping
	var parts []string
	if s.Rate == 0 {
		parts = append(parts, "unshaped")
	} else {
		parts = append(parts, fmt.Sprintf("%g Mbit/s", float64(s.Rate)/1e6))
	}
	if s.QueueLimit > 0 {
		parts = append(parts, fmt.Sprintf("queue %d B", s.QueueLimit))
	}
	if s.Delay > 0 {
		parts = append(parts, "delay "+s.Delay.String())
	}
	if s.Jitter > 0 {
		parts = append(parts, "jitter "+s.Jitter.String())
	}
	if s.Loss > 0 {
		parts = append(parts, fmt.Sprintf("loss %g%%", s.Loss))
	}
	mtu := l.MTU
	if mtu == 0 {
		mtu = DefaultLinkMTU
	}
	return strings.Join(append(parts, fmt.Sprintf("mtu %d", mtu)), ", ")
}

// Link returns the settings of link name (one of LinkNames).
func (c *Config) Link(name string) Link {
	if l, ok := c.Links[name]; ok {
		if l.MTU == 0 {
			l.MTU = DefaultLinkMTU
		}
		return l
	}
	return Link{Shaping: c.Shaping, MTU: DefaultLinkMTU}
}

// DefaultTunnelMTU is the usual 6in4 MTU: 1500 less the 20-byte IPv4 header.
const DefaultTunnelMTU = 1480

// TunnelMTUFor is the tunnel's MTU unless set: the r1-r2 link's less the
// 20-byte IPv4 header, at most DefaultTunnelMTU (a smaller link makes the
// tunnel smaller, as a tunnel over it is).
func TunnelMTUFor(linkMTU int) int { return min(DefaultTunnelMTU, linkMTU-20) }

// Validate checks a config.
func (c *Config) Validate() error {
	if err := CheckName(c.Name); err != nil {
		return err
	}
	if err := c.Shaping.Validate(); err != nil {
		return err
	}
	for name := range c.Links {
		if !slices.Contains(LinkNames, name) {
			return fmt.Errorf("lab: no link named %q (links: %s)", name, strings.Join(LinkNames, ", "))
		}
	}
	for _, name := range LinkNames {
		l := c.Link(name)
		if err := l.Shaping.Validate(); err != nil {
			return fmt.Errorf("lab: link %s: %w", name, err)
		}
		if l.MTU < 1280 || l.MTU > 9000 {
			return fmt.Errorf("lab: link %s: MTU %d out of range (1280 to 9000: IPv6 needs 1280)", name, l.MTU)
		}
		if err := checkQueue(l.Shaping.QueueLimit, l.MTU); err != nil {
			return fmt.Errorf("lab: link %s: %w", name, err)
		}
	}
	if c.TunnelMTU == 0 {
		mtu := c.Link("r1-r2").MTU
		if c.TunnelMTU = TunnelMTUFor(mtu); c.TunnelMTU < 1280 && c.Tunnel != "vxlan" {
			return fmt.Errorf("lab: link r1-r2: MTU %d leaves the 6in4 tunnel over it %d bytes, less than the 1280 IPv6 needs: at least 1300", mtu, c.TunnelMTU)
		}
	}
	if c.TunnelMTU < 1280 || c.TunnelMTU > 1480 {
		return fmt.Errorf("lab: tunnel MTU %d out of range: IPv6 needs at least 1280, and 1480 fills a 1500-byte link", c.TunnelMTU)
	}
	if mtu := c.Link("r1-r2").MTU; c.Tunnel != "vxlan" && mtu < c.TunnelMTU+20 {
		return fmt.Errorf("lab: tunnel MTU %d needs an r1-r2 link MTU of at least %d (the tunnel adds a 20-byte IPv4 header), but it is %d", c.TunnelMTU, c.TunnelMTU+20, mtu)
	}
	if c.Congestion == "" {
		c.Congestion = DefaultCongestion
	}
	if !congestionName.MatchString(c.Congestion) {
		return fmt.Errorf("lab: %q is not a congestion control name (cubic, reno, bbr, …)", c.Congestion)
	}
	if c.Tunnel == "auto" {
		c.Tunnel = ""
	}
	if c.Tunnel != "" && !slices.Contains(TunnelKinds, c.Tunnel) {
		return fmt.Errorf("lab: unknown tunnel implementation %q (want auto, sit, bpf or userspace; vxlan is a kernel reference for benchmarks)", c.Tunnel)
	}
	switch c.BPFHook {
	case "", "tcx", "clsact":
	default:
		return fmt.Errorf("lab: unknown BPF hook %q (want tcx or clsact)", c.BPFHook)
	}
	if err := c.NAT64.Validate(); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	c.NAT64.Defaults()
	if err := c.PMTU.Validate(); err != nil {
		return fmt.Errorf("lab: pmtu: %w", err)
	}
	return nil
}

// NS is the namespace name of a role in lab name.
func NS(name, role string) string { return Prefix + name + "-" + role }

// link is one veth pair of the topology with its addresses.
type link struct {
	a, b         string // roles
	aIf, bIf     string // interface names
	v4           netip.Prefix
	v6           netip.Prefix
	tun6         netip.Prefix // the 6in4 path's prefix on this link, if any
	aHost, bHost byte         // host part of each end
}

// The address plan uses documentation ranges only (RFC 5737, RFC 3849), so
// nothing in a lab can ever be mistaken for a real network.
var links = []link{
	{a: Client, b: R1, aIf: "eth-r1", bIf: "eth-client", aHost: 2, bHost: 1,
		v4: netip.MustParsePrefix("192.0.2.0/24"), v6: netip.MustParsePrefix("2001:db8:6:1::/64"), tun6: netip.MustParsePrefix("2001:db8:46:1::/64")},
	{a: R1, b: R2, aIf: "eth-r2", bIf: "eth-r1", aHost: 1, bHost: 2,
		v4: netip.MustParsePrefix("198.51.100.0/24"), v6: netip.MustParsePrefix("2001:db8:6:2::/64")},
	{a: R2, b: Server, aIf: "eth-server", bIf: "eth-r2", aHost: 1, bHost: 2,
		v4: netip.MustParsePrefix("203.0.113.0/24"), v6: netip.MustParsePrefix("2001:db8:6:3::/64"), tun6: netip.MustParsePrefix("2001:db8:46:3::/64")},
}

func (lk link) name() string { return lk.a + "-" + lk.b }

// genLinks attach the generator hosts; their addresses come from the
// benchmarking ranges (RFC 2544, RFC 5180) and the documentation prefix.
var genLinks = []link{
	{a: R1, b: Gen4C, aIf: "eth-gen4c", bIf: "eth-r1", aHost: 1, bHost: 2,
		v4: netip.MustParsePrefix("198.18.1.0/24"), v6: netip.MustParsePrefix("2001:db8:6:11::/64")},
	{a: R1, b: Gen6C, aIf: "eth-gen6c", bIf: "eth-r1", aHost: 1, bHost: 2,
		v4: netip.MustParsePrefix("198.18.2.0/24"), v6: netip.MustParsePrefix("2001:db8:6:12::/64")},
	{a: R2, b: Gen4S, aIf: "eth-gen4s", bIf: "eth-r2", aHost: 1, bHost: 2,
		v4: netip.MustParsePrefix("198.18.3.0/24"), v6: netip.MustParsePrefix("2001:db8:6:13::/64")},
	{a: R2, b: Gen6S, aIf: "eth-gen6s", bIf: "eth-r2", aHost: 1, bHost: 2,
		v4: netip.MustParsePrefix("198.18.4.0/24"), v6: netip.MustParsePrefix("2001:db8:6:14::/64")},
}

// TunnelIf is the name of the 6in4 interface on both routers.
const TunnelIf = "tun6in4"

func hostAddr(p netip.Prefix, host byte) netip.Addr {
	b := p.Addr().AsSlice()
	b[len(b)-1] = host
	a, _ := netip.AddrFromSlice(b)
	return a
}

// Addresses are the endpoints a path uses in the lab.
type Addresses struct {
	ClientV4, ServerV4     netip.Addr
	ClientV6, ServerV6     netip.Addr
	ClientTun6, ServerTun6 netip.Addr
	// The nat64 path's (invalid when the lab has none): the client's
	// IPv6 address, the IPv4 one the translator maps it to, the server's
	// address under the prefix, and the DNS64 view's address.
	ClientNat64, Mapped4, ServerNat64, DNS64 netip.Addr
	// The 464xlat and dslite paths' (invalid when the lab has none).
	xlatAddrs
	// TunnelV4 are the routers' IPv4 tunnel endpoints (r1, r2).
	TunnelV4 [2]netip.Addr
	// WireIf is the interface on r1 whose traffic proves the path: it
	// carries IPv4, IPv6, and the tunnel's IPv4 protocol 41.
	WireIf string
	// ServerIf is the server host's interface (toward r2).
	ServerIf string
	// Gen are the generator hosts' addresses by role: [IPv4, IPv6].
	Gen map[string][2]netip.Addr
}

// Server is the server host's address that path p reaches (invalid for a
// path the lab does not build): the lab's half of a path kind's row.
func (a Addresses) Server(p path.Path) netip.Addr {
	if s, _, _ := a.xlat(p); s.IsValid() {
		return s
	}
	return map[path.Path]netip.Addr{path.IPv4: a.ServerV4, path.IPv6: a.ServerV6, path.SixIn4: a.ServerTun6, path.NAT64: a.ServerNat64}[p]
}

// Client is the client host's address on path p: the address a server
// sees it come from.
func (a Addresses) Client(p path.Path) netip.Addr {
	if _, c, _ := a.xlat(p); c.IsValid() {
		return c
	}
	return map[path.Path]netip.Addr{path.IPv4: a.ClientV4, path.IPv6: a.ClientV6, path.SixIn4: a.ClientTun6, path.NAT64: a.Mapped4}[p]
}

// Source is the client address path p must send from (invalid: the one
// the client's routes choose).
func (a Addresses) Source(p path.Path) netip.Addr {
	if _, _, src := a.xlat(p); src.IsValid() {
		return src
	}
	return map[path.Path]netip.Addr{path.SixIn4: a.ClientTun6, path.NAT64: a.ClientNat64}[p]
}

// Paths are the path kinds the lab builds.
func (a Addresses) Paths() []path.Path {
	var out []path.Path
	for _, k := range path.Kinds {
		if a.Server(k.Path).IsValid() {
			out = append(out, k.Path)
		}
	}
	return out
}

// Plan returns the default topology's addresses.
func Plan() Addresses {
	a, b, c := links[0], links[1], links[2]
	return Addresses{
		ClientV4: hostAddr(a.v4, a.aHost), ServerV4: hostAddr(c.v4, c.bHost),
		ClientV6: hostAddr(a.v6, a.aHost), ServerV6: hostAddr(c.v6, c.bHost),
		ClientTun6: hostAddr(a.tun6, a.aHost), ServerTun6: hostAddr(c.tun6, c.bHost),
		TunnelV4: [2]netip.Addr{hostAddr(b.v4, b.aHost), hostAddr(b.v4, b.bHost)},
		WireIf:   b.aIf,
		ServerIf: c.bIf,
		Gen:      map[string][2]netip.Addr{},
	}
}

// genPlan fills the generator hosts' addresses.
func (a *Addresses) genPlan() {
	for _, g := range genLinks {
		a.Gen[g.b] = [2]netip.Addr{hostAddr(g.v4, g.bHost), hostAddr(g.v6, g.bHost)}
	}
}

// Lab is a built lab.
type Lab struct {
	Config
	Addr Addresses
	// TunnelImpl is "sit", "bpf" or "userspace", whichever carries 6in4
	// ("none" without a tunnel).
	TunnelImpl string
	// TunnelWhy says why auto passed over a faster implementation.
	TunnelWhy string
	// TunnelHook is how the bpf tunnel attached (tcx or clsact).
	TunnelHook string
	// Nat64Why says why the lab has no nat64 path ("" when it has one).
	Nat64Why string
	// XlatWhy says why the lab has no 464xlat and dslite paths, and
	// Pref64From how its client learnt the PLAT's prefix.
	XlatWhy, Pref64From string
	// LossImpl is how link loss is emulated: "netem" or "bpf" ("" none).
	LossImpl string
	// CongestionNote says what v6lab changed on the machine for the
	// lab's congestion control, if anything (allowCongestion).
	CongestionNote string
	tunnels        []*userTunnel
	bpfObjs        []interface{ Close() error }
	// The IPv6-only access paths' datapaths, whose counters a run reads.
	plat, clat *bpf.Nat64
	b4, aftr   *bpf.SoftwireEnd
	// rec is the owner record: everything the lab made is listed there.
	rec *Record
}

// handle opens a netlink handle inside a namespace.
func handle(ns string) (*netlink.Handle, error) {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return nil, fmt.Errorf("lab: namespace %s: %w", ns, err)
	}
	defer h.Close()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		return nil, fmt.Errorf("lab: netlink in %s: %w", ns, err)
	}
	return nl, nil
}

// Up builds the lab, owned by this process (see Claim). On any error
// everything made so far is removed. A lab of the same name left by a
// killed owner is removed first; a live one is an error.
func Up(ctx context.Context, cfg Config) (*Lab, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("lab: %w; run as root", ErrPrivilege)
	}
	rec, err := Claim(cfg.Name)
	if err != nil {
		return nil, err
	}
	l := &Lab{Config: cfg, Addr: Plan(), rec: rec}
	if err := l.build(ctx); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// build makes the lab in order: the hosts (namespaces), their kernel
// settings, the links between them, shaping, the tunnel, the routes, the
// NAT64 translator and the path MTU settings; Up removes it all on an
// error.
func (l *Lab) build(ctx context.Context) error {
	roles, lks := Hosts, links
	if l.Generators {
		roles = append(append([]string{}, Hosts...), GenHosts...)
		lks = append(append([]link{}, links...), genLinks...)
		l.Addr.genPlan()
	}
	hs := map[string]*netlink.Handle{}
	defer func() {
		for _, h := range hs {
			h.Close()
		}
	}()
	if err := l.addHosts(roles, hs); err != nil {
		return err
	}
	if err := l.setKernel(roles); err != nil {
		return err
	}
	for _, lk := range lks {
		if err := l.addLink(hs, lk); err != nil {
			return err
		}
	}
	if err := l.applyShaping(hs); err != nil {
		return err
	}
	if l.NoTunnel {
		l.TunnelImpl = "none"
	} else if err := l.addTunnel(ctx, hs); err != nil {
		return err
	} else if err := l.rec.setTunnel(l.TunnelImpl); err != nil {
		return err
	}
	if err := l.addRoutes(hs); err != nil {
		return err
	}
	if err := l.addNat64(hs); err != nil {
		return err
	}
	if err := l.addXlat(hs); err != nil {
		return err
	}
	if err := l.addSites(); err != nil {
		return err
	}
	return l.addPMTU()
}

// addHosts makes a namespace per role, named in the owner record first
// so a failure later still removes it, and puts a netlink handle for each
// in hs, with its loopback up.
func (l *Lab) addHosts(roles []string, hs map[string]*netlink.Handle) error {
	for _, role := range roles {
		if err := l.rec.addNamespace(NS(l.Name, role)); err != nil {
			return err
		}
		if err := createNamed(NS(l.Name, role)); err != nil {
			return err
		}
	}
	for _, role := range roles {
		h, err := handle(NS(l.Name, role))
		if err != nil {
			return err
		}
		hs[role] = h
		lo, err := h.LinkByName("lo")
		if err == nil {
			err = h.LinkSetUp(lo)
		}
		if err != nil {
			return fmt.Errorf("lab: %s: loopback up: %w", role, err)
		}
	}
	return nil
}

// setKernel sets each host's own sysctls before any link exists (so new
// interfaces inherit them): the congestion control everywhere (allowed
// in the machine's namespace first), no DAD, forwarding on the routers,
// and the bare server's TCP switches.
func (l *Lab) setKernel(roles []string) error {
	note, err := allowCongestion(l.Congestion)
	if err != nil {
		return err
	}
	l.CongestionNote = note
	for _, role := range roles {
		if err := Do(NS(l.Name, role), func() error { return setCongestion(l.Congestion) }); err != nil {
			return fmt.Errorf("lab: %s: %w", role, err)
		}
	}
	for _, role := range roles {
		if err := Do(NS(l.Name, role), noDAD); err != nil {
			return fmt.Errorf("lab: %s: %w", role, err)
		}
	}
	for _, role := range []string{R1, R2} {
		if err := Do(NS(l.Name, role), forwarding); err != nil {
			return err
		}
	}
	if l.BareServer {
		if err := Do(NS(l.Name, Server), func() error { return setSysctls(BareTCP) }); err != nil {
			return err
		}
	}
	return nil
}

// noDAD turns off duplicate address detection for the namespace's
// interfaces to come. The lab's global addresses are added without it
// already; without this, each veth's link-local address stays tentative
// for a second or two after the link comes up, and IPv6 cannot resolve a
// neighbour until then: the first IPv6 connection of a fresh lab took 2 s
// (IPv4 none), which a dual-stack client's race saw as a broken IPv6.
func noDAD() error {
	for _, f := range []string{"/proc/sys/net/ipv6/conf/default/accept_dad", "/proc/sys/net/ipv6/conf/all/accept_dad"} {
		if err := os.WriteFile(f, []byte("0"), 0o644); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	return nil
}

// forwarding turns a host into a router (the namespace's own sysctls).
func forwarding() error {
	for _, f := range []string{"/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv6/conf/all/forwarding"} {
		if err := os.WriteFile(f, []byte("1"), 0o644); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	return nil
}

// allowCongestion makes cc one a namespace may default to: the kernel
// lets a namespace other than the machine's choose only the algorithms in
// net.ipv4.tcp_allowed_congestion_control (a global sysctl, readable only
// from the machine's namespace). When cc is available but not allowed, it
// is added there, and the note says so; the list only widens what
// unprivileged sockets may choose. Where the list cannot be read (a user
// namespace), setCongestion's error says what to do.
func allowCongestion(cc string) (note string, err error) {
	const allowed = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
	b, err := os.ReadFile(allowed)
	if err != nil {
		return "", nil
	}
	list := strings.Fields(string(b))
	if slices.Contains(list, cc) {
		return "", nil
	}
	avail, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
	if !slices.Contains(strings.Fields(string(avail)), cc) {
		return "", fmt.Errorf("lab: congestion control %q is not available in this kernel (available: %s)", cc, strings.TrimSpace(string(avail)))
	}
	if err := os.WriteFile(allowed, []byte(strings.Join(append(list, cc), " ")), 0o644); err != nil {
		return "", fmt.Errorf("lab: congestion control %q is not in net.ipv4.tcp_allowed_congestion_control (%s), and adding it failed: %w", cc, strings.Join(list, " "), err)
	}
	return fmt.Sprintf("added %s to net.ipv4.tcp_allowed_congestion_control (was: %s) so that the lab's namespaces may use it", cc, strings.Join(list, " ")), nil
}

// setCongestion sets the current namespace's TCP congestion control; an
// algorithm the kernel does not have is an error that lists those it has.
func setCongestion(cc string) error {
	if err := os.WriteFile("/proc/sys/net/ipv4/tcp_congestion_control", []byte(cc), 0o644); err != nil {
		avail, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
		return fmt.Errorf("congestion control %q cannot be set in the lab (available: %s; a namespace may only use those in net.ipv4.tcp_allowed_congestion_control): %w", cc, strings.TrimSpace(string(avail)), err)
	}
	return nil
}

// BareTCP are the server host's sysctls with BareServer: no SACK, no
// timestamps, no window scaling (IPv6's TCP uses the same switches).
var BareTCP = map[string]string{
	"net/ipv4/tcp_sack":           "0",
	"net/ipv4/tcp_timestamps":     "0",
	"net/ipv4/tcp_window_scaling": "0",
}

// setSysctls writes sysctls of the current namespace.
func setSysctls(kv map[string]string) error {
	for k, v := range kv {
		if err := os.WriteFile("/proc/sys/"+k, []byte(v), 0o644); err != nil {
			return fmt.Errorf("lab: sysctl %s: %w", strings.ReplaceAll(k, "/", "."), err)
		}
	}
	return nil
}

func (l *Lab) addLink(hs map[string]*netlink.Handle, lk link) error {
	peerNS, err := netns.GetFromName(NS(l.Name, lk.b))
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	defer peerNS.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: lk.aIf, MTU: l.Link(lk.name()).MTU}, PeerName: lk.bIf, PeerNamespace: netlink.NsFd(peerNS)}
	if err := hs[lk.a].LinkAdd(veth); err != nil {
		return fmt.Errorf("lab: veth %s(%s) - %s(%s): %w", lk.a, lk.aIf, lk.b, lk.bIf, err)
	}
	for _, end := range []struct {
		role, ifname string
		host         byte
	}{{lk.a, lk.aIf, lk.aHost}, {lk.b, lk.bIf, lk.bHost}} {
		h := hs[end.role]
		ln, err := h.LinkByName(end.ifname)
		if err != nil {
			return fmt.Errorf("lab: %s: %w", end.role, err)
		}
		for _, p := range []netip.Prefix{lk.v4, lk.v6, lk.tun6} {
			if !p.IsValid() {
				continue
			}
			if err := addAddr(h, ln, netip.PrefixFrom(hostAddr(p, end.host), p.Bits())); err != nil {
				return fmt.Errorf("lab: %s %s: %w", end.role, end.ifname, err)
			}
		}
		if err := h.LinkSetUp(ln); err != nil {
			return fmt.Errorf("lab: %s %s up: %w", end.role, end.ifname, err)
		}
	}
	return nil
}

// addAddr adds an address with duplicate address detection off: the lab's
// addresses are unique by construction, and DAD would delay IPv6 (and only
// IPv6) by a second or more after every lab up.
func addAddr(h *netlink.Handle, ln netlink.Link, p netip.Prefix) error {
	a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
	if p.Addr().Is6() {
		a.Flags = unix.IFA_F_NODAD
	}
	if err := h.AddrAdd(ln, a); err != nil {
		return fmt.Errorf("address %s: %w", p, err)
	}
	return nil
}

func ipnet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// hostRoute is one route the lab adds.
type hostRoute struct {
	role string
	dst  netip.Prefix // invalid: default route of gw's family
	gw   netip.Addr
	dev  string // route into a device instead of via a gateway
}

// addRoutes adds every host's routes: the hosts' defaults toward their
// router, each router's way to the far subnets, and the 6in4 prefixes
// into the tunnel (unless the lab has none).
func (l *Lab) addRoutes(hs map[string]*netlink.Handle) error {
	for _, r := range l.routes() {
		if r.dev == TunnelIf && l.NoTunnel {
			continue
		}
		if err := l.addRoute(hs[r.role], r); err != nil {
			return fmt.Errorf("lab: %s: %w", r.role, err)
		}
	}
	return nil
}

// routes is the lab's routing table, host by host.
func (l *Lab) routes() []hostRoute {
	a, b, c := links[0], links[1], links[2]
	routes := []hostRoute{
		{role: Client, gw: hostAddr(a.v4, a.bHost)},
		{role: Client, gw: hostAddr(a.v6, a.bHost)},
		{role: Server, gw: hostAddr(c.v4, c.aHost)},
		{role: Server, gw: hostAddr(c.v6, c.aHost)},
		{role: R1, dst: c.v4, gw: hostAddr(b.v4, b.bHost)},
		{role: R1, dst: c.v6, gw: hostAddr(b.v6, b.bHost)},
		{role: R1, dst: c.tun6, dev: TunnelIf},
		{role: R2, dst: a.v4, gw: hostAddr(b.v4, b.aHost)},
		{role: R2, dst: a.v6, gw: hostAddr(b.v6, b.aHost)},
		{role: R2, dst: a.tun6, dev: TunnelIf},
	}
	if l.Generators {
		for _, g := range genLinks {
			// The far router reaches the generator's subnet through the
			// near one: r2 via r1's end of r1-r2, r1 via r2's.
			other, via := R2, b.aHost
			if g.a == R2 {
				other, via = R1, b.bHost
			}
			routes = append(routes,
				hostRoute{role: g.b, gw: hostAddr(g.v4, g.aHost)}, hostRoute{role: g.b, gw: hostAddr(g.v6, g.aHost)},
				hostRoute{role: other, dst: g.v4, gw: hostAddr(b.v4, via)}, hostRoute{role: other, dst: g.v6, gw: hostAddr(b.v6, via)})
		}
	}
	return routes
}

// addRoute adds one route. A route into the tunnel takes the shape of
// the tunnel the lab has: into its device (sit, userspace), via the
// peer's end of the vxlan, or the bpf tunnel's route to the peer router.
func (l *Lab) addRoute(h *netlink.Handle, r hostRoute) error {
	route := &netlink.Route{}
	if r.dst.IsValid() {
		route.Dst = ipnet(r.dst)
	} else if r.gw.Is4() {
		route.Dst = ipnet(netip.MustParsePrefix("0.0.0.0/0"))
	} else {
		route.Dst = ipnet(netip.MustParsePrefix("::/0"))
	}
	if r.dev == TunnelIf && l.TunnelImpl == TunnelBPF {
		return l.addBPFTunnelRoute(h, r.role, route)
	}
	if r.dev == TunnelIf && l.TunnelImpl == "vxlan" {
		// A vxlan is a link of its own: route via the peer's end.
		peer := byte(2)
		if r.role == R2 {
			peer = 1
		}
		r.dev, r.gw = "", hostAddr(vxlanTransit, peer)
	}
	if r.dev != "" {
		ln, err := h.LinkByName(r.dev)
		if err != nil {
			return err
		}
		route.LinkIndex = ln.Attrs().Index
	} else {
		route.Gw = r.gw.AsSlice()
	}
	if err := h.RouteAdd(route); err != nil {
		return fmt.Errorf("route %v: %w", route, err)
	}
	return nil
}

// addBPFTunnelRoute routes a 6in4 prefix on a router of the bpf tunnel,
// which has no tunnel device: the route leads to the peer router on the
// r1-r2 link, where the egress program encapsulates, and its MTU is the
// tunnel's, so a bigger packet gets Packet Too Big here as it would from
// a sit device. The MTU is locked: a router forwarding by an unlocked
// route MTU checks against the device's (the kernel's
// ip6_dst_mtu_maybe_forward), and its first Packet Too Big named the
// link's MTU, 20 bytes too big for the tunnel, so a sender needed two.
func (l *Lab) addBPFTunnelRoute(h *netlink.Handle, role string, route *netlink.Route) error {
	b := links[1]
	peer, ifname := b.bHost, b.aIf
	if role == R2 {
		peer, ifname = b.aHost, b.bIf
	}
	ln, err := h.LinkByName(ifname)
	if err != nil {
		return err
	}
	route.Gw, route.LinkIndex, route.MTU, route.MTULock = hostAddr(b.v6, peer).AsSlice(), ln.Attrs().Index, l.TunnelMTU, true
	if err := h.RouteAdd(route); err != nil {
		return fmt.Errorf("route %v: %w", route, err)
	}
	return nil
}

// Record is the lab's owner record: a lab run adds the daemons and
// directories it starts for the lab, so a killed run leaves nothing unnamed.
func (l *Lab) Record() *Record { return l.rec }

// Keep leaves the lab up after its owner exits (run --keep): the next
// command's clean-up leaves it alone; lab down removes it.
func (l *Lab) Keep() error { return l.rec.Keep() }

// Close stops the lab's tunnels and removes everything its owner record
// names: daemons, directories, namespaces (and with them every link,
// address and route), then the record itself.
func (l *Lab) Close() error {
	for _, t := range l.tunnels {
		t.Close()
	}
	l.tunnels = nil
	l.closeBPF()
	if l.rec != nil {
		return l.rec.Remove()
	}
	return Down(l.Name)
}

// Down removes lab name: everything its owner record names, or, with no
// record, the namespaces of its own roles (exact names, never a prefix).
// It is safe on a lab that is partly built, already gone, or left behind
// by a killed process. It does not stop a live owner: signal it first.
func Down(name string) error {
	r, err := ReadRecord(name)
	if err == nil {
		return r.Remove()
	}
	if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var errs []error
	for _, ns := range exactNamespaces(name) {
		if err := deleteNamed(ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
