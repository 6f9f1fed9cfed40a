package lab

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"v6lab/internal/lab/bpf"
)

// Iface is one interface of a host as the kernel reports it.
type Iface struct {
	Name  string
	Type  string
	MTU   int
	Up    bool
	Addrs []string
	Qdisc string
}

// Route is one route of a host.
type Route struct {
	Dst, Via, Dev string
	// MTU is the route's own MTU (0: the device's); the bpf tunnel's MTU
	// lives here.
	MTU int
}

// HostStatus is what one namespace holds.
type HostStatus struct {
	Role      string
	Namespace string
	Ifaces    []Iface
	Routes    []Route
	// TCPOff lists the TCP options turned off in the host (bare server).
	TCPOff []string
	// PMTU lists the path MTU mitigations in force in the host: its
	// tcp_mtu_probing (client, server) when not 0, its MSS clamp (r1,
	// r2).
	PMTU []string
	// BPF are v6lab's tc BPF programs on the host's interfaces, with
	// their counters as the kernel holds them.
	BPF []BPFProgram
	// NAT describes the host's NAT (the stateful PLAT at r1, the AFTR at
	// r2) with conntrack's counters.
	NAT string
	// Rules are the host's routing rules by source, each with its
	// table's routes (the client's CLAT and B4 addresses).
	Rules []string
}

// sharedMap names the programs whose two directions share one map and
// print all of it: the second of a pair says where its counts are.
var sharedMap = map[string]string{
	bpf.ClatOutName: "CLAT (4 to 6)", bpf.ClatInName: "CLAT (6 to 4)",
	bpf.SoftwireEncapName: "DS-Lite softwire encap", bpf.SoftwireDecapName: "DS-Lite softwire decap",
	bpf.Nat64Name: "nat64 (6 to 4)", bpf.Nat46Name: "nat64 (4 to 6)",
}

// BPFProgram is one of v6lab's BPF programs on an interface.
type BPFProgram struct {
	Iface string
	bpf.Counts
	// CountedWith names the attachment listed before whose counters this
	// program shares (the other direction of a translator or softwire).
	CountedWith string `json:",omitempty"`
}

// Describe says what the program's counters hold, in words.
func (p BPFProgram) Describe() string {
	dir := "ingress"
	if p.Egress {
		dir = "egress"
	}
	c := p.Counters
	var what string
	if p.CountedWith != "" {
		return fmt.Sprintf("%s %s (%s): %s, counted on the line of %s (one map for both directions)", p.Iface, dir, p.Hook, sharedMap[p.Program], p.CountedWith)
	}
	switch p.Program {
	case bpf.EncapName:
		what = fmt.Sprintf("6in4 encap: %d encapsulated, %d refused (too big)", c[bpf.Encapsulated], c[bpf.EncapFailed])
	case bpf.DecapName:
		what = fmt.Sprintf("6in4 decap: %d decapsulated, dropped %d spoofed source, %d malformed, %d refused", c[bpf.Decapsulated], c[bpf.DroppedSpoofed], c[bpf.DroppedBad], c[bpf.DecapFailed])
	case bpf.PMTUName:
		what = "path MTU impairment: " + bpf.PMTUCounts(c)
		if p.HasSetting {
			what = fmt.Sprintf("path MTU impairment (%s): %s", bpf.DescribePMTU(p.Setting), bpf.PMTUCountsFor(c, p.Setting))
		}
	case bpf.LossName:
		what = fmt.Sprintf("loss: %d dropped, %d passed", c[bpf.LossDropped], c[bpf.LossPassed])
		if p.HasSetting {
			what = fmt.Sprintf("loss %s: %d dropped, %d passed", bpf.DescribeLoss(p.Setting), c[bpf.LossDropped], c[bpf.LossPassed])
		}
	case bpf.SoftwireEncapName, bpf.SoftwireDecapName:
		what = fmt.Sprintf("DS-Lite softwire (IPv4 in IPv6): %d encapsulated, %d decapsulated, dropped %d spoofed source, %d malformed, %d refused (too big)",
			c[bpf.Encapsulated], c[bpf.Decapsulated], c[bpf.DroppedSpoofed], c[bpf.DroppedBad], c[bpf.EncapFailed]+c[bpf.DecapFailed])
	case bpf.ClatInName, bpf.ClatOutName:
		what = fmt.Sprintf("CLAT (%s): %d IPv4 to IPv6, %d IPv6 to IPv4, dropped %d untranslatable, %d UDP without checksum, %d refused",
			map[string]string{bpf.ClatOutName: "4 to 6", bpf.ClatInName: "6 to 4"}[p.Program], c[bpf.Translated46], c[bpf.Translated64],
			c[bpf.DroppedUnsupported], c[bpf.DroppedZeroChecksum], c[bpf.TranslateFailed])
	case bpf.Nat64Name, bpf.Nat46Name:
		// Both directions share one map: each line shows all of it.
		what = fmt.Sprintf("nat64 (%s): %d IPv6 to IPv4, %d IPv4 to IPv6, dropped %d unmapped source, %d untranslatable (extension headers, options, ICMP errors), %d hop limit, %d UDP without checksum, %d refused",
			map[string]string{bpf.Nat64Name: "6 to 4", bpf.Nat46Name: "4 to 6"}[p.Program], c[bpf.Translated64], c[bpf.Translated46],
			c[bpf.DroppedUnmapped], c[bpf.DroppedUnsupported], c[bpf.DroppedHopLimit], c[bpf.DroppedZeroChecksum], c[bpf.TranslateFailed])
	}
	return fmt.Sprintf("%s %s (%s): %s", p.Iface, dir, p.Hook, what)
}

