package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto/all"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

func TestPlanInterleavesPaths(t *testing.T) {
	s := CellGroup{Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1, 10}, Runs: 3, Warmup: 1}
	var got []string
	for _, st := range s.Plan() {
		w := ""
		if st.Warmup {
			w = "w"
		}
		got = append(got, string(st.Path)[3:]+"/"+itoa(st.Conns)+"/"+itoa(st.Run)+w)
	}
	want := "4/1/0w 6/1/0w 4/1/1 6/1/1 4/1/2 6/1/2 4/10/0w 6/10/0w 4/10/1 6/10/1 4/10/2 6/10/2"
	if strings.Join(got, " ") != want {
		t.Fatalf("plan %s\nwant %s", strings.Join(got, " "), want)
	}
}

func itoa(n int) string { return strings.TrimPrefix(result.CellKey("", "", n), "//") }

func TestValidate(t *testing.T) {
	good := CellGroup{Paths: []path.Path{path.IPv4}, Conns: []int{1}, Runs: 2, Warmup: 1, Timeout: Duration(time.Second)}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*CellGroup){
		"runs: 0: want 1 to 10000 runs per cell":          func(s *CellGroup) { s.Runs = 0 },
		"warmup: 2 warm-up runs leave none of the 2 runs": func(s *CellGroup) { s.Warmup = 2 },
		"warmup: -1: must not be negative":                func(s *CellGroup) { s.Warmup = -1 },
		"timeout: must be more than zero":                 func(s *CellGroup) { s.Timeout = 0 },
		"conns[0]: 0: want 1 to 100000 connections":       func(s *CellGroup) { s.Conns = []int{0} },
		"conns[1]: 1 is listed twice":                     func(s *CellGroup) { s.Conns = []int{1, 1} },
		"conns: the list is empty":                        func(s *CellGroup) { s.Conns = nil },
		"pause: must not be negative":                     func(s *CellGroup) { s.Pause = -1 },
		"duration: must not be negative":                  func(s *CellGroup) { s.Duration = -1 },
		"no paths":                                        func(s *CellGroup) { s.Paths = nil },
	}
	for want, mut := range cases {
		s := good
		mut(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

func TestCheckOpenFilesSaysHowManyArePossible(t *testing.T) {
	e := Experiment{Name: "x", Groups: []CellGroup{{Conns: []int{10, 1000000}}}}
	err := e.CheckOpenFiles(1<<20, 1)
	if err == nil || !strings.Contains(err.Error(), "1000000 simultaneous connections need about 2000256 open files, and this process may open at most 1048576 (ulimit -Hn): at most 524160 connections are possible here") {
		t.Errorf("loopback: %v", err)
	}
	if err := e.CheckOpenFiles(4<<20, 1); err != nil {
		t.Errorf("enough files: %v", err)
	}
	// In the lab the servers are another process's: 10,000 users need a
	// file each, which 20,000 allows.
	lab := Experiment{Name: "x", Groups: []CellGroup{{Conns: []int{10000}}}}
	if err := lab.CheckOpenFiles(20000, 0); err != nil {
		t.Errorf("10,000 users in the lab: %v", err)
	}
	if err := lab.CheckOpenFiles(20000, 1); err == nil {
		t.Error("10,000 users on loopback with 20,000 files passed")
	}
}

type counting struct{ fail bool }

func (c counting) Do(ctx context.Context, user int) result.Sample {
	tr := load.Begin("fake", path.IPv4)
	if c.fail && user == 0 {
		return tr.Fail(ctx, "reply", errors.New("boom"))
	}
	return tr.Done("ok")
}

func TestRunnerStreamsEverySampleAndRun(t *testing.T) {
	dir := t.TempDir()
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1, 3}, Runs: 3, Warmup: 1,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	steps := 0
	r := &Executor{Exp: Single(spec, result.Loopback), Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{fail: true}, nil },
		OnStep: func(done, total int, _ result.Run) { steps = done }}
	if err := r.Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	f := readSamples(t, dir)
	if steps != 12 || len(f.Runs) != 12 || len(f.Samples) != 2*3*(1+3) {
		t.Fatalf("steps %d runs %d samples %d", steps, len(f.Runs), len(f.Samples))
	}
	if f.Runs[0].Completed != 0 || f.Runs[0].Failed != 1 || f.Runs[2].Completed != 0 {
		t.Errorf("run counts %+v", f.Runs[:3])
	}
	if f.Header.Name != "t" || f.Header.Baseline != "ipv4" || f.Header.Spec == nil {
		t.Errorf("header %+v", f.Header)
	}
	// Running into the same directory again must not overwrite it.
	if err := r.Execute(context.Background(), dir); err == nil {
		t.Fatal("second run overwrote samples.jsonl")
	}
}

