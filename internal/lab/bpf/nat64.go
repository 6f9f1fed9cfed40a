package bpf

import (
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Program names of the NAT64 translator's two directions.
const (
	Nat64Name = "v6lab_nat64_64" // IPv6 to IPv4, at the ingress from the IPv6 side
	Nat46Name = "v6lab_nat64_46" // IPv4 to IPv6, at the ingress from the IPv4 side
	// A CLAT's (Translator.CLAT): IPv4 to IPv6 at the client's egress,
	// IPv6 to IPv4 at its ingress.
	ClatOutName = "v6lab_clat_46"
	ClatInName  = "v6lab_clat_64"
)

// Counter indexes of a translator's map.
const (
	Translated64        = iota // IPv6 packets sent on as IPv4
	Translated46               // IPv4 packets sent on as IPv6
	DroppedUnmapped            // to the prefix from an IPv6 source with no mapping (RFC 7757)
	DroppedUnsupported         // extension headers, IPv4 options, ICMP other than echo, fragments of ICMP
	DroppedHopLimit            // hop limit or TTL would reach zero
	DroppedZeroChecksum        // IPv4 UDP without a checksum (RFC 7915 §4.5: may drop)
	TranslateFailed            // the kernel refused a helper (no room, bad offset)
	numTranslatorCounters
)

// Protocol numbers and ICMP types the translator knows.
const (
	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
	icmpEchoReq = 8
	icmpEchoRep = 0
	icmp6EchoRq = 128
	icmp6EchoRp = 129
	// bpf_l4_csum_replace flags.
	csumPseudo  = 0x10 // BPF_F_PSEUDO_HDR
	csumMangled = 0x20 // BPF_F_MARK_MANGLED_0: a UDP checksum of 0 stays 0xffff
	ethPIPv4BE  = 0x0008
	ethPIPv6BE  = 0xDD86
	// IPv4 packets longer than this get DF (RFC 7915 §5.1).
	dfAbove = 1260
)

// Translator is a stateless NAT64 (SIIT, RFC 7915) with explicit address
// mappings (RFC 7757). On the provider's side (a PLAT, the default), IPv6
// packets from a mapped client to Prefix (the RFC 6052 /96, e.g.
// 64:ff9b::/96) leave as IPv4 from the client's IPv4 address to the
// address embedded in their last 32 bits, and IPv4 packets to that
// address return as IPv6 from Prefix+source to the client. On the
// customer's side (a CLAT, RFC 6877), the same translation runs the other
// way round: IPv4 packets from a mapped IPv4 address (192.0.0.4, RFC 7335)
// leave as IPv6 from its IPv6 address to Prefix+destination, and IPv6
// from the prefix to that address comes back as IPv4. TCP, UDP and ICMP
// echo are translated, fragments of TCP and UDP too (RFC 7915 §§4.1,
// 5.1.1); other extension headers, IPv4 options, ICMP errors, fragments
// of ICMP and IPv4 UDP without a checksum are dropped and counted (a
// documented limitation: docs/lab.md).
type Translator struct {
	Prefix           netip.Prefix
	Client6, Client4 netip.Addr
	// More are further mappings beside Client6 and Client4 (the PLAT
	// serves the nat64 client and the 464xlat path's CLAT).
	More []Mapping
	// CLAT puts the translator on the customer's side (see above).
	CLAT bool
}

// Mapping pairs an IPv6 address with an IPv4 one (RFC 7757).
type Mapping struct{ V6, V4 netip.Addr }

// mappings are every pair the translator knows, Client6's first.
func (x Translator) mappings() []Mapping {
	return append([]Mapping{{x.Client6, x.Client4}}, x.More...)
}

// maxMappings bounds the unrolled compares of a translator's programs.
const maxMappings = 8

func (x Translator) check() error {
	if !x.Prefix.Addr().Is6() || x.Prefix.Addr().Is4In6() || x.Prefix.Bits() != 96 || x.Prefix.Masked() != x.Prefix {
		return fmt.Errorf("bpf: the NAT64 prefix must be an IPv6 /96 (RFC 6052), not %v", x.Prefix)
	}
	if len(x.mappings()) > maxMappings {
		return fmt.Errorf("bpf: at most %d address mappings, not %d", maxMappings, len(x.mappings()))
	}
	for _, m := range x.mappings() {
		if !m.V6.Is6() || m.V6.Is4In6() || !m.V4.Is4() {
			return fmt.Errorf("bpf: the NAT64 mapping must pair an IPv6 and an IPv4 address, not %v and %v", m.V6, m.V4)
		}
	}
	return nil
}

// csumDiff calls bpf_csum_diff(fp+from, fromSize, fp+to, toSize, 0), a
// zero size meaning no buffer, and keeps the result at fp+save.
func csumDiff(from, fromSize, to, toSize, save int16) asm.Instructions {
	out := asm.Instructions{}
	if fromSize == 0 {
		out = append(out, asm.Mov.Imm(asm.R1, 0))
	} else {
		out = append(out, asm.Mov.Reg(asm.R1, asm.RFP), asm.Add.Imm(asm.R1, int32(from)))
	}
	out = append(out, asm.Mov.Imm(asm.R2, int32(fromSize)))
	if toSize == 0 {
		out = append(out, asm.Mov.Imm(asm.R3, 0))
	} else {
		out = append(out, asm.Mov.Reg(asm.R3, asm.RFP), asm.Add.Imm(asm.R3, int32(to)))
	}
	return append(out,
		asm.Mov.Imm(asm.R4, int32(toSize)),
		asm.Mov.Imm(asm.R5, 0),
		asm.FnCsumDiff.Call(),
		asm.StoreMem(asm.RFP, save, asm.R0, asm.DWord))
}

// l4Replace calls bpf_l4_csum_replace(skb, off, from, to, flags), the
// skb in R6; it goes to fail on an error.
func l4Replace(off int32, from int64, to int64, flags int32, fail string) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, off),
		asm.LoadImm(asm.R3, from, asm.DWord),
		asm.LoadImm(asm.R4, to, asm.DWord),
		asm.Mov.Imm(asm.R5, flags),
		asm.FnL4CsumReplace.Call(),
		asm.JNE.Imm(asm.R0, 0, fail),
	}
}