// Status describes a lab from the kernel's point of view.
type Status struct {
	Name   string
	Owner  int
	Tunnel string // sit, bpf, userspace (a TUN device), or missing
	// Built is the tunnel the lab's owner record says was built (with a
	// missing Tunnel: what its gone owner took with it).
	Built string
	// Sites is the lab of sites' file the lab serves (lab up --sites),
	// as its owner record says, while its client's resolv.conf names the
	// sites' DNS servers; "" when it serves none.
	Sites string
	Hosts []HostStatus
}

// Inspect reads the state of lab name from its namespaces.
func Inspect(name string) (*Status, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	nss := exactNamespaces(name)
	if len(nss) == 0 {
		return nil, fmt.Errorf("lab: no lab named %q (see v6lab lab status)", name)
	}
	st := &Status{Name: name, Owner: Owner(name), Tunnel: "missing"}
	if rec, err := ReadRecord(name); err == nil {
		st.Built = rec.Tunnel
		if _, err := os.Stat(SitesResolvConf(name)); err == nil {
			st.Sites = rec.Sites
		}
	}
	for _, role := range append(append([]string{}, Hosts...), GenHosts...) {
		ns := NS(name, role)
		if slices.Contains(GenHosts, role) && !slices.Contains(nss, ns) {
			continue // a lab without generator hosts
		}
		hs, err := st.inspectHost(role, ns)
		if err != nil {
			return nil, err
		}
		st.Hosts = append(st.Hosts, hs)
	}
	return st, nil
}

// inspectHost reads one host: its interfaces, routes and BPF programs,
// and on the server the TCP switches that are off. The tunnel it finds
// (a sit or TUN device, or the bpf encapsulation) is noted in st.
func (st *Status) inspectHost(role, ns string) (HostStatus, error) {
	hs := HostStatus{Role: role, Namespace: ns}
	h, err := handle(ns)
	if err != nil {
		hs.Ifaces = []Iface{{Name: "(namespace missing)"}}
		return hs, nil
	}
	links, err := h.LinkList()
	if err != nil {
		h.Close()
		return hs, fmt.Errorf("lab: %s: %w", role, err)
	}
	names := map[int]string{} // every link's name, loopback too, for routes and programs
	for _, ln := range links {
		a := ln.Attrs()
		names[a.Index] = a.Name
		if a.Name != "lo" {
			hs.Ifaces = append(hs.Ifaces, st.iface(h, ln))
		}
	}
	hs.Routes = routes(h, names)
	hs.Rules = sourceRules(h, names)
	h.Close()
	hs.BPF = st.bpfPrograms(ns, names)
	hs.NAT = natStatus(role, ns)
	if role == Server {
		hs.TCPOff = tcpOff(ns)
	}
	hs.PMTU = pmtuOf(role, ns)
	return hs, nil
}

