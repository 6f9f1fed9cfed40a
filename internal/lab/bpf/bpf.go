// Package bpf holds the lab's kernel datapaths as tc BPF programs: a 6in4
// tunnel end (RFC 4213: IPv6 in IPv4 protocol 41) for kernels without the
// sit device, random packet loss for kernels without netem, the NAT64
// translator, and the path MTU impairment (ICMP too-big errors and IP
// fragments dropped per family, each counted). They run
// in the kernel so that a path's figures are the network's, never the cost
// of v6lab's own machinery (a userspace tunnel measures itself).
//
// The programs are written with cilium/ebpf's asm package and built at run
// time: neither building nor running v6lab needs a C toolchain. They attach
// with TCX (Linux 6.6+) or, where the kernel has no TCX, with a clsact
// qdisc and a direct-action cls_bpf filter: both read the same return
// codes (-1 next, 0 pass, 2 drop). Every program counts what it does in an
// array map that lab status reads back from the kernel.
//
// The package knows nothing of namespaces: its callers attach inside the
// namespace that holds the interface (interface indexes are per namespace).
// It imports nothing of v6lab.
package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Program names, as the kernel lists them (at most 15 characters).
const (
	EncapName = "v6lab_6in4_enc"
	DecapName = "v6lab_6in4_dec"
	LossName  = "v6lab_loss"
)

// Counter indexes of a tunnel end's map.
const (
	Encapsulated   = iota // IPv6 packets sent inside IPv4
	Decapsulated          // protocol-41 packets from the peer, handed to IPv6
	DroppedSpoofed        // protocol 41 from a source other than the peer (RFC 4213 §3.6)
	DroppedBad            // IPv4 options, fragments, an inner packet that is not IPv6, short
	EncapFailed           // the kernel refused the room (a packet beyond the link's MTU)
	DecapFailed
	numTunnelCounters
)

// Counter indexes of a loss program's map.
const (
	LossDropped = iota
	LossPassed
	numLossCounters
)

// tc and TCX return codes share their values.
const (
	retNext = -1 // TCX_NEXT, TC_ACT_UNSPEC: not ours, the next program decides
	retPass = 0  // TCX_PASS, TC_ACT_OK
	retDrop = 2  // TCX_DROP, TC_ACT_SHOT
)

// __sk_buff field offsets (include/uapi/linux/bpf.h).
const (
	skbLen      = 0
	skbProtocol = 16
	skbData     = 76
	skbDataEnd  = 80
)

// bpf_skb_adjust_room's mode and flags.
const (
	adjRoomNet     = 0
	adjRoomMAC     = 1
	fixedGSO       = 1 << 0
	encapL3IPv4    = 1 << 1
	decapL3IPv6    = 1 << 8
	ethHeader      = 14
	ipv4Header     = 20
	ipv6Header     = 40
	ethTypeIPv4LE  = 0x0008 // skb->protocol (network order) read as a little-endian u32
	ethTypeIPv6LE  = 0xDD86
	protoIPv6inIP4 = 41
	ttl            = 64
)

// ErrUnsupported is wrapped when this kernel or process cannot load or
// attach the programs (no BPF, no CAP_BPF, no cls_bpf).
var ErrUnsupported = errors.New("the kernel datapath (tc BPF) is not available")

// TunnelEnd configures one router's end of the 6in4 tunnel.
type TunnelEnd struct {
	// Local and Remote are this end's and the peer's IPv4 endpoints.
	Local, Remote netip.Addr
	// Remote6 is the IPv6 prefix (a /64 or shorter, on a 32-bit boundary)
	// behind the peer: IPv6 packets to it leave encapsulated.
	Remote6 netip.Prefix
}

func (e TunnelEnd) check() error {
	if !e.Local.Is4() || !e.Remote.Is4() {
		return fmt.Errorf("bpf: tunnel endpoints must be IPv4 addresses, not %v and %v", e.Local, e.Remote)
	}
	if !e.Remote6.Addr().Is6() || e.Remote6.Bits() != 64 {
		return fmt.Errorf("bpf: the prefix behind the peer must be an IPv6 /64, not %v", e.Remote6)
	}
	return nil
}

// le32 reads 4 network-order bytes as the little-endian u32 a load gives.
func le32(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) }

