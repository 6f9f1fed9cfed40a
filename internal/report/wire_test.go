package report

import (
	"bytes"
	"encoding/csv"
	"math"
	"slices"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// TestWireTimeBesideTheMean: samples' wire_ns become each cell's wire mean
// (mean of run means, over the samples that have one: a sample without a
// stamp does not pull it down), its comparison with the baseline, and
// rows and a section in report.txt.
func TestWireTimeBesideTheMean(t *testing.T) {
	f := build(baseMS, otherMS)
	for i := range f.Samples {
		s := &f.Samples[i]
		if !s.OK() {
			continue
		}
		s.WireNS = s.TotalNS - 100_000 // 0.1 ms of the client's own
		if s.Path == "ipv4" && s.User == 1 {
			s.WireNS = 0 // no stamp: left out, not averaged as zero
			if s.Run == 1 {
				s.WireNS = s.TotalNS - 100_000
			}
		}
	}
	s := Summarize(f)
	var v4, v6 *Cell
	for i := range s.Cells {
		switch s.Cells[i].Path {
		case "ipv4":
			v4 = &s.Cells[i]
		case "ipv6":
			v6 = &s.Cells[i]
		}
	}
	w4, w6 := v4.Metrics[WireMetric], v6.Metrics[WireMetric]
	if w4 == nil || w6 == nil || w4.N != len(baseMS) {
		t.Fatalf("wire %+v %+v", w4, w6)
	}
	// Run 2's only stamped ipv4 sample is base[1]-0.25 ms; its wire is 0.1 ms less.
	if !near(w4.Runs[1], baseMS[1]-0.25-0.1) {
		t.Errorf("run 2's wire mean %v, want %v", w4.Runs[1], baseMS[1]-0.35)
	}
	if !near(w6.Mean, *v6.MeanMS-0.1) {
		t.Errorf("ipv6 wire mean %v, mean %v", w6.Mean, *v6.MeanMS)
	}
	var cmp *Comparison
	for i := range s.Comparisons {
		if s.Comparisons[i].Path == "ipv6" {
			cmp = &s.Comparisons[i]
		}
	}
	if cmp == nil || cmp.Wire == nil || cmp.Wire.Diff == nil || cmp.Wire.CI95Diff == nil {
		t.Fatalf("no wire comparison: %+v", cmp)
	}
	var b bytes.Buffer
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"wire mean", "wire 95% CI", "HTTP: wire time against ipv4", WireNote} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.txt lacks %q", want)
		}
	}
	if strings.Contains(b.String(), "transport figures") {
		t.Error("the wire time made an http cell a transport table")
	}
	b.Reset()
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "wire mean") || !strings.Contains(b.String(), "wire time against") {
		t.Error("report.html lacks the wire figures")
	}
}

// TestWireColumnsInResultsCSV: results.csv carries the wire mean and its
// comparison, and the client turns' mean, empty where there are none.
func TestWireColumnsInResultsCSV(t *testing.T) {
	f := build(baseMS, otherMS)
	for i := range f.Samples {
		if f.Samples[i].OK() {
			f.Samples[i].WireNS = f.Samples[i].TotalNS - 100_000
			if f.Samples[i].Path == "ipv6" {
				f.Samples[i].ClientTurnNS = 30_000
			}
		}
	}
	var b bytes.Buffer
	if err := CSV(&b, Summarize(f)); err != nil {
		t.Fatal(err)
	}
	rows := csvRows(t, b.String())
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	v4, v6 := rows[0], rows[1]
	if v6["wire_mean_ms"] == "" || v6["wire_diff_ms"] == "" || v4["wire_mean_ms"] == "" || v4["wire_diff_ms"] != "" {
		t.Errorf("wire columns: ipv4 %v, ipv6 %v", v4, v6)
	}
	if v6["client_turn_mean_ms"] != "0.03" || v4["client_turn_mean_ms"] != "" {
		t.Errorf("client turns: ipv4 %q, ipv6 %q", v4["client_turn_mean_ms"], v6["client_turn_mean_ms"])
	}
	if v4["wire_na"] != "" || v6["wire_na"] != "" {
		t.Errorf("wire_na of a wire time every sample has: %q, %q", v4["wire_na"], v6["wire_na"])
	}
}

