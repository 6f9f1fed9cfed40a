package lab

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"v6lab/internal/lab/bpf"
)

// Shaping applies to the egress of every lab link, both directions.
type Shaping struct {
	// Rate in bits per second; 0 leaves links unshaped.
	Rate uint64
	// QueueLimit in bytes; 0 means 50 ms worth of Rate.
	QueueLimit uint32
	// Delay and Jitter need the kernel's netem; Loss (percent) uses netem
	// where the kernel has it, else a tc BPF program.
	Delay, Jitter time.Duration
	Loss          float64
}

// ErrNoNetem is wrapped when delay or jitter is asked of a kernel without
// the netem qdisc (loss alone falls back to a tc BPF program).
var ErrNoNetem = errors.New("delay and jitter need the kernel's netem qdisc (sch_netem), which this kernel does not have: delay cannot be emulated here (loss can: without netem v6lab drops packets with a tc BPF program)")

func (s Shaping) emulates() bool { return s.Delay > 0 || s.Jitter > 0 || s.Loss > 0 }

// CheckLoss is the rule for a share of packets to drop, wherever it is
// given (--loss, a topology's links, a cell group's loss): a percentage
// from 0 (none) to less than 100, which would drop every packet and leave
// nothing to measure.
func CheckLoss(percent float64) error {
	if !(percent >= 0 && percent < 100) { // NaN fails both
		return fmt.Errorf("%g%% is not a share of packets to drop: want a percentage from 0 to less than 100 (100 drops every packet: nothing to measure)", percent)
	}
	return nil
}

// CheckDelay is the rule for a link's delay and jitter.
func CheckDelay(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%v: must not be negative", d)
	}
	return nil
}

// Validate checks the numbers.
func (s Shaping) Validate() error {
	switch {
	case s.Rate != 0 && s.Rate < 8000:
		return fmt.Errorf("lab: rate %d bit/s is below 8 kbit/s", s.Rate)
	case CheckLoss(s.Loss) != nil:
		return fmt.Errorf("lab: loss %w", CheckLoss(s.Loss))
	case s.Delay < 0 || s.Jitter < 0:
		return fmt.Errorf("lab: delay and jitter must not be negative")
	case s.Jitter > 0 && s.Delay == 0:
		return fmt.Errorf("lab: jitter needs a delay to vary around")
	}
	return nil
}

// checkQueue is the rule for a queue limit: it must hold two full frames
// of the link's MTU (0 is the default, 50 ms of the rate).
func checkQueue(q uint32, mtu int) error {
	if q > 0 && int64(q) < 2*int64(max(mtu, DefaultLinkMTU)) {
		return fmt.Errorf("queue limit %d B holds less than two full frames", q)
	}
	return nil
}

// shape puts the qdisc on one interface: tbf for rate alone, netem (with
// its own rate) when delay, jitter or loss is asked. It returns
// errLossNeedsBPF, with the rate in place, when netem is missing and loss
// alone was asked: the caller adds the BPF loss program.
func shape(ns string, h *netlink.Handle, ln netlink.Link, s Shaping) error {
	attrs := netlink.QdiscAttrs{LinkIndex: ln.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
	if s.emulates() {
		nq := netlink.NewNetem(attrs, netlink.NetemQdiscAttrs{
			Latency: uint32(s.Delay.Microseconds()), Jitter: uint32(s.Jitter.Microseconds()),
			Loss: float32(s.Loss), Rate64: s.Rate / 8,
		})
		err := h.QdiscAdd(nq)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, unix.ENOENT):
			return fmt.Errorf("netem on %s: %w", ln.Attrs().Name, err)
		case s.Delay > 0 || s.Jitter > 0:
			return ErrNoNetem
		}
		// Loss alone: the rate with tbf, the loss in BPF.
		s.Loss = 0
		if err := shape(ns, h, ln, s); err != nil {
			return err
		}
		return errLossNeedsBPF
	}
	if s.Rate == 0 {
		return nil
	}
	if err := tbf(ns, ln.Attrs().Name, s.Rate, s.QueueLimit, "add"); err != nil {
		return err
	}
	return nil
}

// BurstTime is how much of the rate tbf's bucket holds, at least two full
// frames (Burst).
const BurstTime = 250 * time.Microsecond

// Burst is the bucket of a link of rate bits/s and MTU mtu: BurstTime of
// the rate, at least two full frames on the wire. A real link has none: a
// larger bucket lets the first bytes of every short transfer pass at
// memory speed (with 1 ms and at least 8 KiB, as before, a 64 KB fetch on
// a 100 Mbit/s link read 113 Mbit/s). Measured on a veth pair with tbf
// (docs/lab.md): two frames hold the rate exactly up to 500 Mbit/s
// (0.998-0.999 of what Ethernet carries; one frame gave 0.947 at 100), and
// 250 µs holds it within 1.5% above.
func Burst(rate uint64, mtu int) uint32 {
	frame := uint64(max(mtu, DefaultLinkMTU) + 14 + WireOverhead)
	return uint32(max(rate/8*uint64(BurstTime)/uint64(time.Second), 2*frame))
}