// le16 is le32 for 2 bytes.
func le16(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) }

// count adds 1 to this CPU's counters[idx] (a per-CPU array: no atomic
// add, no cache line shared between CPUs); it clobbers R0-R5.
func count(m *ebpf.Map, idx int32, label string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.StoreImm(asm.RFP, -32, int64(idx), asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -32),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, label),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(label),
	}
}

// storeFromStack writes n bytes from the stack at fp+stack into the packet
// at offset off (bpf_skb_store_bytes, the skb in R6); R0 is its result.
func storeFromStack(off, stack, n int32) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, off),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stack),
		asm.Mov.Imm(asm.R4, n),
		asm.Mov.Imm(asm.R5, 0),
		asm.FnSkbStoreBytes.Call(),
	}
}

// fold turns the 32-bit one's-complement sum in reg into the 16-bit
// checksum (complemented), ready to store as it lies in memory; it uses
// scratch. The IPv4 header checksums of the tunnel and of NAT64 both end
// here.
func fold(reg, scratch asm.Register) asm.Instructions {
	var out asm.Instructions
	out = append(out, asm.LSh.Imm(reg, 32), asm.RSh.Imm(reg, 32))
	for range 2 {
		out = append(out,
			asm.Mov.Reg(scratch, reg),
			asm.RSh.Imm(scratch, 16),
			asm.And.Imm(reg, 0xffff),
			asm.Add.Reg(reg, scratch))
	}
	return append(out, asm.Xor.Imm(reg, 0xffff))
}

// ret ends the program with code after counting counter idx.
func ret(m *ebpf.Map, idx int32, code int32, label string) asm.Instructions {
	return append(count(m, idx, label), asm.Mov.Imm(asm.R0, code), asm.Return())
}

// encapInsns: at the egress toward the peer, an IPv6 packet whose
// destination is in Remote6 gets room for an IPv4 header after the
// Ethernet header, and the header: protocol 41, this end to the peer, TTL
// 64, DF clear (RFC 4213 §3.2.1), checksum computed here.
func encapInsns(e TunnelEnd, m *ebpf.Map) asm.Instructions {
	pfx := e.Remote6.Addr().As16()
	src, dst := e.Local.As4(), e.Remote.As4()
	// The header's checksum over every 16-bit word but total length.
	sum := uint32(0x4500 + (ttl<<8 | protoIPv6inIP4))
	for _, w := range [][]byte{src[:2], src[2:], dst[:2], dst[2:]} {
		sum += uint32(binary.BigEndian.Uint16(w))
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JNE.Imm(asm.R2, ethTypeIPv6LE, "next"),
		asm.LoadMem(asm.R7, asm.R6, skbData, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, skbDataEnd, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, ethHeader+ipv6Header),
		asm.JGT.Reg(asm.R2, asm.R8, "next"),
		// Destination prefix: bytes 24-31 of the IPv6 header. Compared
		// as 32-bit values: the 64-bit compare sign-extends its immediate.
		asm.LoadMem(asm.R2, asm.R7, ethHeader+24, asm.Word),
		asm.JNE.Imm32(asm.R2, le32(pfx[0:4]), "next"),
		asm.LoadMem(asm.R2, asm.R7, ethHeader+28, asm.Word),
		asm.JNE.Imm32(asm.R2, le32(pfx[4:8]), "next"),
		// Total length of the outer packet: the frame, less Ethernet, plus
		// the new header. (GSO segmentation rewrites it per segment.)
		asm.LoadMem(asm.R9, asm.R6, skbLen, asm.Word),
		asm.Add.Imm(asm.R9, ipv4Header-ethHeader),
		asm.And.Imm(asm.R9, 0xffff),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, ipv4Header),
		asm.Mov.Imm(asm.R3, adjRoomMAC),
		asm.Mov.Imm(asm.R4, fixedGSO|encapL3IPv4),
		asm.FnSkbAdjustRoom.Call(),
		asm.JNE.Imm(asm.R0, 0, "fail"),
		// The Ethernet type and the header on the stack at fp-24, as
		// they go on the wire from byte 12 on (aligned stores only).
		asm.StoreImm(asm.RFP, -24, ethTypeIPv4LE, asm.Half),
		asm.StoreImm(asm.RFP, -22, 0x0045, asm.Half), // version 4, IHL 5; TOS 0
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, -20, asm.R2, asm.Half),                // total length
		asm.StoreImm(asm.RFP, -18, 0, asm.Half),                     // id 0
		asm.StoreImm(asm.RFP, -16, 0, asm.Half),                     // no flags, offset 0
		asm.StoreImm(asm.RFP, -14, protoIPv6inIP4<<8|ttl, asm.Half), // TTL, protocol
		// checksum = ~fold(sum + total length)
		asm.Mov.Imm(asm.R2, int32(sum)),
		asm.Add.Reg(asm.R2, asm.R9),
	}
	insns = append(insns, fold(asm.R2, asm.R3)...)
	insns = append(insns,
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, -12, asm.R2, asm.Half),
		asm.StoreImm(asm.RFP, -10, int64(le16(src[0:2])), asm.Half),
		asm.StoreImm(asm.RFP, -8, int64(le16(src[2:4])), asm.Half),
		asm.StoreImm(asm.RFP, -6, int64(le16(dst[0:2])), asm.Half),
		asm.StoreImm(asm.RFP, -4, int64(le16(dst[2:4])), asm.Half),
	)
	insns = append(insns, storeFromStack(12, -24, 2+ipv4Header)...)
	insns = append(insns, asm.JNE.Imm(asm.R0, 0, "fail"))
	insns = append(insns, ret(m, Encapsulated, retPass, "c_ok")...)
	insns = append(insns, asm.Mov.Imm(asm.R0, retNext).WithSymbol("next"), asm.Return())
	fail := ret(m, EncapFailed, retDrop, "c_fail")
	fail[0] = fail[0].WithSymbol("fail")
	return append(insns, fail...)
}