// csvRows reads results.csv's rows by column name, checking that every
// row has the header's columns.
func csvRows(t *testing.T, text string) []map[string]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(recs) == 0 || !slices.Equal(recs[0], CSVHeader) {
		t.Fatalf("results.csv: %v, header %q", err, recs)
	}
	var out []map[string]string
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, k := range recs[0] {
			m[k] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// TestClientTurnsBesideTheWire: samples' client_turn_ns become each
// cell's client turns (mean of run means, over the samples that have
// them) and a row of report.txt, with its note; without any, no row.
func TestClientTurnsBesideTheWire(t *testing.T) {
	f := build(baseMS, otherMS)
	var b bytes.Buffer
	if err := Text(&b, Summarize(f)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "client turns") {
		t.Error("a client turns row without any turns")
	}
	for i := range f.Samples {
		s := &f.Samples[i]
		if s.OK() {
			s.WireNS = s.TotalNS - 100_000
			s.ClientTurnNS = int64(20_000 + 20_000*s.User) // 0.02 ms, 0.04 ms, …
		}
	}
	s := Summarize(f)
	for _, c := range s.Cells {
		ct := c.Metrics[ClientTurnMetric]
		if ct == nil || ct.N != len(c.Runs) || ct.Mean < 0.02 || ct.Mean > 0.02*float64(c.Conns) {
			t.Errorf("%s: client turns %+v", c.Path, ct)
		}
	}
	b.Reset()
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"client turns", ClientTurnNote} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.txt lacks %q", want)
		}
	}
	if strings.Contains(b.String(), "transport figures") {
		t.Error("the client turns made an http cell a transport table")
	}
	// A fifth of the wire time or less: no note; more: the cells named.
	if n := strings.Join(s.Notes, "\n"); strings.Contains(n, "client turns") {
		t.Errorf("a note for turns well under a fifth of the wire time: %s", n)
	}
	for i := range f.Samples {
		if smp := &f.Samples[i]; smp.OK() && smp.Path == "ipv6" {
			smp.ClientTurnNS = smp.WireNS / 3
		}
	}
	notes := Summarize(f).Notes
	share := notes[slices.IndexFunc(notes, func(n string) bool { return strings.HasPrefix(n, "client turns are more than") })]
	if !strings.Contains(share, "client turns are more than 20% of the wire time in http/ipv6/2 33%") || strings.Contains(share, "ipv4") {
		t.Errorf("note: %s", share)
	}
	// ipv6's turns, a third of its wire time, against ipv4's 0.02-0.04
	// ms: they are its difference, and the note after says so.
	if n := strings.Join(notes, "\n"); !strings.Contains(n, "paths do not all pay it alike") || !strings.Contains(n, "http at 2 conns: ipv6's client turns are") {
		t.Errorf("notes: %s", n)
	}
}