func TestRunnerInterruptedKeepsFinishedRuns(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4}, Conns: []int{2}, Runs: 10,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	r := &Executor{Exp: Single(spec, result.Loopback), Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil },
		OnStep: func(done, _ int, _ result.Run) {
			if done == 4 {
				cancel()
			}
		}}
	if err := r.Execute(ctx, dir); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	f := readSamples(t, dir)
	if len(f.Runs) != 4 || len(f.Samples) != 8 {
		t.Fatalf("after interrupt: %d runs, %d samples", len(f.Runs), len(f.Samples))
	}
	// Four runs finished before the interruption: resuming does the six
	// after them (a cut run's lines are tested in TestResumeCutsAHalfWrittenLine).
	rs, err := PrepareResume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Done) != 4 || rs.Moved != "" || rs.Exp.Name != "t" {
		t.Fatalf("resume: %d done, moved %q, exp %+v", len(rs.Done), rs.Moved, rs.Exp)
	}
	r2 := &Executor{Exp: rs.Exp, Probe: r.Probe, Done: rs.Done}
	if err := r2.Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	f = readSamples(t, dir)
	seqs := map[int]int{}
	for _, run := range f.Runs {
		seqs[run.Seq]++
		if run.Err != "" {
			t.Errorf("run %d: %s", run.Seq, run.Err)
		}
	}
	if len(f.Runs) != 10 || len(seqs) != 10 || len(f.Samples) != 20 {
		t.Errorf("after resume: %d runs (%d distinct), %d samples", len(f.Runs), len(seqs), len(f.Samples))
	}
	if _, err := PrepareResume(dir); !errors.Is(err, ErrComplete) {
		t.Errorf("resuming a complete experiment: %v", err)
	}
}

func readSamples(t *testing.T, dir string) *result.File {
	t.Helper()
	name, err := result.SamplesPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := result.Read(fh, name)
	if err != nil || f.Truncated {
		t.Fatalf("read: %v (truncated %v)", err, f.Truncated)
	}
	return f
}

// plainSamples turns dir's compressed samples file into a plain one, as
// v6lab wrote them before 2026-11-26 (resume takes both), and returns its
// name.
func plainSamples(t *testing.T, dir string) string {
	t.Helper()
	zname := filepath.Join(dir, result.SamplesName)
	zf, err := os.Open(zname)
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	text, err := result.Decompress(zf)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(text)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, result.PlainSamplesName)
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(zname)
	return name
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestResumeCutsAHalfWrittenLine(t *testing.T) {
	dir := t.TempDir()
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1}, Runs: 3,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	r := &Executor{Exp: Single(spec, result.Loopback), Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil }}
	if err := r.Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	// A kill in the middle of the 5th run: its sample and half a line.
	name := plainSamples(t, dir)
	lines := readLines(t, name)
	cut := strings.Join(lines[:1+4*2+1], "\n") + "\n" + lines[10][:20]
	os.WriteFile(name, []byte(cut), 0o644)
	rs, err := PrepareResume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Done) != 4 || len(readLines(t, rs.Moved)) != 2 {
		t.Fatalf("done %v, moved %q", rs.Done, readLines(t, rs.Moved))
	}
	if err := (&Executor{Exp: rs.Exp, Probe: r.Probe, Done: rs.Done}).Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if f := readSamples(t, dir); len(f.Runs) != 6 || len(f.Samples) != 6 {
		t.Errorf("after resume: %d runs, %d samples", len(f.Runs), len(f.Samples))
	}
}

