package lab

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"v6lab/internal/lab/bpf"
)

// Summary says in one line what the lab is configured with, as the kernel
// holds it: the links' shaping (their root qdiscs), the loss and path MTU
// programs' own settings (their maps record them), the tunnel and its MTU,
// and the nat64 translator's mode.
func (st *Status) Summary() string {
	parts := []string{"links " + st.shaping(), st.lossSetting()}
	parts = append(parts, st.programSetting(bpf.PMTUName, "ICMP errors and fragments pass", func(s uint64) string { return "path MTU impairment " + bpf.DescribePMTU(s) }))
	tunnel := "tunnel " + st.Tunnel
	if mtu := st.tunnelMTU(); mtu > 0 {
		tunnel += fmt.Sprintf(", MTU %d", mtu)
	}
	parts = append(parts, tunnel, "nat64 "+st.nat64Mode())
	return strings.Join(parts, "; ")
}

// shaping names the links' distinct root qdiscs ("unshaped": none).
func (st *Status) shaping() string {
	var qs []string
	for _, h := range st.Hosts {
		for _, i := range h.Ifaces {
			q := i.Qdisc
			if i.Type != "veth" {
				continue
			}
			if q == "" || q == "noqueue" {
				q = "unshaped"
			}
			if !slices.Contains(qs, q) {
				qs = append(qs, q)
			}
		}
	}
	if len(qs) == 0 {
		return "unknown"
	}
	return strings.Join(qs, ", ")
}

// lossSetting describes the loss programs' distinct settings, each with
// the links it is on: "loss 5% of every packet on r1-r2" (both ends'
// egress: a topology's loss on one link, a cell group's loss:), "on every
// link" (--loss), one end's as "client-r1 (r1's ingress)"; "no loss" for
// none.
func (st *Status) lossSetting() string {
	var order []string
	at := map[string]map[string][]string{} // setting: link: ends
	for _, h := range st.Hosts {
		for _, p := range h.BPF {
			if p.Program != bpf.LossName {
				continue
			}
			d := bpf.LossName + " (setting not recorded)"
			if p.HasSetting {
				d = "loss " + bpf.DescribeLoss(p.Setting)
			}
			if at[d] == nil {
				order, at[d] = append(order, d), map[string][]string{}
			}
			end := h.Role + "'s ingress"
			if p.Egress {
				end = h.Role + "'s egress"
			}
			link := linkOf(h.Role, p.Iface)
			at[d][link] = append(at[d][link], end)
		}
	}
	if len(order) == 0 {
		return "no loss"
	}
	var out []string
	for _, d := range order {
		out = append(out, d+" on "+lossPlaces(at[d]))
	}
	return strings.Join(out, ", ")
}

// lossPlaces names the links a loss is on, given each link's ends that
// drop: a link whose two ends drop what they send by its name, every
// link of the lab so as "every link".
func lossPlaces(ends map[string][]string) string {
	var where []string
	whole := 0
	for _, n := range slices.Sorted(maps.Keys(ends)) {
		e := ends[n]
		if len(e) == 2 && strings.HasSuffix(e[0], "egress") && strings.HasSuffix(e[1], "egress") {
			where = append(where, n)
			if slices.Contains(LinkNames, n) {
				whole++
			}
			continue
		}
		where = append(where, n+" ("+strings.Join(e, ", ")+")")
	}
	if whole == len(LinkNames) && len(where) == whole {
		return "every link"
	}
	return strings.Join(where, ", ")
}

// linkOf names the link interface ifname of host role is an end of
// ("r1-r2"; a generator's "r1-gen4c"), or "ROLE IFNAME" for none.
func linkOf(role, ifname string) string {
	for _, lk := range append(slices.Clone(links), genLinks...) {
		if lk.a == role && lk.aIf == ifname || lk.b == role && lk.bIf == ifname {
			return lk.name()
		}
	}
	return role + " " + ifname
}

// programSetting describes the distinct settings the kernel's programs
// named prog record (none: if it is not attached; "setting unknown" for a
// program from before settings were recorded).
func (st *Status) programSetting(prog, none string, describe func(uint64) string) string {
	var out []string
	for _, h := range st.Hosts {
		for _, p := range h.BPF {
			if p.Program != prog {
				continue
			}
			d := prog + " (setting not recorded)"
			if p.HasSetting {
				d = describe(p.Setting)
			}
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	if len(out) == 0 {
		return none
	}
	return strings.Join(out, ", ")
}

// tunnelMTU is the 6in4 tunnel's MTU at r1: the sit or TUN device's, or
// the bpf tunnel's route's (0: not found).
func (st *Status) tunnelMTU() int {
	for _, h := range st.Hosts {
		if h.Role != R1 {
			continue
		}
		for _, i := range h.Ifaces {
			if i.Name == TunnelIf {
				return i.MTU
			}
		}
		for _, r := range h.Routes {
			if r.Dst == links[2].tun6.String() {
				return r.MTU
			}
		}
	}
	return 0
}

// nat64Mode is the translator's: stateless (the tc BPF SIIT alone) or
// stateful (nftables NAT after it at r1), or none.
func (st *Status) nat64Mode() string {
	bpfOn, nat := false, false
	for _, h := range st.Hosts {
		for _, p := range h.BPF {
			bpfOn = bpfOn || p.Program == bpf.Nat64Name
		}
		nat = nat || h.Role == R1 && strings.HasPrefix(h.NAT, "stateful NAT64")
	}
	switch {
	case bpfOn && nat:
		return "stateful (tc BPF translator, nftables NAT at r1)"
	case bpfOn:
		return "stateless (tc BPF translator at r1)"
	}
	return "none"
}