// l4ReplaceDiff adds the diff kept at fp+save to the L4 checksum at off.
func l4ReplaceDiff(off int32, save int16, flags int32, fail string) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, off),
		asm.Mov.Imm(asm.R3, 0),
		asm.LoadMem(asm.R4, asm.RFP, save, asm.DWord),
		asm.Mov.Imm(asm.R5, flags),
		asm.FnL4CsumReplace.Call(),
		asm.JNE.Imm(asm.R0, 0, fail),
	}
}

// loadBytes copies n packet bytes at off to fp+stack, or goes to label.
func loadBytes(off, stack, n int32, label string) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, off),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, stack),
		asm.Mov.Imm(asm.R4, n),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, label),
	}
}

// changeProto calls bpf_skb_change_proto(skb, proto, 0).
func changeProto(proto int32, fail string) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, proto),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnSkbChangeProto.Call(),
		asm.JNE.Imm(asm.R0, 0, fail),
	}
}

// drops are the endings of a direction that count and drop (a label
// nothing jumps to would be unreachable code, which the verifier refuses).
func drops(m *ebpf.Map, labels ...string) asm.Instructions {
	idx := map[string]int32{"unmapped": DroppedUnmapped, "unsupported": DroppedUnsupported, "hoplimit": DroppedHopLimit,
		"zerocsum": DroppedZeroChecksum, "fail": TranslateFailed}
	var out asm.Instructions
	for _, label := range labels {
		r := ret(m, idx[label], retDrop, "c_"+label)
		r[0] = r[0].WithSymbol(label)
		out = append(out, r...)
	}
	return append(out, asm.Mov.Imm(asm.R0, retNext).WithSymbol("next"), asm.Return())
}

// Stack layout of nat64Insns (offsets from the frame pointer).
const (
	s64Hdr   = -80  // the IPv6 header as received, 40 bytes (to -41)
	s64Src   = -72  // its source and destination, 32 bytes
	s64Len   = -40  // the pseudo header's upper-layer length (ICMPv6)
	s64NH    = -36  // and next header
	s64Addr4 = -88  // the new source and destination, 8 bytes
	sDiff    = -200 // the L4 checksum's difference
	sScratch = -8
	// A fragment's: its Fragment Header, and what it becomes in IPv4
	// (flags and offset, identification), and which kind it is.
	sFrag      = -216
	sFragField = -220
	sFragID    = -218
	sFragKind  = -224 // 0: not a fragment, 1: the first, 2: a later one
	// The mapping's IPv4 address, found by matchMappings.
	sA4 = -228
)

// protoFragment is IPv6's Fragment Header.
const protoFragment = 44

