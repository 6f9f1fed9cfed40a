package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"v6lab/internal/result"
)

// Verdict is the answer a reader wants first, per cell group and path:
// one sentence from the comparisons with the baseline (summary.json's),
// saying how the path compares at every load and whether it is
// significant (Holm-adjusted paired p below Alpha).
type Verdict struct {
	Group, Path string
	// Kind is same, slower, faster, mixed, unclear (no significant
	// difference, but an interval too wide to call it the same) or
	// failing (for a class in report.html).
	Kind string
	Text string
}

// SameWithin is the largest change (percent) a verdict calls the same
// when no difference is significant; a larger one is too scattered to say.
const SameWithin = 5.0

// loadPoint is one connection count's comparison, as a verdict reads it.
type loadPoint struct {
	conns       int
	pct         float64 // positive: worse than the baseline
	significant bool
	// reach is how far from the baseline (percent of its mean) the 95%
	// interval of the difference reaches: the most "same" can claim.
	reach float64
	na    string // why there is no comparison
}

// Verdicts are the summary's verdicts, in the order of its cells.
func Verdicts(s *Summary) []Verdict {
	type key struct{ group, path string }
	var order []key
	points := map[key][]loadPoint{}
	for _, c := range s.Comparisons {
		k := key{c.Protocol, c.Path}
		if _, seen := points[k]; !seen {
			order = append(order, k)
		}
		points[k] = append(points[k], pointOf(c, baselineMean(s, c)))
	}
	var out []Verdict
	for _, k := range order {
		ps := points[k]
		slices.SortFunc(ps, func(a, b loadPoint) int { return a.conns - b.conns })
		v := verdictOf(ps, s.Baseline, throughputGroup(s, k.group))
		v.Group, v.Path = k.group, k.path
		if frag := fragmentClause(s, k.group, k.path); frag != "" {
			v.Text += "; " + frag
		}
		if fail := failing(s, k.group, k.path); fail != "" {
			v.Kind, v.Text = "failing", v.Text+"; "+fail
		}
		out = append(out, v)
	}
	return out
}

// pointOf reads one comparison: its time, or a trial's throughput (where
// faster is better, so its sign is turned). base is the baseline's mean
// response time (0: unknown).
func pointOf(c Comparison, base float64) loadPoint {
	p := loadPoint{conns: c.Conns, reach: math.Inf(1)}
	pct, adj, na := c.PctIncrease, c.PPairedHolm, c.NA["pct_increase"]
	ci := cmp.Or(c.CI95PairedDiffMS, c.CI95DiffMS)
	if t := c.Throughput; t != nil {
		pct, adj, na, ci, base = nil, t.PPairedHolm, t.NA["pct_change"], cmp.Or(t.CI95PairedDiff, t.CI95Diff), 0
		if t.PctChange != nil {
			v := -*t.PctChange
			pct = &v
			if t.Diff != nil && *t.PctChange != 0 {
				base = math.Abs(*t.Diff / *t.PctChange * 100)
			}
		}
	}
	if ci != nil && base > 0 {
		p.reach = max(math.Abs(ci[0]), math.Abs(ci[1])) / base * 100
	}
	if pct == nil {
		p.na = na
		if p.na == "" {
			p.na = "not computable"
		}
		return p
	}
	p.pct, p.significant = *pct, adj != nil && *adj < Alpha
	return p
}

// throughputGroup says whether a group's figures are throughputs (its
// comparisons carry one): a verdict then says faster and slower of them.
func throughputGroup(s *Summary, group string) bool {
	for _, c := range s.Comparisons {
		if c.Protocol == group && c.Throughput != nil {
			return true
		}
	}
	return false
}

