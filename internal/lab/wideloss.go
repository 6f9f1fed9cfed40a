package lab

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"

	"v6lab/internal/lab/bpf"
)

// WideLoss is what the lab-wide loss (`--loss`, a topology's `loss:`,
// in tc BPF on every link end) has dropped so far in lab name, read from
// the kernel: the packets dropped by every loss program of every packet
// in the lab's hosts, and its condition in words ("loss 3%"), "" when the
// lab has none. A cell group's loss between the routers (cell, nil for
// none) is a loss program of every packet too: its programs are not
// counted.
func WideLoss(name string, cell *LinkLoss) (dropped uint64, cond string) {
	seen := map[float64]bool{}
	for _, role := range Hosts {
		_ = Do(NS(name, role), func() error {
			ifs, err := net.Interfaces()
			if err != nil {
				return err
			}
			for _, ifc := range ifs {
				cs, _ := bpf.Inspect(ifc.Index)
				for _, c := range cs {
					if c.Program != bpf.LossName || !c.HasSetting || cell.owns(c.MapID) {
						continue
					}
					if p, every := bpf.LossOfEvery(c.Setting); every {
						seen[p] = true
						dropped += c.Counters[bpf.LossDropped]
					}
				}
			}
			return nil
		})
	}
	var ps []string
	for _, p := range slices.Sorted(maps.Keys(seen)) {
		ps = append(ps, strconv.FormatFloat(p, 'g', -1, 64)+"%")
	}
	if len(ps) == 0 {
		return 0, ""
	}
	return dropped, fmt.Sprintf("loss %s", strings.Join(ps, ", "))
}

// owns says whether counters map id is one of ll's programs'.
func (ll *LinkLoss) owns(id ebpf.MapID) bool {
	if ll == nil {
		return false
	}
	for _, l := range ll.progs {
		if l.MapID() == id {
			return true
		}
	}
	return false
}