// nat64Insns: IPv6 from a mapped client to the prefix becomes IPv4 (on
// a CLAT: IPv6 from the prefix to a mapped address).
func nat64Insns(x Translator, m *ebpf.Map) asm.Instructions {
	pfx := x.Prefix.Addr().As16()
	const hdr4 = -120 // the new IPv4 header (4-aligned), the Ethernet type before it
	// Where the prefix and the mapped address lie in the IPv6 header,
	// and where each IPv4 address comes from: the mapping (at sA4) or
	// the address the prefix embeds.
	pfxAt, mapAt := int16(24), int16(8)
	unmapped := "unmapped"
	if x.CLAT {
		pfxAt, mapAt, unmapped = 8, 24, "next"
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JNE.Imm(asm.R2, ethTypeIPv6LE, "next"),
	}
	insns = append(insns, loadBytes(ethHeader, s64Hdr, ipv6Header, "next")...)
	// In the prefix? (The 64-bit compare would sign-extend: 32-bit ones.)
	for i := range 3 {
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.RFP, s64Hdr+pfxAt+int16(4*i), asm.Word),
			asm.JNE.Imm32(asm.R2, le32(pfx[4*i:4*i+4]), "next"))
	}
	// A mapped address? Its IPv4 one goes to sA4.
	insns = append(insns, matchMappings(x.mappings(), func(m Mapping) ([]byte, int16) {
		a := m.V6.As16()
		return a[:], s64Hdr + mapAt
	}, func(m Mapping) asm.Instructions {
		a := m.V4.As4()
		return asm.Instructions{asm.StoreImm(asm.RFP, sA4, int64(le32(a[:])), asm.Word)}
	}, unmapped)...)
	if !x.CLAT {
		// A router's translator forwards: the hop limit must allow it.
		// (A CLAT's packets are delivered here.)
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.RFP, s64Hdr+7, asm.Byte),
			asm.JLE.Imm(asm.R2, 1, "hoplimit"))
	}
	// The new source and destination, from the mapping and the prefix's
	// embedded address, into fp+s64Addr4.
	src4, dst4 := int16(sA4), int16(s64Hdr+36)
	if x.CLAT {
		src4, dst4 = s64Hdr+20, sA4
	}
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, src4, asm.Word),
		asm.StoreMem(asm.RFP, s64Addr4, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, dst4, asm.Word),
		asm.StoreMem(asm.RFP, s64Addr4+4, asm.R2, asm.Word),
	)
	insns = append(insns,
		// R8: next header; R7: payload length; R9: the IPv4 protocol.
		asm.StoreImm(asm.RFP, sFragKind, 0, asm.Word),
		asm.LoadMem(asm.R8, asm.RFP, s64Hdr+6, asm.Byte),
		asm.LoadMem(asm.R7, asm.RFP, s64Hdr+4, asm.Half),
		asm.HostTo(asm.BE, asm.R7, asm.Half),
		asm.JEq.Imm(asm.R8, protoFragment, "frag"),
		asm.Mov.Reg(asm.R9, asm.R8),
		asm.JEq.Imm(asm.R8, protoTCP, "l4"),
		asm.JEq.Imm(asm.R8, protoUDP, "l4"),
		asm.JNE.Imm(asm.R8, protoICMPv6, "unsupported"),
		asm.Mov.Imm(asm.R9, protoICMP),
	)
	// ICMPv6: echo only; the pseudo header leaves the checksum.
	insns = append(insns, loadBytes(ethHeader+ipv6Header, sScratch, 1, "unsupported")...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sScratch, asm.Byte),
		asm.JEq.Imm(asm.R2, icmp6EchoRq, "echo"),
		asm.JNE.Imm(asm.R2, icmp6EchoRp, "unsupported"),
		asm.Mov.Reg(asm.R2, asm.R7).WithSymbol("echo"),
		asm.HostTo(asm.BE, asm.R2, asm.Word),
		asm.StoreMem(asm.RFP, s64Len, asm.R2, asm.Word),
		asm.StoreImm(asm.RFP, s64NH, int64(le32([]byte{0, 0, 0, protoICMPv6})), asm.Word),
	)
	insns = append(insns, csumDiff(s64Src, 40, 0, 0, sDiff)...)
	insns = append(insns, asm.Ja.Label("header"))
	// A fragment of TCP or UDP (RFC 7915 §5.1.1): the Fragment Header's
	// fields go into IPv4's (identification's low 16 bits, MF, offset;
	// DF clear) and the header goes; only the first fragment holds the
	// transport header and its checksum.
	frag := loadBytes(ethHeader+ipv6Header, sFrag, 8, "unsupported")
	frag[0] = frag[0].WithSymbol("frag")
	insns = append(insns, frag...)
	insns = append(insns,
		asm.LoadMem(asm.R8, asm.RFP, sFrag, asm.Byte),
		asm.Mov.Reg(asm.R9, asm.R8),
		asm.JEq.Imm(asm.R8, protoTCP, "fragok"),
		asm.JNE.Imm(asm.R8, protoUDP, "unsupported"),
		asm.Sub.Imm(asm.R7, 8).WithSymbol("fragok"),
		asm.LoadMem(asm.R2, asm.RFP, sFrag+2, asm.Half),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.And.Imm(asm.R3, 1), // M
		asm.LSh.Imm(asm.R3, 13),
		asm.RSh.Imm(asm.R2, 3), // the offset, in 8-byte units in both
		asm.Or.Reg(asm.R3, asm.R2),
		asm.HostTo(asm.BE, asm.R3, asm.Half),
		asm.StoreMem(asm.RFP, sFragField, asm.R3, asm.Half),
		asm.LoadMem(asm.R3, asm.RFP, sFrag+6, asm.Half), // as it lies: network order
		asm.StoreMem(asm.RFP, sFragID, asm.R3, asm.Half),
		asm.StoreImm(asm.RFP, sFragKind, 1, asm.Word),
		asm.JEq.Imm(asm.R2, 0, "l4"),
		asm.StoreImm(asm.RFP, sFragKind, 2, asm.Word),
		asm.Ja.Label("header"), // no transport header to fix
	)
	// TCP and UDP: the pseudo header's addresses change.
	l4 := csumDiff(s64Src, 32, s64Addr4, 8, sDiff)
	l4[0] = l4[0].WithSymbol("l4")
	insns = append(insns, l4...)
	// The IPv4 header, on the stack: version and IHL, TOS from the
	// traffic class, total length, a random id, DF above 1260 bytes, TTL
	// from the hop limit, protocol, checksum, the mapped source, the
	// embedded destination.
	insns = append(insns,
		asm.FnGetPrandomU32.Call().WithSymbol("header"),
		asm.StoreMem(asm.RFP, hdr4+4, asm.R0, asm.Half),
		asm.StoreImm(asm.RFP, hdr4-2, ethPIPv4BE, asm.Half),
		// TOS = (byte0 & 0x0f) << 4 | byte1 >> 4
		asm.LoadMem(asm.R2, asm.RFP, s64Hdr, asm.Byte),
		asm.And.Imm(asm.R2, 0x0f),
		asm.LSh.Imm(asm.R2, 4),
		asm.LoadMem(asm.R3, asm.RFP, s64Hdr+1, asm.Byte),
		asm.RSh.Imm(asm.R3, 4),
		asm.Or.Reg(asm.R2, asm.R3),
		asm.StoreMem(asm.RFP, hdr4+1, asm.R2, asm.Byte),
		asm.StoreImm(asm.RFP, hdr4, 0x45, asm.Byte),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, ipv4Header),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, hdr4+2, asm.R2, asm.Half),
		asm.StoreImm(asm.RFP, hdr4+6, 0, asm.Half),
		asm.JLE.Imm(asm.R3, dfAbove, "nodf"),
		asm.StoreImm(asm.RFP, hdr4+6, 0x40, asm.Byte), // DF
		asm.LoadMem(asm.R2, asm.RFP, s64Hdr+7, asm.Byte).WithSymbol("nodf"),
		asm.StoreMem(asm.RFP, hdr4+8, asm.R2, asm.Byte),
		asm.StoreMem(asm.RFP, hdr4+9, asm.R9, asm.Byte),
		asm.StoreImm(asm.RFP, hdr4+10, 0, asm.Half),
		asm.LoadMem(asm.R2, asm.RFP, s64Addr4, asm.Word),
		asm.StoreMem(asm.RFP, hdr4+12, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, s64Addr4+4, asm.Word),
		asm.StoreMem(asm.RFP, hdr4+16, asm.R2, asm.Word),
		// A fragment's identification, flags and offset.
		asm.LoadMem(asm.R2, asm.RFP, sFragKind, asm.Word),
		asm.JEq.Imm(asm.R2, 0, "whole"),
		asm.LoadMem(asm.R2, asm.RFP, sFragID, asm.Half),
		asm.StoreMem(asm.RFP, hdr4+4, asm.R2, asm.Half),
		asm.LoadMem(asm.R2, asm.RFP, sFragField, asm.Half),
		asm.StoreMem(asm.RFP, hdr4+6, asm.R2, asm.Half),
	)
	whole := csumDiff(0, 0, hdr4, ipv4Header, sScratch)
	whole[0] = whole[0].WithSymbol("whole")
	insns = append(insns, whole...)
	insns = append(insns, asm.LoadMem(asm.R2, asm.RFP, sScratch, asm.DWord))
	insns = append(insns, fold(asm.R2, asm.R3)...)
	insns = append(insns, asm.StoreMem(asm.RFP, hdr4+10, asm.R2, asm.Half))
	// Now the packet: 20 bytes fewer after the Ethernet header, the new
	// header over what is left of the old one, then the L4 checksum.
	insns = append(insns, changeProto(ethPIPv4BE, "fail")...)
	// A fragment also loses its Fragment Header, now after the 20 bytes
	// the IPv4 header goes into.
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sFragKind, asm.Word),
		asm.JEq.Imm(asm.R2, 0, "store"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, -8),
		asm.Mov.Imm(asm.R3, adjRoomNet),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnSkbAdjustRoom.Call(),
		asm.JNE.Imm(asm.R0, 0, "fail"),
	)
	store := storeFromStack(12, hdr4-2, 2+ipv4Header)
	store[0] = store[0].WithSymbol("store")
	insns = append(insns, store...)
	insns = append(insns,
		asm.JNE.Imm(asm.R0, 0, "fail"),
		asm.LoadMem(asm.R2, asm.RFP, sFragKind, asm.Word),
		asm.JEq.Imm(asm.R2, 2, "done"), // a later fragment: no transport header
	)
	insns = append(insns, l4Fix(ethHeader+ipv4Header, [2]byte{icmp6EchoRq, icmpEchoReq}, [2]byte{icmp6EchoRp, icmpEchoRep})...)
	done := ret(m, Translated64, retPass, "c_ok")
	done[0] = done[0].WithSymbol("done")
	insns = append(insns, done...)
	ends := []string{"unsupported", "fail"}
	if !x.CLAT {
		ends = append(ends, "unmapped", "hoplimit")
	}
	return append(insns, drops(m, ends...)...)
}