// decapInsns: at the ingress from the peer, an IPv4 protocol-41 packet to
// this end loses its IPv4 header and goes to the IPv6 stack. From any
// source but the peer it is dropped and counted; so are IPv4 options,
// fragments and inner packets that are not IPv6.
func decapInsns(e TunnelEnd, m *ebpf.Map) asm.Instructions {
	src, dst := e.Remote.As4(), e.Local.As4()
	need := int32(ethHeader + ipv4Header + ipv6Header)
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JNE.Imm(asm.R2, ethTypeIPv4LE, "next"),
		// Make the headers linear if they are not.
		asm.LoadMem(asm.R7, asm.R6, skbData, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, skbDataEnd, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, need),
		asm.JLE.Reg(asm.R2, asm.R8, "linear"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, need),
		asm.FnSkbPullData.Call(),
		asm.LoadMem(asm.R7, asm.R6, skbData, asm.Word).WithSymbol("linear"),
		asm.LoadMem(asm.R8, asm.R6, skbDataEnd, asm.Word),
		// Is it protocol 41 at all? (Short IPv4 packets are not ours.)
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, ethHeader+ipv4Header),
		asm.JGT.Reg(asm.R2, asm.R8, "next"),
		asm.LoadMem(asm.R2, asm.R7, ethHeader+9, asm.Byte),
		asm.JNE.Imm(asm.R2, protoIPv6inIP4, "next"),
		asm.LoadMem(asm.R2, asm.R7, ethHeader+16, asm.Word),
		asm.JNE.Imm32(asm.R2, le32(dst[:]), "next"), // not to this end
		asm.LoadMem(asm.R2, asm.R7, ethHeader+12, asm.Word),
		asm.JNE.Imm32(asm.R2, le32(src[:]), "spoofed"),
		asm.LoadMem(asm.R2, asm.R7, ethHeader, asm.Byte),
		asm.JNE.Imm(asm.R2, 0x45, "bad"), // IPv4 options
		asm.LoadMem(asm.R2, asm.R7, ethHeader+6, asm.Half),
		asm.And.Imm(asm.R2, 0xff3f), // MF and the fragment offset, as loaded
		asm.JNE.Imm(asm.R2, 0, "bad"),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, need),
		asm.JGT.Reg(asm.R2, asm.R8, "bad"), // no room for an IPv6 header
		asm.LoadMem(asm.R2, asm.R7, ethHeader+ipv4Header, asm.Byte),
		asm.RSh.Imm(asm.R2, 4),
		asm.JNE.Imm(asm.R2, 6, "bad"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, -ipv4Header),
		asm.Mov.Imm(asm.R3, adjRoomMAC),
		asm.Mov.Imm(asm.R4, fixedGSO|decapL3IPv6),
		asm.FnSkbAdjustRoom.Call(),
		asm.JNE.Imm(asm.R0, 0, "fail"),
		asm.StoreImm(asm.RFP, -24, ethTypeIPv6LE, asm.Half),
	}
	insns = append(insns, storeFromStack(12, -24, 2)...)
	insns = append(insns, asm.JNE.Imm(asm.R0, 0, "fail"))
	insns = append(insns, ret(m, Decapsulated, retPass, "c_ok")...)
	insns = append(insns, asm.Mov.Imm(asm.R0, retNext).WithSymbol("next"), asm.Return())
	for _, c := range []struct {
		label string
		idx   int32
	}{{"spoofed", DroppedSpoofed}, {"bad", DroppedBad}, {"fail", DecapFailed}} {
		r := ret(m, c.idx, retDrop, "c_"+c.label)
		r[0] = r[0].WithSymbol(c.label)
		insns = append(insns, r...)
	}
	return insns
}