func TestShuffledPlanIsRecordedAndRepeatable(t *testing.T) {
	e := Experiment{Name: "s", Order: OrderShuffled, Seed: 7, Baseline: path.IPv4, Groups: []CellGroup{
		{Protocol: "http", Paths: []path.Path{path.IPv4, path.IPv6, path.SixIn4}, Conns: []int{1}, Runs: 20, Timeout: 1},
		{Protocol: "dns", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1, 2}, Runs: 2, Timeout: 1},
	}}
	order := func(e Experiment) string {
		var b strings.Builder
		for _, st := range e.Plan() {
			b.WriteString(map[path.Path]string{path.IPv4: "4", path.IPv6: "6", path.SixIn4: "t"}[st.Path])
		}
		return b.String()
	}
	a := order(e)
	if a != order(e) || len(a) != 60+8 {
		t.Fatalf("plan not repeatable: %s", a)
	}
	e2 := e
	e2.Seed = 8
	if order(e2) == a {
		t.Error("another seed gave the same order")
	}
	// Every run still holds each path once, and the cells stay in order.
	plan := e.Plan()
	for i := 0; i < 60; i += 3 {
		seen := map[path.Path]bool{}
		for _, st := range plan[i : i+3] {
			seen[st.Path] = true
			if st.Group != 0 || st.Run != i/3 {
				t.Fatalf("step %d: %+v", i, st)
			}
		}
		if len(seen) != 3 {
			t.Fatalf("run %d: paths %v", i/3, seen)
		}
	}
	if plan[60].Group != 1 || plan[67].Seq != 67 {
		t.Errorf("second cell group: %+v %+v", plan[60], plan[67])
	}
	e3 := e
	e3.Order = OrderInterleaved
	if !strings.HasPrefix(order(e3), "46t46t46t") {
		t.Errorf("interleaved order %s", order(e3))
	}
}

func TestLoopbackPlaceRefusesSixIn4(t *testing.T) {
	_, err := LoopbackPlace([]path.Path{path.IPv4, path.SixIn4})
	if err == nil || !strings.Contains(err.Error(), "6in4 needs the lab") {
		t.Fatalf("err %v", err)
	}
}

// TestBulkTransfersRunInConstantMemory fetches a 2 GB file over FTP and
// HTTP from the embedded servers: neither side may hold it, so this
// process (both sides at once) allocates a small fraction of it.
func TestBulkTransfersRunInConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 4 GB over loopback")
	}
	at, err := LoopbackPlace([]path.Path{path.IPv4})
	if err != nil {
		t.Fatal(err)
	}
	l, err := all.Start(context.Background(), []string{"ftp", "http"}, at)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	probes := Probes(l.Endpoints(nil))
	const size = 2183355160 // the Regensburg file set's largest
	for _, proto := range []string{"ftp", "http"} {
		spec := &CellGroup{Protocol: proto, Options: all.MustGet(proto).New()}
		if err := spec.Options.Check(result.Loopback, func(string) bool { return false }); err != nil {
			t.Fatal(err)
		}
		if err := setOpt(spec, "file", "2183355160"); err != nil {
			t.Fatal(err)
		}
		pr, err := probes(spec, path.IPv4)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		s := pr.Do(ctx, 0)
		cancel()
		runtime.ReadMemStats(&after)
		if !s.OK() || s.BytesIn < size || s.Metrics["mbytes_per_s"] <= 0 || s.Metrics["file_bytes"] != size {
			t.Fatalf("%s: %s, %d bytes, metrics %v", proto, s.Err, s.BytesIn, s.Metrics)
		}
		if _, ok := s.Metrics["body_bytes"]; ok {
			t.Errorf("%s: body_bytes kept beside file_bytes: %v", proto, s.Metrics)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("%s: a 2 GB transfer allocated %d MB", proto, alloc>>20)
		}
	}
}

// conds records what the runner asks of its conditions.
type conds struct {
	begun, ended, finished int
	failAt                 int // Begin fails at this call (1-based), 0: never
}

func (c *conds) Begin(_ context.Context, s *CellGroup, st Step) error {
	c.begun++
	if c.begun == c.failAt {
		return errors.New("generator host unreachable")
	}
	return nil
}

func (c *conds) End(s *CellGroup, st Step, rec *result.Run, samples []result.Sample) {
	c.ended++
	rec.Background = &result.Background{Level: s.Background}
	for i := range samples {
		samples[i].Metrics = map[string]float64{"server_delay_ms": float64(st.Run)}
	}
}

