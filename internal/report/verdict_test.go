package report

import (
	"strings"
	"testing"
)

func f64(v float64) *float64 { return &v }

// cmp is a comparison of group over path at conns: pct above the
// baseline, with an adjusted paired p and the 95% interval of the paired
// difference pct±1 (of a baseline mean of 100 ms, baseCells).
func cmpOf(group, path string, conns int, pct, p float64) Comparison {
	return Comparison{Protocol: group, Path: path, Conns: conns, Baseline: "ipv4", PctIncrease: f64(pct), PPairedHolm: f64(p),
		CI95PairedDiffMS: &[2]float64{pct - 1, pct + 1}}
}

// baseCells are the baseline's cells of the comparisons above.
func baseCells(group string, conns ...int) []Cell {
	var out []Cell
	for _, n := range conns {
		out = append(out, Cell{Protocol: group, Path: "ipv4", Conns: n, MeanMS: f64(100)})
	}
	return out
}

// TestVerdictsSayWhatTheComparisonsSay: a verdict per group and path,
// from the comparisons: the same within the largest change when none is
// significant, slower from the count where it becomes significant, faster
// for a throughput that grows, not comparable where no figure is, and the
// loads where transactions failed.
func TestVerdictsSayWhatTheComparisonsSay(t *testing.T) {
	s := &Summary{Baseline: "ipv4", Comparisons: []Comparison{
		cmpOf("http", "ipv6", 1, 2.5, 0.4), cmpOf("http", "ipv6", 10, -3.1, 0.2), cmpOf("http", "ipv6", 100, 1.0, 0.9),
		cmpOf("http", "6in4", 1, 1.0, 0.5), cmpOf("http", "6in4", 10, 8.2, 0.01), cmpOf("http", "6in4", 100, 12.4, 0.001),
		cmpOf("http", "nat64", 1, 20, 0.001), cmpOf("http", "nat64", 10, -5, 0.01),
		{Protocol: "tcp", Path: "ipv6", Conns: 1, Throughput: &MetricComparison{PctChange: f64(4), PPairedHolm: f64(0.01)}},
		{Protocol: "dns", Path: "ipv6", Conns: 1, NA: map[string]string{"pct_increase": "baseline below resolution"}},
	}, Cells: append(baseCells("http", 1, 10, 100), Cell{Protocol: "http", Path: "ipv6", Conns: 100, Failed: 3, Completed: 97, CompletionRate: f64(0.97), Failures: map[string]int{"stall": 2, "timeout": 1}})}
	want := map[string]string{
		"http/ipv6":  "same as ipv4 within ±4.1% at every load (95% interval of the difference; no significant difference); 97.0% completed at 100 connections (2 stalled)",
		"http/6in4":  "8.2–12% slower from 10 connections, significant; no significant difference at 1 connection (95% interval within ±2.0%)",
		"http/nat64": "20% slower at 1 connection, 5.0% faster at 10 connections, significant",
		"tcp/ipv6":   "4.0% faster throughput at every load, significant",
		"dns/ipv6":   "not comparable at 1 connection (baseline below resolution)",
	}
	got := Verdicts(s)
	if len(got) != len(want) {
		t.Fatalf("%d verdicts: %+v", len(got), got)
	}
	for _, v := range got {
		if w := want[v.Group+"/"+v.Path]; v.Text != w {
			t.Errorf("%s/%s: %q\n want %q", v.Group, v.Path, v.Text, w)
		}
	}
	if got[0].Kind != "failing" || got[1].Kind != "slower" || got[2].Kind != "mixed" || got[3].Kind != "faster" || !strings.HasPrefix(got[4].Text, "not comparable") {
		t.Errorf("kinds %+v", got)
	}
}

