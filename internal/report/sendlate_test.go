package report

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// lateUDPFile is a samples file of UDP trials at 1 and 10 Mbit/s of
// 1250-byte datagrams (10 ms and 1 ms apart) on two paths, three trials
// each, whose senders ran late as late says (ms per trial).
func lateUDPFile(late map[string][]float64) *result.File {
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: 1, Name: "late", Created: t0, Target: "loopback", Baseline: "ipv4"}}
	for _, label := range []string{"udp-1", "udp-10"} {
		rate := map[string]float64{"udp-1": 1, "udp-10": 10}[label]
		for _, p := range []string{"ipv4", "ipv6"} {
			cell := result.CellKey(label, p, 1)
			for i, l := range late[label+"/"+p] {
				start := t0.Add(time.Duration(i) * 10 * time.Second)
				f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: cell, Protocol: label, Path: p, Conns: 1,
					Run: i + 1, Start: start, TotalNS: 5e9, Metrics: map[string]float64{
						"rate_set_mbps": rate, "datagram_size": 1250, "datagrams_sent": rate * 500, "datagrams_received": rate * 500,
						"lost": 0, "loss_pct": 0, "jitter_ms": 0.1, "offered_mbps": rate, SendLateMetric: l}})
				f.Runs = append(f.Runs, result.Run{Kind: result.KindRun, Cell: cell, Protocol: label, Path: p, Conns: 1, Run: i + 1,
					Start: start, End: start.Add(5 * time.Second), Completed: 1,
					Load: &result.Load{CPUs: 2, ClientCPU: 0.2, HostBusy: 0.3, HostTicks: 1000}})
			}
		}
	}
	return f
}

// TestALateUDPSenderIsSaid: a trial whose sender ran later than a
// datagram's spacing at the asked rate (and than the pacing's 1 ms grain)
// makes its cell's client saturated in the self-check, a note naming the
// cell and how late, and a figure in the UDP tables of report.txt and
// report.html (the study's and each group's transport figures); lateness within those bounds says nothing.
func TestALateUDPSenderIsSaid(t *testing.T) {
	s := Summarize(lateUDPFile(map[string][]float64{
		"udp-1/ipv4":  {0.3, 0.2, 0.4},
		"udp-1/ipv6":  {0.3, 8, 0.5}, // under the 10 ms between datagrams
		"udp-10/ipv4": {0.9, 0.95, 0.4},
		"udp-10/ipv6": {0.3, 35, 0.5}, // 35 times the 1 ms between them
	}))
	for _, c := range s.Cells {
		sc := c.SelfCheck
		name := c.Protocol + "/" + c.Path
		if sc == nil {
			t.Fatalf("%s: no self-check", name)
		}
		if name != "udp-10/ipv6" {
			if sc.ClientSaturated || sc.SenderLate != nil {
				t.Errorf("%s: %+v", name, sc)
			}
			continue
		}
		if l := sc.SenderLate; !sc.ClientSaturated || sc.ClientRuns != 1 || l == nil || *l != (SenderLate{Trials: 1, Of: 3, MaxMS: 35, LimitMS: 1}) ||
			!strings.HasPrefix(sc.Why, "v6lab's UDP sender ran up to 35 ms late in 1 of 3 trials") {
			t.Errorf("%s: %+v (late %+v)", name, sc, l)
		}
	}
	notes := strings.Join(s.Notes, "\n")
	if !strings.Contains(notes, "v6lab's own UDP sender ran late in udp-10/ipv6/1 (up to 35 ms in 1 of 3 trials, past 1 ms): ") ||
		strings.Contains(notes, "udp-1/") || strings.Contains(notes, "client was saturated") {
		t.Errorf("notes:\n%s", notes)
	}
	var txt, page strings.Builder
	if err := Text(&txt, s); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&page, s); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"report.txt": txt.String(), "report.html": page.String()} {
		if !regexp.MustCompile(`offered_mbps(\W|</?th>)+send_late_ms`).MatchString(out) || !strings.Contains(out, "ipv6 sender late, most (ms)") || !strings.Contains(out, "ipv6 sender late (ms)") || !strings.Contains(out, "own UDP sender ran late") {
			t.Errorf("%s lacks the sender's lateness:\n%s", name, out)
		}
	}
}

