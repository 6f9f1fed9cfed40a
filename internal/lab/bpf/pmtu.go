package bpf

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// PMTUName is the path MTU impairment's program name.
const PMTUName = "v6lab_pmtu"

// Counter indexes of a path MTU impairment's map: for each kind of packet
// it knows, how many it dropped and how many it let pass.
const (
	PTB6Dropped  = iota // ICMPv6 Packet Too Big (type 2)
	PTB6Passed          //
	PTB4Dropped         // ICMPv4 destination unreachable, fragmentation needed (type 3 code 4)
	PTB4Passed          //
	Frag6Dropped        // IPv6 packets with a Fragment Header
	Frag6Passed         //
	Frag4Dropped        // IPv4 fragments (MF set or an offset)
	Frag4Passed         //
	NumPMTUCounters
)

// PMTUDrop says which packets a path MTU impairment drops; those it does
// not drop it counts and lets pass.
type PMTUDrop struct {
	// PTB6 drops ICMPv6 Packet Too Big, PTB4 ICMPv4 "fragmentation
	// needed": a firewall that breaks path MTU discovery (RFC 2923,
	// RFC 8201).
	PTB6, PTB4 bool
	// Frag6 drops IPv6 fragments, Frag4 IPv4 fragments (RFC 7872).
	Frag6, Frag4 bool
}

// bits packs d for the program's map (lab status reads it back).
func (d PMTUDrop) bits() uint64 {
	var b uint64
	for i, on := range []bool{d.PTB6, d.PTB4, d.Frag6, d.Frag4} {
		if on {
			b |= 1 << i
		}
	}
	return b
}

// DescribePMTU says what a path MTU impairment drops, from its setting.
func DescribePMTU(setting uint64) string {
	var what []string
	for i, name := range pmtuKinds {
		if setting&(1<<i) != 0 {
			what = append(what, name)
		}
	}
	if len(what) == 0 {
		return "drops nothing"
	}
	return "drops " + strings.Join(what, ", ")
}

// Any says whether it drops anything.
func (d PMTUDrop) Any() bool { return d.PTB6 || d.PTB4 || d.Frag6 || d.Frag4 }

// IPv4 header fields and ICMP types the impairment reads.
const (
	icmp6PacketTooBig = 2
	icmpUnreachable   = 3
	icmpFragNeeded    = 4 // the code of type 3
	sPMTUByte         = -8
	sPMTUHdr          = -24 // the IPv4 header's first 10 bytes
)

// pmtuInsns classifies a packet: an ICMPv6 Packet Too Big, an ICMPv4
// fragmentation needed, an IPv6 fragment (a Fragment Header right after
// the IPv6 header, as every host sends it) or an IPv4 fragment; each is
// counted, and dropped when d says so, else passed on to the next program.
// Everything else passes uncounted.
func pmtuInsns(d PMTUDrop, m *ebpf.Map) asm.Instructions {
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JEq.Imm(asm.R2, ethTypeIPv6LE, "v6"),
		asm.JEq.Imm(asm.R2, ethTypeIPv4LE, "v4"),
		asm.Ja.Label("next"),
	}
	// IPv6: the next header, then an ICMPv6 message's type.
	v6 := loadBytes(ethHeader+6, sPMTUByte, 1, "next")
	v6[0] = v6[0].WithSymbol("v6")
	insns = append(insns, v6...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sPMTUByte, asm.Byte),
		asm.JEq.Imm(asm.R2, protoFragment, "frag6"),
		asm.JNE.Imm(asm.R2, protoICMPv6, "next"),
	)
	insns = append(insns, loadBytes(ethHeader+ipv6Header, sPMTUByte, 1, "next")...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sPMTUByte, asm.Byte),
		asm.JEq.Imm(asm.R2, icmp6PacketTooBig, "ptb6"),
		asm.Ja.Label("next"),
	)
	// IPv4: a fragment by its flags and offset (MF, or an offset: a
	// first fragment has MF, later ones an offset), else an ICMP
	// message's type and code after the header's IHL words.
	v4 := loadBytes(ethHeader, sPMTUHdr, 10, "next")
	v4[0] = v4[0].WithSymbol("v4")
	insns = append(insns, v4...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sPMTUHdr+6, asm.Half),
		asm.And.Imm(asm.R2, 0xff3f), // MF and the offset, as loaded
		asm.JNE.Imm(asm.R2, 0, "frag4"),
		asm.LoadMem(asm.R2, asm.RFP, sPMTUHdr+9, asm.Byte),
		asm.JNE.Imm(asm.R2, protoICMP, "next"),
		asm.LoadMem(asm.R2, asm.RFP, sPMTUHdr, asm.Byte),
		asm.And.Imm(asm.R2, 0x0f),
		asm.LSh.Imm(asm.R2, 2),
		asm.Add.Imm(asm.R2, ethHeader),
		// bpf_skb_load_bytes(skb, 14 + IHL*4, fp-8, 2)
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, sPMTUByte),
		asm.Mov.Imm(asm.R4, 2),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "next"),
		asm.LoadMem(asm.R2, asm.RFP, sPMTUByte, asm.Byte),
		asm.JNE.Imm(asm.R2, icmpUnreachable, "next"),
		asm.LoadMem(asm.R2, asm.RFP, sPMTUByte+1, asm.Byte),
		asm.JEq.Imm(asm.R2, icmpFragNeeded, "ptb4"),
		asm.Mov.Imm(asm.R0, retNext).WithSymbol("next"),
		asm.Return(),
	)
	for _, k := range []struct {
		label           string
		drop            bool
		dropped, passed int32
	}{
		{"ptb6", d.PTB6, PTB6Dropped, PTB6Passed},
		{"ptb4", d.PTB4, PTB4Dropped, PTB4Passed},
		{"frag6", d.Frag6, Frag6Dropped, Frag6Passed},
		{"frag4", d.Frag4, Frag4Dropped, Frag4Passed},
	} {
		r := ret(m, k.passed, retNext, "c_"+k.label)
		if k.drop {
			r = ret(m, k.dropped, retDrop, "c_"+k.label)
		}
		r[0] = r[0].WithSymbol(k.label)
		insns = append(insns, r...)
	}
	return insns
}

