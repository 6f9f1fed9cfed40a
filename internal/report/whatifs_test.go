package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"v6lab/internal/report/stats"
	"v6lab/internal/report/whatif"
	"v6lab/internal/result"
)

// whatIfFile is a dual cell whose samples carry known per-family
// handshake times: in each of two counted runs, IPv6 slower than IPv4 by
// 1..5 ms in five samples and faster by as much in five; a warm-up run
// whose samples (IPv6 silent) count nowhere; one sample with no IPv4 fate
// (left out); and a pinned ipv4 cell, which races nothing.
func whatIfFile() *result.File {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: result.FormatVersion, Name: "whatif", Created: t0, Target: "lab", Baseline: "ipv4"}}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for run := range 3 {
		for _, p := range []string{"ipv4", "dual"} {
			r := result.Run{Kind: result.KindRun, Cell: "v2/" + p + "/1", Protocol: "v2", Path: p, Conns: 1, Run: run, Warmup: run == 0,
				Start: t0.Add(time.Duration(run) * time.Second), End: t0.Add(time.Duration(run)*time.Second + 100*time.Millisecond)}
			for i := 1; i <= 10; i++ {
				s := result.Sample{Kind: result.KindSample, Cell: r.Cell, Protocol: r.Protocol, Path: p, Conns: 1, Run: run, Warmup: run == 0,
					Start: t0, TotalNS: 30e6, Marker: "200 OK"}
				if p == "dual" {
					s.Metrics = map[string]float64{"he_attempts": 1, "ipv6_won": 1}
					v6, v4 := ms(20+(i+1)/2), ms(20) // odd i: IPv6 slower by 1..5 ms
					if i%2 == 0 {
						v6, v4 = ms(20), ms(20+i/2) // even i: IPv4 slower
					}
					result.PutFate(s.Metrics, true, result.Fate{State: result.FateDone, Time: v6})
					result.PutFate(s.Metrics, false, result.Fate{State: result.FateDone, Time: v4})
					if run == 0 {
						result.PutFate(s.Metrics, true, result.Fate{State: result.FateSilent, Time: ms(250)})
					}
				}
				f.Samples = append(f.Samples, s)
				r.Completed++
			}
			if p == "dual" && run == 1 {
				m := map[string]float64{"he_attempts": 1, "ipv6_won": 1}
				result.PutFate(m, true, result.Fate{State: result.FateDone, Time: ms(3)})
				f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: r.Cell, Protocol: r.Protocol, Path: p, Conns: 1, Run: run,
					Start: t0, TotalNS: 30e6, Marker: "200 OK", Metrics: m})
				r.Completed++
			}
			f.Runs = append(f.Runs, r)
		}
	}
	return f
}

// TestWhatIfTable: the summary replays the dual cell's counted samples at
// every attempt delay of 0 to 500 ms; at 0 ms the rule ends on the faster
// family every time, from 10 ms on (past every difference) on IPv6 every
// time: the slower family (by more than the 1 ms tolerance: 2..5 ms) in
// 8 of 20 samples, losing 3.5 ms on average over them, 1.5 ms over all
// (1..5 ms in half); summary.json, report.txt and report.html carry it.
func TestWhatIfTable(t *testing.T) {
	s := Summarize(whatIfFile())
	var dual, pinned *Cell
	for i := range s.Cells {
		switch s.Cells[i].Path {
		case "dual":
			dual = &s.Cells[i]
		case "ipv4":
			pinned = &s.Cells[i]
		}
	}
	if dual == nil || pinned == nil {
		t.Fatalf("cells %+v", s.Cells)
	}
	if pinned.WhatIf != nil {
		t.Errorf("the pinned cell has a what-if: %+v", pinned.WhatIf)
	}
	w := dual.WhatIf
	if w == nil || w.N != 20 || w.Missing != 1 || len(w.Points) != 51 || w.Rule != WhatIfRule {
		t.Fatalf("what-if %+v", w)
	}
	p0, p250 := w.Points[0], w.Points[25]
	if p0.DelayMS != 0 || p0.Slower != 0 || *p0.LostMeanMS != 0 {
		t.Errorf("at 0 ms: %+v", p0)
	}
	want, _ := stats.Wilson(8, 20)
	if p250.DelayMS != 250 || p250.Slower != 8 || *p250.SlowerShare != 0.4 || *p250.SlowerCI95 != want ||
		math.Abs(*p250.LostMeanMS-1.5) > 1e-9 || math.Abs(*p250.LostWhenSlowerMS-3.5) > 1e-9 || *p250.IPv6Share != 1 {
		t.Errorf("at 250 ms: %+v", p250)
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"what_if":{"rule":"prefer-ipv6","tolerance_ms":1,"n":20,"missing":1,"points":[{"delay_ms":0,"n":20,"slower":0,"slower_share":0,`) {
		t.Errorf("summary.json's what-if: %s", js)
	}
	var b bytes.Buffer
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	var squeezed []string // each line's fields one space apart
	for _, l := range strings.Split(b.String(), "\n") {
		squeezed = append(squeezed, strings.Join(strings.Fields(l), " "))
	}
	txt := strings.Join(squeezed, "\n")
	for _, line := range []string{"V2: timer what-if of the dual path", "dual 1 20 (1 left out: a family unknown) 0 0% (0 of 20) (0–16.11%) 0 50%",
		"dual 1 20 (1 left out: a family unknown) 250 40% (8 of 20) (21.88–61.34%) 1.50 100%", WhatIfNote} {
		if !strings.Contains(txt, line) {
			t.Errorf("report.txt lacks %q:\n%s", line, b.String())
		}
	}
	b.Reset()
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-plot="whatif-v2-dual-1"`, "timer what-if (20 samples)", "slower family chosen (%)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}

// TestAWhatIfWithNoSampleIsOneLine (trial6 F16): a dual cell whose races
// saw one family (whatif off) is one line saying so, not a row of dashes
// per attempt delay.
func TestAWhatIfWithNoSampleIsOneLine(t *testing.T) {
	w := newWhatIf()
	for range 7 {
		w.Add(whatif.Sample{})
	}
	wi := finishWhatIf(w)
	if wi.N != 0 || wi.Missing != 7 || len(wi.Points) < 2 {
		t.Fatalf("what-if %+v", wi)
	}
	sec, ok := WhatIfSection("HTTP", []Cell{{Protocol: "web", Path: "dual", Conns: 10, WhatIf: wi}})
	if !ok || len(sec.Rows) != 1 || sec.Rows[0][4] != WhatIfNone || sec.Rows[0][2] != "0 (7 left out: a family unknown)" {
		t.Errorf("rows %q", sec.Rows)
	}
}