func (c *conds) Finish() { c.finished++ }

// TestRunnerConditionsSurroundEachRun: Begin and End around every run,
// server-capture samples completed by End before they are written, Finish
// once; a Begin that fails stops the experiment with its reason.
func TestRunnerConditionsSurroundEachRun(t *testing.T) {
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{2}, Runs: 2,
		Timeout: Duration(time.Second), Baseline: path.IPv4, Background: "C1B", ServerCapture: true}
	c := &conds{}
	dir := t.TempDir()
	r := &Executor{Exp: Single(spec, result.Lab), Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil }, Conditions: c}
	if err := r.Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	if c.begun != 4 || c.ended != 4 || c.finished != 1 {
		t.Errorf("begun %d ended %d finished %d", c.begun, c.ended, c.finished)
	}
	f := readSamples(t, dir)
	for _, run := range f.Runs {
		if run.Background == nil || run.Background.Level != "C1B" {
			t.Errorf("run %+v", run)
		}
	}
	for _, s := range f.Samples {
		if v, ok := s.Metrics["server_delay_ms"]; !ok || v != float64(s.Run) {
			t.Errorf("sample of run %d: metrics %v", s.Run, s.Metrics)
		}
	}
	c = &conds{failAt: 2}
	r.Conditions = c
	err := r.Execute(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "generator host unreachable") || c.finished != 1 {
		t.Errorf("failing Begin: %v (finished %d)", err, c.finished)
	}
}

// twoRuns is the result directory of two runs of a fake cell over ipv4
// on loopback, each one transaction.
func twoRuns(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4}, Conns: []int{1}, Runs: 2,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	r := &Executor{Exp: Single(spec, result.Loopback), Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil }}
	if err := r.Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestResumeRefusesAGiantLineWithoutReadingIt: a samples file with a line
// far beyond any v6lab writes (a damaged or planted file) is refused with
// a clear error, and the file is read as a stream, never whole.
func TestResumeRefusesAGiantLineWithoutReadingIt(t *testing.T) {
	dir := twoRuns(t)
	name := plainSamples(t, dir)
	lines := readLines(t, name)
	f, _ := os.Create(name)
	f.WriteString(lines[0] + "\n" + lines[1] + "\n")
	f.Write(bytes.Repeat([]byte("x"), result.MaxLine+10)) // no newline at all
	f.Close()
	_, err := PrepareResume(dir)
	if err == nil || !strings.Contains(err.Error(), "longer than") || len(err.Error()) > 300 {
		t.Fatalf("resume of a file with a giant line: %.300v", err)
	}
}

// slowStart stands for a background traffic level's lead-in before each run.
type slowStart struct{}

func (slowStart) Begin(context.Context, *CellGroup, Step) error {
	time.Sleep(200 * time.Millisecond)
	return nil
}
func (slowStart) End(*CellGroup, Step, *result.Run, []result.Sample) {}
func (slowStart) Finish()                                            {}

// TestARunsTimeLeavesTheLeadInOut: a run's record starts with its load,
// not before the conditions' lead-in, so rate/s divides by the time
// transactions ran.
func TestARunsTimeLeavesTheLeadInOut(t *testing.T) {
	dir := t.TempDir()
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4}, Conns: []int{1}, Runs: 2,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	r := &Executor{Exp: Single(spec, result.Loopback), Conditions: slowStart{},
		Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil }}
	if err := r.Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	for _, run := range readSamples(t, dir).Runs {
		if d := run.End.Sub(run.Start); d >= 150*time.Millisecond {
			t.Errorf("run %d lasted %v: the 200 ms lead-in was counted", run.Run, d)
		}
	}
}

