package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/report"
	"v6lab/internal/result"
	"v6lab/internal/run/merge"
	"v6lab/internal/sock/path"
)

// keeping is a probe that keeps each user's connection, as http's
// --keepalive does: a user's first transaction in the process opens it,
// the next ones run on it (kept). A new process (a resume) starts cold.
type keeping struct {
	p    path.Path
	mu   sync.Mutex
	open map[int]bool
}

func (k *keeping) Do(ctx context.Context, user int) result.Sample {
	tr := load.Begin("fake", k.p)
	k.mu.Lock()
	kept := k.open[user]
	k.open[user] = true
	k.mu.Unlock()
	tr.S.Kept = kept
	return tr.Done("ok")
}

// interruptedKeeping runs an experiment of keeping probes over ipv4 and
// ipv6, runs per cell the first a warm-up, into dir, and stops it (a
// Ctrl-C) after both warm-ups and ipv4's first counted run. It returns
// the probes' maker, for a resume's new process.
func interruptedKeeping(t *testing.T, dir string, runs int) func(*CellGroup, path.Path) (load.Probe, error) {
	t.Helper()
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{2}, Runs: runs, Warmup: 1,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	process := func(_ *CellGroup, p path.Path) (load.Probe, error) { return &keeping{p: p, open: map[int]bool{}}, nil }
	ctx, cancel := context.WithCancel(context.Background())
	r := &Executor{Exp: Single(spec, result.Loopback), Probe: process, OnStep: func(done, _ int, _ result.Run) {
		if done == 3 {
			cancel()
		}
	}}
	if err := r.Execute(ctx, dir); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	return process
}

// TestResumeWarmsAgainBeforeCounting: a resumed experiment runs each
// cell's warm-up again before its first counted run, so that run is on
// kept connections like every other, not all new ones averaged in unmarked
// (trial4 F9). The re-warm is a warm-up: not counted, no step of the plan.
func TestResumeWarmsAgainBeforeCounting(t *testing.T) {
	dir := t.TempDir()
	process := interruptedKeeping(t, dir, 4)
	rs, err := PrepareResume(dir)
	if err != nil || len(rs.Done) != 3 {
		t.Fatalf("resume: %v, %d done", err, len(rs.Done))
	}
	// A new process: new probes, every connection cold.
	if err := (&Executor{Exp: rs.Exp, Probe: process, Done: rs.Done}).Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	f := readSamples(t, dir)
	rewarms := map[string]int{}
	for _, run := range f.Runs {
		if run.Rewarm {
			if !run.Warmup || run.Run >= 0 || run.Seq >= 0 || run.Completed != 2 {
				t.Errorf("re-warm run %+v", run)
			}
			rewarms[run.Path]++
		}
	}
	if rewarms["ipv4"] != 1 || rewarms["ipv6"] != 1 || len(f.Runs) != 10 {
		t.Errorf("%d runs, re-warms by path %v; want one per path before its first counted run", len(f.Runs), rewarms)
	}
	counted := 0
	for _, s := range f.Samples {
		if !s.Warmup {
			counted++
			if !s.Kept {
				t.Errorf("counted run %d of %s: user %d opened a new connection", s.Run, s.Cell, s.User)
			}
		}
	}
	if counted != 2*3*2 { // two paths, three counted runs (one of the four is the warm-up), two users
		t.Errorf("%d counted samples, want %d", counted, 2*3*2)
	}
	sum := report.Summarize(f)
	if !slices.ContainsFunc(sum.Notes, func(n string) bool { return strings.HasPrefix(n, "resumed: 2 re-warm runs (not counted)") }) {
		t.Errorf("notes do not say the re-warms: %q", sum.Notes)
	}
	if sum.Partial != nil {
		t.Errorf("a complete experiment reported partial: %+v", sum.Partial)
	}
	for _, c := range sum.Cells {
		if len(c.Runs) != 3 || c.Completed != 6 || c.Conn == nil || c.Conn.Kept != 6 {
			t.Errorf("cell %s/%s: %d runs, %d completed, %+v", c.Protocol, c.Path, len(c.Runs), c.Completed, c.Conn)
		}
	}
	if _, err := PrepareResume(dir); !errors.Is(err, ErrComplete) {
		t.Errorf("resuming the finished experiment: %v", err)
	}
}

// cutting is keeping that calls cancel as its call number cut begins (0:
// never): a Ctrl-C in the middle of a run.
type cutting struct {
	*keeping
	cut    int
	calls  int
	cancel func()
}

