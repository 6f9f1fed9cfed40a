package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// buildMulti makes a deterministic experiment: three paths, four connection
// counts spanning decades, five counted runs each, a few failures at 1000.
func buildMulti() *result.File {
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: 1, Name: "multi", Created: t0,
		Target: "lab", Baseline: "ipv4", Host: "labhost", Kernel: "6.1.0", CPUs: 2, Tool: "v6lab", ToolVersion: "test",
		Lab: map[string]string{"tunnel": "userspace", "config": "{}"}, Servers: map[string]string{"http": "embedded"}}}
	slow := map[string]float64{"ipv4": 1, "ipv6": 1.04, "6in4": 1.3}
	for _, n := range []int{1, 10, 100, 1000} {
		for run := 0; run < 6; run++ {
			for _, p := range []string{"ipv4", "ipv6", "6in4"} {
				cell := result.CellKey("http", p, n)
				base := (2 + 0.05*float64(n)) * slow[p] * (1 + 0.02*float64(run%3))
				users := min(n, 20)
				fail := 0
				if n == 1000 && p == "6in4" && run > 0 {
					fail = 1
				}
				for u := 0; u < users; u++ {
					v := base * (0.8 + 0.4*float64(u)/float64(users))
					f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: cell, Protocol: "http", Path: p,
						Conns: n, Run: run, Warmup: run == 0, User: u, Start: t0, TotalNS: int64(v * 1e6)})
				}
				for u := 0; u < fail; u++ {
					f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: cell, Protocol: "http", Path: p,
						Conns: n, Run: run, Start: t0, TotalNS: 30e9, Err: "io: timed out after 30s", ErrKind: "timeout"})
				}
				f.Runs = append(f.Runs, result.Run{Kind: result.KindRun, Cell: cell, Protocol: "http", Path: p, Conns: n, Run: run,
					Warmup: run == 0, Start: t0, End: t0.Add(time.Second), Completed: users, Failed: fail})
			}
		}
	}
	return f
}

var plotRE = regexp.MustCompile(`<svg [^>]*data-plot="([^"]+)"`)