// TestASegmentRunsItsShareAtItsSlots: segment 1/3 of runs of 1 and 7
// users runs users 2-3 of the 7 and none of the lone user; with a
// schedule, every run starts at its slot (timeout + margin + pause, from
// the experiment alone), and a segment that starts behind its schedule
// records how late each run was.
func TestASegmentRunsItsShareAtItsSlots(t *testing.T) {
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1, 7}, Runs: 1,
		Timeout: Duration(100 * time.Millisecond), Pause: Duration(50 * time.Millisecond), Baseline: path.IPv4}
	exp := Single(spec, result.Hosts)
	if got := exp.Groups[0].Slot(); got != 100*time.Millisecond+SlotMargin+50*time.Millisecond {
		t.Fatalf("slot %v", got)
	}
	start := time.Now().Add(200 * time.Millisecond).Truncate(time.Millisecond)
	slots := exp.Schedule(start)
	if len(slots) != 4 || !slots[0].Equal(start) || slots[3].Sub(start) != 3*exp.Groups[0].Slot() {
		t.Fatalf("slots %v", slots)
	}
	if end := exp.ScheduleEnd(start); end.Sub(start) != 4*exp.Groups[0].Slot() {
		t.Fatalf("schedule ends %v after its start", end.Sub(start))
	}
	// Shorten the margin's effect for the test: a schedule of four slots
	// takes about 4.6 s, so run the two steps of one count only.
	exp.Groups[0].Conns = []int{7}
	dir := t.TempDir()
	r := &Executor{Exp: exp, Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil },
		Segment: &result.Segment{Index: 1, Count: 3}, StartAt: start}
	if err := r.Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	f := readSamples(t, dir)
	users := map[int]int{}
	for _, s := range f.Samples {
		users[s.User]++
		if s.Conns != 7 {
			t.Errorf("sample of %d conns: a segment's samples keep the cell's count", s.Conns)
		}
	}
	if len(f.Samples) != 4 || users[2] != 2 || users[3] != 2 {
		t.Fatalf("segment 1/3 of 7 users ran %v", users)
	}
	for i, run := range f.Runs {
		want := start.Add(time.Duration(i) * exp.Groups[0].Slot())
		// On time, or late by a loaded machine's scheduling, which the
		// record then says (LateNS past result.LateAfter).
		late := run.Start.Sub(want)
		if !run.Slot.Equal(want) || late < 0 || late > 50*time.Millisecond || (late <= result.LateAfter) != (run.LateNS == 0) {
			t.Errorf("run %d slot %v start %v late %d, want its slot %v", i, run.Slot, run.Start, run.LateNS, want)
		}
	}
	// Behind schedule: every run records its lateness, none is shifted.
	late := time.Now().Add(-2 * time.Second)
	dir2 := t.TempDir()
	r2 := &Executor{Exp: exp, Probe: r.Probe, StartAt: late}
	if err := r2.Execute(context.Background(), dir2); err != nil {
		t.Fatal(err)
	}
	f2 := readSamples(t, dir2)
	if len(f2.Runs) != 2 || f2.Runs[0].LateNS < int64(time.Second) || f2.Runs[1].LateNS < int64(500*time.Millisecond) {
		t.Errorf("late runs %+v", f2.Runs)
	}
	if len(f2.Samples) != 14 {
		t.Errorf("an unsplit run ran %d samples, want 14", len(f2.Samples))
	}
}

// engineProbe records the engine it says it runs on.
type engineProbe struct {
	counting
	engine string
}

func (p engineProbe) Record() map[string]string { return map[string]string{"engine": p.engine} }

// TestRunnerRecordsHowProbesRan: a cell group's params in the header say
// what its probes record (http: the engine), one value when every path
// agrees, each path's when they differ, over what the cell asked for; a
// param the probes do not record stays.
func TestRunnerRecordsHowProbesRan(t *testing.T) {
	base := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1}, Runs: 1,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	agree, differ, given := base, base, base
	agree.Label, differ.Label, given.Label = "agree", "differ", "given"
	given.Params = map[string]string{"engine": "auto", "other": "kept"}
	exp := &Experiment{Name: "t", Where: "loopback", Baseline: path.IPv4, Order: "interleaved", Groups: []CellGroup{agree, differ, given}}
	r := &Executor{Exp: exp, Probe: func(s *CellGroup, p path.Path) (load.Probe, error) {
		if s.Label == "differ" && p == path.IPv6 {
			return engineProbe{engine: "go"}, nil
		}
		return engineProbe{engine: "evloop"}, nil
	}}
	dir := t.TempDir()
	if err := r.Execute(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(plainSamples(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Spec Experiment `json:"spec"`
	}
	if err := json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &h); err != nil {
		t.Fatal(err)
	}
	want := []string{"evloop", "ipv4=evloop ipv6=go", "evloop"}
	for i, c := range h.Spec.Groups {
		if got := c.Params["engine"]; got != want[i] {
			t.Errorf("%s: engine %q, want %q", c.Label, got, want[i])
		}
	}
	if got := h.Spec.Groups[2].Params["other"]; got != "kept" {
		t.Errorf("a param the probes do not record became %q", got)
	}
}

