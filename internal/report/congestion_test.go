package report

import (
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// towson builds a congestion experiment's samples: groups c4b (C4B) and
// none, two paths, two counted runs and one warm-up run each.
func towson() *result.File {
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: 1, Name: "towson", Created: t0, Target: "lab", Baseline: "ipv4"}}
	for _, g := range []struct {
		name  string
		level string
		delay float64
	}{{"c4b", "C4B", 100}, {"none", "", 8}} {
		for _, p := range []string{"ipv4", "ipv6"} {
			for run := 0; run < 3; run++ {
				cell := result.CellKey(g.name, p, 1)
				d := g.delay + float64(run)
				f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: cell, Protocol: g.name, Path: p, Conns: 1, Run: run,
					Warmup: run == 0, Start: t0, TotalNS: int64((d + 2) * 1e6),
					Metrics: map[string]float64{"server_delay_ms": d, "server_throughput_mbps": 2700 / d, "server_retransmissions": 0}})
				r := result.Run{Kind: result.KindRun, Cell: cell, Protocol: g.name, Path: p, Conns: 1, Run: run, Warmup: run == 0,
					Start: t0, End: t0.Add(time.Second), Completed: 1}
				if g.level != "" {
					// The warm-up run's background must not count.
					off := 10.0
					if run == 0 {
						off = 1000
					}
					r.Background = &result.Background{Level: g.level, Flows: []result.BackgroundFlow{
						{ID: 1, Proto: "tcp", Path: "ipv4", OfferedMbps: off, SentMbps: off - 1, DeliveredMbps: off - 2},
						{ID: 2, Proto: "udp", Path: "ipv6", OfferedMbps: 5, SentMbps: 5, DeliveredMbps: 4}}}
				}
				f.Runs = append(f.Runs, r)
			}
		}
	}
	return f
}

func TestCongestionTableAndBars(t *testing.T) {
	s := Summarize(towson())
	var c4b *Cell
	for i := range s.Cells {
		if s.Cells[i].Protocol == "c4b" && s.Cells[i].Path == "ipv6" {
			c4b = &s.Cells[i]
		}
	}
	if c4b == nil || c4b.Background == nil {
		t.Fatalf("no background in the c4b cell: %+v", c4b)
	}
	b := c4b.Background
	if b.Level != "C4B" || b.Runs != 2 || b.Total != (BackgroundRates{15, 14, 12}) || *b.Groups["ipv6 udp"] != (BackgroundRates{5, 5, 4}) {
		t.Errorf("background %+v, ipv6 udp %+v", b, b.Groups["ipv6 udp"])
	}
	sec, ok := CongestionTable(s)
	if !ok || len(sec.Rows) != 4 {
		t.Fatalf("table %+v", sec)
	}
	// The uncongested group first, then the levels.
	if sec.Rows[0][0] != "none" || sec.Rows[0][1] != "none" || sec.Rows[2][1] != "C4B" || sec.Rows[3][2] != "ipv6" {
		t.Errorf("rows %v", sec.Rows)
	}
	if got := sec.Rows[2][4]; !strings.HasPrefix(got, "102 (") { // delay: runs 1 and 2, 101 and 102
		t.Errorf("C4B ipv4 delay %q", got)
	}
	if got := sec.Rows[2][7]; got != "12.0 / 15.0" {
		t.Errorf("background column %q", got)
	}
	plots := congestionPlots(s)
	if len(plots) != 2 {
		t.Fatalf("%d plots", len(plots))
	}
	svg := plots[1].SVG()
	for _, want := range []string{`data-plot="congestion-delay"`, `>NONE</text>`, `>C4B</text>`, `class="ci"`, `ipv6, C4B: `} {
		if !strings.Contains(svg, want) {
			t.Errorf("delay plot lacks %q", want)
		}
	}
	var txt strings.Builder
	if err := Text(&txt, s); err != nil || !strings.Contains(txt.String(), "Under background traffic") {
		t.Errorf("text report: %v", err)
	}
	// Without server-side figures there is no such table.
	if _, ok := CongestionTable(Summarize(build([]float64{1, 2}, []float64{1, 2}))); ok {
		t.Error("a plain experiment got a congestion table")
	}
}
