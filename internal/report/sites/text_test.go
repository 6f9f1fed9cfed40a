package sites

import (
	"strings"
	"testing"
)

// TestInShortNamesEveryDualVerdict: the sentence's shares add up, the
// undecided and failed sites named beside the others.
func TestInShortNamesEveryDualVerdict(t *testing.T) {
	s := &Summary{ThresholdMS: 1}
	for v, n := range map[Verdict]int{Faster: 1, Slower: 2, Undecided: 3, Broken: 1, Partial: 1, Failed: 1} {
		s.Dual = append(s.Dual, Share{Verdict: v, Count: n, Of: 9, Share: float64(n) / 9})
	}
	got := InShort(s)
	for _, want := range []string{"of 9 dual-stacked sites", "faster at 11.1%", "the same within 1 ms at 0.0%", "slower at 22.2%", "undecided at 33.3%", "broken at 11.1%", "partly broken at 11.1%", "failed at 11.1%"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in %q", want, got)
		}
	}
	if strings.Contains(got, "IPv4 broken") {
		t.Errorf("IPv4 broken named at none: %q", got)
	}
}

// TestHTMLSaysTheMillisecondsLost: report.html's what-if rows give the
// mean milliseconds lost, as report.txt does.
func TestHTMLSaysTheMillisecondsLost(t *testing.T) {
	s := &Summary{ThresholdMS: 1, WhatIf: []WhatIf{{Share: Share{What: "timer 250 ms picks the slower family", Count: 2, Of: 9, Share: 2.0 / 9}, LostMeanMS: 12.5}}}
	var b strings.Builder
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "2 of 9; 12.5 ms lost on average") {
		t.Errorf("no ms lost in:\n%s", b.String())
	}
}

// TestSummaryNotesTheRunsLeftOutForStalls: the summary (and so report.txt
// and report.html) says how many runs of how many sites were not counted
// for v6lab's own stalls; none, no note.
func TestSummaryNotesTheRunsLeftOutForStalls(t *testing.T) {
	a := newAggregator()
	a.add(Row{V: Same, Stalled: 2})
	a.add(Row{V: Undecided, Stalled: 1})
	a.add(Row{V: Slower, DiffMS: 5})
	s := &Summary{}
	a.finish(s)
	if len(s.Notes) != 1 || !strings.HasPrefix(s.Notes[0], "3 runs of 2 sites not counted: v6lab stalled in them") {
		t.Errorf("notes %q", s.Notes)
	}
	a = newAggregator()
	a.add(Row{V: Same})
	s = &Summary{}
	a.finish(s)
	if len(s.Notes) != 0 {
		t.Errorf("no stalls: notes %q", s.Notes)
	}
}
