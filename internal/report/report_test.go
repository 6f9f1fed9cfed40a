package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

var update = flag.Bool("update", false, "rewrite golden files")

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// build makes a samples file where run i of each path has the given mean,
// with a slow warm-up run 0 and, in run 1 of ipv6, one failed transaction.
func build(base, other []float64) *result.File {
	f := &result.File{Header: result.Header{Kind: result.KindHeader, FormatVersion: 1, Name: "golden", Created: t0,
		Target: "loopback", Baseline: "ipv4", Notes: []string{"a note from the header"}}}
	add := func(p string, run int, warm bool, ms []float64, fail int) {
		cell := result.CellKey("http", p, 2)
		for i, v := range ms {
			f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: cell, Protocol: "http", Path: p, Conns: 2,
				Run: run, Warmup: warm, User: i, Start: t0, TotalNS: int64(v * 1e6)})
		}
		for i := 0; i < fail; i++ {
			f.Samples = append(f.Samples, result.Sample{Kind: result.KindSample, Cell: cell, Protocol: "http", Path: p, Conns: 2,
				Run: run, Warmup: warm, Start: t0, TotalNS: 30e9, Err: "io: timed out after 30s", ErrKind: "timeout"})
		}
		f.Runs = append(f.Runs, result.Run{Kind: result.KindRun, Cell: cell, Protocol: "http", Path: p, Conns: 2, Run: run,
			Warmup: warm, Start: t0.Add(time.Duration(run) * time.Second), End: t0.Add(time.Duration(run)*time.Second + 100*time.Millisecond),
			Completed: len(ms), Failed: fail})
	}
	add("ipv4", 0, true, []float64{500, 500}, 0)
	add("ipv6", 0, true, []float64{900, 900}, 0)
	for i := range base {
		// Two transactions per run whose mean is the run mean.
		add("ipv4", i+1, false, []float64{base[i] - 0.25, base[i] + 0.25}, 0)
		fail := 0
		if i == 0 {
			fail = 1
		}
		add("ipv6", i+1, false, []float64{other[i] - 0.25, other[i] + 0.25}, fail)
	}
	return f
}

