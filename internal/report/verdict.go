package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// Verdict is the answer a reader wants first, per cell group and path:
// one sentence from the comparisons with the baseline (summary.json's),
// saying how the path compares at every load and whether it is
// significant (Holm-adjusted paired p below Alpha).
type Verdict struct {
	Group, Path string
	// Called is what report.txt and report.html call Group: its tables'
	// title for a group that names its HTTP version (groupCalled), and
	// "(4 at once)" after it for a group whose users ran transactions at
	// once on each connection (atOnce), so that no verdict read alone
	// passes for one transaction at a time.
	Called string `json:"-"`
	// At is what the path's cells ran at, said after the path: " (loss
	// 3%)" where a loss dropped their packets (atLoss), else "".
	At string `json:"-"`
	// Busy says a cell the verdict rests on ran while other processes
	// held the host's CPUs (busyCells): its text says so, and it is said
	// in full.
	Busy bool `json:"-"`
	// Kind is same, slower, faster, mixed, unclear (no significant
	// difference, but an interval too wide to call it the same),
	// uncorrected (a raw interval that excludes zero, not significant
	// after Holm's correction), na (no load comparable) or failing (for a
	// class in report.html).
	Kind string
	Text string
	// NA is why no load was comparable (kind na).
	NA string
}

// SameWithin is the largest change (percent) a verdict calls the same
// when no difference is significant; a larger one is too scattered to say.
const SameWithin = 5.0

// loadPoint is one connection count's comparison, as a verdict reads it.
type loadPoint struct {
	conns       int
	pct         float64 // positive: worse than the baseline
	hasPct      bool
	significant bool
	// reach is how far from the baseline (percent of its mean) the 95%
	// interval of the difference reaches: the most "same" can claim.
	reach float64
	// diff and ci are the difference in the figure's own unit (ms of a
	// time, Mbit/s of a throughput: positive is more), the paired
	// interval if there is one, else Welch's; worse says which sign is
	// worse (a time's +, a throughput's -).
	diff  float64
	ci    *[2]float64
	unit  string
	worse float64
	runs  int
	// turnsNet is the time difference net of client turns where the
	// turns make up TurnPart or more of it (ClientTurnsFlagged), else nil.
	turnsNet *float64
	na       string // why there is no comparison
	pctNA    string // why there is no percentage (the comparison's n/a)
}

// excludesZero says whether the raw 95% interval of the difference lies
// wholly on one side of zero: a difference the runs show, whatever the
// correction for many comparisons makes of it.
func (p loadPoint) excludesZero() bool { return excludes0(p.ci) }

// bad says whether the point is worse than the baseline.
func (p loadPoint) bad() bool {
	if p.hasPct && p.significant {
		return p.pct > 0
	}
	return p.diff*p.worse > 0
}

// Verdicts are the summary's verdicts, in the order of its cells.
func Verdicts(s *Summary) []Verdict {
	type key struct{ group, path string }
	var order []key
	points := map[key][]loadPoint{}
	transactions := map[string]bool{}
	for _, c := range s.Comparisons {
		k := key{c.Protocol, c.Path}
		if _, seen := points[k]; !seen {
			order = append(order, k)
		}
		if _, ok := transactions[c.Protocol]; !ok {
			transactions[c.Protocol] = transactionGroup(s, c.Protocol)
		}
		p := pointOf(c, baselineMean(s, c), transactions[c.Protocol])
		if p.unit == "ms" && c.ClientTurnsFlagged {
			p.turnsNet = c.ClientTurnsNetMS
		}
		points[k] = append(points[k], p)
	}
	holm := holmCount(s)
	var out []Verdict
	for _, k := range order {
		ps := points[k]
		slices.SortFunc(ps, func(a, b loadPoint) int { return a.conns - b.conns })
		v := verdictOf(ps, s.Baseline, throughputGroup(s, k.group) && !transactions[k.group], holm)
		v.Group, v.Path, v.Called = k.group, k.path, groupCalled(s, k.group)+atOnce(s, k.group)
		if frag := fragmentClause(s, k.group, k.path); frag != "" {
			v.Text += "; " + frag
		}
		if kept := keptClause(s, k.group, k.path); kept != "" {
			v.Text += "; " + kept
		}
		if fail := failing(s, k.group, k.path); fail != "" {
			v.Kind, v.Text = "failing", v.Text+"; "+fail
		}
		out = append(out, v)
	}
	return out
}