// PMTU is a path MTU impairment on one hook: it drops the packets its
// PMTUDrop names and counts every packet of those kinds it sees.
type PMTU struct {
	Drop     PMTUDrop
	Hook     Hook
	counters *ebpf.Map
	prog     *ebpf.Program
	hooks    []attached
}

// NewPMTU loads a path MTU impairment dropping what d names.
func NewPMTU(d PMTUDrop) (*PMTU, error) {
	m, err := newCounters("v6lab_pmtu", NumPMTUCounters+1) // and its setting
	if err != nil {
		return nil, err
	}
	if err := writeSetting(m, NumPMTUCounters, d.bits()); err != nil {
		m.Close()
		return nil, err
	}
	p, err := newProgram(PMTUName, pmtuInsns(d, m))
	if err != nil {
		m.Close()
		return nil, err
	}
	return &PMTU{Drop: d, counters: m, prog: p}, nil
}

// Attach puts the impairment on an interface's egress (or ingress), in
// the caller's namespace, ahead of any other program there (TCX: at the
// head; clsact: by its priority), so it sees the packets a translator
// on the same hook would turn into others.
func (p *PMTU) Attach(ifindex int, egress bool, how Hook) error {
	a, used, err := attachFirst(p.prog, ifindex, egress, how, prioPMTU)
	if err != nil {
		return err
	}
	p.hooks = append(p.hooks, a)
	p.Hook = used
	return nil
}

// Counters reads the counters (PTB6Dropped …).
func (p *PMTU) Counters() ([]uint64, error) { return readCounters(p.counters, NumPMTUCounters) }

// Close detaches and unloads the program.
func (p *PMTU) Close() error {
	var errs []error
	for _, a := range p.hooks {
		errs = append(errs, a.close())
	}
	p.hooks = nil
	errs = append(errs, p.prog.Close(), p.counters.Close())
	return errors.Join(errs...)
}

// attachFirst is attach at the head of the TCX chain (before the
// programs already there).
func attachFirst(prog *ebpf.Program, ifindex int, egress bool, how Hook, prio uint16) (attached, Hook, error) {
	if how == Auto || how == TCX {
		at := ebpf.AttachTCXIngress
		if egress {
			at = ebpf.AttachTCXEgress
		}
		l, err := link.AttachTCX(link.TCXOptions{Interface: ifindex, Program: prog, Attach: at, Anchor: link.Head()})
		if err == nil {
			return attached{tcx: l}, TCX, nil
		}
		if how == TCX || !errors.Is(err, ebpf.ErrNotSupported) {
			return attached{}, "", unsupported("attach with TCX", err)
		}
	}
	return attach(prog, ifindex, egress, Clsact, prio)
}

// pmtuKinds are the kinds of packet the impairment counts, in the
// order of its counters (kind i: dropped at 2i, passed at 2i+1) and of
// its setting's bits.
var pmtuKinds = []string{"ICMPv6 Packet Too Big", "ICMPv4 fragmentation needed", "IPv6 fragments", "IPv4 fragments"}

// PMTUCounts names a path MTU impairment's counters for people, each
// number labelled: per kind, how many it dropped and passed.
func PMTUCounts(c []uint64) string {
	return pmtuCounts(c, func(int) (bool, bool) { return true, true })
}

// PMTUCountsFor names the counters of an impairment whose setting is
// known: a kind it drops by how many it dropped, the others by how many
// passed (it drops none of them).
func PMTUCountsFor(c []uint64, setting uint64) string {
	return pmtuCounts(c, func(i int) (bool, bool) { d := setting&(1<<i) != 0; return d, !d })
}

func pmtuCounts(c []uint64, show func(kind int) (dropped, passed bool)) string {
	if len(c) < NumPMTUCounters {
		return fmt.Sprintf("%v", c)
	}
	var out []string
	for i, kind := range pmtuKinds {
		var n []string
		d, p := show(i)
		if d {
			n = append(n, fmt.Sprintf("%d dropped", c[2*i]))
		}
		if p {
			n = append(n, fmt.Sprintf("%d passed", c[2*i+1]))
		}
		out = append(out, kind+" "+strings.Join(n, ", "))
	}
	return strings.Join(out, "; ")
}
