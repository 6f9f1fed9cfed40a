package report

import (
	"math"
	"strings"
	"testing"
)

func f64(v float64) *float64 { return &v }

// cmp is a comparison of group over path at conns: pct above the
// baseline, with an adjusted paired p and the 95% interval of the paired
// difference ±(|pct|+1), spanning zero (of a baseline mean of 100 ms,
// baseCells).
func cmpOf(group, path string, conns int, pct, p float64) Comparison {
	r := math.Abs(pct) + 1
	return Comparison{Protocol: group, Path: path, Conns: conns, Baseline: "ipv4", PctIncrease: f64(pct), PPairedHolm: f64(p), PPaired: f64(p),
		PairedDiffMS: f64(pct), CI95PairedDiffMS: &[2]float64{-r, r}}
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
	if got[0].Kind != "failing" || got[1].Kind != "slower" || got[2].Kind != "mixed" || got[3].Kind != "faster" || got[4].Kind != "na" {
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
	if n := clientTurnNote(cells, nil, "lab", false); !strings.Contains(n, "--rate 1G") {
		t.Errorf("unshaped: %q", n)
	}
	if n := clientTurnNote(cells, nil, "lab", true); n == "" || strings.Contains(n, "--rate") {
		t.Errorf("shaped: %q", n)
	}
	// Target hosts (a probe): no lab, no routers, no --rate (trial6 F5).
	for _, target := range []string{"hosts", "loopback"} {
		n := clientTurnNote(cells, nil, target, false)
		if n == "" || strings.Contains(n, "--rate") || strings.Contains(n, "router") || strings.Contains(n, "lab's") || !strings.Contains(n, "--conns") {
			t.Errorf("%s: %q", target, n)
		}
	}
}

// TestADifferenceTheIntervalShowsIsNeverCalledNone: the trial's pmtu
// figures (2 runs each, Holm over 111 comparisons): a difference whose
// raw 95% interval lies above zero is said with its size and interval,
// as not significant after the correction, never as "no significant
// difference" nor a "±" reach; where the percentage is refused the
// difference is said in seconds, not "not comparable"; a throughput
// whose interval spans zero gives way to the response time's that does
// not.
func TestADifferenceTheIntervalShowsIsNeverCalledNone(t *testing.T) {
	smtp := Comparison{Protocol: "smtp-large-ptb-probing", Path: "ipv6", Conns: 1, Baseline: "ipv4", DiffMS: f64(6593.16), PctIncrease: f64(178581),
		Pairs: 2, PairedDiffMS: f64(6593.16), CI95PairedDiffMS: &[2]float64{5689.76, 7496.56}, PPaired: f64(0.0069), PPairedHolm: f64(0.94)}
	page := Comparison{Protocol: "https-page-ptb-probing", Path: "ipv6", Conns: 1, Baseline: "ipv4", DiffMS: f64(3134.79),
		NA:    map[string]string{"pct_increase": "baseline mean not above its 95% CI half-width"},
		Pairs: 2, PairedDiffMS: f64(3134.79), CI95PairedDiffMS: &[2]float64{3111.37, 3158.21}, PPaired: f64(0.0004), PPairedHolm: f64(0.054)}
	bulk := Comparison{Protocol: "http-bulk-ptb-probing", Path: "ipv6", Conns: 1, Baseline: "ipv4", DiffMS: f64(6427.13),
		NA:    map[string]string{"pct_increase": "baseline mean not above its 95% CI half-width"},
		Pairs: 2, PairedDiffMS: f64(6427.13), CI95PairedDiffMS: &[2]float64{6179.58, 6674.69}, PPaired: f64(0.0019), PPairedHolm: f64(0.27),
		Throughput: &MetricComparison{Diff: f64(-191.2), PctChange: f64(-99.96), Pairs: 2, PairedDiff: f64(-191.2),
			CI95PairedDiff: &[2]float64{-1939.7, 1557.2}, PPaired: f64(0.4), PPairedHolm: f64(1)}}
	dns := Comparison{Protocol: "dns-large", Path: "nat64", Conns: 1, Baseline: "ipv4", DiffMS: f64(1001.45),
		NA:    map[string]string{"pct_increase": "baseline mean not above its 95% CI half-width"},
		Pairs: 2, PairedDiffMS: f64(1001.45), CI95PairedDiffMS: &[2]float64{984.8, 1018.1}, PPaired: f64(0.0008), PPairedHolm: f64(0.12)}
	fast := Comparison{Protocol: "dns-large", Path: "ipv6", Conns: 1, Baseline: "ipv4", DiffMS: f64(-0.5), PctIncrease: f64(-40),
		Pairs: 2, PairedDiffMS: f64(-0.5), CI95PairedDiffMS: &[2]float64{-0.8, -0.2}, PPaired: f64(0.01), PPairedHolm: f64(0.01)}
	cmps := []Comparison{smtp, page, bulk, fast, dns}
	for range 111 - 6 { // the rest of the trial's comparisons, only counted
		cmps = append(cmps, Comparison{Protocol: "other", Path: "ipv6", Conns: 1, PPaired: f64(0.5), PPairedHolm: f64(1), PctIncrease: f64(0)})
	}
	s := &Summary{Baseline: "ipv4", Comparisons: cmps, Cells: []Cell{
		{Protocol: "smtp-large-ptb-probing", Path: "ipv4", Conns: 1, MeanMS: f64(3.69)},
		{Protocol: "dns-large", Path: "ipv4", Conns: 1, MeanMS: f64(1.25)}}}
	want := map[string]string{
		"smtp-large-ptb-probing": "slower by 6.6 s (95% interval +5.7 to +7.5 s), not significant after Holm's correction over 111 comparisons at 2 runs each",
		"https-page-ptb-probing": "slower by 3.1 s (95% interval +3.1 to +3.2 s), not significant after Holm's correction over 111 comparisons at 2 runs each",
		"http-bulk-ptb-probing":  "slower by 6.4 s (95% interval +6.2 to +6.7 s), not significant after Holm's correction over 111 comparisons at 2 runs each",
		"dns-large":              "40% faster at every load, significant",
		"dns-large/nat64":        "slower by 1.0 s (95% interval +0.98 to +1.02 s), not significant after Holm's correction over 111 comparisons at 2 runs each",
	}
	for i, v := range Verdicts(s)[:5] {
		if i == 4 {
			v.Group += "/nat64"
		}
		if v.Text != want[v.Group] {
			t.Errorf("%s: %q\n want %q", v.Group, v.Text, want[v.Group])
		}
		if i != 3 && v.Kind != "uncorrected" {
			t.Errorf("%s: kind %q", v.Group, v.Kind)
		}
	}
	// Failures at one connection: "1 connection".
	bulk.PPairedHolm, bulk.Throughput = f64(0.01), nil
	fs := &Summary{Baseline: "ipv4", Comparisons: []Comparison{bulk}, Cells: []Cell{{Protocol: bulk.Protocol, Path: "ipv6", Conns: 1, Failed: 2, CompletionRate: f64(0)}}}
	if v := Verdicts(fs); !strings.HasSuffix(v[0].Text, "; 0.0% completed at 1 connection") {
		t.Errorf("failures at one connection: %q", v[0].Text)
	}
	// No interval at all (one run): no reach to quote, no "±".
	one := Comparison{Protocol: "x", Path: "ipv6", Conns: 1, Baseline: "ipv4", PctIncrease: f64(3), DiffMS: f64(3)}
	if v := Verdicts(&Summary{Baseline: "ipv4", Comparisons: []Comparison{one}}); v[0].Text != "no significant difference from ipv4 at every load, and no 95% interval of the difference to tell by: too few runs (run more)" {
		t.Errorf("no interval: %q", v[0].Text)
	}
	// Welch's interval excludes zero where the paired one does not: the
	// difference is said, with Welch's interval.
	smtp.CI95PairedDiffMS, smtp.CI95DiffMS = &[2]float64{-100, 13000}, &[2]float64{5686.5, 7499.8}
	if v := Verdicts(&Summary{Baseline: "ipv4", Comparisons: []Comparison{smtp}}); !strings.HasPrefix(v[0].Text, "slower by 6.6 s (95% interval +5.7 to +7.5 s)") {
		t.Errorf("Welch's interval above zero: %q", v[0].Text)
	}
	// Significant without a percentage: said in time.
	page.PPairedHolm = f64(0.01)
	if v := Verdicts(&Summary{Baseline: "ipv4", Comparisons: []Comparison{page}}); v[0].Text != "3.1 s slower at every load, significant" {
		t.Errorf("significant without a %%: %q", v[0].Text)
	}
}

// TestAConfidenceLevelIsNever100: 1-p in whole percent, but a p of
// 0.003 is 99.7% and one below 0.0005 ">99.9%", never 100%.
func TestAConfidenceLevelIsNever100(t *testing.T) {
	for v, want := range map[float64]string{0.42: "42%", 0.994: "99%", 0.997: "99.7%", 0.9994: "99.9%", 0.99996: ">99.9%", 1: ">99.9%"} {
		if got := optConf(f64(v), ""); got != want {
			t.Errorf("%g: %q, want %q", v, got, want)
		}
	}
}

// TestAWideIntervalIsNoReassurance: beside a significant load, a load
// whose interval reaches far is not "within" it as a reassurance, and a
// reach of 1000% or more, or one with no % at all, is said in the
// figure's unit, with why not in % (another group's line may be).
func TestAWideIntervalIsNoReassurance(t *testing.T) {
	wide := cmpOf("http", "ipv6", 10, 2, 0.6)
	wide.CI95PairedDiffMS = &[2]float64{-40, 40}
	huge := cmpOf("http", "6in4", 10, 2, 0.6)
	huge.CI95PairedDiffMS = &[2]float64{-2500, 2500}
	noPct := cmpOf("http", "nat64", 10, 2, 0.6)
	noPct.CI95PairedDiffMS = &[2]float64{-27.66, 20}
	noPct.PctIncrease, noPct.NA = nil, map[string]string{"pct_increase": "baseline mean not above its 95% CI half-width"}
	// Two loads without a % for two reasons: each said with its own.
	mixedHuge, mixedNoPct := huge, noPct
	mixedHuge.Path, mixedHuge.Conns, mixedNoPct.Path = "dual", 1, "dual"
	s := &Summary{Baseline: "ipv4", Comparisons: []Comparison{
		cmpOf("http", "ipv6", 1, 30, 0.001), wide,
		cmpOf("http", "6in4", 1, 30, 0.001), huge,
		cmpOf("http", "nat64", 1, 30, 0.001), noPct,
		mixedHuge, mixedNoPct,
	}, Cells: baseCells("http", 1, 10)}
	want := map[string]string{
		"http/ipv6":  "30% slower at 1 connection, significant; no significant difference at 10 connections, but the 95% interval reaches ±40% (run more)",
		"http/6in4":  "30% slower at 1 connection, significant; no significant difference at 10 connections, but the 95% interval reaches ±2.5 s (not in %: at 10 connections, over 1000% of the baseline's mean) (run more)",
		"http/nat64": "30% slower at 1 connection, significant; no significant difference at 10 connections, but the 95% interval reaches ±27.66 ms (not in %: at 10 connections, baseline mean not above its 95% CI half-width) (run more)",
		"http/dual":  "no significant difference from ipv4 at every load, but the 95% interval of the difference reaches ±2.5 s (not in %: at 1 connection, over 1000% of the baseline's mean; at 10 connections, baseline mean not above its 95% CI half-width): too few or too scattered runs to tell (run more)",
	}
	for _, v := range Verdicts(s) {
		if w := want[v.Group+"/"+v.Path]; v.Text != w {
			t.Errorf("%s/%s: %q\n want %q", v.Group, v.Path, v.Text, w)
		}
	}
}

// TestATransactionsVerdictSpeaksOfItsResponseTime (review): the eyeballs
// preset's curl cell fetches a file; its verdict quoted the throughput's
// change (−402 Mbit/s) where the response time moved +300 ms. A cell of
// transactions is about its response time; a transport trial keeps its
// throughput.
func TestATransactionsVerdictSpeaksOfItsResponseTime(t *testing.T) {
	curl := Comparison{Protocol: "curl-aaaa-late", Path: "dual", Conns: 1, Baseline: "ipv4", DiffMS: f64(300), PctIncrease: f64(300),
		CI95DiffMS: &[2]float64{290, 310}, Pairs: 10, PairedDiffMS: f64(300), CI95PairedDiffMS: &[2]float64{295, 305}, PPairedHolm: f64(0.001),
		Throughput: &MetricComparison{Diff: f64(-402), PctChange: f64(-75), CI95Diff: &[2]float64{-450, -350}, Pairs: 10, PairedDiff: f64(-402),
			CI95PairedDiff: &[2]float64{-440, -360}, PPairedHolm: f64(0.001)}}
	file := map[string]*MetricStat{"file_bytes": {N: 10, Mean: 65536}, "throughput_mbps": {N: 10, Mean: 536}}
	s := &Summary{Baseline: "ipv4", Comparisons: []Comparison{curl}, Cells: []Cell{
		{Protocol: curl.Protocol, Path: "ipv4", Conns: 1, MeanMS: f64(100), Metrics: file},
		{Protocol: curl.Protocol, Path: "dual", Conns: 1, MeanMS: f64(400), Metrics: file}}}
	if v := Verdicts(s); v[0].Text != "300% slower at every load, significant" {
		t.Errorf("a transaction cell's verdict: %q", v[0].Text)
	}
	in := ShortOf(s)
	if len(in.Full) != 1 || strings.Contains(in.Full[0].Text, "Mbit/s") || strings.Contains(in.Full[0].Text, "throughput") {
		t.Errorf("In short: %+v", in)
	}
	// A transport trial (no file) is still said in throughput.
	for i := range s.Cells {
		s.Cells[i].Metrics = map[string]*MetricStat{"retransmits": {N: 10}, "throughput_mbps": {N: 10, Mean: 536}}
	}
	if v := Verdicts(s); v[0].Text != "75% slower throughput at every load, significant" {
		t.Errorf("a trial's verdict: %q", v[0].Text)
	}
}