// TestFragmentedDatagramsAreSaid: a UDP path whose datagrams left as
// fragments, the baseline's whole, says so in its verdict and in a note;
// paths that fragmented alike say nothing in their verdict.
func TestFragmentedDatagramsAreSaid(t *testing.T) {
	udpCell := func(path string, frags, mtu float64) Cell {
		return Cell{Protocol: "udp", Path: path, Conns: 1, Metrics: map[string]*MetricStat{
			"ip_fragments": {N: 3, Mean: frags}, "path_mtu": {N: 3, Mean: mtu}}}
	}
	udp := func(path string) Comparison {
		return Comparison{Protocol: "udp", Path: path, Conns: 1, Baseline: "ipv4", Throughput: &MetricComparison{PctChange: f64(-7), PPairedHolm: f64(0.01)}}
	}
	s := &Summary{Baseline: "ipv4", Comparisons: []Comparison{udp("ipv6"), udp("6in4")},
		Cells: []Cell{udpCell("ipv4", 1, 1500), udpCell("ipv6", 2, 1500), udpCell("6in4", 2, 1280)}}
	got := Verdicts(s)
	want := "7.0% slower throughput at every load, significant; its datagrams left as 2 IP fragments each (path MTU 1500), ipv4's whole: partly fragmentation's cost, not the family's (--size max)"
	if got[0].Path != "ipv6" || got[0].Text != want {
		t.Errorf("ipv6 verdict %q\n want %q", got[0].Text, want)
	}
	note := fragmentNote(s)
	if !strings.Contains(note, "udp on ipv6 (2 fragments per datagram, path MTU 1500); udp on 6in4 (2 fragments per datagram, path MTU 1280)") || strings.Contains(note, "on ipv4") {
		t.Errorf("note %q", note)
	}
	// The baseline fragmenting too: the verdicts are of like with like.
	s.Cells[0] = udpCell("ipv4", 2, 1500)
	if got := Verdicts(s); strings.Contains(got[0].Text, "fragment") {
		t.Errorf("verdict with both fragmenting: %q", got[0].Text)
	}
	// Whole datagrams everywhere: no note.
	for i := range s.Cells {
		s.Cells[i].Metrics["ip_fragments"].Mean = 1
	}
	if note := fragmentNote(s); note != "" {
		t.Errorf("note with whole datagrams: %q", note)
	}
}

// TestADNSAnswersFragmentsNameNoMTU: a DNS cell's answers counted as
// fragments (the client knows no path MTU) are said without "path MTU
// 0" and without a udp trial's --size max.
func TestADNSAnswersFragmentsNameNoMTU(t *testing.T) {
	cell := func(path string, frags float64) Cell {
		return Cell{Protocol: "dns-large", Path: path, Conns: 1, Metrics: map[string]*MetricStat{"ip_fragments": {N: 3, Mean: frags}}}
	}
	s := &Summary{Baseline: "ipv4", Cells: []Cell{cell("ipv4", 0), cell("ipv6", 2)},
		Comparisons: []Comparison{cmpOf("dns-large", "ipv6", 1, 1, 0.9)}}
	note := fragmentNote(s)
	if !strings.Contains(note, "dns-large on ipv6 (2 fragments per datagram)") || strings.Contains(note, "MTU 0") || strings.Contains(note, "--size") {
		t.Errorf("note %q", note)
	}
	if v := Verdicts(s); len(v) != 1 || strings.Contains(v[0].Text, "MTU") || strings.Contains(v[0].Text, "--size") || !strings.Contains(v[0].Text, "2 IP fragments each") {
		t.Errorf("verdicts %+v", v)
	}
}

// TestTheClientTurnNoteAdvisesARateOnlyOnUnshapedLinks: the note tells a
// user to shape the lab's links only where they were not.
func TestTheClientTurnNoteAdvisesARateOnlyOnUnshapedLinks(t *testing.T) {
	cells := []Cell{{Protocol: "http", Path: "ipv4", Conns: 10, Metrics: map[string]*MetricStat{
		ClientTurnMetric: {N: 3, Mean: 1}, WireMetric: {N: 3, Mean: 2}}}}
	if n := clientTurnNote(cells, false); !strings.Contains(n, "--rate 1G") {
		t.Errorf("unshaped: %q", n)
	}
	if n := clientTurnNote(cells, true); n == "" || strings.Contains(n, "--rate") {
		t.Errorf("shaped: %q", n)
	}
}
