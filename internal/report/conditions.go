package report

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"v6lab/internal/result"
)

// whereLabels name the run records' link entries that are not a link's
// name.
var whereLabels = map[string]string{"pmtu_settings": "path MTU"}

// countOnly are the run records' link entries that hold only a run's
// counters, no condition (the path MTU table shows them).
var countOnly = map[string]bool{"pmtu": true}

// condAcc gathers each cell group's own conditions from its runs'
// records: every link entry ("r1 eth-client ingress": "IPv6 loss 20% (tc
// BPF): 3 IPv6 packets dropped in the run"), without the run's counts
// (what follows ": "), so that it is said once per group.
type condAcc map[string]map[string]map[string]bool

func (a condAcc) Run(r *result.Run) {
	for k, v := range r.Links {
		if countOnly[k] {
			continue
		}
		v, _, _ = strings.Cut(v, ": ")
		if v == "" || v == "none" || v == "noqueue" { // noqueue: a link end unshaped (results before trial11 M3)
			continue
		}
		if a[r.Protocol] == nil {
			a[r.Protocol] = map[string]map[string]bool{}
		}
		if a[r.Protocol][k] == nil {
			a[r.Protocol][k] = map[string]bool{}
		}
		a[r.Protocol][k][v] = true
	}
}

// finish is each group's conditions, "where: what" in order of where,
// with the background traffic's level where every cell of the group had
// the same one.
func (a condAcc) finish(cells []Cell) map[string][]string {
	out := map[string][]string{}
	for g, byKey := range a {
		for _, k := range slices.Sorted(maps.Keys(byKey)) {
			out[g] = append(out[g], cmp.Or(whereLabels[k], k)+": "+strings.Join(slices.Sorted(maps.Keys(byKey[k])), " / "))
		}
	}
	levels := map[string]map[string]bool{}
	for _, c := range cells {
		if levels[c.Protocol] == nil {
			levels[c.Protocol] = map[string]bool{}
		}
		level := ""
		if c.Background != nil {
			level = c.Background.Level
		}
		levels[c.Protocol][level] = true
	}
	for g, ls := range levels {
		if len(ls) == 1 && !ls[""] {
			out[g] = append(out[g], "background: "+slices.Collect(maps.Keys(ls))[0])
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ConditionsLine says a cell group's own conditions, "" when it has none.
func ConditionsLine(s *Summary, group string) string {
	cs := s.Conditions[group]
	if len(cs) == 0 {
		return ""
	}
	return "conditions (as its runs recorded them): " + strings.Join(cs, "; ")
}