func TestHTMLGoldenAndEveryPlotPresent(t *testing.T) {
	s := Summarize(buildMulti())
	var b bytes.Buffer
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	golden(t, "golden.html", b.Bytes())
	page := b.String()
	var ids []string
	for _, m := range plotRE.FindAllStringSubmatch(page, -1) {
		ids = append(ids, m[1])
	}
	want := "rt-http pct-http completion-http cdf-http-1 cdf-http-10 cdf-http-100 cdf-http-1000"
	if strings.Join(ids, " ") != want {
		t.Errorf("plots %v, want %s", ids, want)
	}
	for _, p := range plots(s, "http") {
		if p.ID == "rt-http" || p.ID == "pct-http" {
			golden(t, "golden-"+p.ID+".svg", []byte(p.SVG()))
			if !p.LogX {
				t.Errorf("%s spans 1 to 1000 connections but has no log axis", p.ID)
			}
		}
	}
	// The page stands alone: nothing to fetch, no script.
	for _, bad := range []string{"<script", "<link", " src=", "url(", "@import"} {
		if strings.Contains(page, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	if n := strings.Count(page, "http://") + strings.Count(page, "https://"); n != strings.Count(page, `xmlns="http://www.w3.org/2000/svg"`) {
		t.Errorf("report.html refers to %d URLs beyond the SVG namespace", n)
	}
	// Every mean in the summary is on the page as the table prints it.
	for _, c := range s.Cells {
		if !strings.Contains(page, "<td>"+FormatMS(*c.MeanMS)+"</td>") {
			t.Errorf("mean of %s/%d (%s) missing", c.Path, c.Conns, FormatMS(*c.MeanMS))
		}
	}
	if strings.Contains(page, `"{}"`) || !strings.Contains(page, "labhost") {
		t.Error("context section wrong: raw lab config shown or host missing")
	}
}

func TestPlotAxes(t *testing.T) {
	if got := fmt.Sprint(niceTicks(0, 9.3, 6)); got != "[0 2 4 6 8 10]" {
		t.Errorf("ticks 0..9.3: %s", got)
	}
	if got := fmt.Sprint(niceTicks(-12, 37, 6)); got != "[-20 -10 0 10 20 30 40]" {
		t.Errorf("ticks -12..37: %s", got)
	}
	p := &plot{ID: "x", LogX: true, Series: []series{{Name: "ipv4", Points: []point{{X: 1, Y: 1}, {X: 5000, Y: 9}}}}}
	svg := p.SVG()
	for _, tick := range []string{">1<", ">10<", ">100<", ">1000<", ">10000<"} {
		if !strings.Contains(svg, tick) {
			t.Errorf("log axis lacks tick %s", tick)
		}
	}
	empty := (&plot{ID: "e", Title: "nothing"}).SVG()
	if !strings.Contains(empty, "no data") {
		t.Errorf("empty plot: %s", empty)
	}
}

// TestHTMLRendersInChromium opens report.html in a real (headless) browser:
// it must render every plot with no console message, to a non-blank page.
func TestHTMLRendersInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium-headless-shell")
	if err != nil {
		if bin, err = exec.LookPath("chromium"); err != nil {
			t.Skip("no headless Chromium (scripts/install-deps installs chromium-headless-shell)")
		}
	}
	dir := t.TempDir()
	name := filepath.Join(dir, HTMLFile)
	var b bytes.Buffer
	if err := HTML(&b, Summarize(buildMulti())); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(name, b.Bytes(), 0o644)
	shot := filepath.Join(dir, "shot.png")
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + filepath.Join(dir, "profile"),
		"--enable-logging=stderr", "--v=0", "--window-size=1280,4000"}
	cmd := exec.Command(bin, append(flags, "--screenshot="+shot, "file://"+name)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, "CONSOLE") {
			t.Errorf("console message: %s", line)
		}
	}
	fh, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	img, err := png.Decode(fh)
	if err != nil {
		t.Fatal(err)
	}
	// The plots' lines are coloured: count pixels that are neither grey nor white.
	colour := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if max(r, g, bl)-min(r, g, bl) > 0x3000 {
				colour++
			}
		}
	}
	if bounds.Dx() != 1280 || colour < 2000 {
		t.Errorf("screenshot %v with %d coloured pixels: the plots did not render", bounds, colour)
	}
	dom, err := exec.Command(bin, append(flags, "--dump-dom", "file://"+name)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plotRE.FindAll(dom, -1)); n != 7 {
		t.Errorf("the browser's DOM holds %d plots, want 7", n)
	}
	// rt: 3 paths, pct: 2, each CDF: 3.
	if n := bytes.Count(dom, []byte(`<path class="line"`)); n != 3+2+4*3 {
		t.Errorf("the browser's DOM holds %d plot lines, want 17", n)
	}
}

