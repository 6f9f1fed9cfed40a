package bpf

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// Program names of a DS-Lite softwire end (RFC 6333: IPv4 in IPv6).
const (
	SoftwireEncapName = "v6lab_4in6_enc"
	SoftwireDecapName = "v6lab_4in6_dec"
)

// NumSoftwireCounters is the size of a softwire end's counters: the same
// indexes as a 6in4 tunnel end's (Encapsulated, Decapsulated,
// DroppedSpoofed, DroppedBad, EncapFailed, DecapFailed).
const NumSoftwireCounters = numTunnelCounters

// bpf_skb_adjust_room's flags for IPv4 inside IPv6.
const (
	encapL3IPv6 = 1 << 2
	decapL3IPv4 = 1 << 7
	// protoIPv4inIP6 is IPv6's next header for an IPv4 packet (RFC 2473).
	protoIPv4inIP6 = 4
)

// Softwire is one end of a DS-Lite softwire (RFC 6333): IPv4 packets of
// the B4's address go inside IPv6 (next header 4) between the B4, on the
// customer's host, and the AFTR, the provider's carrier-grade NAT.
type Softwire struct {
	// Local6 and Remote6 are this end's and the other end's IPv6
	// addresses: packets leave from Local6 to Remote6, and only those
	// from Remote6 to Local6 are taken out.
	Local6, Remote6 netip.Addr
	// B4 is the B4's IPv4 address (192.0.0.2, RFC 6333 §5.7): the B4
	// encapsulates IPv4 from it, the AFTR IPv4 to it.
	B4 netip.Addr
	// AFTR says which end this is.
	AFTR bool
}

func (w Softwire) check() error {
	if !w.Local6.Is6() || w.Local6.Is4In6() || !w.Remote6.Is6() || w.Remote6.Is4In6() {
		return fmt.Errorf("bpf: softwire ends must be IPv6 addresses, not %v and %v", w.Local6, w.Remote6)
	}
	if !w.B4.Is4() {
		return fmt.Errorf("bpf: the B4's address must be IPv4, not %v", w.B4)
	}
	return nil
}

// swEncapInsns: at the egress, an IPv4 packet from the B4's address (at
// the AFTR: to it) gets room for an IPv6 header after the Ethernet header
// and the header: next header 4, this end to the other, hop limit 64.
func swEncapInsns(w Softwire, m *ebpf.Map) asm.Instructions {
	b4 := w.B4.As4()
	src, dst := w.Local6.As16(), w.Remote6.As16()
	at := int16(ethHeader + 12) // the B4's address is the source
	if w.AFTR {
		at = ethHeader + 16
	}
	const hdr = -56 // the IPv6 header on the stack, the Ethernet type before it
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JNE.Imm(asm.R2, ethTypeIPv4LE, "next"),
		asm.LoadMem(asm.R7, asm.R6, skbData, asm.Word),
		asm.LoadMem(asm.R8, asm.R6, skbDataEnd, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, ethHeader+ipv4Header),
		asm.JGT.Reg(asm.R2, asm.R8, "next"),
		asm.LoadMem(asm.R2, asm.R7, at, asm.Word),
		asm.JNE.Imm32(asm.R2, le32(b4[:]), "next"),
		// The payload length: the IPv4 packet, as the frame holds it.
		// (GSO segmentation rewrites it per segment.)
		asm.LoadMem(asm.R9, asm.R6, skbLen, asm.Word),
		asm.Sub.Imm(asm.R9, ethHeader),
		asm.And.Imm(asm.R9, 0xffff),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, ipv6Header),
		asm.Mov.Imm(asm.R3, adjRoomMAC),
		asm.Mov.Imm(asm.R4, fixedGSO|encapL3IPv6),
		asm.FnSkbAdjustRoom.Call(),
		asm.JNE.Imm(asm.R0, 0, "fail"),
		asm.StoreImm(asm.RFP, hdr-2, ethPIPv6BE, asm.Half),
		asm.StoreImm(asm.RFP, hdr, 0x60, asm.Word), // version 6, no class, no flow label
		asm.Mov.Reg(asm.R2, asm.R9),
		asm.HostTo(asm.BE, asm.R2, asm.Half),
		asm.StoreMem(asm.RFP, hdr+4, asm.R2, asm.Half),
		asm.StoreImm(asm.RFP, hdr+6, protoIPv4inIP6|ttl<<8, asm.Half),
	}
	for i := range 4 {
		insns = append(insns,
			asm.StoreImm(asm.RFP, hdr+8+int16(4*i), int64(le32(src[4*i:4*i+4])), asm.Word),
			asm.StoreImm(asm.RFP, hdr+24+int16(4*i), int64(le32(dst[4*i:4*i+4])), asm.Word))
	}
	insns = append(insns, storeFromStack(12, hdr-2, 2+ipv6Header)...)
	insns = append(insns, asm.JNE.Imm(asm.R0, 0, "fail"))
	insns = append(insns, ret(m, Encapsulated, retPass, "c_ok")...)
	insns = append(insns, asm.Mov.Imm(asm.R0, retNext).WithSymbol("next"), asm.Return())
	fail := ret(m, EncapFailed, retDrop, "c_fail")
	fail[0] = fail[0].WithSymbol("fail")
	return append(insns, fail...)
}

