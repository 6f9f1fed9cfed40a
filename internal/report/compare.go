package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"v6lab/internal/result"
)

// Versus sets two result sets side by side, cell by cell: "did the upgrade
// change IPv6 performance?". B is compared against A.
type Versus struct {
	A     string       `json:"a"`
	B     string       `json:"b"`
	Cells []VersusCell `json:"cells"`
	// OnlyA and OnlyB name the cells one side lacks.
	OnlyA []string `json:"only_a,omitempty"`
	OnlyB []string `json:"only_b,omitempty"`
	// NotInAYet and NotInBYet name the cells a side still being written
	// has not run yet, of its experiment's cell groups: not "only" in the
	// other, which it will have when it ends.
	NotInAYet []string `json:"not_in_a_yet,omitempty"`
	NotInBYet []string `json:"not_in_b_yet,omitempty"`
	// Notes say what differs between the two beside the figures: their
	// targets (a loopback result against a lab's), and each setting of
	// their labs, machines and servers that differs (conditions.go).
	Notes []string `json:"notes,omitempty"`
	// Same says how A and B are one result (result.Same: "one
	// directory", "identical samples files"), with no cell set side by
	// side: every difference would be zero.
	Same string `json:"same,omitempty"`
}

// SameVersus is the comparison of a and b that are one result (same:
// result.Same's words).
func SameVersus(a, b, same string) *Versus {
	return &Versus{A: a, B: b, Cells: []VersusCell{}, Same: same}
}

// VersusCell is one cell in both result sets.
type VersusCell struct {
	Protocol string   `json:"protocol"`
	Path     string   `json:"path"`
	Conns    int      `json:"conns"`
	MeanA    *float64 `json:"mean_a_ms"`
	MeanB    *float64 `json:"mean_b_ms"`
	// CompletionA and CompletionB are the completion rates.
	CompletionA *float64 `json:"completion_a"`
	CompletionB *float64 `json:"completion_b"`
	// ThroughputA and ThroughputB are a transport cell's mean throughput
	// (Mbit/s).
	ThroughputA *float64 `json:"throughput_a_mbps,omitempty"`
	ThroughputB *float64 `json:"throughput_b_mbps,omitempty"`
	// Diff is B against A: diff_ms is B - A. The paired test does not
	// apply (runs of two experiments were not run side by side).
	Diff Comparison `json:"diff"`
}

// CompareSummaries pairs the cells of a and b (named nameA and nameB).
func CompareSummaries(nameA string, a *Summary, nameB string, b *Summary) *Versus {
	v := &Versus{A: nameA, B: nameB}
	if a.Target != b.Target {
		v.Notes = append(v.Notes, targetNote(a, b))
	}
	for _, side := range []struct {
		name string
		s    *Summary
	}{{"A", a}, {"B", b}} {
		if p := side.s.Partial; p != nil { // its figures are of fewer runs than planned
			v.Notes = append(v.Notes, side.name+" is "+p.Line())
		}
	}
	v.Notes = append(v.Notes, conditionNotes(a, b)...)
	key := func(c *Cell) string { return fmt.Sprintf("%s/%s/%d", c.Protocol, c.Path, c.Conns) }
	inB := map[string]*Cell{}
	for i := range b.Cells {
		inB[key(&b.Cells[i])] = &b.Cells[i]
	}
	seen := map[string]bool{}
	for i := range a.Cells {
		ca := &a.Cells[i]
		cb := inB[key(ca)]
		seen[key(ca)] = true
		if cb == nil {
			if stillComing(b, ca.Protocol) {
				v.NotInBYet = append(v.NotInBYet, key(ca))
			} else {
				v.OnlyA = append(v.OnlyA, key(ca))
			}
			continue
		}
		d := Compare(ca, cb)
		d.Path, d.Baseline = ca.Path, nameA
		d.PPaired = nil
		na(&d.NA, "p_paired", "runs of two experiments are not paired")
		if d.Throughput != nil {
			d.Throughput.PPaired = nil
			na(&d.Throughput.NA, "p_paired", "runs of two experiments are not paired")
		}
		vc := VersusCell{Protocol: ca.Protocol, Path: ca.Path, Conns: ca.Conns, MeanA: ca.MeanMS, MeanB: cb.MeanMS,
			CompletionA: ca.CompletionRate, CompletionB: cb.CompletionRate, Diff: d}
		if ma, mb := ca.Metrics["throughput_mbps"], cb.Metrics["throughput_mbps"]; ma != nil && mb != nil {
			vc.ThroughputA, vc.ThroughputB = &ma.Mean, &mb.Mean
		}
		v.Cells = append(v.Cells, vc)
	}
	for k, cb := range inB {
		switch {
		case seen[k]:
		case stillComing(a, cb.Protocol):
			v.NotInAYet = append(v.NotInAYet, k)
		default:
			v.OnlyB = append(v.OnlyB, k)
		}
	}
	sort.Strings(v.OnlyB)
	sort.Strings(v.NotInAYet)
	return v
}

