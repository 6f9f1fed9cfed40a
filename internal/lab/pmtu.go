package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"v6lab/internal/lab/bpf"
)

// PMTU is what the network between the client and the server does to path
// MTU discovery and to fragments, and the mitigations an operator has:
// the whole lab's (Config.PMTU), or a cell group's for its runs (ApplyPMTU).
// The zero value changes nothing.
type PMTU struct {
	// PTBBlackhole drops the ICMP errors that path MTU discovery needs:
	// "ipv6" (ICMPv6 Packet Too Big), "ipv4" (ICMPv4 fragmentation
	// needed) or "both", toward the client and toward the server.
	PTBBlackhole string `json:"ptb_blackhole,omitempty"`
	// Fragments drops IP fragments: "drop" (both families, counted
	// apart), "ipv6" or "ipv4".
	Fragments string `json:"fragments,omitempty"`
	// MTUProbing, when set, is net.ipv4.tcp_mtu_probing (IPv6's TCP
	// too) of the client and server hosts: 0 off (the kernel's default),
	// 1 after a black hole is detected, 2 always (RFC 4821).
	MTUProbing *int `json:"tcp_mtu_probing,omitempty"`
	// MSSClamp clamps the MSS of every TCP SYN the routers forward to
	// what the route out carries (nftables: tcp option maxseg size set
	// rt mtu), the way operators fix a black hole.
	MSSClamp bool `json:"mss_clamp,omitempty"`
}

// Values of PTBBlackhole and Fragments.
const (
	PMTUIPv6 = "ipv6"
	PMTUIPv4 = "ipv4"
	PMTUBoth = "both"
	FragDrop = "drop"
)

// MSSClampRule is the rule each router's forward chain holds with MSSClamp.
const MSSClampRule = "tcp flags syn tcp option maxseg size set rt mtu"

// CheckPTBBlackhole checks a ptb_blackhole value as given (empty is not
// one).
func CheckPTBBlackhole(s string) error {
	switch s {
	case PMTUIPv6, PMTUIPv4, PMTUBoth:
		return nil
	}
	return fmt.Errorf("%q: want ipv6 (drop ICMPv6 Packet Too Big), ipv4 (drop ICMPv4 fragmentation needed) or both", s)
}

// CheckFragments checks a fragments value as given (empty is not one).
func CheckFragments(s string) error {
	switch s {
	case FragDrop, PMTUIPv6, PMTUIPv4:
		return nil
	}
	return fmt.Errorf("%q: want drop (IPv6 and IPv4 fragments), ipv6 or ipv4", s)
}

// CheckMTUProbing checks a tcp_mtu_probing value.
func CheckMTUProbing(v int) error {
	if v < 0 || v > 2 {
		return fmt.Errorf("%d: want 0 (off), 1 (probe once a black hole is detected) or 2 (always probe)", v)
	}
	return nil
}

// Validate checks every field; an error names the field.
func (p PMTU) Validate() error {
	if p.PTBBlackhole != "" {
		if err := CheckPTBBlackhole(p.PTBBlackhole); err != nil {
			return fmt.Errorf("ptb_blackhole: %w", err)
		}
	}
	if p.Fragments != "" {
		if err := CheckFragments(p.Fragments); err != nil {
			return fmt.Errorf("fragments: %w", err)
		}
	}
	if p.MTUProbing != nil {
		if err := CheckMTUProbing(*p.MTUProbing); err != nil {
			return fmt.Errorf("tcp_mtu_probing: %w", err)
		}
	}
	return nil
}

// IsZero says whether p changes nothing.
func (p PMTU) IsZero() bool {
	return p.PTBBlackhole == "" && p.Fragments == "" && p.MTUProbing == nil && !p.MSSClamp
}