// matchMappings compares each mapping's address (at, and where it lies on
// the stack) word by word; on a match it runs its then and goes on at
// "mapped", and with none it goes to otherwise.
func matchMappings(ms []Mapping, addr func(Mapping) ([]byte, int16), then func(Mapping) asm.Instructions, otherwise string) asm.Instructions {
	var out asm.Instructions
	for i, m := range ms {
		a, at := addr(m)
		miss := fmt.Sprintf("nomap%d", i)
		for w := range len(a) / 4 {
			ld := asm.LoadMem(asm.R2, asm.RFP, at+int16(4*w), asm.Word)
			if w == 0 && i > 0 {
				ld = ld.WithSymbol(fmt.Sprintf("nomap%d", i-1))
			}
			out = append(out, ld, asm.JNE.Imm32(asm.R2, le32(a[4*w:4*w+4]), miss))
		}
		out = append(out, then(m)...)
		out = append(out, asm.Ja.Label("mapped"))
	}
	out = append(out, asm.Ja.Label(otherwise).WithSymbol(fmt.Sprintf("nomap%d", len(ms)-1)))
	return append(out, asm.Mov.Imm(asm.R2, 0).WithSymbol("mapped"))
}

// nat46Insns: IPv4 to a mapped address becomes IPv6 from the prefix (on a
// CLAT: IPv4 from a mapped address becomes IPv6 to the prefix).
func nat46Insns(x Translator, m *ebpf.Map) asm.Instructions {
	pfx := x.Prefix.Addr().As16()
	const (
		hdr4 = -80  // the IPv4 header as received, 20 bytes (to -61)
		hdr6 = -168 // the new IPv6 header (to -129), the Ethernet type before it
		plen = -128 // the pseudo header's length and next header (ICMPv6)
		pnh  = -124
	)
	// The mapped IPv4 address (destination, or a CLAT's source) and
	// where its IPv6 one goes; the other end is embedded in the prefix.
	mapAt, map6At, pfxAt, embedFrom := int16(16), int16(24), int16(8), int16(12)
	if x.CLAT {
		mapAt, map6At, pfxAt, embedFrom = 12, 8, 24, 16
	}
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JNE.Imm(asm.R2, ethTypeIPv4LE, "next"),
	}
	insns = append(insns, loadBytes(ethHeader, hdr4, ipv4Header, "next")...)
	insns = append(insns, matchMappings(x.mappings(), func(m Mapping) ([]byte, int16) {
		a := m.V4.As4()
		return a[:], hdr4 + mapAt
	}, func(m Mapping) asm.Instructions {
		a := m.V6.As16()
		var out asm.Instructions
		for i := range 4 {
			out = append(out, asm.StoreImm(asm.RFP, hdr6+map6At+int16(4*i), int64(le32(a[4*i:4*i+4])), asm.Word))
		}
		return out
	}, "next")...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, hdr4, asm.Byte),
		asm.JNE.Imm(asm.R2, 0x45, "unsupported"), // IPv4 options
		asm.StoreImm(asm.RFP, sFragKind, 0, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, hdr4+6, asm.Half),
		asm.And.Imm(asm.R2, 0xff3f), // MF and the fragment offset, as loaded
		asm.JEq.Imm(asm.R2, 0, "notfrag"),
		// A fragment (RFC 7915 §4.1): a Fragment Header with its
		// offset, M and the identification, zero-extended.
		asm.LoadMem(asm.R2, asm.RFP, hdr4+6, asm.Half),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.RSh.Imm(asm.R3, 13),
		asm.And.Imm(asm.R3, 1), // MF
		asm.And.Imm(asm.R2, 0x1fff),
		asm.StoreImm(asm.RFP, sFragKind, 1, asm.Word),
		asm.JEq.Imm(asm.R2, 0, "first"),
		asm.StoreImm(asm.RFP, sFragKind, 2, asm.Word),
		asm.LSh.Imm(asm.R2, 3).WithSymbol("first"),
		asm.Or.Reg(asm.R2, asm.R3),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, hdr6+42, asm.R2, asm.Half),
		asm.StoreImm(asm.RFP, hdr6+41, 0, asm.Byte),
		asm.StoreImm(asm.RFP, hdr6+44, 0, asm.Half),
		asm.LoadMem(asm.R2, asm.RFP, hdr4+4, asm.Half),
		asm.StoreMem(asm.RFP, hdr6+46, asm.R2, asm.Half),
		asm.Mov.Imm(asm.R2, 0).WithSymbol("notfrag"),
	)
	if !x.CLAT {
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.RFP, hdr4+8, asm.Byte),
			asm.JLE.Imm(asm.R2, 1, "hoplimit"))
	}
	insns = append(insns,
		// R7: payload length; R8: the IPv4 protocol; R9: IPv6's.
		asm.LoadMem(asm.R7, asm.RFP, hdr4+2, asm.Half),
		asm.HostTo(asm.BE, asm.R7, asm.Half),
		asm.Sub.Imm(asm.R7, ipv4Header),
		asm.LoadMem(asm.R8, asm.RFP, hdr4+9, asm.Byte),
		asm.Mov.Reg(asm.R9, asm.R8),
		asm.JEq.Imm(asm.R8, protoTCP, "header"),
		asm.JEq.Imm(asm.R8, protoUDP, "udpcheck"),
		asm.JNE.Imm(asm.R8, protoICMP, "unsupported"),
		asm.Mov.Imm(asm.R9, protoICMPv6),
		asm.LoadMem(asm.R2, asm.RFP, sFragKind, asm.Word),
		asm.JNE.Imm(asm.R2, 0, "unsupported"), // fragments of ICMP
	)
	insns = append(insns, loadBytes(ethHeader+ipv4Header, sScratch, 1, "unsupported")...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sScratch, asm.Byte),
		asm.JEq.Imm(asm.R2, icmpEchoReq, "header"),
		asm.JEq.Imm(asm.R2, icmpEchoRep, "header"),
		asm.Ja.Label("unsupported"), // ICMP errors are not translated
	)
	// UDP's checksum, in the first (or only) fragment.
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sFragKind, asm.Word).WithSymbol("udpcheck"),
		asm.JEq.Imm(asm.R2, 2, "header"),
	)
	insns = append(insns, loadBytes(ethHeader+ipv4Header+6, sScratch, 2, "unsupported")...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sScratch, asm.Half),
		asm.JEq.Imm(asm.R2, 0, "zerocsum"),
	)
	// The IPv6 header: version 6, traffic class from TOS, no flow label,
	// payload length, next header, hop limit from TTL, prefix + source,
	// the mapped client.
	insns = append(insns,
		asm.StoreImm(asm.RFP, hdr6-2, ethPIPv6BE, asm.Half).WithSymbol("header"),
		asm.StoreImm(asm.RFP, hdr6, 0, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, hdr4+1, asm.Byte),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.RSh.Imm(asm.R2, 4),
		asm.Or.Imm(asm.R2, 0x60),
		asm.StoreMem(asm.RFP, hdr6, asm.R2, asm.Byte),
		asm.And.Imm(asm.R3, 0x0f),
		asm.LSh.Imm(asm.R3, 4),
		asm.StoreMem(asm.RFP, hdr6+1, asm.R3, asm.Byte),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, hdr6+4, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, hdr6+6, asm.R9, asm.Byte),
		asm.LoadMem(asm.R2, asm.RFP, hdr4+8, asm.Byte),
		asm.StoreMem(asm.RFP, hdr6+7, asm.R2, asm.Byte),
	)
	for i := range 3 {
		insns = append(insns, asm.StoreImm(asm.RFP, hdr6+pfxAt+int16(4*i), int64(le32(pfx[4*i:4*i+4])), asm.Word))
	}
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, hdr4+embedFrom, asm.Word),
		asm.StoreMem(asm.RFP, hdr6+pfxAt+12, asm.R2, asm.Word),
	)
	// A fragment's IPv6 header leads to its Fragment Header.
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sFragKind, asm.Word),
		asm.JEq.Imm(asm.R2, 0, "sums"),
		asm.StoreImm(asm.RFP, hdr6+6, protoFragment, asm.Byte),
		asm.StoreMem(asm.RFP, hdr6+40, asm.R9, asm.Byte),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, 8),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, hdr6+4, asm.R2, asm.Half),
		asm.JEq.Imm(asm.R8, protoICMP, "icmpsum").WithSymbol("sums"),
	)
	insns = append(insns, csumDiff(hdr4+12, 8, hdr6+8, 32, sDiff)...)
	insns = append(insns, asm.Ja.Label("change"))
	icmpSum := asm.Instructions{
		asm.Mov.Reg(asm.R2, asm.R7).WithSymbol("icmpsum"),
		asm.HostTo(asm.BE, asm.R2, asm.Word),
		asm.StoreMem(asm.RFP, plen, asm.R2, asm.Word),
		asm.StoreImm(asm.RFP, pnh, int64(le32([]byte{0, 0, 0, protoICMPv6})), asm.Word),
	}
	insns = append(insns, icmpSum...)
	insns = append(insns, csumDiff(0, 0, hdr6+8, 40, sDiff)...)
	change := changeProto(ethPIPv6BE, "fail")
	change[0] = change[0].WithSymbol("change")
	insns = append(insns, change...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sFragKind, asm.Word),
		asm.JNE.Imm(asm.R2, 0, "fragroom"),
	)
	insns = append(insns, storeFromStack(12, hdr6-2, 2+ipv6Header)...)
	insns = append(insns, asm.JNE.Imm(asm.R0, 0, "fail"))
	insns = append(insns, l4Fix(ethHeader+ipv6Header, [2]byte{icmpEchoReq, icmp6EchoRq}, [2]byte{icmpEchoRep, icmp6EchoRp})...)
	// A fragment: 8 more bytes after the IPv6 header for the Fragment
	// Header; the first fragment's transport checksum after them.
	insns = append(insns,
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("fragroom"),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Imm(asm.R3, adjRoomNet),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnSkbAdjustRoom.Call(),
		asm.JNE.Imm(asm.R0, 0, "fail"),
	)
	insns = append(insns, storeFromStack(12, hdr6-2, 2+ipv6Header+8)...)
	insns = append(insns,
		asm.JNE.Imm(asm.R0, 0, "fail"),
		asm.LoadMem(asm.R2, asm.RFP, sFragKind, asm.Word),
		asm.JEq.Imm(asm.R2, 2, "done"), // a later fragment: no transport header
		asm.JEq.Imm(asm.R8, protoTCP, "ftcp"),
	)
	const fragL4 = ethHeader + ipv6Header + 8
	for _, f := range []struct {
		label string
		off   int32
		flags int32
	}{{"fudp", 6, csumPseudo | csumMangled}, {"ftcp", 16, csumPseudo}} {
		fix := l4ReplaceDiff(fragL4+f.off, sDiff, f.flags, "fail")
		if f.label == "ftcp" {
			fix[0] = fix[0].WithSymbol(f.label)
		}
		insns = append(insns, fix...)
		insns = append(insns, asm.Ja.Label("done"))
	}
	done := ret(m, Translated46, retPass, "c_ok")
	done[0] = done[0].WithSymbol("done")
	insns = append(insns, done...)
	ends := []string{"unsupported", "zerocsum", "fail"}
	if !x.CLAT {
		ends = append(ends, "hoplimit")
	}
	return append(insns, drops(m, ends...)...)
}