// stillComing says whether s, still being written, may yet have a cell of
// group g: its experiment has that group.
func stillComing(s *Summary, g string) bool {
	return s.Partial != nil && s.Partial.Writing && s.groupProto[g] != ""
}

// targetNote says where A and B ran, when not at one place: "A ran in
// the lab, B on loopback". The settings of a lab only one side had are
// not set one by one beside nothing (labNotes): the note says where the
// lab's side records them.
func targetNote(a, b *Summary) string {
	note := fmt.Sprintf("A ran %s, B %s: their differences include the targets'", targetWords(a.Target), targetWords(b.Target))
	switch {
	case len(a.Lab) > 0 && len(b.Lab) == 0:
		note += " (A's lab, its links, tunnel and translators: A's report header)"
	case len(b.Lab) > 0 && len(a.Lab) == 0:
		note += " (B's lab, its links, tunnel and translators: B's report header)"
	}
	return note
}

// targetWords say where a result ran.
func targetWords(t string) string {
	switch result.Where(t) {
	case result.Lab:
		return "in the lab"
	case result.Hosts:
		return "against hosts"
	case "":
		return "on an unknown target"
	}
	return "on " + t
}

// VersusText prints the comparison as a table.
func VersusText(w io.Writer, v *Versus) error {
	tw := &errWriter{w: w}
	fmt.Fprintf(tw, "A: %s\nB: %s\n", v.A, v.B)
	if v.Same != "" {
		fmt.Fprintf(tw, "\nA and B are the same result (%s): there is no difference to show; give two results to compare.\n", v.Same)
		return tw.err
	}
	for _, n := range v.Notes {
		fmt.Fprintf(tw, "note: %s\n", n)
	}
	fmt.Fprintf(tw, "\nmean response time per connection (ms), B against A\n")
	t := newTable([]string{"protocol", "path", "conns", "A mean", "B mean", "B - A", "% change", "95% CI of B - A", "confidence", "p Mann-Whitney", "completed A / B"})
	for _, c := range v.Cells {
		d := c.Diff
		t.add([]string{c.Protocol, c.Path, fmt.Sprint(c.Conns), optMS(c.MeanA, ""), optMS(c.MeanB, ""),
			optSigned(d.DiffMS, d.NA["diff_ms"]), optPct(d.PctIncrease, d.NA["pct_increase"]),
			optRange(d.CI95DiffMS, d.NA["ci95_diff_ms"], " to "), optConf(d.Confidence, d.NA["confidence"]),
			optP(d.PMannWhitney, d.NA["p_mann_whitney"]), optRatio(c.CompletionA) + " / " + optRatio(c.CompletionB)})
	}
	t.write(tw)
	// Transport trials: their throughput, which is what a trial bound by
	// time measures.
	tp := newTable([]string{"protocol", "path", "conns", "A Mbit/s", "B Mbit/s", "B - A", "% change", "95% CI of B - A", "confidence", "p Mann-Whitney"})
	rows := 0
	for _, c := range v.Cells {
		if d := c.Diff.Throughput; d != nil {
			tp.add([]string{c.Protocol, c.Path, fmt.Sprint(c.Conns), optMS(c.ThroughputA, ""), optMS(c.ThroughputB, ""),
				optSigned(d.Diff, d.NA["diff"]), optPct(d.PctChange, d.NA["pct_change"]), optRange(d.CI95Diff, d.NA["ci95_diff"], " to "),
				optConf(d.Confidence, d.NA["confidence"]), optP(d.PMannWhitney, d.NA["p_mann_whitney"])})
			rows++
		}
	}
	if rows > 0 {
		fmt.Fprintf(tw, "\ntransport throughput (Mbit/s), B against A (positive = B faster)\n")
		tp.write(tw)
	}
	if len(v.OnlyA) > 0 {
		fmt.Fprintf(tw, "\nonly in A: %s\n", strings.Join(v.OnlyA, ", "))
	}
	if len(v.OnlyB) > 0 {
		fmt.Fprintf(tw, "\nonly in B: %s\n", strings.Join(v.OnlyB, ", "))
	}
	for _, n := range []struct {
		side  string
		cells []string
	}{{"A", v.NotInAYet}, {"B", v.NotInBYet}} {
		if len(n.cells) > 0 {
			fmt.Fprintf(tw, "\nnot in %s yet (still being written): %s\n", n.side, strings.Join(n.cells, ", "))
		}
	}
	fmt.Fprintln(tw, "\nconfidence = 1 - two-sided Welch p over the run means of each side; see docs/metrics.md.")
	return tw.err
}

// VersusJSON writes the comparison as indented JSON.
func VersusJSON(w io.Writer, v *Versus) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func optRatio(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", *v*100)
}