// swDecapInsns: at the ingress, an IPv6 packet with next header 4 to this
// end loses its IPv6 header and goes to the IPv4 stack. From any source
// but the other end it is dropped and counted, as is an inner packet that
// is not IPv4.
func swDecapInsns(w Softwire, m *ebpf.Map) asm.Instructions {
	local, remote := w.Local6.As16(), w.Remote6.As16()
	need := int32(ethHeader + ipv6Header + ipv4Header)
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JNE.Imm(asm.R2, ethTypeIPv6LE, "next"),
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
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, ethHeader+ipv6Header),
		asm.JGT.Reg(asm.R2, asm.R8, "next"),
		asm.LoadMem(asm.R2, asm.R7, ethHeader+6, asm.Byte),
		asm.JNE.Imm(asm.R2, protoIPv4inIP6, "next"),
	}
	for i := range 4 {
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.R7, ethHeader+24+int16(4*i), asm.Word),
			asm.JNE.Imm32(asm.R2, le32(local[4*i:4*i+4]), "next")) // not to this end
	}
	for i := range 4 {
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.R7, ethHeader+8+int16(4*i), asm.Word),
			asm.JNE.Imm32(asm.R2, le32(remote[4*i:4*i+4]), "spoofed"))
	}
	insns = append(insns,
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Imm(asm.R2, need),
		asm.JGT.Reg(asm.R2, asm.R8, "bad"), // no room for an IPv4 header
		asm.LoadMem(asm.R2, asm.R7, ethHeader+ipv6Header, asm.Byte),
		asm.RSh.Imm(asm.R2, 4),
		asm.JNE.Imm(asm.R2, 4, "bad"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, -ipv6Header),
		asm.Mov.Imm(asm.R3, adjRoomMAC),
		asm.Mov.Imm(asm.R4, fixedGSO|decapL3IPv4),
		asm.FnSkbAdjustRoom.Call(),
		asm.JNE.Imm(asm.R0, 0, "fail"),
		asm.StoreImm(asm.RFP, -24, ethTypeIPv4LE, asm.Half),
	)
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

// SoftwireEnd is a loaded softwire end: encap and decap, their counters.
type SoftwireEnd struct {
	W            Softwire
	counters     *ebpf.Map
	encap, decap *ebpf.Program
	hooks        []attached
}

// NewSoftwire loads the programs of one softwire end.
func NewSoftwire(w Softwire) (*SoftwireEnd, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	name := "v6lab_b4"
	if w.AFTR {
		name = "v6lab_aftr"
	}
	m, err := newCounters(name, NumSoftwireCounters)
	if err != nil {
		return nil, err
	}
	s := &SoftwireEnd{W: w, counters: m}
	if s.encap, err = newProgram(SoftwireEncapName, swEncapInsns(w, m)); err == nil {
		s.decap, err = newProgram(SoftwireDecapName, swDecapInsns(w, m))
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Attach puts encap on ifindex's egress and decap on its ingress, in the
// caller's namespace.
func (s *SoftwireEnd) Attach(ifindex int, how Hook) error {
	for _, p := range []struct {
		prog   *ebpf.Program
		egress bool
	}{{s.encap, true}, {s.decap, false}} {
		a, used, err := attach(p.prog, ifindex, p.egress, how, prioDSLite)
		if err != nil {
			return err
		}
		s.hooks = append(s.hooks, a)
		how = used
	}
	return nil
}

// Counters reads the end's counters (indexes Encapsulated …).
func (s *SoftwireEnd) Counters() ([]uint64, error) {
	return readCounters(s.counters, NumSoftwireCounters)
}

// Close detaches (TCX) and unloads the programs.
func (s *SoftwireEnd) Close() error {
	var errs []error
	for _, a := range s.hooks {
		errs = append(errs, a.close())
	}
	s.hooks = nil
	for _, c := range []interface{ Close() error }{s.encap, s.decap, s.counters} {
		if c != nil && c != (*ebpf.Program)(nil) && c != (*ebpf.Map)(nil) {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// MapID is the kernel's id of the end's counters (ReadCounters).
func (s *SoftwireEnd) MapID() ebpf.MapID { return mapID(s.counters) }

// MapID is the kernel's id of the translator's counters (ReadCounters).
func (n *Nat64) MapID() ebpf.MapID { return mapID(n.counters) }

func mapID(m *ebpf.Map) ebpf.MapID {
	if info, err := m.Info(); err == nil {
		if id, ok := info.ID(); ok {
			return id
		}
	}
	return 0
}

// ReadCounters reads n counters of the map with kernel id id, from any
// process and namespace (a lab run's measuring process reads the lab's).
func ReadCounters(id ebpf.MapID, n int) ([]uint64, error) {
	m, err := ebpf.NewMapFromID(id)
	if err != nil {
		return nil, fmt.Errorf("bpf: map %d: %w", id, err)
	}
	defer m.Close()
	return readCounters(m, n)
}

// NumTranslatorCounters is the size of a translator's counters.
const NumTranslatorCounters = numTranslatorCounters

// ProgramIDs are the kernel's ids of the end's programs.
func (s *SoftwireEnd) ProgramIDs() []ebpf.ProgramID {
	var ids []ebpf.ProgramID
	for _, p := range []*ebpf.Program{s.encap, s.decap} {
		if info, err := p.Info(); err == nil {
			if id, ok := info.ID(); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}
