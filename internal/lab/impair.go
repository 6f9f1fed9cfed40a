package lab

import (
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/lab/bpf"
)

// Impairment drops a share of the IPv6 packets the client sends, at r1's
// ingress from it, in the kernel (100%: IPv6 blackholed, as a broken IPv6
// path looks to a dual-stack client). It holds its program: Close removes
// it.
type Impairment struct {
	Percent float64
	// UDP: only IPv6 UDP but DNS is dropped (ImpairIPv6UDP), DNS to
	// port 53 and to DNSPorts.
	UDP      bool
	DNSPorts []uint16
	loss     *bpf.Loss
}

// ImpairIPv6 starts dropping percent % of the client's IPv6 packets in lab
// name (TCX, held by this process).
func ImpairIPv6(name string, percent float64) (*Impairment, error) {
	return impair(name, percent, false)
}

// ImpairIPv6UDP starts dropping percent % of the client's IPv6 UDP
// datagrams to any port but DNS's in lab name (100: QUIC blocked over
// IPv6 only; bpf.NewIPv6UDPLoss): port 53's and dnsPorts', the ports the
// lab's own DNS servers answer on.
func ImpairIPv6UDP(name string, percent float64, dnsPorts ...uint16) (*Impairment, error) {
	return impair(name, percent, true, dnsPorts...)
}

func impair(name string, percent float64, udp bool, dnsPorts ...uint16) (*Impairment, error) {
	im := &Impairment{Percent: percent, UDP: udp, DNSPorts: dnsPorts}
	newLoss := bpf.NewIPv6Loss
	if udp {
		newLoss = func(p float64) (*bpf.Loss, error) { return bpf.NewIPv6UDPLoss(p, dnsPorts...) }
	}
	err := Do(NS(name, R1), func() error {
		l, err := newLoss(percent)
		if err != nil {
			return err
		}
		ifc, err := net.InterfaceByName(links[0].bIf)
		if err == nil {
			err = l.Attach(ifc.Index, false, bpf.TCX)
		}
		if err != nil {
			l.Close()
			return err
		}
		im.loss = l
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lab %s: IPv6 loss at r1 (UDP only: %v): %w", name, udp, err)
	}
	return im, nil
}

// Counters are the IPv6 packets dropped and passed so far.
func (im *Impairment) Counters() (dropped, passed uint64) {
	c, err := im.loss.Counters()
	if err != nil {
		return 0, 0
	}
	return c[bpf.LossDropped], c[bpf.LossPassed]
}

// Close removes the impairment.
func (im *Impairment) Close() error { return im.loss.Close() }

// Delay holds IPv6 packets toward the client for a while at r1 (netem under
// a prio qdisc, IPv6 steered to it by a filter): a dual-stack client's
// IPv6 path is that much slower each way it crosses r1, IPv4 untouched.
// Close removes it.
type Delay struct {
	D      time.Duration
	ns, at string
}

// DelayIPv6 adds d to every IPv6 packet r1 sends the client in lab name.
// It needs the kernel's netem (ErrNoNetem without it), and a link with no
// shaping of its own (one qdisc tree cannot hold both here).
func DelayIPv6(name string, d time.Duration) (*Delay, error) {
	dl := &Delay{D: d, ns: NS(name, R1), at: links[0].bIf}
	tc := func(args ...string) (string, error) {
		out, err := exec.Command("ip", append([]string{"netns", "exec", dl.ns, "tc"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := tc("qdisc", "show", "dev", dl.at, "root"); err != nil {
		return nil, fmt.Errorf("lab %s: IPv6 delay at r1: %v: %s", name, err, out)
	} else if !strings.HasPrefix(out, "qdisc noqueue") && out != "" {
		return nil, fmt.Errorf("lab %s: IPv6 delay at r1: %s is shaped (%s): an IPv6 delay on a shaped link is not supported", name, dl.at, out)
	}
	if err := CheckNetem(name); err != nil { // without it nothing is touched
		return nil, err
	}
	usec := strconv.FormatInt(d.Microseconds(), 10) + "us"
	steps := [][]string{
		// Band 0 for everything, band 1 (1:2) for what the filter picks.
		{"qdisc", "add", "dev", dl.at, "root", "handle", "1:", "prio", "bands", "2", "priomap", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "0"},
		{"qdisc", "add", "dev", dl.at, "parent", "1:2", "handle", "20:", "netem", "delay", usec, "limit", "100000"},
		{"filter", "add", "dev", dl.at, "parent", "1:", "protocol", "ipv6", "prio", "1", "matchall", "flowid", "1:2"},
	}
	for i, args := range steps {
		if out, err := tc(args...); err != nil {
			if i > 0 {
				dl.Close()
			}
			return nil, fmt.Errorf("lab %s: IPv6 delay at r1: tc %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
	}
	return dl, nil
}

// CheckNetem says whether lab name's r1 can delay packets (the kernel's
// netem), by putting netem on r1's own loopback and taking it off: before
// any run, so an experiment that needs it fails before measuring.
func CheckNetem(name string) error {
	ns := NS(name, R1)
	out, err := exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "0us").CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "qdisc kind is unknown") {
			return fmt.Errorf("lab %s: ipv6_delay: %w", name, ErrNoNetem)
		}
		return fmt.Errorf("lab %s: netem at r1: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	exec.Command("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "lo", "root").Run()
	return nil
}

// Close removes the delay (the link's root qdisc returns to the default).
func (dl *Delay) Close() error {
	out, err := exec.Command("ip", "netns", "exec", dl.ns, "tc", "qdisc", "del", "dev", dl.at, "root").CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Cannot delete qdisc with handle of zero") && !strings.Contains(string(out), "No such file") {
		return fmt.Errorf("lab: removing the IPv6 delay: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