func TestTransportFiguresAndThroughputOverTime(t *testing.T) {
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: 1, Name: "tr", Created: t0, Target: "lab", Baseline: "ipv4"}}
	for run := 0; run < 2; run++ {
		for i, p := range []string{"ipv4", "ipv6"} {
			cell := result.CellKey("tcp-big", p, 1)
			mbps := 90.0 - float64(i)*10 + float64(run) // ipv4 90/91, ipv6 80/81
			var ivs []result.Interval
			for k := range 3 {
				ivs = append(ivs, result.Interval{StartNS: int64(k) * 1e9, EndNS: int64(k+1) * 1e9, Bytes: int64(mbps * 1e6 / 8)})
			}
			f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: cell, Protocol: "tcp-big", Path: p, Conns: 1,
				Run: run, Start: t0, TotalNS: 3e9, Intervals: ivs,
				Metrics: map[string]float64{"throughput_mbps": mbps, "retransmits": float64(run), "tcp_efficiency_pct": 100}})
			f.Runs = append(f.Runs, result.Run{Kind: result.KindRun, Cell: cell, Protocol: "tcp-big", Path: p, Conns: 1, Run: run,
				Start: t0, End: t0.Add(3 * time.Second), Completed: 1})
		}
	}
	s := Summarize(f)
	c := s.Cells[0]
	if c.Path != "ipv4" || c.Metrics["throughput_mbps"].Mean != 90.5 || c.Metrics["throughput_mbps"].N != 2 || c.Metrics["retransmits"].Mean != 0.5 {
		t.Fatalf("cell %+v", c.Metrics["throughput_mbps"])
	}
	if len(c.IntervalMbps) != 3 || math.Abs(c.IntervalMbps[2]-90.5) > 1e-9 || c.IntervalEndS[2] != 3 {
		t.Errorf("intervals %v at %v", c.IntervalMbps, c.IntervalEndS)
	}
	var text bytes.Buffer
	Text(&text, s)
	if !strings.Contains(text.String(), "TCP-BIG: transport figures") || !strings.Contains(text.String(), "TCP-BIG: transfer time per trial") ||
		!strings.Contains(text.String(), "90.50 (") {
		t.Errorf("text:\n%s", text.String())
	}
	var page bytes.Buffer
	if err := HTML(&page, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `data-plot="throughput-tcp-big"`) {
		t.Error("no throughput-over-time plot")
	}
	// Trials bound by time: the paths are compared on throughput, not on
	// the transfer time, which is the time asked for.
	cmp := s.Comparisons[0].Throughput
	if cmp == nil || *cmp.Diff != -10 || math.Abs(*cmp.PctChange-(-10/90.5*100)) > 1e-9 || cmp.Confidence == nil || *cmp.Confidence < 0.99 {
		t.Fatalf("throughput comparison %+v", cmp)
	}
	if cmp.CI95Diff == nil || cmp.CI95Diff[0] >= -10 || cmp.CI95Diff[1] <= -10 {
		t.Errorf("95%% CI of the difference %v does not hold -10", cmp.CI95Diff)
	}
	for _, want := range []string{"TCP-BIG: throughput against ipv4 (positive = faster than ipv4)", "difference (Mbit/s)", "-10.00", "-11.0%"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "TCP-BIG: increase over") || strings.Contains(text.String(), "confidence intervals for differences") {
		t.Errorf("a time-bound trial compared on its transfer time:\n%s", text.String())
	}
	if !strings.Contains(page.String(), "TCP-BIG: throughput against ipv4, 95% CI") {
		t.Error("the HTML plots the transfer time's increase of a time-bound trial")
	}
	// Set against itself, B equals A.
	var vs bytes.Buffer
	VersusText(&vs, CompareSummaries("a", s, "b", s))
	if !strings.Contains(vs.String(), "transport throughput (Mbit/s), B against A") || !strings.Contains(vs.String(), " 0.0%") {
		t.Errorf("compare:\n%s", vs.String())
	}
	// Trials that send an amount of data are compared on their time too.
	for i := range f.Samples {
		f.Samples[i].Metrics["bytes_set"] = 1e6
	}
	text.Reset()
	Text(&text, Summarize(f))
	if !strings.Contains(text.String(), "TCP-BIG: increase over ipv4") || !strings.Contains(text.String(), "TCP-BIG: throughput against ipv4") {
		t.Errorf("an amount-bound trial:\n%s", text.String())
	}
}

func TestRateBySizePlot(t *testing.T) {
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: 1, Name: "bulk", Created: t0, Target: "lab", Baseline: "ipv4"}}
	for _, size := range []int64{5879824, 109167758, 2183355160} {
		label := fmt.Sprintf("ftp-%d", size)
		for run := range 2 {
			for i, p := range []string{"ipv4", "ipv6"} {
				cell := result.CellKey(label, p, 1)
				secs := float64(size) / 11.5e6 * (1 + 0.05*float64(i))
				f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: cell, Protocol: label, Path: p, Conns: 1,
					Run: run, Start: t0, TotalNS: int64(secs * 1e9), BytesIn: size,
					Metrics: map[string]float64{"file_bytes": float64(size), "mbytes_per_s": float64(size) / 1e6 / secs}})
				f.Runs = append(f.Runs, result.Run{Kind: result.KindRun, Cell: cell, Protocol: label, Path: p, Conns: 1, Run: run,
					Start: t0, End: t0.Add(time.Second), Completed: 1})
			}
		}
	}
	ps := rateBySize(Summarize(f))
	if len(ps) != 1 || ps[0].ID != "rate-by-size-ftp" || len(ps[0].Series) != 2 || len(ps[0].Series[0].Points) != 3 || !ps[0].LogX {
		t.Fatalf("plots %+v", ps)
	}
	v4 := ps[0].Series[0]
	if v4.Name != "ipv4" || v4.Points[0].X != 5879824 || math.Abs(v4.Points[2].Y-11.5) > 1e-6 {
		t.Errorf("ipv4 series %+v", v4.Points)
	}
}

