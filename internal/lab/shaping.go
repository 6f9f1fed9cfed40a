package lab

import (
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Shaping applies to the egress of every lab link, both directions.
type Shaping struct {
	// Rate in bits per second; 0 leaves links unshaped.
	Rate uint64
	// QueueLimit in bytes; 0 means 50 ms worth of Rate.
	QueueLimit uint32
	// Delay, Jitter and Loss (percent) need the kernel's netem.
	Delay, Jitter time.Duration
	Loss          float64
}

// ErrNoNetem is wrapped when delay, jitter or loss is asked of a kernel
// without the netem qdisc.
var ErrNoNetem = errors.New("delay, jitter and loss need the kernel's netem qdisc (sch_netem), which this kernel does not have; v6lab has no userspace emulator yet")

func (s Shaping) emulates() bool { return s.Delay > 0 || s.Jitter > 0 || s.Loss > 0 }

// Validate checks the numbers.
func (s Shaping) Validate() error {
	switch {
	case s.Rate != 0 && s.Rate < 8000:
		return fmt.Errorf("lab: rate %d bit/s is below 8 kbit/s", s.Rate)
	case s.Loss < 0 || s.Loss > 100:
		return fmt.Errorf("lab: loss %g%% is not a percentage", s.Loss)
	case s.Delay < 0 || s.Jitter < 0:
		return fmt.Errorf("lab: delay and jitter must not be negative")
	case s.Jitter > 0 && s.Delay == 0:
		return fmt.Errorf("lab: jitter needs a delay to vary around")
	}
	return nil
}

// shape puts the qdisc on one interface: tbf for rate alone, netem (with
// its own rate) when delay, jitter or loss is asked.
func shape(h *netlink.Handle, ln netlink.Link, s Shaping) error {
	attrs := netlink.QdiscAttrs{LinkIndex: ln.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
	if s.emulates() {
		nq := netlink.NewNetem(attrs, netlink.NetemQdiscAttrs{
			Latency: uint32(s.Delay.Microseconds()), Jitter: uint32(s.Jitter.Microseconds()),
			Loss: float32(s.Loss), Rate64: s.Rate / 8,
		})
		if err := h.QdiscAdd(nq); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return ErrNoNetem
			}
			return fmt.Errorf("netem on %s: %w", ln.Attrs().Name, err)
		}
		return nil
	}
	if s.Rate == 0 {
		return nil
	}
	bytesPerSec := s.Rate / 8 // netlink's tbf rate is bytes per second
	// Burst: 1 ms of rate, at least a few full frames. A real link has
	// none; a large bucket would let the first bytes of every short
	// transfer (a 320 KB page) pass at memory speed. tbf's timers are
	// high-resolution, so a small bucket still reaches the rate.
	burst := uint32(max(bytesPerSec/1000, 8<<10))
	limit := s.QueueLimit
	if limit == 0 {
		limit = burst + uint32(bytesPerSec/20)
	}
	tbf := &netlink.Tbf{QdiscAttrs: attrs, Rate: bytesPerSec, Limit: limit, Buffer: netlink.Xmittime(bytesPerSec, burst)}
	if err := h.QdiscAdd(tbf); err != nil {
		return fmt.Errorf("tbf on %s: %w", ln.Attrs().Name, err)
	}
	return nil
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
			if err := shape(hs[end.role], ln, sh); err != nil {
				return fmt.Errorf("lab: %s %s: %w", end.role, end.ifname, err)
			}
		}
	}
	return nil
}