// l4Fix ends both directions once the new header is in: the transport
// checksum takes the difference kept at sDiff (with the pseudo header's
// flags for TCP and UDP, R8 holding the old protocol), and ICMP echo gets
// its new type, req and rep mapping the old echo request's and reply's
// types to the new ones. It ends at "done", or "fail".
func l4Fix(l4At int32, req, rep [2]byte) asm.Instructions {
	insns := asm.Instructions{
		asm.JEq.Imm(asm.R8, protoTCP, "tcp"),
		asm.JEq.Imm(asm.R8, protoUDP, "udp"),
	}
	insns = append(insns, loadBytes(l4At, sScratch, 1, "fail")...)
	insns = append(insns,
		asm.LoadMem(asm.R2, asm.RFP, sScratch, asm.Byte),
		asm.JEq.Imm(asm.R2, int32(req[0]), "req"),
	)
	// Store the new type, then tell the checksum (type and code, code 0).
	for i, t := range [][2]byte{rep, req} {
		store := asm.StoreImm(asm.RFP, sScratch, int64(t[1]), asm.Byte)
		if i == 1 {
			store = store.WithSymbol("req")
		}
		insns = append(insns, store)
		insns = append(insns, storeFromStack(l4At, sScratch, 1)...)
		insns = append(insns, asm.JNE.Imm(asm.R0, 0, "fail"))
		insns = append(insns, l4Replace(l4At+2, int64(le16([]byte{t[0], 0})), int64(le16([]byte{t[1], 0})), 2, "fail")...)
		insns = append(insns, asm.Ja.Label("icmpdiff"))
	}
	for _, f := range []struct {
		label string
		off   int32
		flags int32
	}{{"icmpdiff", 2, 0}, {"tcp", 16, csumPseudo}, {"udp", 6, csumPseudo | csumMangled}} {
		fix := l4ReplaceDiff(l4At+f.off, sDiff, f.flags, "fail")
		fix[0] = fix[0].WithSymbol(f.label)
		insns = append(insns, fix...)
		insns = append(insns, asm.Ja.Label("done"))
	}
	return insns
}