var (
	baseMS  = []float64{817.159, 819.133, 798.709, 813.33, 805.549, 789.489, 792.315, 811.602, 764.156, 808.696}
	otherMS = []float64{847.576, 850.345, 828.833, 828.771, 807.597, 823.129, 804.772, 837.847, 805.291, 780.754}
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func TestSummaryMatchesTheStatistics(t *testing.T) {
	s := Summarize(build(baseMS, otherMS))
	if len(s.Cells) != 2 || len(s.Comparisons) != 1 {
		t.Fatalf("%d cells, %d comparisons", len(s.Cells), len(s.Comparisons))
	}
	v4, v6 := s.Cells[0], s.Cells[1]
	if v4.Path != "ipv4" || len(v4.Runs) != 10 || len(v4.WarmupRuns) != 1 {
		t.Fatalf("ipv4 cell %+v", v4)
	}
	// Warm-up (500 ms) is kept but not counted; the failed transaction
	// (30 s) is counted as a failure, never averaged.
	d := stats.Describe(baseMS)
	if !near(*v4.MeanMS, d.Mean) || !near(v4.CI95MS[0], d.CI95[0]) {
		t.Errorf("ipv4 mean %v ci %v; want %v %v", *v4.MeanMS, *v4.CI95MS, d.Mean, d.CI95)
	}
	if !near(*v6.MeanMS, stats.Describe(otherMS).Mean) {
		t.Errorf("ipv6 mean %v averaged a failure or the warm-up", *v6.MeanMS)
	}
	if v6.Completed != 20 || v6.Failed != 1 || v6.Failures["timeout"] != 1 || !near(*v6.CompletionRate, 20.0/21) {
		t.Errorf("ipv6 completion %d/%d %v", v6.Completed, v6.Failed, v6.Failures)
	}
	c := s.Comparisons[0]
	w := stats.Welch(baseMS, otherMS)
	if !near(*c.DiffMS, 19.4777) || !near(*c.PWelch, 0.03856631013430394) || !near(*c.Confidence, w.Confidence) ||
		!near(*c.WelchDF, 16.826942621670693) || !near(c.CI95DiffMS[1], 37.80314402951862) {
		t.Errorf("comparison %+v", c)
	}
	if !near(*c.PPaired, 0.014106616057759523) || !near(*c.PMannWhitney, 0.07566157214388704) {
		t.Errorf("paired %v, mann-whitney %v", *c.PPaired, *c.PMannWhitney)
	}
	if *v4.P50MS < 789 || *v4.P50MS > 812 || *v4.P999MS < 819 {
		t.Errorf("percentiles p50 %v p99.9 %v", *v4.P50MS, *v4.P999MS)
	}
}

func TestDegenerateFiguresAreNAWithReasons(t *testing.T) {
	s := Summarize(build([]float64{5}, []float64{6}))
	c := s.Comparisons[0]
	if c.PWelch != nil || c.NA["p_welch"] != "n < 2 in a path" || c.NA["p_paired"] != "n < 2 pairs" {
		t.Fatalf("comparison %+v", c)
	}
	if s.Cells[0].CI95MS != nil || s.Cells[0].NA["ci95_ms"] != "n < 2" {
		t.Fatalf("cell %+v", s.Cells[0])
	}
	var buf bytes.Buffer
	if err := Text(&buf, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "NaN") || !strings.Contains(buf.String(), "n/a (n < 2") {
		t.Errorf("text shows NaN or hides the reason:\n%s", buf.String())
	}
	var js bytes.Buffer
	JSON(&js, s)
	if strings.Contains(js.String(), "NaN") {
		t.Error("summary.json holds NaN")
	}
}

func TestInterruptedRunsAreLeftOut(t *testing.T) {
	f := build(baseMS, otherMS)
	f.Runs[len(f.Runs)-1].Err = "interrupted"
	s := Summarize(f)
	if len(s.Cells[1].Runs) != 9 {
		t.Fatalf("ipv6 runs %d, want 9", len(s.Cells[1].Runs))
	}
	found := false
	for _, n := range s.Notes {
		found = found || strings.Contains(n, "left out: interrupted")
	}
	if !found {
		t.Errorf("notes %v", s.Notes)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file; run go test -update and review the diff\n--- got\n%s", name, got)
	}
}

func TestGoldenRenderings(t *testing.T) {
	s := Summarize(build(baseMS, otherMS))
	for _, r := range []struct {
		name   string
		render func(*bytes.Buffer) error
	}{
		{"golden.txt", func(b *bytes.Buffer) error { return Text(b, s) }},
		{"golden.json", func(b *bytes.Buffer) error { return JSON(b, s) }},
		{"golden.csv", func(b *bytes.Buffer) error { return CSV(b, s) }},
	} {
		var b bytes.Buffer
		if err := r.render(&b); err != nil {
			t.Fatal(err)
		}
		golden(t, r.name, b.Bytes())
	}
}

func TestWriteAllReRendersFromSamples(t *testing.T) {
	dir := t.TempDir()
	f := build(baseMS, otherMS)
	fh, _ := os.Create(filepath.Join(dir, SamplesFile))
	w := result.NewWriter(fh)
	w.Header(f.Header)
	for _, s := range f.Samples {
		w.Sample(s)
	}
	for _, r := range f.Runs {
		w.Run(r)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	s, err := WriteAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, SummaryFile))
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil || len(back.Cells) != 2 || *back.Cells[1].MeanMS != *s.Cells[1].MeanMS {
		t.Fatalf("summary.json: %v", err)
	}
	for _, name := range []string{TextFile, CSVFile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDifferenceCIsAcrossProtocols(t *testing.T) {
	f := build(baseMS, otherMS)
	// The same runs again under a second protocol, at another connection count.
	for _, smp := range append([]result.Sample(nil), f.Samples...) {
		smp.Protocol, smp.Conns, smp.Cell = "ftp", 10, result.CellKey("ftp", smp.Path, 10)
		f.Samples = append(f.Samples, smp)
	}
	for _, r := range append([]result.Run(nil), f.Runs...) {
		r.Protocol, r.Conns, r.Cell = "ftp", 10, result.CellKey("ftp", r.Path, 10)
		f.Runs = append(f.Runs, r)
	}
	s := Summarize(f)
	sec, ok := DifferenceCIs(s)
	if !ok || len(sec.Rows) != 2 || strings.Join(sec.Head, " ") != "protocol path 2 10" {
		t.Fatalf("%+v", sec)
	}
	if sec.Rows[0][0] != "FTP" || sec.Rows[0][2] != "n/a (not measured)" || sec.Rows[1][3] != "n/a (not measured)" {
		t.Errorf("rows %v", sec.Rows)
	}
	c := s.Comparisons[0]
	// Low to high, as every other table prints an interval (the study's
	// Table 6-1 printed upper to lower).
	want := FormatMS(c.CI95DiffMS[0]) + " to " + FormatMS(c.CI95DiffMS[1])
	if sec.Rows[1][2] != want && sec.Rows[0][3] != want {
		t.Errorf("rows %v, want %q (lower to upper)", sec.Rows, want)
	}
	if !strings.HasSuffix(sec.Title, "lower to upper") {
		t.Errorf("title %q", sec.Title)
	}
	if _, ok := DifferenceCIs(Summarize(build(baseMS, otherMS))); ok {
		t.Error("a single protocol got the cross-protocol table")
	}
}