// TestStrayPacketsAreNoted: packets of earlier runs that a run's wire check
// saw and left out are summed in one note, the runs' figures kept.
func TestStrayPacketsAreNoted(t *testing.T) {
	f := build(baseMS, otherMS)
	if n := strings.Join(Summarize(f).Notes, "\n"); strings.Contains(n, "wire check") {
		t.Fatalf("a note without strays: %s", n)
	}
	f.Runs[0].Wire = &result.Wire{IPv4: 10, Stray: 3}
	f.Runs[1].Wire = &result.Wire{NAT64: 10, ClientSide: &result.Wire{IPv6: 10, Stray: 2}}
	f.Runs[2].Wire = &result.Wire{IPv6: 10}
	s := Summarize(f)
	notes := strings.Join(s.Notes, "\n")
	if !strings.Contains(notes, "wire check: 5 packets of connections the runs did not open (earlier runs' late retransmissions and closes), seen during 2 runs, not counted") {
		t.Errorf("notes:\n%s", notes)
	}
	// A group that spoke HTTP/3: its kept QUIC connections are named too
	// (trial11 L12: they were named in a run of HTTP/1.1 alone); one run
	// is "1 run", not "1 runs".
	h3 := build(baseMS, otherMS)
	h3.Header.Spec = map[string]any{"cells": []any{map[string]any{"protocol": "http", "http_version": "3"}}}
	h3.Runs[0].Wire = &result.Wire{IPv4: 10, Stray: 3}
	if n := strings.Join(Summarize(h3).Notes, "\n"); !strings.Contains(n, "(earlier runs' late retransmissions and closes, other paths' kept QUIC connections), seen during 1 run, not counted") {
		t.Errorf("an HTTP/3 run's notes:\n%s", n)
	}
	if strings.Contains(notes, "left out") {
		t.Errorf("a run with strays was left out:\n%s", notes)
	}
	if strings.Contains(notes, "no room") {
		t.Errorf("a note of dropped frames without any:\n%s", notes)
	}
	// Frames the capture's ring had no room for are noted too.
	f.Runs[2].Wire.Dropped = 40
	f.Runs[1].Wire.ClientSide.Dropped = 2
	if notes := strings.Join(Summarize(f).Notes, "\n"); !strings.Contains(notes, "no room for 42 frames during 2 runs") {
		t.Errorf("notes:\n%s", notes)
	}
	f.Runs[2].Wire.Dropped, f.Runs[1].Wire.ClientSide.Dropped = 1, 0
	if notes := strings.Join(Summarize(f).Notes, "\n"); !strings.Contains(notes, "no room for 1 frame during 1 run (") {
		t.Errorf("one frame in one run:\n%s", notes)
	}
}

// TestWirePercentObeysTheResponseTimesRule: the trial's cell whose
// baseline wire runs (0.0 and 2.4 ms: CI 0.000–5.11 around 1.20) disagree
// more than their mean: the % change of the wire time is refused as the
// response time's is, with the same reason, not printed as -23.8%.
func TestWirePercentObeysTheResponseTimesRule(t *testing.T) {
	cell := func(p string, runs ...float64) *Cell {
		c := &Cell{Protocol: "dns", Path: p, Conns: 1, Runs: runs, RunIndex: []int{1, 2}}
		m := (runs[0] + runs[1]) / 2
		c.MeanMS, c.CI95MS = &m, &[2]float64{m - 25*math.Abs(runs[1]-runs[0])/2, m + 25*math.Abs(runs[1]-runs[0])/2}
		c.Metrics = map[string]*MetricStat{WireMetric: {N: 2, Mean: m, CI95: c.CI95MS, Runs: runs, RunIndex: []int{1, 2}}}
		return c
	}
	cmp := Compare(cell("ipv4", 0.0, 2.4), cell("ipv6", 0.8, 1.03))
	if cmp.PctIncrease != nil || cmp.Wire.PctChange != nil {
		t.Fatalf("%% given: time %v, wire %v", cmp.PctIncrease, cmp.Wire.PctChange)
	}
	if why := cmp.Wire.NA["pct_change"]; why != cmp.NA["pct_increase"] || why == "" {
		t.Errorf("wire's reason %q, the time's %q", why, cmp.NA["pct_increase"])
	}
	// A baseline that agrees with itself keeps its %.
	if cmp := Compare(cell("ipv4", 10, 10.2), cell("ipv6", 11, 11.2)); cmp.Wire.PctChange == nil {
		t.Errorf("a steady baseline's wire %% refused: %v", cmp.Wire.NA)
	}
}