// Drop is what the impairment's programs drop.
func (p PMTU) Drop() bpf.PMTUDrop {
	return bpf.PMTUDrop{
		PTB6: p.PTBBlackhole == PMTUIPv6 || p.PTBBlackhole == PMTUBoth, PTB4: p.PTBBlackhole == PMTUIPv4 || p.PTBBlackhole == PMTUBoth,
		Frag6: p.Fragments == FragDrop || p.Fragments == PMTUIPv6, Frag4: p.Fragments == FragDrop || p.Fragments == PMTUIPv4,
	}
}

// String says what p does, in the fields' words ("" for nothing).
func (p PMTU) String() string {
	var out []string
	if p.PTBBlackhole != "" {
		out = append(out, "ptb_blackhole "+p.PTBBlackhole)
	}
	if p.Fragments != "" {
		out = append(out, "fragments "+p.Fragments)
	}
	if p.MTUProbing != nil {
		out = append(out, "tcp_mtu_probing "+strconv.Itoa(*p.MTUProbing))
	}
	if p.MSSClamp {
		out = append(out, "mss_clamp")
	}
	return strings.Join(out, ", ")
}

// Over lays a cell group's settings over the lab's own: what either
// drops is dropped, MSS is clamped if either clamps, and the group's
// tcp_mtu_probing wins.
func (p PMTU) Over(base PMTU) PMTU {
	out := base
	d := p.Drop()
	b := base.Drop()
	out.PTBBlackhole = family(d.PTB6 || b.PTB6, d.PTB4 || b.PTB4, PMTUBoth)
	out.Fragments = family(d.Frag6 || b.Frag6, d.Frag4 || b.Frag4, FragDrop)
	if p.MTUProbing != nil {
		out.MTUProbing = p.MTUProbing
	}
	out.MSSClamp = p.MSSClamp || base.MSSClamp
	return out
}

func family(v6, v4 bool, both string) string {
	switch {
	case v6 && v4:
		return both
	case v6:
		return PMTUIPv6
	case v4:
		return PMTUIPv4
	}
	return ""
}

// pmtuHook is where an impairment program sits: each router's link to
// its host, so every packet between client and server passes one (ICMP
// errors a router sends leave there: r1's toward the client, r2's toward
// the server), and r1's link to the client both ways, so fragments in
// either direction pass it in the form the hosts see (a 6in4 packet
// decapsulated, a nat64 one before and after translation).
type pmtuHook struct {
	role, ifname string
	egress       bool
}

var pmtuHooks = []pmtuHook{
	{R1, links[0].bIf, true}, {R1, links[0].bIf, false}, {R2, links[2].aIf, true},
}

// PMTUWhere says where the impairment's programs sit, for records.
func PMTUWhere() string {
	var out []string
	for _, h := range pmtuHooks {
		dir := "ingress"
		if h.egress {
			dir = "egress"
		}
		out = append(out, h.role+" "+h.ifname+" "+dir)
	}
	return "tc BPF at " + strings.Join(out, ", ")
}

// attachPMTU loads the impairment programs for d on every hook of lab
// name (how: TCX or clsact), each ahead of the programs already there.
func attachPMTU(name string, d bpf.PMTUDrop, how bpf.Hook) ([]*bpf.PMTU, error) {
	var out []*bpf.PMTU
	for _, h := range pmtuHooks {
		err := Do(NS(name, h.role), func() error {
			p, err := bpf.NewPMTU(d)
			if err != nil {
				return err
			}
			ifc, err := net.InterfaceByName(h.ifname)
			if err == nil {
				err = p.Attach(ifc.Index, h.egress, how)
			}
			if err != nil {
				p.Close()
				return err
			}
			out = append(out, p)
			return nil
		})
		if err != nil {
			for _, p := range out {
				p.Close()
			}
			return nil, fmt.Errorf("lab %s: %s %s: path MTU impairment: %w", name, h.role, h.ifname, err)
		}
	}
	return out, nil
}

// mtuProbingFile is the sysctl of tcp_mtu_probing (IPv6's TCP reads it too).
const mtuProbingFile = "/proc/sys/net/ipv4/tcp_mtu_probing"

