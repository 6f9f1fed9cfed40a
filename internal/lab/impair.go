package lab

import (
	"fmt"
	"net"

	"v6lab/internal/lab/bpf"
)

// Impairment drops a share of the IPv6 packets the client sends, at r1's
// ingress from it, in the kernel (100%: IPv6 blackholed, as a broken IPv6
// path looks to a dual-stack client). It holds its program: Close removes
// it.
type Impairment struct {
	Percent float64
	loss    *bpf.Loss
}

// ImpairIPv6 starts dropping percent % of the client's IPv6 packets in lab
// name (TCX, held by this process).
func ImpairIPv6(name string, percent float64) (*Impairment, error) {
	im := &Impairment{Percent: percent}
	err := Do(NS(name, R1), func() error {
		l, err := bpf.NewIPv6Loss(percent)
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
		return nil, fmt.Errorf("lab %s: IPv6 loss at r1: %w", name, err)
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