// TestResumeNeverCutsAFileStillBeingWritten: while a run still writes its
// samples file (a killed lab run's measuring process ends its last run on
// its own), a resume neither cuts it nor appends to it; once the writer is
// done, the file is whole.
func TestResumeNeverCutsAFileStillBeingWritten(t *testing.T) {
	dir := t.TempDir()
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4}, Conns: []int{1}, Runs: 6,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	held, release := make(chan struct{}), make(chan struct{})
	r := &Executor{Exp: Single(spec, result.Loopback), Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil },
		OnStep: func(done, _ int, _ result.Run) {
			if done == 3 {
				close(held)
				<-release
			}
		}}
	errc := make(chan error, 1)
	go func() { errc <- r.Execute(context.Background(), dir) }()
	<-held
	if _, err := PrepareResume(dir); !errors.Is(err, result.ErrBusy) {
		t.Errorf("resume while the file is written: %v, want ErrBusy", err)
	}
	r2 := &Executor{Exp: r.Exp, Probe: r.Probe, Done: map[int]bool{0: true}}
	if err := r2.Execute(context.Background(), dir); !errors.Is(err, result.ErrBusy) {
		t.Errorf("a second writer: %v, want ErrBusy", err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	f := readSamples(t, dir)
	if len(f.Runs) != 6 || f.Truncated {
		t.Errorf("the writer's file: %d runs, truncated %v", len(f.Runs), f.Truncated)
	}
	if _, err := PrepareResume(dir); !errors.Is(err, ErrComplete) {
		t.Errorf("after the writer: %v, want ErrComplete", err)
	}
}

// A result's timing notes say how each of its cells was timed: the
// transactions' notes only where a cell makes transactions, and a trial's
// or an external client's own note, once, where a cell is timed otherwise.
func TestTimingNotesFollowWhatTheCellsTime(t *testing.T) {
	tx := []string{"TX", "LINGER"}
	cell := func(protocol, client string) CellGroup {
		if protocol != "http" && protocol != "ftp" {
			return cellOf(t, protocol)
		}
		return cellOf(t, protocol, "client", client, "file", "/1M")
	}
	notes := func(cells ...CellGroup) []string { return (&Experiment{Groups: cells}).TimingNotes(tx[0], tx[1]) }
	has := func(got []string, sub string) int {
		n := 0
		for _, s := range got {
			if strings.Contains(s, sub) {
				n++
			}
		}
		return n
	}
	if got := notes(cell("http", ""), cell("dns", ""), cell("http", "v6lab")); !slices.Equal(got, tx) {
		t.Errorf("transactions only: %q, want %q", got, tx)
	}
	// DNS over UDP has no connection to linger over.
	if got := notes(cell("dns", "")); !slices.Equal(got, tx[:1]) {
		t.Errorf("dns over udp: %q, want %q", got, tx[:1])
	}
	got := notes(cell("tcp", ""), cell("tcp", ""), cell("udp", ""))
	if has(got, "TX") > 0 || has(got, "LINGER") > 0 || len(got) != 2 || has(got, "(tcp trials)") != 1 || has(got, "(udp trials)") != 1 {
		t.Errorf("trials only: %q, want one tcp and one udp trial note and no transaction note", got)
	}
	got = notes(cell("http", "curl"), cell("ftp", "curl"), cell("ftp", "wget"), cell("smtp", ""))
	if !slices.Equal(got[:2], tx) || has(got, "(client curl)") != 1 || has(got, "(client wget)") != 1 || len(got) != 4 {
		t.Errorf("external clients beside a transaction cell: %q", got)
	}
	// Kept connections (keepalive) are not closed after the marker
	// (trial6 F11): their groups get the kept note, not the linger note.
	keptCell := cellOf(t, "http", "http_version", "2", "tls", "true", "keepalive", "true")
	keptCell.Label = "http/2"
	if got := notes(keptCell); len(got) != 2 || got[0] != "TX" || !strings.HasPrefix(got[1], KeptNote) || has(got, "LINGER") > 0 {
		t.Errorf("kept connections only: %q", got)
	}
	// HTTP/3's kept QUIC connections too (trial7 F8: only HTTP/2's said).
	kept3 := cellOf(t, "http", "http_version", "3", "keepalive", "true")
	kept3.Label = "http/3"
	if got := notes(kept3); len(got) != 2 || got[0] != "TX" || got[1] != KeptNote+" (cell groups HTTP/3)" {
		t.Errorf("kept HTTP/3 connections only: %q", got)
	}
	got = notes(cell("http", ""), keptCell)
	if len(got) != 3 || got[1] != "LINGER (cell groups http)" || got[2] != KeptNote+" (cell groups HTTP/2)" {
		t.Errorf("new and kept connections: %q", got)
	}
	// A probe's group is labelled http whatever version it speaks: the
	// note calls it as its tables' titles do, HTTP/2 (trial7 F8), as it
	// does the file's http/2 above.
	probe2 := cellOf(t, "http", "http_version", "2", "tls", "true", "keepalive", "true")
	if got := notes(probe2); len(got) != 2 || got[1] != KeptNote+" (cell groups HTTP/2)" {
		t.Errorf("a probe's kept HTTP/2 group: %q", got)
	}
	// In the clear it spoke h2c, and is called so, as its tables' titles
	// (trial10 T4).
	probeC := cellOf(t, "http", "http_version", "2", "tls", "false", "keepalive", "true")
	if got := notes(probeC); len(got) != 2 || got[1] != KeptNote+" (cell groups HTTP/2 (h2c))" {
		t.Errorf("a probe's kept h2c group: %q", got)
	}
}

// TestValidateRefusesLabOnlyPathsOffTheLab: an experiment built in code
// (as probe commands build theirs) for hosts or loopback cannot list a
// lab-only path; in the lab, or where the run decides (auto), it can.
func TestValidateRefusesLabOnlyPathsOffTheLab(t *testing.T) {
	spec := CellGroup{Name: "t", Protocol: "http", Paths: []path.Path{path.IPv4, path.NAT64}, Conns: []int{1}, Runs: 2, Warmup: 1,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	for where, bad := range map[result.Where]bool{result.Hosts: true, result.Loopback: true, result.Lab: false, result.Auto: false} {
		err := Single(spec, where).Validate()
		if bad != (err != nil && strings.Contains(err.Error(), "nat64 needs the lab")) || (!bad && err != nil) {
			t.Errorf("where %s: %v", where, err)
		}
	}
}

// TestResumeCutsACompressedFileAtARun: a compressed samples file cut
// anywhere (a kill) is cut back to the end of its last whole run's frame;
// the lines after it move to samples.unfinished-N.jsonl, the file stays
// zstd, and the resumed experiment ends with every run once.
func TestResumeCutsACompressedFileAtARun(t *testing.T) {
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{3}, Runs: 4,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	probe := func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil }
	whole := t.TempDir()
	if err := (&Executor{Exp: Single(spec, result.Loopback), Probe: probe}).Execute(context.Background(), whole); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(filepath.Join(whole, result.SamplesName))
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(full) / 3, len(full) / 2, len(full) - 7, len(full)} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, result.SamplesName), full[:cut], 0o644)
		rs, err := PrepareResume(dir)
		if cut == len(full) {
			if !errors.Is(err, ErrComplete) {
				t.Errorf("the whole file: %v, want ErrComplete", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cut at %d of %d: %v", cut, len(full), err)
		}
		kept := readSamples(t, dir)
		if len(kept.Runs) != len(rs.Done) || len(kept.Samples) != 3*len(rs.Done) || kept.Truncated {
			t.Fatalf("cut at %d: kept %d runs, %d samples (truncated %v); done %d", cut, len(kept.Runs), len(kept.Samples), kept.Truncated, len(rs.Done))
		}
		if err := (&Executor{Exp: rs.Exp, Probe: probe, Done: rs.Done}).Execute(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
		f := readSamples(t, dir)
		seqs := map[int]bool{}
		for _, r := range f.Runs {
			seqs[r.Seq] = true
		}
		if len(f.Runs) != 8 || len(seqs) != 8 || len(f.Samples) != 24 {
			t.Errorf("cut at %d, resumed: %d runs (%d distinct), %d samples", cut, len(f.Runs), len(seqs), len(f.Samples))
		}
		if b, _ := os.ReadFile(filepath.Join(dir, result.SamplesName)); !bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}) {
			t.Errorf("cut at %d: the resumed file is no longer zstd", cut)
		}
	}
}