// pmtuHosts are the hosts whose TCP stack tcp_mtu_probing sets: the
// sending end probes, and either end sends.
var pmtuHosts = []string{Client, Server}

// setMTUProbing sets tcp_mtu_probing in the client and the server of lab
// name, and returns what each had.
func setMTUProbing(name string, v int) (map[string]int, error) {
	old := map[string]int{}
	for _, role := range pmtuHosts {
		err := Do(NS(name, role), func() error {
			b, err := os.ReadFile(mtuProbingFile)
			if err != nil {
				return err
			}
			old[role], _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return os.WriteFile(mtuProbingFile, []byte(strconv.Itoa(v)), 0o644)
		})
		if err != nil {
			return old, fmt.Errorf("lab %s: %s: net.ipv4.tcp_mtu_probing: %w", name, role, err)
		}
	}
	return old, nil
}

// MTUProbing reads tcp_mtu_probing of each of the client and the server.
func MTUProbing(name string) (map[string]int, error) {
	out := map[string]int{}
	for _, role := range pmtuHosts {
		err := Do(NS(name, role), func() error {
			b, err := os.ReadFile(mtuProbingFile)
			if err == nil {
				out[role], err = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("lab %s: %s: net.ipv4.tcp_mtu_probing: %w", name, role, err)
		}
	}
	return out, nil
}

// mssTable is the nftables table of the MSS clamp on each router.
const mssTable = "v6lab_mss"

// ErrNoNft is wrapped when mss_clamp is asked and nftables' nft is missing.
var ErrNoNft = errors.New("mss_clamp needs nftables' nft command (apt-get install nftables, or scripts/install-deps --lab)")

// nft runs nft in namespace ns with script on its standard input.
func nft(ns, script string) error {
	bin, err := exec.LookPath("nft")
	if err != nil {
		return ErrNoNft
	}
	cmd := exec.Command("ip", "netns", "exec", ns, bin, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// clampMSS puts the MSS clamp on both routers of lab name (on), or takes
// it off. Each router clamps the SYNs it forwards: r1 the client's toward
// the server (what the server may send), r2 the server's SYN-ACK toward
// the client (what the client may send), each to its route out's MTU.
func clampMSS(name string, on bool) error {
	for _, role := range []string{R1, R2} {
		script := fmt.Sprintf("table inet %s {\n chain forward {\n  type filter hook forward priority mangle; policy accept;\n  %s\n }\n}\n", mssTable, MSSClampRule)
		if !on {
			script = fmt.Sprintf("delete table inet %s\n", mssTable)
		}
		if err := nft(NS(name, role), script); err != nil {
			if errors.Is(err, ErrNoNft) {
				return err
			}
			return fmt.Errorf("lab %s: %s: MSS clamp: %w", name, role, err)
		}
	}
	return nil
}

// addPMTU puts the lab's own path MTU settings in place as it is built:
// the impairment's programs (held by the lab like its tunnel), the
// hosts' tcp_mtu_probing and the routers' MSS clamp.
func (l *Lab) addPMTU() error {
	p := l.PMTU
	if d := p.Drop(); d.Any() {
		if err := bpf.Check(); err != nil {
			return fmt.Errorf("lab: %s needs tc BPF: %w", p, err)
		}
		progs, err := attachPMTU(l.Name, d, l.hook())
		if err != nil {
			return err
		}
		for _, pr := range progs {
			l.bpfObjs = append(l.bpfObjs, pr)
		}
	}
	if p.MTUProbing != nil {
		if _, err := setMTUProbing(l.Name, *p.MTUProbing); err != nil {
			return err
		}
	}
	if p.MSSClamp {
		return clampMSS(l.Name, true)
	}
	return nil
}

// PMTUState is a cell group's path MTU settings in force in a lab, over
// the lab's own (ApplyPMTU); Close returns the lab to its own.
type PMTUState struct {
	// Set is the group's settings, Lab the lab's own.
	Set, Lab PMTU
	name     string
	progs    []*bpf.PMTU
	probing  map[string]int // what tcp_mtu_probing was before, when set
	clamped  bool           // this state added the clamp
}

// ApplyPMTU puts a cell group's path MTU settings in place in lab name,
// whose own are own: the impairment's programs for what the group drops
// (TCX links held by this process, ahead of the lab's programs), its
// tcp_mtu_probing, its MSS clamp when the lab has none.
func ApplyPMTU(name string, set, own PMTU) (*PMTUState, error) {
	if err := set.Validate(); err != nil {
		return nil, err
	}
	st := &PMTUState{Set: set, Lab: own, name: name}
	if d := set.Drop(); d.Any() {
		progs, err := attachPMTU(name, d, bpf.TCX)
		if err != nil {
			return nil, err
		}
		st.progs = progs
	}
	if set.MTUProbing != nil {
		old, err := setMTUProbing(name, *set.MTUProbing)
		st.probing = old
		if err != nil {
			st.Close()
			return nil, err
		}
	}
	if set.MSSClamp && !own.MSSClamp {
		if err := clampMSS(name, true); err != nil {
			st.Close()
			return nil, err
		}
		st.clamped = true
	}
	return st, nil
}

// Close removes what ApplyPMTU added and restores tcp_mtu_probing.
func (st *PMTUState) Close() error {
	var errs []error
	for _, p := range st.progs {
		errs = append(errs, p.Close())
	}
	st.progs = nil
	for role, v := range st.probing {
		errs = append(errs, Do(NS(st.name, role), func() error { return os.WriteFile(mtuProbingFile, []byte(strconv.Itoa(v)), 0o644) }))
	}
	st.probing = nil
	if st.clamped {
		errs = append(errs, clampMSS(st.name, false))
		st.clamped = false
	}
	return errors.Join(errs...)
}

// FlushPMTU forgets every path MTU the hosts and routers of lab name
// have learnt (the IPv4 and IPv6 route caches: Packet Too Big and
// fragmentation needed taught them), so a run starts as a first contact
// does.
func FlushPMTU(name string) error {
	for _, role := range Hosts {
		for _, fam := range []string{"-4", "-6"} {
			if out, err := exec.Command("ip", "-n", NS(name, role), fam, "route", "flush", "cache").CombinedOutput(); err != nil {
				return fmt.Errorf("lab %s: %s: ip %s route flush cache: %v: %s", name, role, fam, err, strings.TrimSpace(string(out)))
			}
		}
	}
	return nil
}

// PMTUCounters sums the counters of every path MTU impairment program on
// the lab's hooks (the lab's own and a cell group's), read from the
// kernel: indexes bpf.PTB6Dropped …; nil when there is none.
func PMTUCounters(name string) ([]uint64, error) {
	var sum []uint64
	for _, role := range []string{R1, R2} {
		err := Do(NS(name, role), func() error {
			for _, ifname := range []string{links[0].bIf, links[2].aIf} {
				ifc, err := net.InterfaceByName(ifname)
				if err != nil {
					continue // not this router's
				}
				cs, err := bpf.Inspect(ifc.Index)
				if err != nil {
					return err
				}
				for _, c := range cs {
					if c.Program != bpf.PMTUName {
						continue
					}
					if sum == nil {
						sum = make([]uint64, bpf.NumPMTUCounters)
					}
					for i, v := range c.Counters {
						sum[i] += v
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("lab %s: %s: %w", name, role, err)
		}
	}
	return sum, nil
}

// PMTUDelta is after less before, counter by counter (nil before: zeros).
func PMTUDelta(before, after []uint64) []uint64 {
	if after == nil {
		return nil
	}
	out := slices.Clone(after)
	for i := range out {
		if i < len(before) {
			out[i] -= before[i]
		}
	}
	return out
}