// TestHTMLLeadsWithTheVerdicts: report.html's first section is one
// verdict per cell group and path, each as Verdicts computes it from
// summary.json's comparisons; the run's conditions fold away below it.
func TestHTMLLeadsWithTheVerdicts(t *testing.T) {
	s := Summarize(buildMulti())
	var b bytes.Buffer
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	vs := Verdicts(s)
	if len(vs) == 0 {
		t.Fatal("no verdicts")
	}
	at := strings.Index(page, `<section class="verdicts">`)
	if at < 0 || at > strings.Index(page, `<details class="context">`) || at > strings.Index(page, "<svg") {
		t.Fatalf("the verdicts do not lead the page")
	}
	for _, v := range vs {
		if want := "<strong>" + v.Path + "</strong>: " + html.EscapeString(v.Text); !strings.Contains(page, want) {
			t.Errorf("verdict %q not on the page", want)
		}
	}
	// Each from summary.json's comparisons: read back from its JSON, the
	// same verdicts.
	j, _ := json.Marshal(s)
	var back Summary
	if err := json.Unmarshal(j, &back); err != nil || fmt.Sprint(Verdicts(&back)) != fmt.Sprint(vs) {
		t.Errorf("verdicts from summary.json differ: %v", err)
	}
}

// TestConnectionAxesTickAtTheCounts: connections are whole: an axis of 1
// and 2 connections ticks at 1 and 2 (it ticked at 1.2, 1.4 …), and a cell
// whose every transaction failed is said on the plot with its error.
func TestConnectionAxesTickAtTheCounts(t *testing.T) {
	p := &plot{ID: "x", XTicks: []float64{1, 2}, Series: []series{{Name: "ipv4", Points: []point{{X: 1, Y: 1}, {X: 2, Y: 3}}}},
		Marks: []mark{{X: 2, Text: "ipv6 at 2: all 4 failed (connect: refused)"}}}
	svg := p.SVG()
	ticks := regexp.MustCompile(`class="tick" x="[0-9.]+" y="[0-9.]+" text-anchor="middle">([^<]+)<`).FindAllStringSubmatch(svg, -1)
	var got []string
	for _, m := range ticks {
		got = append(got, m[1])
	}
	if strings.Join(got, " ") != "1 2" {
		t.Errorf("x ticks %v, want 1 2", got)
	}
	if !strings.Contains(svg, "ipv6 at 2: all 4 failed (connect: refused)") {
		t.Error("the failed cell is not said")
	}
	long := (&plot{ID: "t", Title: strings.Repeat("a very long title ", 8), Series: p.Series}).SVG()
	if !strings.Contains(long, `textLength=`) {
		t.Error("a long title is not fitted to the plot")
	}
}

// TestCompareSaysTheTargetsDiffer: a loopback result set against a lab's
// says so above the tables; two of one target say nothing.
func TestCompareSaysTheTargetsDiffer(t *testing.T) {
	a, b := &Summary{Target: "loopback"}, &Summary{Target: "lab"}
	var out bytes.Buffer
	if err := VersusText(&out, CompareSummaries("a", a, "b", b)); err != nil || !strings.Contains(out.String(), "note: A ran on loopback, B in the lab") {
		t.Errorf("%v:\n%s", err, out.String())
	}
	if v := CompareSummaries("a", a, "b", a); len(v.Notes) != 0 {
		t.Errorf("notes %q", v.Notes)
	}
}

// TestThePercentPlotSaysWhatItLeavesOut: a load whose % is n/a has no
// point, and the plot says so at its x, with the paths (unless all) and
// the reason; a plot with every % has no such line.
func TestThePercentPlotSaysWhatItLeavesOut(t *testing.T) {
	pctOf := func(s *Summary) *plot {
		for _, p := range plots(s, "http") {
			if strings.HasPrefix(p.ID, "pct-") {
				return p
			}
		}
		t.Fatal("no % plot")
		return nil
	}
	s := Summarize(buildMulti())
	if svg := pctOf(s).SVG(); strings.Contains(svg, "no %") {
		t.Errorf("every %% drawn, yet a mark: %s", svg)
	}
	const why = "baseline mean not above its 95% CI half-width"
	for i := range s.Comparisons {
		if c := &s.Comparisons[i]; c.Conns == 10 || c.Conns == 100 && c.Path == "ipv6" {
			c.PctIncrease, c.NA = nil, map[string]string{"pct_increase": why}
		}
	}
	svg := pctOf(s).SVG()
	for _, want := range []string{"10: no %, " + why, "100: no % for ipv6, " + why} {
		if !strings.Contains(svg, html.EscapeString(want)) {
			t.Errorf("the plot does not say %q: %s", want, svg)
		}
	}
}