// TestALateSenderAddsToTheClientsOwnReasons: a cell whose client the load
// figures already found saturated keeps that reason, the sender's added.
func TestALateSenderAddsToTheClientsOwnReasons(t *testing.T) {
	c := Cell{Protocol: "udp", Path: "ipv4", Conns: 1, Metrics: map[string]*MetricStat{
		"rate_set_mbps": stat(100), "datagram_size": stat(1250), SendLateMetric: {N: 2, Runs: []float64{0.05, 0.3}}},
		SelfCheck: &SelfCheck{Runs: 2, ClientSaturated: true, ClientRuns: 1, Why: "the client used 1.90 of the 2 CPUs it may use"}}
	// 0.1 ms between datagrams: 0.3 ms late is within the 1 ms grain.
	cells := []Cell{c}
	markLateSenders(cells)
	if sc := cells[0].SelfCheck; sc.SenderLate != nil || sc.Why != c.SelfCheck.Why {
		t.Fatalf("within the grain: %+v", sc)
	}
	c.Metrics[SendLateMetric] = &MetricStat{N: 2, Runs: []float64{2.5, 0.3}}
	cells = []Cell{c}
	markLateSenders(cells)
	sc := cells[0].SelfCheck
	if sc.ClientRuns != 1 || sc.Why != "the client used 1.90 of the 2 CPUs it may use; v6lab's UDP sender ran up to 2.50 ms late in 1 of 2 trials (past 1 ms, a datagram's spacing at the rate asked or the pacing's 1 ms grain)" {
		t.Fatalf("%+v", sc)
	}
	if n := strings.Join(selfCheckNotes(cells, "loopback"), "\n"); !strings.Contains(n, "client was saturated in udp/ipv4/1 (1 of 2 runs: the client used 1.90") {
		t.Errorf("notes: %s", n)
	}
}

// TestALateSendersNoteFollowsTheFigures: the note says offered_mbps is
// lower only for a cell one of whose trials offered less than asked; a
// late sender that still offered the rate may have sent in bursts (trial7
// F9: "is lower" of 20.01 Mbit/s offered of 20 asked).
func TestALateSendersNoteFollowsTheFigures(t *testing.T) {
	late := map[string][]float64{"udp-10/ipv4": {5, 0.2, 0.3}, "udp-10/ipv6": {0.3, 35, 0.5}}
	f := lateUDPFile(late)
	s := Summarize(f)
	notes := strings.Join(s.Notes, "\n")
	if !strings.Contains(notes, "so offered_mbps met the rate asked, but the datagrams may be burstier than asked, and the bursts") || strings.Contains(notes, "lower") {
		t.Errorf("rate met:\n%s", notes)
	}
	f = lateUDPFile(late)
	for i := range f.Samples {
		if smp := &f.Samples[i]; smp.Cell == result.CellKey("udp-10", "ipv6", 1) && smp.Run == 2 {
			smp.Metrics["offered_mbps"] = 8.5
		}
	}
	notes = strings.Join(Summarize(f).Notes, "\n")
	if !strings.Contains(notes, "so offered_mbps is lower than asked in udp-10/ipv6/1 (down to 8.50 of 10 Mbit/s); elsewhere it met the rate, but the datagrams may be burstier than asked, and") {
		t.Errorf("one cell short:\n%s", notes)
	}
}

// TestALateUDPSenderIsMarkedInThePlots: report.html's UDP loss and jitter
// plots draw a late sender's cell as a hollow ring the plot's legend
// explains, as the tables and the note say it; the other cells' points,
// and the plots of a path whose senders kept time, are plain.
func TestALateUDPSenderIsMarkedInThePlots(t *testing.T) {
	s := Summarize(lateUDPFile(map[string][]float64{
		"udp-1/ipv4":  {0.3, 0.2, 0.4},
		"udp-1/ipv6":  {0.3, 8, 0.5},
		"udp-10/ipv4": {0.9, 0.95, 0.4},
		"udp-10/ipv6": {0.3, 35, 0.5}, // late: the one marked
	}))
	plots := TransportPlots(s)
	if len(plots) != 4 {
		t.Fatalf("%d UDP plots, want loss and jitter for ipv4 and ipv6", len(plots))
	}
	for _, p := range plots {
		svg := p.SVG()
		want := 0
		if strings.HasSuffix(p.ID, "-ipv6") {
			want = 1
		}
		late := regexp.MustCompile(`<circle class="dot late" cx="[0-9.]+" cy="[0-9.]+" r="5"><title>default buffer, 10: [^<]*\(v6lab's UDP sender ran late: see the notes\)</title>`)
		if got := len(late.FindAllString(svg, -1)); got != want || strings.Count(svg, `class="dot late"`) != want {
			t.Errorf("%s: %d late points, want %d:\n%s", p.ID, got, want, svg)
		}
		if legend := strings.Contains(svg, "hollow ring: v6lab's own UDP sender ran late (send_late_ms, see the notes)"); legend != (want > 0) {
			t.Errorf("%s: legend of late points %v, want %v", p.ID, legend, want > 0)
		}
		if strings.Contains(svg, "dotted ring") {
			t.Errorf("%s: a late cell is drawn as saturated too", p.ID)
		}
	}
	var page strings.Builder
	if err := HTML(&page, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "svg .dot.late {") || strings.Count(page.String(), `class="dot late"`) != 2 {
		t.Errorf("report.html lacks the late points or their style")
	}
}