// pmtuOf describes the path MTU mitigations in force in host role of
// namespace ns: tcp_mtu_probing when it is not 0, the MSS clamp.
func pmtuOf(role, ns string) []string {
	var out []string
	if slices.Contains(pmtuHosts, role) {
		_ = Do(ns, func() error {
			if b, err := os.ReadFile(mtuProbingFile); err == nil && strings.TrimSpace(string(b)) != "0" {
				out = append(out, "net.ipv4.tcp_mtu_probing = "+strings.TrimSpace(string(b)))
			}
			return nil
		})
	}
	if role == R1 || role == R2 {
		if bin, err := exec.LookPath("nft"); err == nil {
			if b, err := exec.Command("ip", "netns", "exec", ns, bin, "list", "table", "inet", mssTable).CombinedOutput(); err == nil && strings.Contains(string(b), "maxseg size set rt mtu") {
				out = append(out, "MSS clamp (nftables, forward): "+MSSClampRule)
			}
		}
	}
	return out
}

// iface describes one interface: its global addresses (link-local ones
// are the same in every lab) and its root qdisc.
func (st *Status) iface(h *netlink.Handle, ln netlink.Link) Iface {
	a := ln.Attrs()
	ifc := Iface{Name: a.Name, Type: ln.Type(), MTU: a.MTU, Up: a.Flags&(1<<0) != 0}
	addrs, _ := h.AddrList(ln, netlink.FAMILY_ALL)
	for _, ad := range addrs {
		if ad.IP.IsLinkLocalUnicast() {
			continue
		}
		ifc.Addrs = append(ifc.Addrs, ad.IPNet.String())
	}
	if qs, err := h.QdiscList(ln); err == nil {
		for _, q := range qs {
			if q.Attrs().Parent == netlink.HANDLE_ROOT {
				ifc.Qdisc = describeQdisc(q)
			}
		}
	}
	if a.Name == TunnelIf {
		switch ln.Type() {
		case "sit":
			st.Tunnel = "sit"
		case "tuntap":
			st.Tunnel = "userspace"
		}
	}
	return ifc
}

// routes are the routes the lab added (the kernel's own and link-local
// ones left out), in both families.
func routes(h *netlink.Handle, names map[int]string) []Route {
	var out []Route
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		rs, _ := h.RouteList(nil, fam)
		for _, r := range rs {
			if r.Dst != nil && r.Dst.IP.IsLinkLocalUnicast() || r.Protocol == unix.RTPROT_KERNEL {
				continue
			}
			rt := Route{Dst: "default", Dev: names[r.LinkIndex], MTU: r.MTU}
			if r.Dst != nil && !(r.Dst.IP.IsUnspecified() && isZeroMask(r.Dst.Mask)) {
				rt.Dst = r.Dst.String()
			}
			if r.Gw != nil {
				rt.Via = r.Gw.String()
			}
			out = append(out, rt)
		}
	}
	return out
}

// bpfPrograms are v6lab's programs on the host's interfaces, read inside
// its namespace, in a stable order; the bpf encapsulation is the tunnel.
func (st *Status) bpfPrograms(ns string, names map[int]string) []BPFProgram {
	var out []BPFProgram
	_ = Do(ns, func() error {
		for idx, name := range names {
			cs, _ := bpf.Inspect(idx)
			for _, c := range cs {
				out = append(out, BPFProgram{Iface: name, Counts: c})
				if c.Program == bpf.EncapName {
					st.Tunnel = TunnelBPF
				}
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b BPFProgram) int { return strings.Compare(a.Describe(), b.Describe()) })
	first := map[ebpf.MapID]string{}
	for i, p := range out {
		if sharedMap[p.Program] == "" || p.MapID == 0 {
			continue
		}
		if at, ok := first[p.MapID]; ok {
			out[i].CountedWith = at
			continue
		}
		first[p.MapID] = p.Iface + " " + map[bool]string{true: "egress", false: "ingress"}[p.Egress]
	}
	return out
}

// tcpOff lists which of BareTCP's switches are off in namespace ns.
func tcpOff(ns string) []string {
	var off []string
	_ = Do(ns, func() error {
		for k, v := range BareTCP {
			if b, err := os.ReadFile("/proc/sys/" + k); err == nil && strings.TrimSpace(string(b)) == v {
				off = append(off, strings.TrimPrefix(k, "net/ipv4/tcp_"))
			}
		}
		slices.Sort(off)
		return nil
	})
	return off
}

func isZeroMask(m []byte) bool {
	for _, b := range m {
		if b != 0 {
			return false
		}
	}
	return true
}

func describeQdisc(q netlink.Qdisc) string {
	switch v := q.(type) {
	case *netlink.Tbf:
		// netlink's tbf rate is in bytes per second.
		return fmt.Sprintf("tbf %.1f Mbit/s", float64(v.Rate)*8/1e6)
	default:
		return q.Type()
	}
}