func (c *cutting) Do(ctx context.Context, user int) result.Sample {
	c.mu.Lock()
	c.calls++
	if c.calls == c.cut {
		c.cancel()
	}
	c.mu.Unlock()
	return c.keeping.Do(ctx, user)
}

// resumeCut runs exp in dir (its segment seg, or all of it: nil) until
// three steps are done, then resumes it in new processes (new probes,
// every connection cold): the first cuts resumes are interrupted as path
// cutPath's first counted run begins, right after that step's re-warm
// (cutPath's probe makes one call per user, the re-warm's first); the last
// resume finishes the plan.
func resumeCut(t *testing.T, dir string, exp *Experiment, seg *result.Segment, cutPath path.Path, cuts int) {
	t.Helper()
	users := exp.Groups[0].Conns[0]
	if seg != nil {
		_, users = seg.Users(users)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	process := func(_ *CellGroup, p path.Path) (load.Probe, error) { return &keeping{p: p, open: map[int]bool{}}, nil }
	r := &Executor{Exp: exp, Probe: process, Header: result.Header{Segment: seg}, Segment: seg, OnStep: func(done, _ int, _ result.Run) {
		if done == 3 {
			cancel()
		}
	}}
	if err := r.Execute(ctx, dir); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	for i := 0; i <= cuts; i++ {
		rs, err := PrepareResume(dir)
		if err != nil || len(rs.Done) != 3 || len(rs.Rewarmed) != i {
			t.Fatalf("resume %d: %v, %d done, re-warms %v", i+1, err, len(rs.Done), rs.Rewarmed)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cut := 0 // never
		if i < cuts {
			cut = users + 1
		}
		process := func(_ *CellGroup, p path.Path) (load.Probe, error) {
			k := &keeping{p: p, open: map[int]bool{}}
			if p != cutPath {
				return k, nil
			}
			return &cutting{keeping: k, cut: cut, cancel: cancel}, nil
		}
		err = (&Executor{Exp: rs.Exp, Probe: process, Segment: seg, Done: rs.Done, Rewarmed: rs.Rewarmed}).Execute(ctx, dir)
		cancel()
		if i < cuts && !errors.Is(err, ErrInterrupted) || i == cuts && err != nil {
			t.Fatalf("resume %d: %v", i+1, err)
		}
	}
}

// rewarmSpec is a cell group of c users over ipv4 and ipv6, four runs the
// first a warm-up: a plan of 8 steps, ipv4 before ipv6 in each run.
func rewarmSpec(c int) *Experiment {
	return Single(CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{c}, Runs: 4, Warmup: 1,
		Timeout: Duration(time.Second), Baseline: path.IPv4}, result.Loopback)
}

// TestResumeTwiceAtOneStepNumbersEachRewarm: an experiment interrupted
// right after the same step's re-warm twice (resume, Ctrl-C, resume,
// Ctrl-C, resume) holds three re-warms of that step, each a run number of
// its own (result.RewarmRun), all of seq RewarmIndex of that step; the
// report counts each, and every counted run as before.
func TestResumeTwiceAtOneStepNumbersEachRewarm(t *testing.T) {
	dir := t.TempDir()
	resumeCut(t, dir, rewarmSpec(2), nil, path.IPv6, 2)
	f := readSamples(t, dir)
	runs := map[string]int{}  // records by cell and run
	before := map[int][]int{} // re-warm runs by seq
	for _, r := range f.Runs {
		runs[fmt.Sprintf("%s#%d", r.Cell, r.Run)]++
		if r.Rewarm {
			before[r.Seq] = append(before[r.Seq], r.Run)
		}
	}
	for id, n := range runs {
		if n > 1 {
			t.Errorf("%d records of run %s", n, id)
		}
	}
	want := map[int][]int{result.RewarmIndex(3): {result.RewarmRun(3, 0, 8), result.RewarmRun(3, 1, 8), result.RewarmRun(3, 2, 8)},
		result.RewarmIndex(4): {result.RewarmRun(4, 0, 8)}}
	if fmt.Sprint(before) != fmt.Sprint(want) || fmt.Sprint(before[-4]) != "[-4 -12 -20]" {
		t.Errorf("re-warm runs by seq %v, want %v", before, want)
	}
	samples := map[string]int{}
	for _, s := range f.Samples {
		samples[fmt.Sprintf("%s#%d", s.Cell, s.Run)]++
	}
	for _, r := range f.Runs {
		if n := samples[fmt.Sprintf("%s#%d", r.Cell, r.Run)]; n != r.Completed {
			t.Errorf("run %d of %s: %d completed, %d samples", r.Run, r.Cell, r.Completed, n)
		}
	}
	sum, err := report.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(sum.Notes, func(n string) bool { return strings.HasPrefix(n, "resumed: 4 re-warm runs (not counted)") }) {
		t.Errorf("notes do not count the re-warms: %q", sum.Notes)
	}
	for _, c := range sum.Cells {
		if len(c.Runs) != 3 || c.Completed != 6 || c.Conn == nil || c.Conn.Kept != 6 {
			t.Errorf("cell %s/%s: %d runs, %d completed, %+v", c.Protocol, c.Path, len(c.Runs), c.Completed, c.Conn)
		}
	}
	if sum.Partial != nil || sum.LeftOutRuns != 0 {
		t.Errorf("partial %+v, %d left out", sum.Partial, sum.LeftOutRuns)
	}
}

// TestMergeOfASegmentResumedTwiceAtOneStep: segment 1 of 2 interrupted
// twice right after one step's re-warm, segment 0 resumed once: v6lab
// merge pools the first re-warms of both, keeps segment 1's later ones
// apart, each record over exactly its samples, and the merged figures
// count every user of every counted run once.
func TestMergeOfASegmentResumedTwiceAtOneStep(t *testing.T) {
	root := t.TempDir()
	exp := rewarmSpec(4)
	for i, cuts := range []int{0, 2} {
		dir := filepath.Join(root, "vol", fmt.Sprint("seg", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		e := *exp
		resumeCut(t, dir, &e, &result.Segment{Index: i, Count: 2}, path.IPv6, cuts)
	}
	segs, err := merge.Read([]string{filepath.Join(root, "vol")})
	if err != nil {
		t.Fatal(err)
	}
	if err := merge.Check(segs); err != nil {
		t.Fatal(err)
	}
	dir, s, err := merge.Write(segs, filepath.Join(root, "out"), "", []string{"v6lab", "merge"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f := readSamples(t, dir)
	samples := map[string]int{}
	for _, smp := range f.Samples {
		samples[fmt.Sprintf("%s#%d", smp.Cell, smp.Run)]++
	}
	var rewarms []string
	for _, r := range f.Runs {
		id := fmt.Sprintf("%s#%d", r.Cell, r.Run)
		if samples[id] != r.Completed || r.Err != "" {
			t.Errorf("merged run %s (seq %d): %d completed, %d samples, err %q", id, r.Seq, r.Completed, samples[id], r.Err)
		}
		if r.Rewarm {
			rewarms = append(rewarms, fmt.Sprintf("%d/%d:%d", r.Seq, r.Run, r.Completed))
		}
	}
	// Before step 3: both segments' first (2 users each), segment 1's
	// second and third; before step 4: both segments' (the last resume).
	if got := strings.Join(rewarms, " "); got != "-4/-4:4 -4/-12:2 -4/-20:2 -5/-5:4" {
		t.Errorf("merged re-warms (seq/run:completed) %s", got)
	}
	for _, c := range s.Cells {
		if len(c.Runs) != 3 || c.Completed != 12 {
			t.Errorf("cell %s/%s: %d runs, %d completed", c.Protocol, c.Path, len(c.Runs), c.Completed)
		}
	}
	if s.Partial != nil || s.LeftOutRuns != 0 {
		t.Errorf("partial %+v, %d left out", s.Partial, s.LeftOutRuns)
	}
	if !slices.ContainsFunc(s.Notes, func(n string) bool { return strings.HasPrefix(n, "resumed: 4 re-warm runs (not counted)") }) {
		t.Errorf("notes do not count the merged re-warms: %q", s.Notes)
	}
}

// TestResumeFindsAnUnsplitSchedule: a run on a --start-at schedule but
// not split records no segment, so its schedule is found from a finished
// run's slot: the resume keeps it (trial7 F6).
func TestResumeFindsAnUnsplitSchedule(t *testing.T) {
	dir := t.TempDir()
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1}, Runs: 2,
		Timeout: Duration(10 * time.Millisecond), Baseline: path.IPv4}
	exp := Single(spec, result.Hosts)
	start := time.Now().Add(-exp.Groups[0].Slot()).Truncate(time.Millisecond) // step 1 is due now
	ctx, cancel := context.WithCancel(context.Background())
	r := &Executor{Exp: exp, StartAt: start, Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil },
		OnStep: func(done, _ int, _ result.Run) {
			if done == 2 {
				cancel()
			}
		}}
	if err := r.Execute(ctx, dir); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	rs, err := PrepareResume(dir)
	if err != nil || len(rs.Done) != 2 || !rs.StartAt.Equal(start) {
		t.Fatalf("resume: %v, %d done, schedule %v, want %v", err, len(rs.Done), rs.StartAt, start)
	}
}

// TestAScheduledResumeRewarmsAfterThePreviousSlotsRuns: a resumed run on a
// schedule re-warms before its first counted run once the slot before
// has only its margin left (every segment's run of it has ended), not as
// soon as it resumes, when the other segments may still be in theirs;
// the counted run then starts at its slot.
func TestAScheduledResumeRewarmsAfterThePreviousSlotsRuns(t *testing.T) {
	dir := t.TempDir()
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4}, Conns: []int{1}, Runs: 3, Warmup: 1,
		Timeout: Duration(300 * time.Millisecond), Baseline: path.IPv4}
	exp := Single(spec, result.Hosts)
	start := time.Now().Add(50 * time.Millisecond).Truncate(time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	probe := func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil }
	r := &Executor{Exp: exp, StartAt: start, Probe: probe, OnStep: func(done, _ int, _ result.Run) {
		if done == 1 { // after the warm-up, long before the next slot
			cancel()
		}
	}}
	if err := r.Execute(ctx, dir); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	rs, err := PrepareResume(dir)
	if err != nil || len(rs.Done) != 1 || !rs.StartAt.Equal(start) {
		t.Fatalf("resume: %v, %d done, schedule %v", err, len(rs.Done), rs.StartAt)
	}
	if err := (&Executor{Exp: rs.Exp, Probe: probe, Done: rs.Done, StartAt: rs.StartAt}).Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	slots := exp.Schedule(start)
	var rewarms int
	for _, run := range readSamples(t, dir).Runs {
		switch {
		case run.Rewarm:
			rewarms++
			if run.Start.Before(slots[1].Add(-SlotMargin)) || !run.End.Before(slots[1]) {
				t.Errorf("re-warm ran %v to %v; want it after %v (step 0's slot less its margin), before step 1's slot %v",
					run.Start, run.End, slots[1].Add(-SlotMargin), slots[1])
			}
		case run.Start.Before(slots[run.Seq]) || !run.Slot.Equal(slots[run.Seq]):
			t.Errorf("step %d started %v, slot %v (want %v)", run.Seq, run.Start, run.Slot, slots[run.Seq])
		}
	}
	if rewarms != 1 {
		t.Errorf("%d re-warms, want 1", rewarms)
	}
}