// holmCount is how many paired p-values Holm's correction was over.
func holmCount(s *Summary) int {
	n := 0
	for _, c := range s.Comparisons {
		if c.PPaired != nil {
			n++
		}
		if t := c.Throughput; t != nil && t.PPaired != nil {
			n++
		}
	}
	return n
}

// pointOf reads one comparison: its time, or a trial's throughput (where
// faster is better, so its sign is turned). base is the baseline's mean
// response time (0: unknown). A throughput whose interval spans zero
// gives way to a response time whose interval does not: a transfer that
// stalled for seconds is slower, whatever its rate once moving. A cell of
// transactions (transactionGroup: a page, a file fetched by curl) is
// about its response time: its throughput (a file's size over that
// time) is read only where the time has no figure at all.
func pointOf(c Comparison, base float64, transactions bool) loadPoint {
	tp := timePoint(c, base)
	if t := c.Throughput; t != nil && (!transactions || tp.na != "") {
		if p := throughputPoint(c.Conns, t); p.excludesZero() || !tp.excludesZero() {
			return p
		}
	}
	return tp
}

// rawCI is the interval a verdict reads: the paired one, unless Welch's
// excludes zero where the paired does not (the report's tables print
// both: a verdict never calls "no difference" what one of them shows).
func rawCI(paired, welch *[2]float64) *[2]float64 {
	if paired == nil || (!excludes0(paired) && excludes0(welch)) {
		return welch
	}
	return paired
}

func excludes0(ci *[2]float64) bool { return ci != nil && (ci[0] > 0 || ci[1] < 0) }

func timePoint(c Comparison, base float64) loadPoint {
	p := loadPoint{conns: c.Conns, reach: math.Inf(1), unit: "ms", worse: 1, runs: c.Pairs}
	p.ci = rawCI(c.CI95PairedDiffMS, c.CI95DiffMS)
	if d := cmp.Or(c.PairedDiffMS, c.DiffMS); d != nil {
		p.diff = *d
	}
	return finishPoint(p, c.PctIncrease, c.PPairedHolm, c.NA["pct_increase"], base)
}

func throughputPoint(conns int, t *MetricComparison) loadPoint {
	p := loadPoint{conns: conns, reach: math.Inf(1), unit: "Mbit/s", worse: -1, runs: t.Pairs}
	p.ci = rawCI(t.CI95PairedDiff, t.CI95Diff)
	if d := cmp.Or(t.PairedDiff, t.Diff); d != nil {
		p.diff = *d
	}
	var pct *float64
	base := 0.0
	if t.PctChange != nil {
		pct = ptr(-*t.PctChange)
		if t.Diff != nil && *t.PctChange != 0 {
			base = math.Abs(*t.Diff / *t.PctChange * 100)
		}
	}
	return finishPoint(p, pct, t.PPairedHolm, t.NA["pct_change"], base)
}

// finishPoint adds the percentage (when there is one) and the reach of
// the interval; a point with neither a percentage nor an interval is not
// comparable.
func finishPoint(p loadPoint, pct, adj *float64, na string, base float64) loadPoint {
	if p.ci != nil && base > 0 && pct != nil {
		p.reach = max(math.Abs(p.ci[0]), math.Abs(p.ci[1])) / base * 100
	}
	p.significant = adj != nil && *adj < Alpha
	p.pctNA = na
	if pct != nil {
		p.pct, p.hasPct = *pct, true
		return p
	}
	if p.ci == nil {
		p.na = cmp.Or(na, "not computable")
	}
	return p
}