// TestEachNoteOnlyWhereItsRowOrMarkIs: the ‡ note only where a ‡ is
// printed (a cell of one run has no interval to mark), the client turns
// said inside the response time where there is no wire row, and the wire
// time from the SYN where the names were given (--resolve).
func TestEachNoteOnlyWhereItsRowOrMarkIs(t *testing.T) {
	one := Cell{Protocol: "http", Path: "ipv4", Conns: 1, MeanMS: f64(1), Runs: []float64{1}, RunIndex: []int{1}, FewRuns: true,
		Metrics: map[string]*MetricStat{ClientTurnMetric: {N: 1, Mean: 0.1}}}
	sec := meansSection("HTTP", []Cell{one}, []int{1}, "")
	if !slices.Equal(sec.Footer, []string{ClientTurnAloneNote}) {
		t.Errorf("one run, turns without wire: notes %q", sec.Footer)
	}
	two := one
	two.Runs, two.RunIndex, two.CI95MS = []float64{1, 1.2}, []int{1, 2}, &[2]float64{0.5, 1.7}
	two.Metrics = map[string]*MetricStat{WireMetric: {N: 2, Mean: 0.9}, ClientTurnMetric: {N: 2, Mean: 0.1}}
	sec = meansSection("HTTP", []Cell{two}, []int{1}, lookupWhy(&Summary{Notes: []string{result.ResolveNotePrefix + "srv=192.0.2.1 were given"}}, "http"))
	if !slices.Equal(sec.Footer, []string{WireGivenNote, ClientTurnNote, FewRunsNote}) {
		t.Errorf("two runs, wire, --resolve: notes %q", sec.Footer)
	}
	if sec = meansSection("HTTP", []Cell{two}, []int{1}, ""); sec.Footer[0] != WireNote {
		t.Errorf("looked up: %q", sec.Footer[0])
	}
	// HTTP/3 sends no SYN: without a lookup its wire time starts at the
	// first QUIC datagram; an IP literal URL looks nothing up (trial4 F1).
	h3 := two
	h3.Negotiated = map[string]int{"h3": 2}
	if sec = meansSection("HTTP/3", []Cell{h3}, []int{1}, whyGiven); !strings.Contains(sec.Footer[0], "from the first QUIC datagram leaving (the names were given") || strings.Contains(sec.Footer[0], "SYN leaving") {
		t.Errorf("h3, --resolve: %q", sec.Footer[0])
	}
	if sec = meansSection("HTTP/3", []Cell{h3}, []int{1}, ""); sec.Footer[0] != WireNote {
		t.Errorf("h3 looked up: %q", sec.Footer[0])
	}
	lit := &Summary{IPLiteral: []string{"http"}}
	if sec = meansSection("HTTP", []Cell{two}, []int{1}, lookupWhy(lit, "http")); !strings.Contains(sec.Footer[0], "from the SYN leaving (the URL's host is an IP literal") {
		t.Errorf("IP literal: %q", sec.Footer[0])
	}
	f := build(baseMS, otherMS)
	f.Header.Spec = map[string]any{"cells": []any{map[string]any{"protocol": "http", "url": "http://[::1]:8080/"}}}
	if s := Summarize(f); !slices.Equal(s.IPLiteral, []string{"http"}) {
		t.Errorf("an IP literal url's group: ip_literal %q", s.IPLiteral)
	}
	f.Header.Spec = map[string]any{"cells": []any{map[string]any{"protocol": "http", "url": "http://localhost:8080/"}}}
	if s := Summarize(f); s.IPLiteral != nil {
		t.Errorf("a named host's group: ip_literal %q", s.IPLiteral)
	}
}

