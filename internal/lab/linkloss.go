package lab

import (
	"errors"
	"fmt"
	"net"

	"v6lab/internal/lab/bpf"
)

// LinkLoss drops a share of every packet between the routers, each way
// (r1's and r2's egress onto their link: the link every path crosses, in
// whatever form it takes there, 6in4 and nat64's IPv4 included), in tc
// BPF: a cell group's loss condition. Close removes it.
type LinkLoss struct {
	Percent float64
	progs   []*bpf.Loss
}

// LoseOnLink starts dropping percent % of the packets each router sends
// the other in lab name (TCX, held by this process).
func LoseOnLink(name string, percent float64) (*LinkLoss, error) {
	ll := &LinkLoss{Percent: percent}
	lk := links[1] // r1 - r2
	for _, end := range []struct{ host, ifname string }{{lk.a, lk.aIf}, {lk.b, lk.bIf}} {
		err := Do(NS(name, end.host), func() error {
			l, err := bpf.NewLoss(percent)
			if err != nil {
				return err
			}
			ifc, err := net.InterfaceByName(end.ifname)
			if err == nil {
				err = l.Attach(ifc.Index, true, bpf.TCX)
			}
			if err != nil {
				l.Close()
				return err
			}
			ll.progs = append(ll.progs, l)
			return nil
		})
		if err != nil {
			ll.Close()
			return nil, fmt.Errorf("lab %s: loss between the routers: %w", name, err)
		}
	}
	return ll, nil
}

// Dropped is the packets dropped so far, both ways.
func (ll *LinkLoss) Dropped() uint64 {
	var n uint64
	for _, l := range ll.progs {
		if c, err := l.Counters(); err == nil {
			n += c[bpf.LossDropped]
		}
	}
	return n
}

// Close removes the programs.
func (ll *LinkLoss) Close() error {
	var errs []error
	for _, l := range ll.progs {
		errs = append(errs, l.Close())
	}
	ll.progs = nil
	return errors.Join(errs...)
}