// tbf puts (op add) or replaces (op replace) the root tbf of ifname in
// namespace ns: rate bits/s of wire, queue limit bytes (0: 50 ms of the
// rate).
func tbf(ns, ifname string, rate uint64, queueLimit uint32, op string) error {
	bytesPerSec := rate / 8
	mtu, err := linkMTU(ns, ifname)
	if err != nil {
		return err
	}
	burst := Burst(rate, mtu)
	limit := queueLimit
	if limit == 0 {
		limit = burst + uint32(bytesPerSec/20)
	}
	// Shape to the wire: tbf counts each frame from its Ethernet header
	// (skb->len), and a real link also carries a preamble, an FCS and an
	// inter-frame gap, 24 bytes more per frame (WireOverhead). netlink's
	// tbf cannot set the rate table's overhead, iproute2's tc can.
	out, err := exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", op, "dev", ifname, "root", "handle", "1:", "tbf",
		"rate", strconv.FormatUint(bytesPerSec*8, 10)+"bit", "burst", strconv.FormatUint(uint64(burst), 10),
		"limit", strconv.FormatUint(uint64(limit), 10), "overhead", strconv.Itoa(WireOverhead)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tbf on %s: %v: %s", ifname, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// linkMTU reads an interface's MTU in namespace ns.
func linkMTU(ns, ifname string) (int, error) {
	h, err := handle(ns)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	ln, err := h.LinkByName(ifname)
	if err != nil {
		return 0, fmt.Errorf("tbf on %s: %w", ifname, err)
	}
	return ln.Attrs().MTU, nil
}

// Reshape sets every link of lab name to shaping[link name] (its rate and
// queue limit; a zero rate or none: unshaped), both ends, while the lab
// runs: a cell group's own link rate (link_rate), then the lab's own. It returns each end's root qdisc as read back
// from the kernel ("client-r1 eth-r1": "tbf 10.0 Mbit/s"), the proof. It
// is not for links that emulate delay or loss (netem, BPF).
func Reshape(name string, shaping map[string]Shaping) (map[string]string, error) {
	for _, lk := range links {
		for _, end := range []struct{ role, ifname string }{{lk.a, lk.aIf}, {lk.b, lk.bIf}} {
			ns := NS(name, end.role)
			if sh := shaping[lk.name()]; sh.Rate > 0 {
				if err := tbf(ns, end.ifname, sh.Rate, sh.QueueLimit, "replace"); err != nil {
					return nil, fmt.Errorf("lab %s: %w", name, err)
				}
				continue
			}
			// Unshaped: remove the root qdisc, if any.
			_ = exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", end.ifname, "root").Run()
		}
	}
	return Qdiscs(name)
}

// Qdiscs reads back the root qdisc of every link end of lab name.
func Qdiscs(name string) (map[string]string, error) {
	out := map[string]string{}
	for _, lk := range links {
		for _, end := range []struct{ role, ifname string }{{lk.a, lk.aIf}, {lk.b, lk.bIf}} {
			var desc string
			err := Do(NS(name, end.role), func() error {
				ln, err := netlink.LinkByName(end.ifname)
				if err != nil {
					return err
				}
				qs, err := netlink.QdiscList(ln)
				if err != nil {
					return err
				}
				desc = "none"
				for _, q := range qs {
					if q.Attrs().Parent == netlink.HANDLE_ROOT {
						desc = describeQdisc(q)
					}
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("lab %s: %s %s: %w", name, end.role, end.ifname, err)
			}
			out[lk.name()+" "+end.role] = desc
		}
	}
	return out, nil
}

// WireOverhead is what an Ethernet frame takes on the wire beyond the
// bytes tbf counts: preamble and start delimiter 8, FCS 4, inter-frame
// gap 12. A shaped link carries rate bits/s of wire, as a real one does:
// a full-size TCP segment (1448 bytes of payload with timestamps) gets
// 1448/1538 of the rate.
const WireOverhead = 24

// ShapingRule says how a shaped link counts, for the result header.
const ShapingRule = "tc tbf at the link rate, counting every frame with its 24 bytes of Ethernet preamble, FCS and inter-frame gap (as the wire does), its bucket 250 µs of the rate and at least two full frames"

var errLossNeedsBPF = errors.New("loss needs the BPF program")

// addLoss drops percent % of the packets leaving ifname in namespace ns,
// in the kernel.
func (l *Lab) addLoss(role, ifname string, percent float64) error {
	return Do(NS(l.Name, role), func() error {
		lp, err := bpf.NewLoss(percent)
		if err != nil {
			return fmt.Errorf("loss %g%% without netem: %w", percent, err)
		}
		l.bpfObjs = append(l.bpfObjs, lp)
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		return lp.Attach(ifc.Index, true, l.hook())
	})
}

// applyShaping shapes every veth end of the lab.
func (l *Lab) applyShaping(hs map[string]*netlink.Handle) error {
	for _, lk := range links {
		sh := l.Link(lk.name()).Shaping
		if sh.Rate == 0 && !sh.emulates() {
			continue
		}
		for _, end := range []struct{ role, ifname string }{{lk.a, lk.aIf}, {lk.b, lk.bIf}} {
			ln, err := hs[end.role].LinkByName(end.ifname)
			if err != nil {
				return fmt.Errorf("lab: %s: %w", end.role, err)
			}
			err = shape(NS(l.Name, end.role), hs[end.role], ln, sh)
			if errors.Is(err, errLossNeedsBPF) {
				err = l.addLoss(end.role, end.ifname, sh.Loss)
				l.LossImpl = "bpf"
			} else if err == nil && sh.Loss > 0 {
				l.LossImpl = "netem"
			}
			if err != nil {
				return fmt.Errorf("lab: %s %s: %w", end.role, end.ifname, err)
			}
		}
	}
	return nil
}