// verdictOf says how a path compares with the baseline over its loads.
func verdictOf(ps []loadPoint, base string, throughput bool) Verdict {
	what := ""
	if throughput {
		what = " throughput"
	}
	var slow, fast, same, na []loadPoint
	for _, p := range ps {
		switch {
		case p.na != "":
			na = append(na, p)
		case p.significant && p.pct > 0:
			slow = append(slow, p)
		case p.significant && p.pct < 0:
			fast = append(fast, p)
		default:
			same = append(same, p)
		}
	}
	var parts []string
	kind := "same"
	switch {
	case len(slow) > 0 && len(fast) > 0:
		kind = "mixed"
		parts = append(parts, pcts(slow)+" slower"+what+" at "+loads(slow)+", "+pcts(fast)+" faster"+what+" at "+loads(fast)+", significant")
	case len(slow) > 0:
		kind = "slower"
		parts = append(parts, pcts(slow)+" slower"+what+" "+where(slow, ps)+", significant")
	case len(fast) > 0:
		kind = "faster"
		parts = append(parts, pcts(fast)+" faster"+what+" "+where(fast, ps)+", significant")
	}
	// Same is claimed only as far as the 95% interval of the difference
	// reaches: a point estimate near 0 with a wide interval says nothing.
	switch {
	case len(same) > 0 && len(same)+len(na) == len(ps) && maxReach(same) <= SameWithin:
		parts = append(parts, fmt.Sprintf("same as %s within ±%s %s (95%% interval of the difference; no significant difference)", base, pctText(maxReach(same)), where(same, ps)))
	case len(same) > 0 && len(same)+len(na) == len(ps):
		// Not significant, but the interval reaches too far to call the
		// same: the runs cannot tell.
		kind = "unclear"
		parts = append(parts, fmt.Sprintf("no significant difference from %s %s, but the 95%% interval of the difference reaches ±%s: too few or too scattered runs to tell (run more)", base, where(same, ps), reachText(maxReach(same))))
	case len(same) > 0:
		parts = append(parts, fmt.Sprintf("no significant difference %s (95%% interval within ±%s)", where(same, ps), reachText(maxReach(same))))
	}
	if len(na) > 0 {
		parts = append(parts, "not comparable at "+loads(na)+" ("+na[0].na+")")
	}
	return Verdict{Kind: kind, Text: strings.Join(parts, "; ")}
}

// where says at which loads: every one, from a count up, or which.
func where(sel, all []loadPoint) string {
	if len(sel) == len(all) {
		return "at every load"
	}
	if len(sel) == 1 {
		return "at " + loads(sel)
	}
	if last := all[len(all)-1]; sel[len(sel)-1].conns == last.conns {
		i := slices.IndexFunc(all, func(p loadPoint) bool { return p.conns == sel[0].conns })
		if len(all)-i == len(sel) {
			return fmt.Sprintf("from %d connections", sel[0].conns)
		}
	}
	return "at " + loads(sel)
}

func loads(ps []loadPoint) string {
	var n []string
	for _, p := range ps {
		n = append(n, fmt.Sprint(p.conns))
	}
	if len(n) == 1 && n[0] == "1" {
		return "1 connection"
	}
	if len(n) == 1 {
		return n[0] + " connections"
	}
	return strings.Join(n[:len(n)-1], ", ") + " and " + n[len(n)-1] + " connections"
}

// pcts is the points' change: one figure, or its range.
func pcts(ps []loadPoint) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range ps {
		lo, hi = min(lo, math.Abs(p.pct)), max(hi, math.Abs(p.pct))
	}
	if pctText(lo) == pctText(hi) {
		return pctText(hi)
	}
	return strings.TrimSuffix(pctText(lo), "%") + "–" + pctText(hi)
}

func maxReach(ps []loadPoint) float64 {
	m := 0.0
	for _, p := range ps {
		m = max(m, p.reach)
	}
	return m
}

func reachText(v float64) string {
	if math.IsInf(v, 1) {
		return "an unknown width"
	}
	return pctText(v)
}

// baselineMean is the mean of the baseline's cell a comparison is made
// against (0: not found).
func baselineMean(s *Summary, c Comparison) float64 {
	for i := range s.Cells {
		b := &s.Cells[i]
		if b.Protocol == c.Protocol && b.Path == c.Baseline && b.Conns == c.Conns && b.MeanMS != nil {
			return *b.MeanMS
		}
	}
	return 0
}

func pctText(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.0f%%", v)
}

// failing names the loads where a path's transactions failed.
func failing(s *Summary, group, path string) string {
	var parts []string
	for _, c := range s.Cells {
		if c.Protocol == group && c.Path == path && c.Failed > 0 && c.CompletionRate != nil {
			part := fmt.Sprintf("%.1f%% completed at %d connections", *c.CompletionRate*100, c.Conns)
			if n := c.Failures[string(result.ErrStall)]; n > 0 {
				part += fmt.Sprintf(" (%d stalled)", n) // a path MTU black hole, or a server gone silent
			}
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, ", ")
}

// VerdictLines are the verdicts as report.txt prints them: "http over
// ipv6: …", the group named only when there is more than one.
func VerdictLines(s *Summary) []string {
	vs := Verdicts(s)
	groups := map[string]bool{}
	for _, v := range vs {
		groups[v.Group] = true
	}
	var out []string
	for _, v := range vs {
		who := v.Path
		if len(groups) > 1 {
			who = v.Group + " over " + v.Path
		}
		out = append(out, who+": "+v.Text)
	}
	return out
}
