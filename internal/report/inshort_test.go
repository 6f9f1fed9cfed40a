package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestInShortIsShortWhenThereAreMany: 20 groups over two paths, at 2
// counted runs each under --scale 0.05: one note says once that the runs
// are too few and what to run; the differences (significant or shown by
// their raw interval) and failures stay in full, and the rest are grouped
// by what they say, compactly, with how many.
func TestInShortIsShortWhenThereAreMany(t *testing.T) {
	s := &Summary{Baseline: "ipv4", Scale: 0.05}
	for g := range 20 {
		group := fmt.Sprintf("g%02d", g)
		for _, p := range []string{"ipv6", "nat64"} {
			c := cmpOf(group, p, 1, 1, 0.9) // within ±2%: same
			switch {
			case g == 0 && p == "ipv6":
				c = cmpOf(group, p, 1, 30, 0.001) // significant
			case g == 1 && p == "ipv6":
				c.PairedDiffMS, c.CI95PairedDiffMS = f64(7), &[2]float64{5, 9} // shown by its raw interval
			case g >= 10:
				c.CI95PairedDiffMS = &[2]float64{-40, 40} // too wide
			case g == 5:
				c = Comparison{Protocol: group, Path: p, Conns: 1, NA: map[string]string{"pct_increase": "no values"}}
			}
			c.Pairs = 2
			s.Comparisons = append(s.Comparisons, c)
		}
		s.Cells = append(s.Cells, Cell{Protocol: group, Path: "ipv4", Conns: 1, MeanMS: f64(100), Runs: []float64{99, 101}})
	}
	lines := VerdictLines(s)
	want := []string{
		"too few runs for verdicts: at most 2 counted runs per cell (--scale 0.05 shrank them), fewer than 5,",
		"g00 over ipv6: 30% slower at every load, significant",
		"g01 over ipv6: slower by 7.00 ms (95% interval +5.00 to +9.00 ms), not significant after Holm's correction over 38 comparisons at 2 runs each",
		"same as ipv4 within ±5%, 16: g00 over nat64; g01 over nat64; g02 over ipv6, nat64;",
		"not comparable, no values, 2: g05 over ipv6, nat64",
		"no difference the runs can tell, the 95% interval too wide (run more), 20: g10 over ipv6, nat64; g11 over ipv6, nat64;",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n %q\n want it to begin %q", i, lines[i], w)
		}
	}
	// Enough runs: no note; few groups: every verdict in full.
	for i := range s.Cells {
		s.Cells[i].Runs = []float64{1, 2, 3, 4, 5}
	}
	s.Comparisons = s.Comparisons[:4]
	if lines := VerdictLines(s); len(lines) != 4 || strings.HasPrefix(lines[0], "too few") {
		t.Errorf("few verdicts, enough runs:\n%s", strings.Join(lines, "\n"))
	}
}

// TestInShortWhenEverythingFailed: when no transaction of any cell, the
// baseline's included, completed, "In short" says so in one headline with
// the first error, not that the runs were too few (trial8 F2).
func TestInShortWhenEverythingFailed(t *testing.T) {
	s := &Summary{Baseline: "ipv4"}
	for _, p := range []string{"ipv4", "ipv6"} {
		s.Cells = append(s.Cells, Cell{Protocol: "http", Path: p, Conns: 1, Failed: 3,
			FirstError: "the server refused ALPN h2: it does not speak HTTP/2 over TLS"})
	}
	s.Comparisons = []Comparison{{Protocol: "http", Path: "ipv6", Conns: 1, NA: map[string]string{"pct_increase": "no values"}}}
	lines := VerdictLines(s)
	want := "every transaction failed on every path (first error, ipv4 at 1 connection: the server refused ALPN h2: it does not speak HTTP/2 over TLS)"
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("In short:\n%s\nwant the one line\n%s", strings.Join(lines, "\n"), want)
	}
	// report.html says it as its In short too.
	var b bytes.Buffer
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<strong>every transaction failed on every path (first error, ipv4 at 1 connection: ") {
		t.Errorf("report.html does not say every transaction failed")
	}
	// One path that completed one transaction: the usual verdicts.
	s.Cells[1].Completed = 1
	if lines := VerdictLines(s); len(lines) == 0 || strings.HasPrefix(lines[0], "every transaction failed") {
		t.Errorf("one transaction completed, still:\n%s", strings.Join(lines, "\n"))
	}
}