// TestAURLsPasswordIsNeverRecorded: a cell group's url is recorded with
// its password masked, and such a result cannot be resumed (it says why).
func TestAURLsPasswordIsNeverRecorded(t *testing.T) {
	c := cellOf(t, "ftp", "url", "ftp://u:secret@192.0.2.1/1M")
	c.Name, c.Paths, c.Conns, c.Runs, c.Timeout, c.Baseline = "t", []path.Path{path.IPv4}, []int{1}, 1, Duration(time.Second), path.IPv4
	b, err := json.Marshal(c)
	if err != nil || strings.Contains(string(b), "secret") || !strings.Contains(string(b), "u:xxxxx@192.0.2.1") {
		t.Fatalf("recorded %s (%v)", b, err)
	}
	if got := c.Opts().Destination(); strings.Contains(got, "secret") {
		t.Errorf("destination %q", got)
	}
	dir := t.TempDir()
	r := &Executor{Exp: Single(c, result.Hosts), Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil }}
	r.Exp.Groups[0].Runs = 2
	ctx, cancel := context.WithCancel(context.Background())
	r.OnStep = func(int, int, result.Run) { cancel() }
	_ = r.Execute(ctx, dir)
	if _, err := PrepareResume(dir); err == nil || !strings.Contains(err.Error(), "had a password, which results do not record") {
		t.Errorf("resume: %v", err)
	}
}

