package report

import (
	"fmt"
	"slices"
	"strings"

	"v6lab/internal/report/stats"
)

// ManyVerdicts is how many verdicts "In short" lists one by one; beyond
// it only those that say a difference (or failures) stay in full, and the
// rest are grouped by what they say, listed compactly.
const ManyVerdicts = 12

// InShort is the head of a report: a note when the runs are too few for
// verdicts, the verdicts said in full, and the others grouped.
type InShort struct {
	Note    string
	Full    []Verdict
	Grouped []string
}

// inFull says whether a verdict is said in full when there are many: it
// says a difference, or failures.
func inFull(v Verdict) bool {
	return v.Busy || v.Kind != "same" && v.Kind != "unclear" && v.Kind != "na"
}

// ShortOf is the summary's "In short".
func ShortOf(s *Summary) InShort {
	vs := Verdicts(s)
	for i := range vs {
		vs[i].At = atLoss(s, vs[i].Group, vs[i].Path)
		if busy := busyCells(s, vs[i].Group, vs[i].Path); busy != "" && vs[i].Kind != "na" {
			vs[i].Text += "; host busy in " + busy + ": other processes held the CPUs (self-check note), so this is partly their doing"
			vs[i].Busy = true
		}
	}
	if note := allFailedNote(s); note != "" {
		// Nothing completed anywhere: the verdicts would only say "not
		// comparable" of the paths but the baseline, and "run more" would
		// be the wrong advice. The one line says it all.
		return InShort{Note: note}
	}
	out := InShort{Note: fewRunsNote(s, vs)}
	if len(vs) <= ManyVerdicts {
		out.Full = vs
		return out
	}
	named := namedInShort(s)
	type bucket struct {
		label string
		who   []Verdict
	}
	var buckets []*bucket
	byLabel := map[string]*bucket{}
	for _, v := range vs {
		if inFull(v) {
			out.Full = append(out.Full, v)
			continue
		}
		label := groupedLabel(v, s.Baseline)
		b := byLabel[label]
		if b == nil {
			b = &bucket{label: label}
			byLabel[label] = b
			buckets = append(buckets, b)
		}
		b.who = append(b.who, v)
	}
	for _, b := range buckets {
		out.Grouped = append(out.Grouped, fmt.Sprintf("%s, %d: %s", b.label, len(b.who), whoList(b.who, named)))
	}
	return out
}

// namedInShort says whether "In short" names each verdict's cell group
// ("HTTP/2 over ipv6", as its tables are titled): with more than one
// group, or when the one group's title says what its path alone does not,
// a version, a label or transactions at once (a probe's http of HTTP/2;
// a partial run in which one group has runs; `{label: web}`; streams).
func namedInShort(s *Summary) bool {
	gs := protocols(s)
	return len(gs) > 1 || len(gs) == 1 && (s.HTTPVersions[gs[0]] != "" || slices.Contains(s.labelled, gs[0]) || groupStreams(s, gs[0]) > 1)
}

// busyCells names the cells of group over path and over the baseline
// whose runs other processes held the CPUs in (SelfCheck.othersBusy),
// "" for none: the verdict's comparisons rest on them.
func busyCells(s *Summary, group, path string) string {
	var out []string
	for _, c := range s.Cells {
		// Only where both the path and the baseline have figures at
		// those connections: a path that failed every transaction (a
		// blackhole) has none for the CPUs to distort (trial11 LOW 13).
		if c.Protocol == group && (c.Path == path || c.Path == s.Baseline) && c.SelfCheck.othersBusy() &&
			hasMean(s, group, path, c.Conns) && hasMean(s, group, s.Baseline, c.Conns) {
			out = append(out, fmt.Sprintf("%s/%s/%d", c.Protocol, c.Path, c.Conns))
		}
	}
	return strings.Join(out, ", ")
}

// hasMean says whether group's cell over path at conns has a mean.
func hasMean(s *Summary, group, path string, conns int) bool {
	for _, c := range s.Cells {
		if c.Protocol == group && c.Path == path && c.Conns == conns {
			return c.MeanMS != nil
		}
	}
	return false
}

// groupedLabel is what a grouped verdict says, without its figures.
func groupedLabel(v Verdict, base string) string {
	switch v.Kind {
	case "same":
		return fmt.Sprintf("same as %s within ±%g%%", base, SameWithin)
	case "na":
		return "not comparable, " + v.NA
	}
	return "no difference the runs can tell, the 95% interval too wide (run more)"
}

// whoList names verdicts compactly: "g over p1, p2; h over p1", or the
// paths alone when the summary has one cell group.
func whoList(vs []Verdict, named bool) string {
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		var paths []string
		for ; j < len(vs) && vs[j].Group == vs[i].Group; j++ {
			paths = append(paths, vs[j].Path+vs[j].At)
		}
		who := strings.Join(paths, ", ")
		if named {
			who = cmpOr(vs[i].Called, vs[i].Group) + " over " + who
		}
		parts = append(parts, who)
		i = j
	}
	return strings.Join(parts, "; ")
}

// allFailedNote is the headline when every transaction of every cell
// failed (the baseline's too): nothing was measured, whatever the runs'
// number, and the first failure says why.
func allFailedNote(s *Summary) string {
	if len(s.Cells) == 0 {
		return ""
	}
	first := ""
	for _, c := range s.Cells {
		if c.Completed > 0 || c.Failed == 0 {
			return ""
		}
		if first == "" && c.FirstError != "" {
			first = ": " + c.FirstError
			if len(s.Cells) > 1 {
				who := c.Path
				if namedInShort(s) {
					who = groupCalled(s, c.Protocol) + atOnce(s, c.Protocol) + " over " + who
				}
				first = fmt.Sprintf(", %s at %s%s", who, stats.Count(c.Conns, "connection"), first)
			}
		}
	}
	if first == "" {
		return "every transaction failed on every path"
	}
	return "every transaction failed on every path (first error" + first + ")"
}

// fewRunsNote says, once, that no cell compared has MinRuns counted runs:
// the verdicts can then rarely find a difference significant after
// Holm's correction, and what to run instead.
func fewRunsNote(s *Summary, vs []Verdict) string {
	if len(vs) == 0 {
		return ""
	}
	most := 0
	for _, c := range s.Cells {
		most = max(most, len(c.Runs))
	}
	if most >= MinRuns {
		return ""
	}
	why := ""
	if s.Scale > 0 && s.Scale < 1 {
		why = fmt.Sprintf(" (--scale %g shrank them)", s.Scale)
	}
	const again = "for verdicts run again with at least %d counted runs (without --scale or with a larger one, or more runs: in the experiment)"
	if holmCount(s) == 0 {
		return fmt.Sprintf("too few runs for verdicts: at most %s per cell%s, fewer than %d, and no path could be compared with its baseline; "+again,
			stats.Count(most, "counted run"), why, MinRuns, MinRuns)
	}
	return fmt.Sprintf("too few runs for verdicts: at most %s per cell%s, fewer than %d, so a difference must be large and steady to be significant after Holm's correction over %s; "+
		"read each difference and its interval, and "+again,
		stats.Count(most, "counted run"), why, MinRuns, stats.Count(holmCount(s), "comparison"), MinRuns)
}