// lossInsns drops a packet with probability threshold/2^32.
func lossInsns(threshold uint64, m *ebpf.Map) asm.Instructions {
	insns := asm.Instructions{
		asm.FnGetPrandomU32.Call(),
		asm.LoadImm(asm.R2, int64(threshold), asm.DWord),
		asm.JLT.Reg(asm.R0, asm.R2, "drop"),
	}
	insns = append(insns, count(m, LossPassed, "c_pass")...)
	insns = append(insns, asm.Mov.Imm(asm.R0, retNext), asm.Return())
	d := ret(m, LossDropped, retDrop, "c_drop")
	d[0] = d[0].WithSymbol("drop")
	return append(insns, d...)
}

func newCounters(name string, n int) (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: name, Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: uint32(n)})
	if err != nil {
		return nil, unsupported("counters map", err)
	}
	return m, nil
}

func newProgram(name string, insns asm.Instructions) (*ebpf.Program, error) {
	p, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: name, Type: ebpf.SchedCLS, Instructions: insns,
		// Some helpers need a GPL-compatible license string to load.
		License: "GPL"}, ebpf.ProgramOptions{LogDisabled: false})
	if err != nil {
		return nil, unsupported("program "+name, err)
	}
	return p, nil
}

// unsupported wraps a load error; a refusal for privilege is ErrUnsupported.
func unsupported(what string, err error) error {
	if errors.Is(err, os.ErrPermission) {
		// The library's hint about MEMLOCK misleads here: the usual cause
		// is a user namespace (kernels since 5.11 account BPF memory to
		// the cgroup, and Check lifts the limit for older ones).
		return fmt.Errorf("bpf: %s: %w: operation not permitted (loading BPF programs needs CAP_BPF and CAP_NET_ADMIN in the machine's own namespaces: root, outside any user namespace)", what, ErrUnsupported)
	}
	if errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("bpf: %s: %w: %w", what, ErrUnsupported, err)
	}
	return fmt.Errorf("bpf: %s: %w", what, err)
}

// writeSetting puts v in slot i of a counters map (on the first CPU: a
// read sums the CPUs).
func writeSetting(m *ebpf.Map, i int, v uint64) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("bpf: setting: %w", err)
	}
	vals := make([]uint64, n)
	vals[0] = v
	if err := m.Put(uint32(i), vals); err != nil {
		return fmt.Errorf("bpf: setting: %w", err)
	}
	return nil
}

// readCounters reads every counter of m, summed over the CPUs.
func readCounters(m *ebpf.Map, n int) ([]uint64, error) {
	out := make([]uint64, n)
	for i := range out {
		var perCPU []uint64
		if err := m.Lookup(uint32(i), &perCPU); err != nil {
			return nil, fmt.Errorf("bpf: counter %d: %w", i, err)
		}
		for _, v := range perCPU {
			out[i] += v
		}
	}
	return out, nil
}

// asm0 is a program that passes every packet on.
func asm0() asm.Instructions {
	return asm.Instructions{asm.Mov.Imm(asm.R0, retNext), asm.Return()}
}