// Nat64 is a loaded translator: its two programs and their counters.
type Nat64 struct {
	x          Translator
	to4, to6   *ebpf.Program
	counters   *ebpf.Map
	attachedTo []attached
}

// NewNat64 loads a translator's programs.
func NewNat64(x Translator) (*Nat64, error) {
	if err := x.check(); err != nil {
		return nil, err
	}
	name4, name6, mapName := Nat64Name, Nat46Name, "v6lab_nat64"
	if x.CLAT {
		name4, name6, mapName = ClatInName, ClatOutName, "v6lab_clat"
	}
	m, err := newCounters(mapName, numTranslatorCounters)
	if err != nil {
		return nil, err
	}
	to4, err := newProgram(name4, nat64Insns(x, m))
	if err != nil {
		m.Close()
		return nil, err
	}
	to6, err := newProgram(name6, nat46Insns(x, m))
	if err != nil {
		to4.Close()
		m.Close()
		return nil, err
	}
	return &Nat64{x: x, to4: to4, to6: to6, counters: m}, nil
}

// Attach puts IPv6-to-IPv4 on the ingress of from6 (the interface toward
// the IPv6 side) and IPv4-to-IPv6 on the ingress of from4, in the caller's
// namespace: the kernel then routes each translated packet on.
func (n *Nat64) Attach(from6, from4 int, how Hook) error {
	return n.AttachAt(Hookpoint{Ifindex: from6}, Hookpoint{Ifindex: from4}, how)
}

