package report

import (
	"slices"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

func TestSelfCheckPerCell(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	run := func(path string, n int, l *result.Load, warm bool) result.Run {
		return result.Run{Protocol: "http", Path: path, Conns: 100, Run: n, Warmup: warm, Load: l, Start: t0, End: t0.Add(time.Second)}
	}
	hot := &result.Load{CPUs: 2, ClientCPU: 1.9, HostBusy: 1, HostTicks: 200, Client: true, Host: true, Why: "the client used 1.90 of the 2 CPUs it may use", Roles: map[string]float64{"server": 0.2}}
	warm := &result.Load{CPUs: 2, ClientCPU: 0.5, HostBusy: 0.97, HostTicks: 200, Host: true, LagP50NS: 2e5, LagReads: 1000, MedianNS: 1e7, Roles: map[string]float64{"server": 0.4}}
	cool := &result.Load{CPUs: 2, ClientCPU: 0.3, HostBusy: 0.5, HostTicks: 200}
	runs := []result.Run{
		run("ipv4", 0, hot, true), // a warm-up: not counted
		run("ipv4", 1, warm, false), run("ipv4", 2, warm, false),
		run("ipv6", 1, hot, false), run("ipv6", 2, cool, false),
		run("6in4", 1, cool, false), run("6in4", 2, nil, false),
	}
	sc := selfChecks(runs)
	v4, v6, t4 := sc[cellKey{"http", "ipv4", 100}], sc[cellKey{"http", "ipv6", 100}], sc[cellKey{"http", "6in4", 100}]
	if v4.Runs != 2 || v4.ClientSaturated || !v4.HostSaturated || v4.HostRuns != 2 || v4.ClientCPU != 0.5 || v4.HostBusy != 0.97 || v4.LagP50MS != 0.2 || v4.Roles["server"] != 0.4 {
		t.Errorf("ipv4: %+v", v4)
	}
	if v6.Runs != 2 || !v6.ClientSaturated || v6.ClientRuns != 1 || v6.ClientCPU != 1.1 || v6.HostBusy != 0.75 || v6.Why != hot.Why {
		t.Errorf("ipv6: %+v", v6)
	}
	if t4.Runs != 1 || t4.saturated() {
		t.Errorf("6in4: %+v", t4)
	}
	cells := []Cell{{Protocol: "http", Path: "ipv4", Conns: 100, SelfCheck: v4}, {Protocol: "http", Path: "ipv6", Conns: 100, SelfCheck: v6}, {Protocol: "http", Path: "6in4", Conns: 100, SelfCheck: t4}}
	notes := strings.Join(selfCheckNotes(cells, "lab"), "\n")
	for _, want := range []string{"client was saturated in http/ipv6/100 (1 of 2 runs: the client used 1.90", "--segment",
		"other processes on the host took most of the CPUs in http/ipv4/100 (2 of 2 runs, 97% busy: v6lab 25%, the lab's roles 20%, softirq 0%, other processes on the host 52%)",
		"host's CPUs were saturated in http/ipv6/100 (1 of 2 runs, 100% busy: v6lab 95%, the lab's roles 10%, softirq 0%, other processes on the host 0%)", "the lab's CPU cost"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "http/6in4") {
		t.Errorf("an unsaturated cell is named:\n%s", notes)
	}
	if n := selfCheckNotes(cells[2:], "loopback"); len(n) != 0 {
		t.Errorf("notes for an unsaturated run: %q", n)
	}
	if n := selfCheckNotes(cells[1:2], "loopback"); len(n) != 2 || !strings.Contains(n[1], "waits for a CPU") {
		t.Errorf("off the lab: %q", n)
	}

	// Runs too short to judge alone are judged together: 30 runs of 20
	// ms, 2 ticks each, the host 100% busy in every one.
	var short []result.Run
	for i := range 30 {
		l := &result.Load{CPUs: 2, ClientCPU: 1.2, Softirq: 0.3, HostBusy: 1, HostTicks: 2, LagP50NS: 1e4, LagReads: 200, MedianNS: 1e7}
		short = append(short, result.Run{Protocol: "http", Path: "ipv4", Conns: 100, Run: i, Load: l, Start: t0, End: t0.Add(20 * time.Millisecond)})
	}
	sc4 := selfChecks(short)[cellKey{"http", "ipv4", 100}]
	if !sc4.HostSaturated || sc4.HostRuns != 0 || sc4.ClientSaturated || !strings.Contains(sc4.Why, "its runs together") {
		t.Errorf("short runs pooled: %+v", sc4)
	}
	if n := selfCheckNotes([]Cell{{Protocol: "http", Path: "ipv4", Conns: 100, SelfCheck: sc4}}, "lab"); len(n) != 1 || !strings.Contains(n[0], "http/ipv4/100 (its 30 runs together, 100% busy: v6lab 60%, softirq 30%, other processes on the host 10%)") {
		t.Errorf("pooled note: %q", n)
	}
}

// TestSelfCheckBlamesWhoUsedTheCPU (trial6 F14): web-loss1/2's runs, one
// quiet (10% busy) and one 97% busy with v6lab at 4% of a CPU and softirq
// at 1%: the note says other processes took the CPUs, with the busy run's
// own shares (not the 53% mean beside "no idle time"), and advises a quiet
// machine, not shaping the lab's links. Roles not measured are absent.
func TestSelfCheckBlamesWhoUsedTheCPU(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	quiet := &result.Load{CPUs: 2, ClientCPU: 0.1, HostBusy: 0.1, HostTicks: 600}
	busy := &result.Load{CPUs: 2, ClientCPU: 0.041, HostBusy: 0.97, Softirq: 0.01, HostTicks: 600, Host: true, Why: "the host's CPUs were 97% busy"}
	runs := []result.Run{
		{Protocol: "web", Path: "nat64", Conns: 50, Run: 1, Load: quiet, Start: t0, End: t0.Add(3 * time.Second)},
		{Protocol: "web", Path: "nat64", Conns: 50, Run: 2, Load: busy, Start: t0, End: t0.Add(3 * time.Second)},
	}
	sc := selfChecks(runs)[cellKey{"web", "nat64", 50}]
	if sc.Roles != nil || sc.Busy == nil || sc.Busy.Busy != 0.97 || sc.Busy.Other != 0.94 {
		t.Fatalf("self-check %+v busy %+v", sc, sc.Busy)
	}
	notes := strings.Join(selfCheckNotes([]Cell{{Protocol: "web", Path: "nat64", Conns: 50, SelfCheck: sc}}, "lab"), "\n")
	for _, want := range []string{"other processes on the host took most of the CPUs in web/nat64/50 (1 of 2 runs, 97% busy: v6lab 2%, softirq 1%, other processes on the host 94%)", "quiet machine"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	for _, not := range []string{"no idle time", "53%", "--rate", "forwarding", "lab's roles"} {
		if strings.Contains(notes, not) {
			t.Errorf("notes say %q:\n%s", not, notes)
		}
	}
}

// TestSelfCheckNamesOnlyTheMeasuredPathsWork (trial 15): the host's note
// blames the lab's work for the paths measured only: the ipv6only preset
// (ipv6, nat64, 464xlat) has no 6in4 to blame.
func TestSelfCheckNamesOnlyTheMeasuredPathsWork(t *testing.T) {
	busy := &SelfCheck{Runs: 2, HostSaturated: true, HostRuns: 2, HostBusy: 1}
	var cells []Cell
	for _, p := range []string{"ipv6", "nat64", "464xlat"} {
		cells = append(cells, Cell{Protocol: "http", Path: p, Conns: 10, SelfCheck: busy})
	}
	notes := strings.Join(selfCheckNotes(cells, "lab"), "\n")
	if strings.Contains(notes, "6in4") || !strings.Contains(notes, "(forwarding, nat64's translation, 464xlat's two translations, which real routers") {
		t.Errorf("ipv6only's note:\n%s", notes)
	}
	cells = append(cells, Cell{Protocol: "http", Path: "6in4", Conns: 10})
	if notes := strings.Join(selfCheckNotes(cells, "lab"), "\n"); !strings.Contains(notes, "(forwarding, 6in4's encapsulation and decapsulation, nat64's") {
		t.Errorf("with 6in4:\n%s", notes)
	}
}

// TestRateHasDecimalsBelowTen (trial 16): about one transaction a second
// read "rate/s 0"; below 10 the rate has the decimals that tell it.
func TestRateHasDecimalsBelowTen(t *testing.T) {
	for v, want := range map[float64]string{0.49: "0.49", 0.987: "0.987", 5.25: "5.25", 12.4: "12", 1234.6: "1235"} {
		if got := optRate(&v); got != want {
			t.Errorf("%v: %q, want %q", v, got, want)
		}
	}
}

// TestALoadTestsHeadingsSayQueriesInFlight (trial 25): a DNS load test's
// conns are UDP queries in flight: its headings say per query, not per
// connection; a group without the load engine keeps per connection.
func TestALoadTestsHeadingsSayQueriesInFlight(t *testing.T) {
	spec := map[string]any{"cells": []any{
		map[string]any{"protocol": "dns", "label": "q", "params": map[string]any{"mode": "load"}, "paths": []string{"ipv4"}, "conns": []int{10}, "runs": 1},
		map[string]any{"protocol": "dns", "label": "s", "params": map[string]any{"mode": "stub"}, "paths": []string{"ipv4"}, "conns": []int{10}, "runs": 1},
	}}
	f := readSpec(spec)
	s := &Summary{Engines: f.engines}
	if s.Engines["q"] != LoadEngine || s.Engines["s"] != "" {
		t.Fatalf("engines %v", s.Engines)
	}
	if got := perWhat(s, "q"); got != "per query (conns: queries in flight)" {
		t.Errorf("load: %q", got)
	}
	if got := perWhat(s, "s"); got != "per connection" {
		t.Errorf("stub: %q", got)
	}
}

// TestSelfCheckFlagsAShortSlowRun (trial8 F1): a baseline cell of 2 ms
// runs with one run of 186 ms whose host was 97% busy over 38 ticks (too
// few to judge it alone) while v6lab used 6% of a CPU: that run is
// flagged, the note names the cell and the run, and the dual table's and
// the increase table's differences with it are marked. A run as busy
// whose time is like its cell's others is not flagged.
func TestSelfCheckFlagsAShortSlowRun(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	run := func(p string, n int, ms float64, ticks int64, busy float64) result.Run {
		d := time.Duration(ms * float64(time.Millisecond))
		return result.Run{Protocol: "v3", Path: p, Conns: 1, Run: n, Start: t0, End: t0.Add(d),
			Load: &result.Load{CPUs: 2, ClientCPU: 0.061, HostBusy: busy, HostTicks: ticks, MedianNS: int64(d)}}
	}
	sc := selfChecks([]result.Run{run("ipv4", 1, 2.1, 0, 0.5), run("ipv4", 2, 186, 38, 0.974),
		run("dual", 1, 8, 1, 1), run("dual", 2, 9, 38, 0.98)})
	v4, dual := sc[cellKey{"v3", "ipv4", 1}], sc[cellKey{"v3", "dual", 1}]
	if !v4.HostSaturated || v4.HostRuns != 1 || len(v4.SlowBusy) != 1 || !v4.othersBusy() {
		t.Fatalf("ipv4: %+v busy %+v", v4, v4.Busy)
	}
	if dual.saturated() || dual.SlowBusy != nil {
		t.Errorf("dual, busy but not slower than its other run: %+v", dual)
	}
	won := &MetricStat{Mean: 1}
	cells := []Cell{{Protocol: "v3", Path: "ipv4", Conns: 1, MeanMS: f64(94.05), SelfCheck: v4},
		{Protocol: "v3", Path: "dual", Conns: 1, MeanMS: f64(8.5), SelfCheck: dual, Metrics: map[string]*MetricStat{"ipv6_won": won}}}
	notes := strings.Join(selfCheckNotes(cells, "lab"), "\n")
	want := "other processes on the host took most of the CPUs in v3/ipv4/1 (1 of 2 runs, 97% busy: v6lab 3%, softirq 0%, other processes on the host 94%; " +
		"too short to judge alone, but run 2: 97% busy over 38 ticks, its median response time 89× the other runs')"
	if !strings.Contains(notes, want) {
		t.Errorf("notes lack\n%s\n:\n%s", want, notes)
	}
	sec, ok := EyeballsSection("V3", cells, "", "v3")
	if !ok || len(sec.Rows) != 1 || sec.Rows[0][8] != "-85.5 (host busy)" || !slices.Contains(sec.Footer, BusyNote) {
		t.Errorf("dual table %v, footer %q", sec.Rows, sec.Footer)
	}
	s := &Summary{Baseline: "ipv4", Cells: cells}
	cmps := []Comparison{{Protocol: "v3", Path: "dual", Conns: 1, DiffMS: f64(-85.55)}}
	secs := comparisonSections(s, "V3", cmps, cells, []int{1})
	if len(secs) == 0 || !strings.HasSuffix(secs[0].Rows[0][2], " (host busy)") || !slices.Contains(secs[0].Footer, BusyNote) {
		t.Errorf("increase table %v", secs)
	}
	// In short says it of the verdict that rests on that baseline.
	s.Comparisons = []Comparison{cmpOf("v3", "dual", 1, -90, 0.01)}
	if lines := VerdictLines(s); len(lines) != 2 || !strings.Contains(lines[1], "; host busy in v3/ipv4/1: other processes held the CPUs") {
		t.Errorf("In short:\n%s", strings.Join(lines, "\n"))
	}
	// Without the busy baseline: no mark.
	cells[0].SelfCheck = nil
	if sec, _ := EyeballsSection("V3", cells, "", "v3"); strings.Contains(sec.Rows[0][8], "busy") || slices.Contains(sec.Footer, BusyNote) {
		t.Errorf("marked without a busy cell: %v %q", sec.Rows, sec.Footer)
	}
}

// TestHostBusyIsNotSaidOfAPathWithNoFigures (trial11 LOW 13): a path whose
// every transaction failed (IPv6 loss 100%) has no figures the host's busy
// CPUs could distort: neither In short nor the increase table blames them,
// though the cell's runs were busy; a path with figures beside the same
// busy baseline still is.
func TestHostBusyIsNotSaidOfAPathWithNoFigures(t *testing.T) {
	busy := &SelfCheck{HostSaturated: true, Busy: &BusySplit{Busy: 0.97, Other: 0.9}}
	if !busy.othersBusy() {
		t.Fatal("the fixture is not busy")
	}
	cells := []Cell{{Protocol: "https", Path: "ipv4", Conns: 2, MeanMS: f64(3), Runs: []float64{3, 3}, Completed: 20, CompletionRate: f64(1)},
		{Protocol: "https", Path: "ipv6", Conns: 2, Runs: nil, Completed: 0, Failed: 20, CompletionRate: f64(0), SelfCheck: busy}}
	s := &Summary{Baseline: "ipv4", Cells: cells,
		Comparisons: []Comparison{{Protocol: "https", Path: "ipv6", Conns: 2, Baseline: "ipv4", NA: map[string]string{"diff_ms": "a path has no run means"}}}}
	lines := strings.Join(VerdictLines(s), "\n")
	if strings.Contains(lines, "host busy") {
		t.Errorf("In short blames the CPUs for a path with no figures:\n%s", lines)
	}
	secs := comparisonSections(s, "HTTPS", s.Comparisons, cells, []int{2})
	if len(secs) == 0 || strings.Contains(secs[0].Rows[0][2], "busy") || slices.Contains(secs[0].Footer, BusyNote) {
		t.Errorf("increase table %v", secs)
	}
	cells[1].MeanMS, cells[1].Runs, cells[1].Completed, cells[1].CompletionRate = f64(9), []float64{9, 9}, 20, f64(1)
	s.Comparisons = []Comparison{cmpOf("https", "ipv6", 2, 6, 0.01)}
	if lines := strings.Join(VerdictLines(s), "\n"); !strings.Contains(lines, "host busy in https/ipv6/2") {
		t.Errorf("a path with figures beside a busy cell:\n%s", lines)
	}
}
