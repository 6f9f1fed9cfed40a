package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"v6lab/internal/report/stats"
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

// markClientTurns sets each comparison's client turns against the
// baseline's (ClientTurnsDiffMS, ClientTurnsNetMS) where both cells have
// them, and flags it (ClientTurnsFlagged) where they differ by TurnPart
// or more of the paths' difference in mean time: the one rule the note,
// "In short" and the increase table read.
func markClientTurns(cells []Cell, cmps []Comparison) {
	turn := map[cellKey]float64{}
	for _, c := range cells {
		if t := c.Metrics[ClientTurnMetric]; t != nil {
			turn[cellKey{c.Protocol, c.Path, c.Conns}] = t.Mean
		}
	}
	for i := range cmps {
		c := &cmps[i]
		t, ok := turn[cellKey{c.Protocol, c.Path, c.Conns}]
		bt, bok := turn[cellKey{c.Protocol, c.Baseline, c.Conns}]
		if !ok || !bok || c.DiffMS == nil {
			continue
		}
		d := t - bt
		c.ClientTurnsDiffMS, c.ClientTurnsNetMS = ptr(d), ptr(*c.DiffMS-d)
		c.ClientTurnsFlagged = math.Abs(d) >= TurnPart*math.Abs(*c.DiffMS)
	}
}

// turnGaps are the flagged comparisons (markClientTurns), the largest
// turn differences first, each cell group named by called.
func turnGaps(cmps []Comparison, called func(group string) string) []turnGap {
	var out []turnGap
	for _, c := range cmps {
		if c.ClientTurnsFlagged {
			out = append(out, turnGap{fmt.Sprintf("%s at %s", called(c.Protocol), stats.Count(c.Conns, "conn")), c.Path, c.Baseline, *c.ClientTurnsDiffMS, *c.DiffMS})
		}
	}
	slices.SortStableFunc(out, func(a, b turnGap) int { return cmp.Compare(math.Abs(b.turns), math.Abs(a.turns)) })
	return out
}

// TurnsMark marks a difference the client's own turns make up TurnPart
// or more of (ClientTurnsFlagged) with the difference net of them.
func TurnsMark(c *Comparison) string {
	if c == nil || !c.ClientTurnsFlagged {
		return ""
	}
	return turnsMarkOf([]string{netOfTurns(*c.ClientTurnsNetMS)})
}

// turnsMarkOf is the mark of one or more differences net of turns.
func turnsMarkOf(nets []string) string {
	return " (client turns: " + strings.Join(nets, ", ") + ")"
}

// netOfTurns says a difference net of turns (ms), as precise as the
// increase table's differences.
func netOfTurns(v float64) string { return optSigned(&v, "") + " ms net" }

// TurnsNote explains TurnsMark.
var TurnsNote = fmt.Sprintf("(client turns: … net): the path's and the baseline's client turns differ by %.0f%% or more of the difference, so it is not the path's alone; the figure is the difference net of turns (the client-turns note, docs/metrics.md)", 100*TurnPart)

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
// note on turns' share does; summary.json flags every one, and the
// increase tables mark them.
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
		more = fmt.Sprintf("; and %s more, marked in the increase tables and flagged in summary.json (client_turns_flagged)", stats.Count(len(gaps)-3, "comparison"))
	}
	return fmt.Sprintf("client turns differ between paths by %.0f%% or more of their difference in %s, so there the difference is not the path's alone: %s%s (docs/metrics.md)",
		100*TurnPart, stats.Count(len(gaps), "comparison"), strings.Join(named, "; "), more)
}
