package bpf

import (
	"errors"
	"fmt"
	"math"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Hook chooses how programs attach.
type Hook string

const (
	// Auto is TCX where the kernel has it (6.6+), else clsact.
	Auto Hook = ""
	// TCX attaches through BPF links, held by this process.
	TCX Hook = "tcx"
	// Clsact adds a clsact qdisc and direct-action cls_bpf filters.
	Clsact Hook = "clsact"
)

// cls_bpf filter priorities (and, with TCX, loss at the head of the
// chain): loss before the tunnel, so a packet lost on a link is lost before
// it costs an encapsulation, and a 6in4 packet is lost at all.
const (
	prioLoss = 1
	// The path MTU impairment before the translator on r1's ingress
	// from the client (it sees the client's packets as they came).
	prioPMTU   = 2
	prioTunnel = 3
	// The translator shares r1's ingress from r2 with the 6in4 decap: a
	// filter of the same priority and handle would replace it.
	prioNat64 = 4
	// The client's end of the client-r1 link holds the CLAT and the
	// DS-Lite B4 beside a loss program; r2's end of r1-r2 the AFTR
	// beside the 6in4 tunnel.
	prioCLAT   = 5
	prioDSLite = 6
)

// attached is one program on one hook.
type attached struct {
	tcx    link.Link
	filter *netlink.BpfFilter
}

// close detaches a TCX link. A cls_bpf filter holds its own reference to
// the program and stays until its interface or namespace goes (the lab
// removes both): removing it here would need the caller's thread in the
// right namespace, and an interface index taken in the wrong one names
// another interface.
func (a attached) close() error {
	if a.tcx != nil {
		return a.tcx.Close()
	}
	return nil
}

// attach puts prog on ifindex's ingress or egress, in the caller's
// network namespace (the calling thread's: lock it first).
func attach(prog *ebpf.Program, ifindex int, egress bool, how Hook, prio uint16) (attached, Hook, error) {
	if how == Auto || how == TCX {
		at := ebpf.AttachTCXIngress
		if egress {
			at = ebpf.AttachTCXEgress
		}
		opts := link.TCXOptions{Interface: ifindex, Program: prog, Attach: at}
		if prio == prioLoss {
			// First in TCX's chain, as prioLoss is among cls_bpf filters:
			// the tunnel's encap ends the chain (TCX_PASS) once it has
			// encapsulated, so a loss program after it never saw 6in4.
			opts.Anchor = link.Head()
		}
		l, err := link.AttachTCX(opts)
		if err == nil {
			return attached{tcx: l}, TCX, nil
		}
		if how == TCX || !errors.Is(err, ebpf.ErrNotSupported) {
			return attached{}, "", unsupported("attach with TCX", err)
		}
	}
	h, err := netlink.NewHandle()
	if err != nil {
		return attached{}, "", fmt.Errorf("bpf: netlink: %w", err)
	}
	defer h.Close()
	q := &netlink.Clsact{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}}
	if err := h.QdiscAdd(q); err != nil && !errors.Is(err, unix.EEXIST) {
		return attached{}, "", unsupported("clsact qdisc", err)
	}
	parent := uint32(netlink.HANDLE_MIN_INGRESS)
	if egress {
		parent = netlink.HANDLE_MIN_EGRESS
	}
	f := &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{LinkIndex: ifindex, Parent: parent, Handle: 1, Priority: prio, Protocol: unix.ETH_P_ALL},
		Fd: prog.FD(), Name: "v6lab", DirectAction: true}
	if err := h.FilterReplace(f); err != nil {
		return attached{}, "", unsupported("cls_bpf filter", err)
	}
	return attached{filter: f}, Clsact, nil
}

// Tunnel is one router's end of the 6in4 tunnel in the kernel: encap on
// the egress toward the peer, decap on the ingress from it.
type Tunnel struct {
	End TunnelEnd
	// Hook is how the programs were attached (after Attach).
	Hook         Hook
	counters     *ebpf.Map
	encap, decap *ebpf.Program
	hooks        []attached
}

