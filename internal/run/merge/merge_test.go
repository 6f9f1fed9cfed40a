package merge

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/report"
	"v6lab/internal/result"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// spec is a stand-in experiment: one http cell of 5 users, 2 runs, two
// paths (merge compares specs as JSON, whatever they hold).
func spec(conns int) map[string]any {
	return map[string]any{"name": "web", "order": "interleaved", "seed": 0,
		"cells": []any{map[string]any{"protocol": "http", "conns": []int{conns}, "runs": 2}}}
}

// writeSegment writes segment i of n: for each run and path, its share
// of 5 users, user u taking 1+u+run ms (segment 2 skips run 1 when cut).
func writeSegment(t *testing.T, root string, i, n int, sp map[string]any, cut bool) string {
	t.Helper()
	return writeSegmentRewarmed(t, root, i, n, sp, cut, -1, 0)
}

// writeSegmentRewarmed is writeSegment with times re-warm runs (resumes')
// before step rewarm (-1: none), all numbered RewarmIndex(rewarm), as
// v6lab numbered them before result.RewarmRun.
func writeSegmentRewarmed(t *testing.T, root string, i, n int, sp map[string]any, cut bool, rewarm, times int) string {
	t.Helper()
	dir := filepath.Join(root, "seg"+string(rune('0'+i)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "samples.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := result.NewWriter(f)
	seg := &result.Segment{Index: i, Count: n, Host: "client" + string(rune('a'+i)), Clock: "clock source tsc"}
	w.Header(result.Header{Kind: result.KindHeader, FormatVersion: result.FormatVersion, Tool: "v6lab", ToolVersion: "test",
		Name: "web", Created: t0, Target: "remote", Baseline: "ipv4", Spec: sp, Segment: seg, Notes: []string{"segment x", "a note"}})
	seq := 0
	for run := range 2 {
		for _, p := range []string{"ipv4", "ipv6"} {
			if cut && run == 1 && p == "ipv6" {
				continue
			}
			first, k := seg.Users(5)
			cell := result.CellKey("http", p, 5)
			start := t0.Add(time.Duration(seq) * time.Second)
			for range times * b2i(seq == rewarm) {
				rw := result.RewarmIndex(seq)
				for u := first; u < first+k; u++ {
					w.Sample(result.Sample{Kind: result.KindSample, Cell: cell, Protocol: "http", Path: p, Conns: 5, Run: rw, Warmup: true, User: u,
						Start: start, TotalNS: 50e6, Marker: "200 OK"})
				}
				w.Run(result.Run{Kind: result.KindRun, Cell: cell, Protocol: "http", Path: p, Conns: 5, Run: rw, Warmup: true, Rewarm: true, Seq: rw,
					Start: start, End: start.Add(time.Millisecond), Completed: k})
			}
			for u := first; u < first+k; u++ {
				w.Sample(result.Sample{Kind: result.KindSample, Cell: cell, Protocol: "http", Path: p, Conns: 5, Run: run, User: u,
					Start: start, TotalNS: int64(1+u+run) * 1e6, Marker: "200 OK"})
			}
			rec := result.Run{Kind: result.KindRun, Cell: cell, Protocol: "http", Path: p, Conns: 5, Run: run, Seq: seq,
				Start: start.Add(time.Duration(i) * time.Millisecond), End: start.Add(time.Duration(10+i) * time.Millisecond), Completed: k}
			if i == 1 && seq == 0 {
				rec.LateNS = int64(12 * time.Millisecond)
			}
			w.Run(rec)
			seq++
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dir
}

// TestMergePoolsEverySegmentsSamples: three segments of 5 users merge
// into one result whose cells count every user once per run and whose
// figures are those of the pooled samples; each segment's share and its
// late run stay visible.
func TestMergePoolsEverySegmentsSamples(t *testing.T) {
	root := t.TempDir()
	for i := range 3 {
		writeSegment(t, filepath.Join(root, "vol"), i, 3, spec(5), false)
	}
	segs, err := Read([]string{filepath.Join(root, "vol")}) // a directory of segments
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(segs); err != nil {
		t.Fatal(err)
	}
	dir, s, err := Write(segs, filepath.Join(root, "out"), "", []string{"v6lab", "merge"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dir) != "web-merged-20261124T100000Z" {
		t.Errorf("merged into %s", dir)
	}
	if len(s.Cells) != 2 {
		t.Fatalf("cells %+v", s.Cells)
	}
	for _, c := range s.Cells {
		// Run 0: users 0-4 take 1-5 ms (mean 3); run 1: 2-6 ms (mean 4).
		if c.Completed != 10 || c.MeanMS == nil || math.Abs(*c.MeanMS-3.5) > 1e-9 || len(c.Runs) != 2 || c.Runs[0] != 3 || c.Runs[1] != 4 {
			t.Errorf("cell %s: completed %d, runs %v", c.Path, c.Completed, c.Runs)
		}
	}
	// The merged run spans its segments: 12 ms from the first start to
	// the last end, so rate/s is 5 completions in 12 ms.
	f := readFile(t, dir)
	if len(f.Runs) != 4 || f.Runs[0].End.Sub(f.Runs[0].Start) != 12*time.Millisecond || f.Runs[0].Completed != 5 || f.Runs[0].LateNS != int64(12*time.Millisecond) {
		t.Errorf("merged run %+v", f.Runs[0])
	}
	if f.Header.Segment != nil || len(f.Header.Merged) != 3 || f.Header.Merged[1].LateRuns != 1 || f.Header.Host != "clienta, clientb, clientc" {
		t.Errorf("merged header segment %v merged %+v host %q", f.Header.Segment, f.Header.Merged, f.Header.Host)
	}
	// These segments recorded no --start-at: their runs did not run
	// together, so the merge prints no rate/s (the pooled run's window
	// spans them: 5 completions in 12 ms is no servers' rate) and says
	// why; every other figure stands.
	if len(f.Header.Notes) != 3 || f.Header.Notes[0] != "a note" || !strings.Contains(f.Header.Notes[1], "merged by v6lab merge from 3 segments") ||
		strings.Contains(f.Header.Notes[1], "one run of all users") ||
		!strings.HasPrefix(f.Header.Notes[2], "the segments ran without a schedule (--start-at): their runs did not run together, so rate/s is left out") {
		t.Errorf("notes %q", f.Header.Notes)
	}
	for _, c := range s.Cells {
		if c.RatePerS != nil || c.NA["rate_per_s"] != report.UnscheduledRate || c.P50MS == nil || c.CompletionRate == nil {
			t.Errorf("cell %s: rate/s %v (n/a %q), p50 %v, completion %v", c.Path, c.RatePerS, c.NA["rate_per_s"], c.P50MS, c.CompletionRate)
		}
	}
	// Each segment's share: users 0, 1-2, 3-4 of 5.
	if len(s.Segments) != 3 || s.Segments[0].Completed != 4 || s.Segments[1].Completed != 8 || s.Segments[2].Completed != 8 {
		t.Fatalf("segments %+v", s.Segments)
	}
	if u := []int{s.Segments[0].Cells[0].Users, s.Segments[1].Cells[0].Users, s.Segments[2].Cells[0].Users}; u[0] != 1 || u[1] != 2 || u[2] != 2 {
		t.Errorf("users per segment %v, want 1 + 2 + 2", u)
	}
	if m := s.Segments[2].Cells[0].MeanMS; m == nil || math.Abs(*m-5) > 1e-9 { // users 3,4: 4,5 then 5,6 ms
		t.Errorf("segment 2's ipv4 mean %v", m)
	}
	text, err := os.ReadFile(filepath.Join(dir, report.TextFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"merged from 3 segments on 3 client hosts", "Segments: each client host's share", "1 (≤ 12 ms)", "1 of 4 runs started after their slot",
		"rate/s left out: merged from segments that ran without a schedule (--start-at)",
		"merged from 3 segments on 3 client hosts: run without a schedule (--start-at), so not at once: every figure is of all segments' samples pooled but rate/s, left out"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("report.txt lacks %q:\n%s", want, text)
		}
	}
	var sum map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if err := json.Unmarshal(b, &sum); err != nil || sum["segments"] == nil {
		t.Errorf("summary.json without segments: %v", err)
	}
}

func readFile(t *testing.T, dir string) *result.File {
	t.Helper()
	f, _, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestMergeRefusesWhatIsNotOneExperiment: a missing, a doubled, a
// differently split and a different experiment's segment are each named;
// a directory run without --segment is refused.
func TestMergeRefusesWhatIsNotOneExperiment(t *testing.T) {
	root := t.TempDir()
	at := func(name string) string { return filepath.Join(root, name) }
	s0 := writeSegment(t, at("a"), 0, 3, spec(5), false)
	s2 := writeSegment(t, at("b"), 2, 3, spec(5), false)
	s2b := writeSegment(t, at("c"), 2, 3, spec(5), false)
	other := writeSegment(t, at("d"), 1, 3, spec(6), false)
	four := writeSegment(t, at("e"), 1, 4, spec(5), false)
	for _, c := range []struct {
		dirs []string
		want string
	}{
		{[]string{s0, s2}, "segment(s) 1/3 missing (have 2 of 3)"},
		{[]string{s0, s2, s2b, other}, "are both segment 2/3"},
		{[]string{s0, other, s2}, "ran another experiment than " + s0 + " (spec differs at spec.cells[0].conns[0]: 5 vs 6)"},
		{[]string{s0, four, s2}, "is segment 1/4, but " + s0 + " is one of 3"},
	} {
		segs, err := Read(c.dirs)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(segs); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.dirs, err, c.want)
		}
	}
	// A segment that kept some rows only (hand-made: run refuses it).
	sampled := writeSegment(t, at("f"), 1, 3, spec(5), false)
	b, _ := os.ReadFile(filepath.Join(sampled, "samples.jsonl"))
	os.WriteFile(filepath.Join(sampled, "samples.jsonl"), []byte(strings.Replace(string(b), `"kind":"header",`, `"kind":"header","sample_every":10,`, 1)), 0o644)
	segs, err := Read([]string{s0, sampled, s2})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(segs); err == nil || !strings.Contains(err.Error(), sampled+" kept one sample row of every 10") {
		t.Errorf("a sampled segment: %v", err)
	}
	// Not a segment.
	plain := at("plain")
	os.MkdirAll(plain, 0o755)
	f, _ := os.Create(filepath.Join(plain, "samples.jsonl"))
	w := result.NewWriter(f)
	w.Header(result.Header{Kind: result.KindHeader, FormatVersion: result.FormatVersion, Name: "web", Created: t0, Target: "remote", Baseline: "ipv4"})
	w.Close()
	f.Close()
	if _, err := Read([]string{plain}); err == nil || !strings.Contains(err.Error(), "not a segment of a split run") {
		t.Errorf("a plain result: %v", err)
	}
	if _, err := Read([]string{at("nothing")}); err == nil {
		t.Error("a missing directory read")
	}
}

// TestARunOneSegmentNeverFinishedIsLeftOut: a segment cut before its last
// run leaves that run out of the merge, named, and the rest merges.
func TestARunOneSegmentNeverFinishedIsLeftOut(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for i := range 3 {
		dirs = append(dirs, writeSegment(t, root, i, 3, spec(5), i == 2))
	}
	segs, err := Read(dirs)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(segs); err != nil {
		t.Fatal(err)
	}
	_, s, err := Write(segs, filepath.Join(root, "out"), "joined", nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	note := strings.Join(s.Notes, "\n")
	if !strings.Contains(note, "run 1 of http/ipv6/5 left out: segment 2/3 never finished this run (resume it with v6lab run --resume") {
		t.Errorf("notes:\n%s", note)
	}
	for _, c := range s.Cells {
		want := 10
		if c.Path == "ipv6" {
			want = 5
		}
		if c.Completed != want {
			t.Errorf("%s: completed %d, want %d", c.Path, c.Completed, want)
		}
	}
}

// TestADamagedSegmentLeavesNoMerge: a sample line a segment holds damaged
// (its samples are checked as they stream into the merge) fails the
// merge, naming its file and line, and leaves no half-merged directory.
func TestADamagedSegmentLeavesNoMerge(t *testing.T) {
	for _, damage := range []struct{ from, to, want string }{
		{`"total_ns":`, `"total_ns":"x`, ":3: "},
		{`"path":"ipv4"`, `"path":"ipv9"`, `:3: field path: "ipv9" is not a path v6lab measures`},
	} {
		t.Run(damage.to, func(t *testing.T) {
			root := t.TempDir()
			var dirs []string
			for i := range 3 {
				dirs = append(dirs, writeSegment(t, root, i, 3, spec(5), false))
			}
			name := filepath.Join(dirs[1], "samples.jsonl")
			b, _ := os.ReadFile(name)
			lines := strings.SplitAfter(string(b), "\n")
			lines[2] = strings.Replace(lines[2], damage.from, damage.to, 1)
			os.WriteFile(name, []byte(strings.Join(lines, "")), 0o644)
			segs, err := Read(dirs)
			if err != nil {
				t.Fatal(err)
			}
			if err := Check(segs); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(root, "out")
			dir, _, err := Write(segs, out, "joined", nil, t0)
			if err == nil || !strings.Contains(err.Error(), name+damage.want) || dir != "" {
				t.Fatalf("merge of a damaged segment: %q, %v", dir, err)
			}
			if ents, _ := os.ReadDir(out); len(ents) != 0 {
				t.Errorf("left %v behind", ents)
			}
		})
	}
}

// TestMergeTakesAResumedSegmentsRewarm: a segment resumed ran a re-warm
// before a step (its record's seq negative, result.RewarmIndex): the merge
// keeps it in its place, a warm-up of that segment alone, never a run the
// other segments "never finished", and the counted figures are as before.
func TestMergeTakesAResumedSegmentsRewarm(t *testing.T) {
	root := t.TempDir()
	sp := spec(5)
	sp["cells"].([]any)[0].(map[string]any)["warmup"] = 1
	for i := range 2 {
		rewarm := -1
		if i == 1 {
			rewarm = 2 // before run 1 over ipv4
		}
		writeSegmentRewarmed(t, filepath.Join(root, "vol"), i, 2, sp, false, rewarm, 1)
	}
	segs, err := Read([]string{filepath.Join(root, "vol")})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(segs); err != nil {
		t.Fatal(err)
	}
	dir, s, err := Write(segs, filepath.Join(root, "out"), "", []string{"v6lab", "merge"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	f := readFile(t, dir)
	var seqs []int
	for _, r := range f.Runs {
		seqs = append(seqs, r.Seq)
		if r.Err != "" {
			t.Errorf("merged run %d left out: %s", r.Seq, r.Err)
		}
	}
	if got := fmt.Sprint(seqs); got != "[0 1 -3 2 3]" {
		t.Errorf("merged runs by seq %s, want the re-warm before step 2", got)
	}
	for _, c := range s.Cells {
		if c.Completed != 10 || len(c.Runs) != 2 {
			t.Errorf("cell %s: completed %d, runs %v", c.Path, c.Completed, c.Runs)
		}
	}
	if s.LeftOutRuns != 0 || s.Partial != nil {
		t.Errorf("left out %d, partial %+v", s.LeftOutRuns, s.Partial)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestMergeFoldsRewarmsNumberedAlike: a segment written by a v6lab that
// numbered two resumes' re-warms of one step alike (one run number, two
// records) merges: their samples cannot be told apart, so they are one
// re-warm record of both's counts, never one record's counts over both's
// samples. Two records of one step of the plan are refused, named.
func TestMergeFoldsRewarmsNumberedAlike(t *testing.T) {
	root := t.TempDir()
	sp := spec(5)
	sp["cells"].([]any)[0].(map[string]any)["warmup"] = 1
	for i := range 2 {
		times := 0
		if i == 1 {
			times = 2
		}
		writeSegmentRewarmed(t, filepath.Join(root, "vol"), i, 2, sp, false, 2, times)
	}
	segs, err := Read([]string{filepath.Join(root, "vol")})
	if err != nil {
		t.Fatal(err)
	}
	dir, s, err := Write(segs, filepath.Join(root, "out"), "", []string{"v6lab", "merge"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	f := readFile(t, dir)
	n := 0
	for _, smp := range f.Samples {
		n += b2i(smp.Run == result.RewarmIndex(2))
	}
	var rewarms []string
	for _, r := range f.Runs {
		if r.Rewarm {
			rewarms = append(rewarms, fmt.Sprintf("%d:%d", r.Run, r.Completed))
		}
	}
	if got := strings.Join(rewarms, " "); n != 6 || got != "-3:6" {
		t.Errorf("merged re-warms (run:completed) %s over %d samples, want -3:6 over 6", got, n)
	}
	for _, c := range s.Cells {
		if c.Completed != 10 || len(c.Runs) != 2 {
			t.Errorf("cell %s: completed %d, runs %v", c.Path, c.Completed, c.Runs)
		}
	}

	// Two records of step 0 in one file: refused, the file named.
	name := filepath.Join(root, "vol", "seg0", "samples.jsonl")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var again []byte
	for line := range strings.Lines(string(b)) {
		if strings.Contains(line, `"kind":"run"`) && strings.Contains(line, `"seq":0,`) {
			again = []byte(line)
		}
	}
	if err := os.WriteFile(name, append(b, again...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read([]string{filepath.Join(root, "vol")}); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "two records of run 0 of") {
		t.Errorf("a step recorded twice: %v", err)
	}
}

// editRuns rewrites the run records of dir's samples file by edit, and
// puts its segment on a schedule (--start-at) from t0.
func editRuns(t *testing.T, dir string, edit func(r map[string]any)) {
	t.Helper()
	name := filepath.Join(dir, "samples.jsonl")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["kind"] == result.KindHeader {
			m["segment"].(map[string]any)["start_at"] = t0
		} else if m["kind"] != result.KindRun {
			continue
		} else {
			edit(m)
		}
		nb, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = string(nb)
	}
	if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMergeLeavesOutRunsTheSegmentsDidNotRunTogether: segment 0 ran every
// run at its slot; segment 1 was resumed by a v6lab that did not keep the
// schedule (trial7 F6): its last two runs started 1.5 s before their
// slots, so ended long before segment 0's began, and recorded no slot. The
// merge takes their slots from segment 0's records, counts them early,
// and leaves those runs out (no rate/s, no figure of "one run of all
// users" from them), naming the segments and what to do.
func TestMergeLeavesOutRunsTheSegmentsDidNotRunTogether(t *testing.T) {
	root := t.TempDir()
	d0 := writeSegment(t, root, 0, 2, spec(5), false)
	d1 := writeSegment(t, root, 1, 2, spec(5), false)
	editRuns(t, d0, func(r map[string]any) {
		r["slot"] = t0.Add(time.Duration(r["seq"].(float64)) * time.Second)
	})
	editRuns(t, d1, func(r map[string]any) {
		seq := int(r["seq"].(float64))
		if seq < 2 {
			r["slot"] = t0.Add(time.Duration(seq) * time.Second)
			return
		}
		for _, k := range []string{"start", "end"} {
			at, err := time.Parse(time.RFC3339Nano, r[k].(string))
			if err != nil {
				t.Fatal(err)
			}
			r[k] = at.Add(-1500 * time.Millisecond)
		}
	})
	segs, err := Read([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(segs); err != nil {
		t.Fatal(err)
	}
	dir, s, err := Write(segs, filepath.Join(root, "out"), "", nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	f := readFile(t, dir)
	if g := f.Header.Merged[1]; g.EarlyRuns != 2 || g.MaxEarlyNS != int64(1499*time.Millisecond) || f.Header.Merged[0].EarlyRuns != 0 {
		t.Errorf("merged segments %+v", f.Header.Merged)
	}
	for _, r := range f.Runs {
		apart := strings.Contains(r.Err, "not run together: segment 0/2 started it 1.489s after segment 1/2 had ended it") &&
			strings.Contains(r.Err, "1/2's run started 1.499s before its slot") && strings.Contains(r.Err, "run every segment again on a new --start-at")
		if (r.Seq >= 2) != apart || (r.Seq >= 2) != (r.EarlyNS > 0) {
			t.Errorf("merged run seq %d: early %d, err %q", r.Seq, r.EarlyNS, r.Err)
		}
	}
	for _, c := range s.Cells {
		if len(c.Runs) != 1 || c.Completed != 5 {
			t.Errorf("cell %s: runs %v, %d completed; want run 0 only", c.Path, c.Runs, c.Completed)
		}
	}
	if s.LeftOutRuns != 2 {
		t.Errorf("left_out_runs %d, want 2", s.LeftOutRuns)
	}
	// On a schedule, the runs that ran together give a rate/s of all
	// users: 5 completions in the 11 ms of segment 0's and 1's run 0.
	for _, c := range s.Cells {
		if c.RatePerS == nil || math.Abs(*c.RatePerS-5/0.011) > 1e-6 || c.NA["rate_per_s"] != "" {
			t.Errorf("cell %s: rate/s %v (n/a %q), want 5 in 11 ms", c.Path, c.RatePerS, c.NA["rate_per_s"])
		}
	}
	text, err := os.ReadFile(filepath.Join(dir, report.TextFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"early 2 (≤ 1499 ms)", "2 of 4 runs started before their slot (at most 1.499s early", "left out: not run together"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("report.txt lacks %q:\n%s", want, text)
		}
	}
}
