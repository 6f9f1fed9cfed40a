package report

import (
	"encoding/json"
	"slices"
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
	gaps := gapsOf(cells, cmps)
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
	gaps = gapsOf(cells, cmps)
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
	note := turnGapNote(gapsOf(turnCells(3, 2), cmps))
	if !strings.Contains(note, "1.00 ms shorter") || !strings.Contains(note, "larger than it shows") || !strings.Contains(note, "+2.00 ms net of turns") || strings.Contains(note, "turnaround") {
		t.Errorf("note %q", note)
	}
}

// gapsOf marks cmps' client turns against cells' and gathers the flagged.
func gapsOf(cells []Cell, cmps []Comparison) []turnGap {
	markClientTurns(cells, cmps)
	return turnGaps(cmps, strings.ToUpper)
}

// lossCells are trial13's loss file's clean cells: 6in4 at 10 conns
// 0.317 ms slower than ipv4, its client turns 0.26 ms longer; at 1 conn
// 2.0 ms slower, its turns 1.5 ms longer.
func lossCells() ([]Cell, []Comparison) {
	cell := func(path string, conns int, mean, turn float64) Cell {
		return Cell{Protocol: "clean", Path: path, Conns: conns, MeanMS: f64(mean), Metrics: map[string]*MetricStat{
			ClientTurnMetric: {N: 6, Mean: turn}, WireMetric: {N: 6, Mean: mean - 0.1}}}
	}
	cells := []Cell{cell("ipv4", 1, 2.0, 0.5), cell("6in4", 1, 4.0, 2.0), cell("ipv4", 10, 1.5, 0.10), cell("6in4", 10, 1.817, 0.36)}
	cmps := []Comparison{
		{Protocol: "clean", Path: "6in4", Baseline: "ipv4", Conns: 1, DiffMS: f64(2.0), PctIncrease: f64(100), Pairs: 6,
			PairedDiffMS: f64(2.0), CI95PairedDiffMS: &[2]float64{1.5, 2.5}, PPaired: f64(0.3), PPairedHolm: f64(0.3)},
		{Protocol: "clean", Path: "6in4", Baseline: "ipv4", Conns: 10, DiffMS: f64(0.317), PctIncrease: f64(21.1), Pairs: 6,
			PairedDiffMS: f64(0.317), CI95PairedDiffMS: &[2]float64{0.050, 0.584}, PPaired: f64(0.2), PPairedHolm: f64(0.2)},
	}
	markClientTurns(cells, cmps)
	return cells, cmps
}

// TestADifferenceTheTurnsExplainIsMarked (trial13 M1, M2): In short and
// the increase table mark each difference the client-turns note names,
// with the difference net of turns, and summary.json flags every one.
func TestADifferenceTheTurnsExplainIsMarked(t *testing.T) {
	cells, cmps := lossCells()
	s := &Summary{Baseline: "ipv4", Cells: cells, Comparisons: cmps}
	lines := strings.Join(VerdictLines(s), "\n")
	for _, want := range []string{"slower by 0.317 ms (95% interval +0.050 to +0.584 ms) at 10 connections (client turns: +0.057 ms net)",
		"slower by 2.00 ms (95% interval +1.50 to +2.50 ms) at 1 connection (client turns: +0.500 ms net)"} {
		if !strings.Contains(lines, want) {
			t.Errorf("In short lacks %q:\n%s", want, lines)
		}
	}
	secs := comparisonSections(s, "CLEAN", cmps, cells, []int{1, 10})
	if len(secs) == 0 || secs[0].Rows[0][3] != "+0.317 (client turns: +0.057 ms net)" || !slices.Contains(secs[0].Footer, TurnsNote) {
		t.Errorf("increase table %v", secs)
	}
	b, err := json.Marshal(cmps[1])
	if err != nil || !strings.Contains(string(b), `"client_turns_diff_ms":0.26`) || !strings.Contains(string(b), `"client_turns_flagged":true`) ||
		!strings.Contains(string(b), `"client_turns_net_ms":0.05`) {
		t.Errorf("summary.json's comparison: %s", b)
	}

	// Significant at both loads: one clause, each load's net said.
	for i := range s.Comparisons {
		s.Comparisons[i].PPairedHolm = f64(0.01)
	}
	if lines := strings.Join(VerdictLines(s), "\n"); !strings.Contains(lines, "slower at every load (client turns: +0.500 ms net at 1 connection, +0.057 ms net at 10 connections), significant") {
		t.Errorf("In short:\n%s", lines)
	}

	// Turns alike: no mark, no flag, the figures still in summary.json.
	cells[1].Metrics[ClientTurnMetric].Mean, cells[3].Metrics[ClientTurnMetric].Mean = 0.6, 0.12
	markClientTurns(cells, s.Comparisons)
	if lines := strings.Join(VerdictLines(s), "\n"); strings.Contains(lines, "client turns") || s.Comparisons[1].ClientTurnsFlagged ||
		s.Comparisons[1].ClientTurnsNetMS == nil {
		t.Errorf("turns alike, yet:\n%s\n%+v", lines, s.Comparisons[1])
	}
	if secs := comparisonSections(s, "CLEAN", s.Comparisons[1:], cells, []int{1, 10}); slices.Contains(secs[0].Footer, TurnsNote) {
		t.Errorf("turns alike, yet the increase table's footer: %q", secs[0].Footer)
	}
}

// TestTheNoteNamesAFewAndEveryOneIsFlagged (trial13 M2): of five
// comparisons the turns explain, the note names three and says where the
// others are; every one is flagged.
func TestTheNoteNamesAFewAndEveryOneIsFlagged(t *testing.T) {
	var cells []Cell
	var cmps []Comparison
	for n := 1; n <= 5; n++ {
		cells = append(cells, turnCells(0.5, 0.5+float64(n))...)
		cells[len(cells)-2].Conns, cells[len(cells)-1].Conns = n, n
		cmps = append(cmps, Comparison{Protocol: "web-loss1", Path: "ipv6", Baseline: "ipv4", Conns: n, DiffMS: f64(float64(n) + 0.1)})
	}
	note := turnGapNote(gapsOf(cells, cmps))
	if !strings.Contains(note, "in 5 comparisons") || !strings.Contains(note, "and 2 comparisons more, marked in the increase tables and flagged in summary.json (client_turns_flagged)") {
		t.Errorf("note %q", note)
	}
	for _, c := range cmps {
		if !c.ClientTurnsFlagged || TurnsMark(&c) != " (client turns: +0.100 ms net)" {
			t.Errorf("%d conns: flagged %v, mark %q", c.Conns, c.ClientTurnsFlagged, TurnsMark(&c))
		}
	}
}