// TestNoWireRowFromAFewSamples: a cell whose wire time rests on a minority
// of its transactions (keepalive: only a new connection's has one) gets
// no wire mean, and no wire comparison, but says how few had it (trial6
// F18: one new connection's wire time beside a kept-connection mean).
func TestNoWireRowFromAFewSamples(t *testing.T) {
	f := build(baseMS, otherMS)
	for i := range f.Samples {
		s := &f.Samples[i]
		if s.OK() && (s.Path == "ipv4" || s.Run == 1 && s.User == 0) {
			s.WireNS = s.TotalNS - 100_000
			if s.Path == "ipv6" {
				s.ClientTurnNS = s.WireNS / 2 // half of a wire time that is no figure
			}
		}
	}
	s := Summarize(f)
	if notes := strings.Join(s.Notes, "\n"); strings.Contains(notes, "client turns are more than") {
		t.Errorf("the client turns' note weighs them against a wire time of one sample: %q", s.Notes)
	}
	var v6 *Cell
	for i := range s.Cells {
		if s.Cells[i].Path == "ipv6" {
			v6 = &s.Cells[i]
		}
	}
	if w := v6.Metrics[WireMetric]; w == nil || w.Samples != 1 || !v6.Minority(WireMetric) {
		t.Fatalf("ipv6 wire %+v of %d completed", w, v6.Completed)
	}
	for _, c := range s.Comparisons {
		if c.Wire != nil {
			t.Errorf("a wire comparison of %s from one sample: %+v", c.Path, c.Wire)
		}
	}
	var b bytes.Buffer
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	why := "1 of " + itoa(v6.Completed) + " samples have wire time"
	if !strings.Contains(b.String(), "n/a ("+why+")") || strings.Contains(b.String(), "wire time against") {
		t.Errorf("report.txt lacks %q or compares the wire time:\n%s", why, b.String())
	}
	// results.csv follows the same rule: no wire mean, interval nor
	// comparison of the one sample, and why in wire_na (trial6 F18 left
	// the CSV's wire mean of one sample of many).
	b.Reset()
	if err := CSV(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, r := range csvRows(t, b.String()) {
		wire := r["wire_mean_ms"] + r["wire_ci95_lo_ms"] + r["wire_ci95_hi_ms"] + r["wire_diff_ms"] + r["wire_ci95_diff_lo_ms"] + r["wire_ci95_diff_hi_ms"]
		switch {
		case r["path"] == "ipv6" && (wire != "" || r["wire_na"] != why):
			t.Errorf("ipv6's row: wire columns %q, wire_na %q, want none and %q", wire, r["wire_na"], why)
		case r["path"] == "ipv4" && (r["wire_mean_ms"] == "" || r["wire_na"] != ""):
			t.Errorf("ipv4's row (every sample has wire time): wire mean %q, wire_na %q", r["wire_mean_ms"], r["wire_na"])
		}
	}
	// summary.json keeps the figure (its samples say how few) and says why
	// it is none in na.
	if v6.NA["metrics."+WireMetric] != why {
		t.Errorf("summary.json's na %v lacks %q", v6.NA, why)
	}
}

// TestTheMeansTableGivesItsRowsOnePrecision: the wire mean and the client
// turns under a mean of 166.8 are 167.0 and 120.0, not 167 and 120
// (trial12: one column, two precisions).
func TestTheMeansTableGivesItsRowsOnePrecision(t *testing.T) {
	c := Cell{Protocol: "http", Path: "ipv4", Conns: 5, MeanMS: f64(166.8), Runs: []float64{166.8},
		Metrics: map[string]*MetricStat{WireMetric: {N: 1, Mean: 167.04}, ClientTurnMetric: {N: 1, Mean: 120}}}
	rows := meanRows("ipv4", []Cell{c}, []int{5}, true, true)
	got := map[string]string{}
	for _, r := range rows {
		got[r[1]] = r[2]
	}
	if got["mean"] != "166.8" || got["wire mean"] != "167.0" || got["client turns"] != "120.0" {
		t.Errorf("mean %q, wire mean %q, client turns %q", got["mean"], got["wire mean"], got["client turns"])
	}
}
