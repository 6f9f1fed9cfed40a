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

// LabLoss is the lab's loss program of every packet on one link (both
// ends' egress, as a topology's `loss:` or `--loss` puts it), with what it
// has dropped so far.
type LabLoss struct {
	Link    string // one of LinkNames
	Percent float64
	Dropped uint64
}

// LabLosses are the lab-wide losses (`--loss`, a topology's `loss:`, in tc
// BPF on each end of the links they are set on) of lab name, read from
// the kernel, one per link and share, in LinkNames' order. A cell group's
// loss between the routers (cell, nil for none) is a loss program of
// every packet too: its programs are not the lab's.
func LabLosses(name string, cell *LinkLoss) []LabLoss {
	var out []LabLoss
	for _, lk := range links {
		byShare := map[float64]uint64{}
		for _, end := range []struct{ role, ifname string }{{lk.a, lk.aIf}, {lk.b, lk.bIf}} {
			_ = Do(NS(name, end.role), func() error {
				ifc, err := net.InterfaceByName(end.ifname)
				if err != nil {
					return err
				}
				cs, _ := bpf.Inspect(ifc.Index)
				for _, c := range cs {
					if c.Program != bpf.LossName || !c.HasSetting || cell.owns(c.MapID) {
						continue
					}
					if p, every := bpf.LossOfEvery(c.Setting); every {
						byShare[p] += c.Counters[bpf.LossDropped]
					}
				}
				return nil
			})
		}
		for _, p := range slices.Sorted(maps.Keys(byShare)) {
			out = append(out, LabLoss{Link: lk.name(), Percent: p, Dropped: byShare[p]})
		}
	}
	return out
}

// OnEveryLink says whether losses are one share on every link of the lab:
// the lab's loss as `--loss` (or a topology's `loss:` for all) sets it.
func OnEveryLink(losses []LabLoss) bool {
	if len(losses) != len(links) {
		return false
	}
	for i, l := range losses {
		if l.Link != links[i].name() || l.Percent != losses[0].Percent {
			return false
		}
	}
	return true
}

// WideLoss is what the lab-wide loss has dropped so far in lab name, in
// all (LabLosses summed), and its condition in words ("loss 3%"; "loss 1%,
// 5%" for two shares), "" when the lab has none.
func WideLoss(name string, cell *LinkLoss) (dropped uint64, cond string) {
	seen := map[float64]bool{}
	for _, l := range LabLosses(name, cell) {
		seen[l.Percent] = true
		dropped += l.Dropped
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