// transactionGroup says whether a group's cells are transactions that
// carry a throughput: files fetched (file_bytes, proto.Bulk's), whose
// rate is their size over their response time. Their verdict speaks of
// the response time, as the report's other tables do; a transport
// trial's (bound by time, not by an amount) of throughput.
func transactionGroup(s *Summary, group string) bool {
	return slices.ContainsFunc(s.Cells, func(c Cell) bool { return c.Protocol == group && c.Metrics["file_bytes"] != nil })
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
// holm is how many comparisons Holm's correction was over.
func verdictOf(ps []loadPoint, base string, throughput bool, holm int) Verdict {
	what := ""
	if throughput {
		what = " throughput"
	}
	var slow, fast, raw, same, na []loadPoint
	for _, p := range ps {
		switch {
		case p.na != "":
			na = append(na, p)
		case p.significant && p.bad():
			slow = append(slow, p)
		case p.significant:
			fast = append(fast, p)
		case p.excludesZero():
			raw = append(raw, p)
		default:
			same = append(same, p)
		}
	}
	var parts []string
	kind := "same"
	switch {
	case len(slow) > 0 && len(fast) > 0:
		kind = "mixed"
		parts = append(parts, sizes(slow)+" slower"+what+" at "+loads(slow)+turnsMarks(slow)+", "+sizes(fast)+" faster"+what+" at "+loads(fast)+turnsMarks(fast)+", significant")
	case len(slow) > 0:
		kind = "slower"
		parts = append(parts, sizes(slow)+" slower"+what+" "+where(slow, ps)+turnsMarks(slow)+", significant")
	case len(fast) > 0:
		kind = "faster"
		parts = append(parts, sizes(fast)+" faster"+what+" "+where(fast, ps)+turnsMarks(fast)+", significant")
	}
	if len(raw) > 0 {
		if kind == "same" {
			kind = "uncorrected"
		}
		parts = append(parts, rawClause(raw, ps, what, holm))
	}
	if c := sameClause(same, ps, len(same)+len(na) == len(ps), base); c != "" {
		if kind == "same" && !strings.HasPrefix(c, "same as") {
			kind = "unclear"
		}
		parts = append(parts, c)
	}
	v := Verdict{Kind: kind}
	if len(na) > 0 {
		parts = append(parts, "not comparable at "+loads(na)+" ("+na[0].na+")")
	}
	if len(na) == len(ps) {
		v.Kind, v.NA = "na", na[0].na
	}
	v.Text = strings.Join(parts, "; ")
	return v
}

// rawClause says the differences whose raw 95% interval excludes zero
// but which Holm's correction leaves not significant: a difference the
// runs show, said with its size, never "no significant difference".
func rawClause(raw, all []loadPoint, what string, holm int) string {
	var each []string
	for _, p := range raw {
		dir := "faster"
		if p.bad() {
			dir = "slower"
		}
		at := "at " + loads([]loadPoint{p})
		if len(all) == 1 {
			at = ""
		}
		if p.unit == "ms" {
			what = "" // a throughput group's point that fell back to its time
		}
		each = append(each, strings.TrimSpace(fmt.Sprintf("%s%s by %s (95%% interval %s) %s", dir, what, amount(p.diff, p.unit), interval(*p.ci, p.unit), at))+turnsMarks([]loadPoint{p}))
	}
	runs := ""
	if n := raw[0].runs; n > 0 {
		runs = fmt.Sprintf(" at %s each", stats.Count(n, "run"))
	}
	return fmt.Sprintf("%s, not significant after Holm's correction over %s%s", strings.Join(each, ", "), stats.Count(holm, "comparison"), runs)
}

// sameClause says the loads with no difference the runs show: the same
// within the interval's reach, or unclear when it reaches too far. all
// says whether these are every comparable load.
func sameClause(same, ps []loadPoint, all bool, base string) string {
	if len(same) == 0 {
		return ""
	}
	reach := reachOf(same)
	switch {
	case all && maxReach(same) <= SameWithin:
		return fmt.Sprintf("same as %s within ±%s %s (95%% interval of the difference; no significant difference)", base, pctText(maxReach(same)), where(same, ps))
	case all && reach == "":
		return fmt.Sprintf("no significant difference from %s %s, and no 95%% interval of the difference to tell by: too few runs (run more)", base, where(same, ps))
	case all:
		// Not significant, but the interval reaches too far to call the
		// same: the runs cannot tell.
		return fmt.Sprintf("no significant difference from %s %s, but the 95%% interval of the difference reaches ±%s: too few or too scattered runs to tell (run more)", base, where(same, ps), reach)
	case reach == "":
		return fmt.Sprintf("no significant difference %s (no 95%% interval to tell by)", where(same, ps))
	}
	if maxReach(same) > SameWithin {
		// Not a reassurance: the runs cannot tell at these loads.
		return fmt.Sprintf("no significant difference %s, but the 95%% interval reaches ±%s (run more)", where(same, ps), reach)
	}
	return fmt.Sprintf("no significant difference %s (95%% interval within ±%s)", where(same, ps), reach)
}

// reachOf is how far the points' intervals reach: in percent of the
// baseline where every point has one, else in the figure's own unit,
// saying why (another group's line may give its reach in %: trial12);
// "" when a point has no interval.
func reachOf(ps []loadPoint) string {
	if m := maxReach(ps); !math.IsInf(m, 1) && m < 1000 {
		return pctText(m) // a reach of 1000% or more is said in the figure's unit
	}
	m, unit := 0.0, ""
	var whys []string // in the order first met
	at := map[string][]loadPoint{}
	for _, p := range ps {
		if p.ci == nil {
			return ""
		}
		m, unit = max(m, math.Abs(p.ci[0]), math.Abs(p.ci[1])), p.unit
		why := "over 1000% of the baseline's mean"
		switch {
		case math.IsInf(p.reach, 1):
			why = cmp.Or(p.pctNA, "no baseline mean to take it of")
		case p.reach < 1000:
			continue
		}
		if at[why] == nil {
			whys = append(whys, why)
		}
		at[why] = append(at[why], p)
	}
	var said []string
	for _, why := range whys {
		said = append(said, fmt.Sprintf("at %s, %s", loads(at[why]), why))
	}
	return fmt.Sprintf("%s (not in %%: %s)", amount(m, unit), strings.Join(said, "; "))
}

// amount is a difference's size in its unit: milliseconds, or seconds
// from a second up; Mbit/s.
func amount(v float64, unit string) string {
	v = math.Abs(v)
	if unit == "ms" && v >= 1000 {
		return fmt.Sprintf("%.1f s", v/1000)
	}
	return FormatMS(v) + " " + unit
}

// interval is a signed 95% interval, low to high, in the unit amount
// would use for its larger end.
func interval(ci [2]float64, unit string) string {
	if unit == "ms" && max(math.Abs(ci[0]), math.Abs(ci[1])) >= 1000 {
		// as many decimals as tell the ends apart (up to milliseconds)
		for d := 1; ; d++ {
			lo, hi := fmt.Sprintf("%+.*f", d, ci[0]/1000), fmt.Sprintf("%+.*f", d, ci[1]/1000)
			if lo != hi || d == 3 {
				return lo + " to " + hi + " s"
			}
		}
	}
	sign := func(v float64) string {
		if v >= 0 {
			return "+" + FormatMS(v)
		}
		return FormatMS(v)
	}
	return sign(ci[0]) + " to " + sign(ci[1]) + " " + unit
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
			return "from " + stats.Count(sel[0].conns, "connection")
		}
	}
	return "at " + loads(sel)
}