// Hookpoint is an interface's ingress or egress.
type Hookpoint struct {
	Ifindex int
	Egress  bool
}

// AttachAt puts IPv6-to-IPv4 at to4 and IPv4-to-IPv6 at to6, in the
// caller's namespace. A stateful PLAT translates to IPv6 at its egress
// toward the client, after the kernel's NAT has undone its mapping; a
// CLAT at its own interface's egress (and to IPv4 at its ingress).
func (n *Nat64) AttachAt(to4, to6 Hookpoint, how Hook) error {
	for _, a := range []struct {
		p  *ebpf.Program
		at Hookpoint
	}{{n.to4, to4}, {n.to6, to6}} {
		prio := uint16(prioNat64)
		if n.x.CLAT {
			prio = prioCLAT
		}
		at, _, err := attach(a.p, a.at.Ifindex, a.at.Egress, how, prio)
		if err != nil {
			return err
		}
		n.attachedTo = append(n.attachedTo, at)
	}
	return nil
}

// Counters reads the translator's counters (indexes Translated64 …).
func (n *Nat64) Counters() ([]uint64, error) {
	return readCounters(n.counters, numTranslatorCounters)
}

// ProgramIDs are the kernel's ids of the translator's programs.
func (n *Nat64) ProgramIDs() []ebpf.ProgramID {
	var out []ebpf.ProgramID
	for _, p := range []*ebpf.Program{n.to4, n.to6} {
		if info, err := p.Info(); err == nil {
			if id, ok := info.ID(); ok {
				out = append(out, id)
			}
		}
	}
	return out
}

// Close detaches (TCX) and unloads the programs.
func (n *Nat64) Close() error {
	var first error
	for _, a := range n.attachedTo {
		if err := a.close(); err != nil && first == nil {
			first = err
		}
	}
	for _, c := range []interface{ Close() error }{n.to4, n.to6, n.counters} {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