// NewTunnel loads the programs of one tunnel end.
func NewTunnel(e TunnelEnd) (*Tunnel, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	m, err := newCounters("v6lab_6in4", numTunnelCounters)
	if err != nil {
		return nil, err
	}
	t := &Tunnel{End: e, counters: m}
	if t.encap, err = newProgram(EncapName, encapInsns(e, m)); err == nil {
		t.decap, err = newProgram(DecapName, decapInsns(e, m))
	}
	if err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Attach puts the tunnel on interface ifindex of the caller's namespace.
func (t *Tunnel) Attach(ifindex int, how Hook) error {
	for _, p := range []struct {
		prog   *ebpf.Program
		egress bool
	}{{t.encap, true}, {t.decap, false}} {
		a, used, err := attach(p.prog, ifindex, p.egress, how, prioTunnel)
		if err != nil {
			return err
		}
		t.hooks = append(t.hooks, a)
		t.Hook, how = used, used
	}
	return nil
}

// ProgramIDs are the kernel's ids of the tunnel end's programs.
func (t *Tunnel) ProgramIDs() []ebpf.ProgramID {
	var ids []ebpf.ProgramID
	for _, p := range []*ebpf.Program{t.encap, t.decap} {
		if info, err := p.Info(); err == nil {
			if id, ok := info.ID(); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// Counters reads the tunnel end's counters (indexes Encapsulated …).
func (t *Tunnel) Counters() ([]uint64, error) { return readCounters(t.counters, numTunnelCounters) }

// Close detaches (TCX) and unloads the programs; see attached.close for
// clsact.
func (t *Tunnel) Close() error {
	var errs []error
	for _, a := range t.hooks {
		errs = append(errs, a.close())
	}
	t.hooks = nil
	for _, c := range []interface{ Close() error }{t.encap, t.decap, t.counters} {
		if c != nil && c != (*ebpf.Program)(nil) && c != (*ebpf.Map)(nil) {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Loss drops packets at random with a fixed probability, in the kernel
// (every packet, or IPv6 only, or IPv6's UDP but DNS only).
type Loss struct {
	Percent  float64
	IPv6Only bool
	// UDP: only IPv6 UDP datagrams to a port other than 53 (QUIC, not
	// DNS) are dropped (NewIPv6UDPLoss).
	UDP      bool
	Hook     Hook
	counters *ebpf.Map
	prog     *ebpf.Program
	hooks    []attached
}

// NewLoss loads a loss program dropping percent % of packets.
func NewLoss(percent float64) (*Loss, error) { return newLoss(percent, false) }

// NewIPv6Loss loads a loss program dropping percent % of IPv6 packets
// (100: IPv6 blackholed), passing every other packet on.
func NewIPv6Loss(percent float64) (*Loss, error) { return newLoss(percent, true) }

// NewIPv6UDPLoss loads a loss program dropping percent % of the IPv6 UDP
// datagrams to any port but DNS's (53, and the dnsPorts given: the lab's
// own DNS servers listen on ports of their own): QUIC blocked over IPv6
// only (100), as a firewall that passes DNS and drops other UDP does
// (envoy#40703), while IPv6's TCP, IPv6's DNS and all of IPv4 pass. A
// datagram behind an IPv6 extension header is not looked into (passed).
func NewIPv6UDPLoss(percent float64, dnsPorts ...uint16) (*Loss, error) {
	l, err := newLoss(percent, true)
	if err != nil {
		return nil, err
	}
	l.prog.Close()
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // LD_ABS reads the packet of the context in R6
		asm.LoadMem(asm.R2, asm.R6, skbProtocol, asm.Word),
		asm.JNE.Imm(asm.R2, ethTypeIPv6LE, "pass"),
		asm.LoadAbs(ethHeader+6, asm.Byte), // the IPv6 Next Header
		asm.JNE.Imm(asm.R0, 17, "pass"),    // not UDP
		asm.LoadAbs(ethHeader+40+2, asm.Half),
		asm.JEq.Imm(asm.R0, 53, "pass"), // DNS
	}
	for _, port := range dnsPorts {
		insns = append(insns, asm.JEq.Imm(asm.R0, int32(port), "pass"))
	}
	insns = append(insns, lossInsns(uint64(math.Round(percent/100*(1<<32))), l.counters)...)
	insns = append(insns, asm.Mov.Imm(asm.R0, retNext).WithSymbol("pass"), asm.Return())
	if l.prog, err = newProgram(LossName, insns); err != nil {
		l.counters.Close()
		return nil, err
	}
	l.UDP = true
	if err := l.record(); err != nil {
		return nil, err
	}
	return l, nil
}

func newLoss(percent float64, ipv6Only bool) (*Loss, error) {
	if !(percent > 0 && percent <= 100) {
		return nil, fmt.Errorf("bpf: loss %g%% is not a percentage above 0", percent)
	}
	m, err := newCounters("v6lab_loss", numLossCounters+1) // and its setting
	if err != nil {
		return nil, err
	}
	threshold := uint64(math.Round(percent / 100 * (1 << 32)))
	insns := lossInsns(threshold, m)
	if ipv6Only {
		insns = append(asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, skbProtocol, asm.Word),
			asm.JNE.Imm(asm.R2, ethTypeIPv6LE, "not6"),
		}, insns...)
		insns = append(insns, asm.Mov.Imm(asm.R0, retNext).WithSymbol("not6"), asm.Return())
	}
	p, err := newProgram(LossName, insns)
	if err != nil {
		m.Close()
		return nil, err
	}
	l := &Loss{Percent: percent, IPv6Only: ipv6Only, counters: m, prog: p}
	if err := l.record(); err != nil {
		return nil, err
	}
	return l, nil
}

// Loss settings' scopes, in the setting's bits 32 and up.
const (
	lossEvery = iota
	lossIPv6
	lossIPv6UDP
)

// record writes what the program drops into its map, after the counters,
// so lab status can say it from the kernel alone.
func (l *Loss) record() error {
	scope := uint64(lossEvery)
	switch {
	case l.UDP:
		scope = lossIPv6UDP
	case l.IPv6Only:
		scope = lossIPv6
	}
	err := writeSetting(l.counters, numLossCounters, scope<<32|uint64(math.Round(l.Percent*1e4)))
	if err != nil {
		l.Close()
		return err
	}
	return nil
}

// DescribeLoss says what a loss program drops, from its setting.
func DescribeLoss(setting uint64) string {
	what := map[uint64]string{lossEvery: "of every packet", lossIPv6: "of IPv6 packets", lossIPv6UDP: "of IPv6 UDP datagrams but DNS's"}[setting>>32]
	return fmt.Sprintf("%g%% %s", float64(setting&0xffffffff)/1e4, what)
}

// LossOfEvery is the share (percent) a loss program of every packet
// drops, from its setting; ok is false for one of IPv6 or IPv6 UDP only.
func LossOfEvery(setting uint64) (percent float64, ok bool) {
	return float64(setting&0xffffffff) / 1e4, setting>>32 == lossEvery
}

// MapID is the kernel's id of the program's counters map (as Inspect's
// Counts name it), 0 when unknown.
func (l *Loss) MapID() ebpf.MapID {
	info, err := l.counters.Info()
	if err != nil {
		return 0
	}
	id, _ := info.ID()
	return id
}

// Attach puts the loss program on an interface's egress (or ingress).
func (l *Loss) Attach(ifindex int, egress bool, how Hook) error {
	a, used, err := attach(l.prog, ifindex, egress, how, prioLoss)
	if err != nil {
		return err
	}
	l.hooks = append(l.hooks, a)
	l.Hook = used
	return nil
}

// Counters reads [dropped, passed].
func (l *Loss) Counters() ([]uint64, error) { return readCounters(l.counters, numLossCounters) }

// Close detaches and unloads the program.
func (l *Loss) Close() error {
	var errs []error
	for _, a := range l.hooks {
		errs = append(errs, a.close())
	}
	l.hooks = nil
	errs = append(errs, l.prog.Close(), l.counters.Close())
	return errors.Join(errs...)
}

// Check loads and unloads a trivial program: it says whether this process
// may use the kernel datapath at all, and why not.
func Check() error {
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK.
	_ = rlimit.RemoveMemlock()
	p, err := newProgram("v6lab_check", asm0())
	if err != nil {
		return err
	}
	return p.Close()
}

// Counts are the counters of v6lab's programs found on one interface.
type Counts struct {
	Program  string
	Hook     Hook
	Egress   bool
	Counters []uint64
	// Setting is what the program was loaded to do (a loss program's
	// share and scope, a path MTU impairment's drops), where its map
	// records it (HasSetting).
	Setting    uint64
	HasSetting bool
	// MapID is the kernel's id of the counters map: a translator's two
	// directions share one.
	MapID ebpf.MapID
}

// Inspect reads the counters of every v6lab program attached to ifindex
// in the caller's namespace, by TCX or cls_bpf, from the kernel alone (so
// lab status can show them from another process).
func Inspect(ifindex int) ([]Counts, error) {
	var out []Counts
	for _, egress := range []bool{true, false} {
		at := ebpf.AttachTCXIngress
		if egress {
			at = ebpf.AttachTCXEgress
		}
		var ids []ebpf.ProgramID
		if r, err := link.QueryPrograms(link.QueryOptions{Target: ifindex, Attach: at}); err == nil {
			for _, p := range r.Programs {
				ids = append(ids, p.ID)
			}
		}
		n := len(ids)
		if h, err := netlink.NewHandle(); err == nil {
			parent := uint32(netlink.HANDLE_MIN_INGRESS)
			if egress {
				parent = netlink.HANDLE_MIN_EGRESS
			}
			if ln, err := h.LinkByIndex(ifindex); err == nil {
				fs, _ := h.FilterList(ln, parent)
				for _, f := range fs {
					if bf, ok := f.(*netlink.BpfFilter); ok && bf.Id > 0 {
						ids = append(ids, ebpf.ProgramID(bf.Id))
					}
				}
			}
			h.Close()
		}
		for i, id := range ids {
			c, err := countsOf(id)
			if err != nil || c == nil {
				continue
			}
			c.Egress, c.Hook = egress, TCX
			if i >= n {
				c.Hook = Clsact
			}
			out = append(out, *c)
		}
	}
	return out, nil
}

func countsOf(id ebpf.ProgramID) (*Counts, error) {
	p, err := ebpf.NewProgramFromID(id)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	info, err := p.Info()
	if err != nil {
		return nil, err
	}
	n := 0
	switch info.Name {
	case EncapName, DecapName:
		n = numTunnelCounters
	case LossName:
		n = numLossCounters
	case Nat64Name, Nat46Name, ClatInName, ClatOutName:
		n = numTranslatorCounters
	case SoftwireEncapName, SoftwireDecapName:
		n = NumSoftwireCounters
	case PMTUName:
		n = NumPMTUCounters
	default:
		return nil, nil
	}
	maps, _ := info.MapIDs()
	if len(maps) != 1 {
		return nil, nil
	}
	m, err := ebpf.NewMapFromID(maps[0])
	if err != nil {
		return nil, err
	}
	defer m.Close()
	cs, err := readCounters(m, n)
	if err != nil {
		return nil, err
	}
	c := &Counts{Program: info.Name, Counters: cs, MapID: maps[0]}
	if (info.Name == LossName || info.Name == PMTUName) && m.MaxEntries() > uint32(n) {
		if s, err := readCounters(m, n+1); err == nil {
			c.Setting, c.HasSetting = s[n], true
		}
	}
	return c, nil
}

// Prefix64 is the /64 that holds a.
func Prefix64(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, 64).Masked() }