// TestASecretOptionIsNeverRecorded: an option tagged secret (IMAP's
// password) is recorded masked when it is not the default, and such a
// result cannot be resumed; the default is public and recorded.
func TestASecretOptionIsNeverRecorded(t *testing.T) {
	for _, tc := range []struct {
		password string
		masked   bool
	}{{"imapS3cret", true}, {"v6lab", false}} {
		c := cellOf(t, "imap", "password", tc.password)
		c.Name, c.Paths, c.Conns, c.Runs, c.Timeout, c.Baseline = "t", []path.Path{path.IPv4}, []int{1}, 2, Duration(time.Second), path.IPv4
		b, err := json.Marshal(c)
		if err != nil || strings.Contains(string(b), "imapS3cret") || strings.Contains(string(b), `"password":"xxxxx"`) != tc.masked {
			t.Fatalf("password %s recorded as %s (%v)", tc.password, b, err)
		}
		dir := t.TempDir()
		r := &Executor{Exp: Single(c, result.Hosts), Probe: func(*CellGroup, path.Path) (load.Probe, error) { return counting{}, nil }}
		ctx, cancel := context.WithCancel(context.Background())
		r.OnStep = func(int, int, result.Run) { cancel() }
		_ = r.Execute(ctx, dir)
		_, err = PrepareResume(dir)
		if refused := err != nil && strings.Contains(err.Error(), "password was a secret"); refused != tc.masked {
			t.Errorf("password %s: resume: %v", tc.password, err)
		}
	}
}

// TestResumeOfASurveyPointsAtSurvey: run --resume of a survey's result says
// so and how to resume it, as bad input (status 2), not that the file is
// from another version (trial6 F16).
func TestResumeOfASurveyPointsAtSurvey(t *testing.T) {
	dir := twoRuns(t)
	name := plainSamples(t, dir)
	lines := readLines(t, name)
	if !strings.Contains(lines[0], `"target":""`) {
		t.Fatalf("header %.200s", lines[0])
	}
	os.WriteFile(name, []byte(strings.Replace(lines[0], `"target":""`, `"target":"sites"`, 1)+"\n"), 0o644)
	_, err := PrepareResume(dir)
	var code interface{ ExitCode() int }
	if err == nil || !strings.Contains(err.Error(), "a survey's result: resume it with v6lab survey --resume") || !errors.As(err, &code) || code.ExitCode() != 2 {
		t.Fatalf("resume of a survey: %v", err)
	}
}