// turnsMarks marks the points of a stated difference whose client turns
// make up TurnPart or more of it (TurnsMark), each with its load when
// there are more than one.
func turnsMarks(ps []loadPoint) string {
	var nets []string
	for _, p := range ps {
		if p.turnsNet == nil {
			continue
		}
		net := netOfTurns(*p.turnsNet)
		if len(ps) > 1 {
			net += " at " + loads([]loadPoint{p})
		}
		nets = append(nets, net)
	}
	if len(nets) == 0 {
		return ""
	}
	return turnsMarkOf(nets)
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

// sizes is the points' change: one figure, or its range; in percent
// where every point has one under 1000%, else in the figure's unit (6.5 s
// over a baseline of 3.7 ms reads better than 177073%).
func sizes(ps []loadPoint) string {
	if slices.ContainsFunc(ps, func(p loadPoint) bool { return !p.hasPct || math.Abs(p.pct) >= 1000 }) {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range ps {
			lo, hi = min(lo, math.Abs(p.diff)), max(hi, math.Abs(p.diff))
		}
		if amount(lo, ps[0].unit) == amount(hi, ps[0].unit) {
			return amount(hi, ps[0].unit)
		}
		return amount(lo, ps[0].unit) + "–" + amount(hi, ps[0].unit)
	}
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
			part := fmt.Sprintf("%.1f%% completed at %s", *c.CompletionRate*100, loads([]loadPoint{{conns: c.Conns}}))
			if n := c.Failures[string(result.ErrStall)]; n > 0 {
				part += fmt.Sprintf(" (%d stalled)", n) // a path MTU black hole, or a server gone silent
			}
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, ", ")
}

// VerdictLines are "In short" as report.txt prints it: the note on too
// few runs, the verdicts in full ("HTTP/2 over ipv6: …", the group named
// as its tables are, when there is more than one or its title says more
// than the path: namedInShort), then the grouped ones.
func VerdictLines(s *Summary) []string {
	short := ShortOf(s)
	named := namedInShort(s)
	var out []string
	if short.Note != "" {
		out = append(out, short.Note)
	}
	for _, v := range short.Full {
		who := v.Path + v.At
		if named {
			who = cmpOr(v.Called, v.Group) + " over " + who
		}
		out = append(out, who+": "+v.Text)
	}
	return append(out, short.Grouped...)
}
