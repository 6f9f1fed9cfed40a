package report

import (
	"strings"
	"testing"
)

// turnCells are the trial's WEB-LOSS1/1.1 cells at 1 connection: ipv6's
// turns 2.65 ms longer than ipv4's, its mean 2.90 ms more.
func turnCells(ipv4Turn, ipv6Turn float64) []Cell {
	cell := func(path string, mean, turn float64) Cell {
		return Cell{Protocol: "web-loss1", Path: path, Conns: 1, Metrics: map[string]*MetricStat{
			ClientTurnMetric: {N: 5, Mean: turn}, WireMetric: {N: 5, Mean: mean - 0.1}}}
	}
	return []Cell{cell("ipv4", 1.91, ipv4Turn), cell("ipv6", 4.82, ipv6Turn)}
}

// TestTurnsThatMakeTheDifferenceAreNamed: where ipv6's client turns are
// most of its difference from ipv4, the notes say so by name, with the
// difference net of turns, and no longer say that the paths pay the turns
// alike; where the turns are alike, they do, and no comparison is named.
func TestTurnsThatMakeTheDifferenceAreNamed(t *testing.T) {
	cmps := []Comparison{{Protocol: "web-loss1", Path: "ipv6", Baseline: "ipv4", Conns: 1, DiffMS: f64(2.90)}}
	cells := turnCells(0.508, 3.16)
	gaps := turnGaps(cells, cmps, strings.ToUpper)
	note := turnGapNote(gaps)
	for _, want := range []string{"WEB-LOSS1 at 1 conn: ipv6's client turns are 2.65 ms longer than ipv4's", "+2.90 ms", "most of it is the client's own turnaround, not the path's", "+0.25 ms net of turns"} {
		if !strings.Contains(note, want) {
			t.Errorf("gap note lacks %q: %q", want, note)
		}
	}
	if share := clientTurnNote(cells, gaps, "lab", false); strings.Contains(share, "nearly alike") || strings.Contains(share, "stands") {
		t.Errorf("turns differ, yet: %q", share)
	}

	cells = turnCells(0.508, 0.60) // 0.09 ms of 2.90: the difference stands
	gaps = turnGaps(cells, cmps, strings.ToUpper)
	if note := turnGapNote(gaps); note != "" {
		t.Errorf("turns alike: %q", note)
	}
	if share := clientTurnNote(cells, gaps, "lab", false); !strings.Contains(share, "each difference stands, net of turns at least 50% of its size") {
		t.Errorf("turns alike, not said: %q", share)
	}
}

// TestTurnsAgainstTheDifferenceSayTheNetIsLarger: ipv6's turns shorter
// than ipv4's while ipv6 is slower: the path's own difference is larger
// than the one shown, and all of it is not called the client's.
func TestTurnsAgainstTheDifferenceSayTheNetIsLarger(t *testing.T) {
	cmps := []Comparison{{Protocol: "web-loss1", Path: "ipv6", Baseline: "ipv4", Conns: 1, DiffMS: f64(1)}}
	note := turnGapNote(turnGaps(turnCells(3, 2), cmps, strings.ToUpper))
	if !strings.Contains(note, "1.00 ms shorter") || !strings.Contains(note, "larger than it shows") || !strings.Contains(note, "+2.00 ms net of turns") || strings.Contains(note, "turnaround") {
		t.Errorf("note %q", note)
	}
}
