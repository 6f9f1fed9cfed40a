package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// TurnPart is the share of a path's difference from the baseline that the
// difference of their client turns may reach before the summary says the
// difference is not the path's: at half or more, the client's own
// turnaround (its work, its wait for CPUs, not the network) makes up as
// much of the difference as the paths do, and the difference alone no
// longer says which path is faster (docs/metrics.md).
const TurnPart = 0.5

// turnGap is one comparison whose cells' client turns differ by TurnPart
// or more of their difference.
type turnGap struct {
	cell, path, baseline string
	turns, diff          float64 // path - baseline, ms
}

// turnGaps finds the comparisons whose client turns differ by TurnPart
// or more of the paths' difference in mean time, the largest turn
// differences first, each cell group named by called. Comparisons
// without client turns on both sides are not judged.
func turnGaps(cells []Cell, cmps []Comparison, called func(group string) string) []turnGap {
	turn := map[cellKey]float64{}
	for _, c := range cells {
		if t := c.Metrics[ClientTurnMetric]; t != nil {
			turn[cellKey{c.Protocol, c.Path, c.Conns}] = t.Mean
		}
	}
	var out []turnGap
	for _, c := range cmps {
		t, ok := turn[cellKey{c.Protocol, c.Path, c.Conns}]
		bt, bok := turn[cellKey{c.Protocol, c.Baseline, c.Conns}]
		if !ok || !bok || c.DiffMS == nil {
			continue
		}
		if d := t - bt; math.Abs(d) >= TurnPart*math.Abs(*c.DiffMS) {
			conns := "conns"
			if c.Conns == 1 {
				conns = "conn"
			}
			out = append(out, turnGap{fmt.Sprintf("%s at %d %s", called(c.Protocol), c.Conns, conns), c.Path, c.Baseline, d, *c.DiffMS})
		}
	}
	slices.SortStableFunc(out, func(a, b turnGap) int { return cmp.Compare(math.Abs(b.turns), math.Abs(a.turns)) })
	return out
}

// String says what the gap does to the comparison, with the difference
// net of the turns.
func (g turnGap) String() string {
	longer := "longer"
	if g.turns < 0 {
		longer = "shorter"
	}
	part := "most of it is the client's own turnaround, not the path's"
	switch {
	case g.turns*g.diff <= 0:
		part = "net of them the path's own difference is larger than it shows"
	case math.Abs(g.turns) >= math.Abs(g.diff):
		part = "all of it is the client's own turnaround, not the path's"
	}
	return fmt.Sprintf("%s: %s's client turns are %.2f ms %s than %s's, against a difference of %+.2f ms: %s (%+.2f ms net of turns)",
		g.cell, g.path, math.Abs(g.turns), longer, g.baseline, g.diff, part, g.diff-g.turns)
}

// turnGapNote names the comparisons whose difference the client's own
// turns explain in part (turnGaps; "" if none): the largest few, as the
// note on turns' share does.
func turnGapNote(gaps []turnGap) string {
	if len(gaps) == 0 {
		return ""
	}
	var named []string
	for _, g := range gaps[:min(len(gaps), 3)] {
		named = append(named, g.String())
	}
	more := ""
	if len(gaps) > 3 {
		more = fmt.Sprintf("; and %s more", comparisons(len(gaps)-3))
	}
	return fmt.Sprintf("client turns differ between paths by %.0f%% or more of their difference in %s, so there the difference is not the path's alone: %s%s (docs/metrics.md)",
		100*TurnPart, comparisons(len(gaps)), strings.Join(named, "; "), more)
}

// comparisons is "1 comparison" or "n comparisons".
func comparisons(n int) string {
	if n == 1 {
		return "1 comparison"
	}
	return fmt.Sprintf("%d comparisons", n)
}
