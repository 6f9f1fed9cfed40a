package lab

import (
	"fmt"
	"slices"
	"strings"

	"v6lab/internal/lab/bpf"
)

// Summary says in one line what the lab is configured with, as the kernel
// holds it: the links' shaping (their root qdiscs), the loss and path MTU
// programs' own settings (their maps record them), the tunnel and its MTU,
// and the nat64 translator's mode.
func (st *Status) Summary() string {
	parts := []string{"links " + st.shaping(), st.programSetting(bpf.LossName, "no loss", func(s uint64) string { return "loss " + bpf.DescribeLoss(s) })}
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