// TestResumeRemovesTheExportItMakesStale: a samples.parquet exported
// from an interrupted result would lack the runs a resume adds, and
// nothing would say so: the resume removes it and names it. A file of
// that name that is not Parquet is not an export, and stays; the export
// of a finished result, which no resume changes, stays too.
func TestResumeRemovesTheExportItMakesStale(t *testing.T) {
	export := func(dir string) string {
		t.Helper()
		name, _ := result.SamplesPath(dir)
		out := filepath.Join(dir, result.ParquetName)
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := result.ExportParquet(name, f, nil); err != nil {
			t.Fatal(err)
		}
		return out
	}
	dir := t.TempDir()
	process := interruptedKeeping(t, dir, 3)
	stale := export(dir)
	rs, err := PrepareResume(dir)
	if err != nil || rs.StaleExport != stale {
		t.Fatalf("resume: %v, stale export %q, want %q", err, rs.StaleExport, stale)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there after the resume: %v", stale, err)
	}
	if err := (&Executor{Exp: rs.Exp, Probe: process, Done: rs.Done}).Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	whole := export(dir)
	if _, err := PrepareResume(dir); !errors.Is(err, ErrComplete) {
		t.Fatalf("resuming the finished experiment: %v", err)
	}
	if _, err := os.Stat(whole); err != nil {
		t.Errorf("the finished result's export: %v", err)
	}
	// Not Parquet: somebody's own file, kept.
	dir = t.TempDir()
	interruptedKeeping(t, dir, 3)
	mine := filepath.Join(dir, result.ParquetName)
	os.WriteFile(mine, []byte("my notes"), 0o644)
	if rs, err := PrepareResume(dir); err != nil || rs.StaleExport != "" {
		t.Fatalf("resume: %v, stale export %q", err, rs.StaleExport)
	}
	if b, err := os.ReadFile(mine); err != nil || string(b) != "my notes" {
		t.Errorf("a file that is not an export: %q, %v", b, err)
	}
}
