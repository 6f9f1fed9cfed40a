package measure

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
)

type okProbe struct{}

func (okProbe) Do(ctx context.Context, user int) result.Sample {
	return load.Begin("fake", path.IPv4).Done("ok")
}

// refuseIPv6 is a wire check that proves ipv4's runs and not ipv6's, as
// the lab's does when a path's packets crossed as the wrong family.
type refuseIPv6 struct{}

func (refuseIPv6) Start(string, path.Path) {}
func (refuseIPv6) Stop(p path.Path) (result.Wire, error) {
	if p == path.IPv6 {
		return result.Wire{IPv4: 10}, errors.New("path ipv6, but the wire carried 10 IPv4")
	}
	return result.Wire{IPv4: 10}, nil
}

// failProbe fails every transaction, as a NAT out of ports does.
type failProbe struct{}

func (failProbe) Do(ctx context.Context, user int) result.Sample {
	return load.Begin("fake", path.IPv6).Fail(ctx, "connect", errors.New("nat pool exhausted"))
}

// silentWire saw nothing on the measured link, and says so.
type silentWire struct{}

func (silentWire) Start(string, path.Path) {}
func (silentWire) Stop(p path.Path) (result.Wire, error) {
	return result.Wire{}, errors.New("the wire carried 0 IPv4 and 0 IPv6 packets")
}

// TestARunThatFailedWholeBeforeTheWireIsCounted: every transaction failed
// and nothing crossed the measured link: the failures are counted (a
// completion share that left them out would overstate it); a run that
// completed transactions with nothing on the wire is still left out.
func TestARunThatFailedWholeBeforeTheWireIsCounted(t *testing.T) {
	spec := experiment.CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{2}, Runs: 2,
		Timeout: experiment.Duration(time.Second), Baseline: path.IPv4}
	for _, tc := range []struct {
		probe   load.Probe
		leftOut bool
	}{{failProbe{}, false}, {okProbe{}, true}} {
		j := Job{Exp: experiment.Single(spec, result.Loopback), Target: result.Loopback, Results: t.TempDir(), Wire: silentWire{},
			Probe: func(*experiment.CellGroup, path.Path) (load.Probe, error) { return tc.probe, nil }}
		dir, err := Do(context.Background(), j, Output{Out: io.Discard, Err: io.Discard, Quiet: true})
		if err != nil && (tc.leftOut || !strings.Contains(err.Error(), "every counted transaction")) {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(dir, result.SamplesName))
		if err != nil {
			t.Fatal(err)
		}
		var errs []string
		_, err = result.Scan(f, "samples", result.Visitor{Run: func(r *result.Run) { errs = append(errs, r.Err) }})
		f.Close()
		if err != nil || len(errs) != 4 {
			t.Fatalf("%v: runs %q", err, errs)
		}
		for _, e := range errs {
			if (e != "") != tc.leftOut {
				t.Errorf("%T: run left out %q, want left out %v", tc.probe, e, tc.leftOut)
			}
		}
	}
}

// TestStrictFailsWhenCountedRunsAreLeftOut: a result whose runs failed
// their wire check is kept either way; with Output.Strict the job ends
// with a LeftOutError counting the counted runs left out (warm-up runs
// are not counted), as summary.json's left_out_runs does.
func TestStrictFailsWhenCountedRunsAreLeftOut(t *testing.T) {
	spec := experiment.CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1, 2}, Runs: 3, Warmup: 1,
		Timeout: experiment.Duration(time.Second), Baseline: path.IPv4}
	for _, strict := range []bool{false, true} {
		j := Job{Exp: experiment.Single(spec, result.Loopback), Target: result.Loopback, Results: t.TempDir(), Wire: refuseIPv6{},
			Probe: func(*experiment.CellGroup, path.Path) (load.Probe, error) { return okProbe{}, nil }}
		dir, err := Do(context.Background(), j, Output{Out: io.Discard, Err: io.Discard, Quiet: true, Strict: strict})
		var le *LeftOutError
		switch {
		case !strict && err != nil:
			t.Fatalf("not strict: %v", err)
		case strict && (!errors.As(err, &le) || le.Runs != 4 || le.Dir != dir):
			t.Fatalf("strict: %v, want 4 counted ipv6 runs left out of %s", err, dir)
		}
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			LeftOut int `json:"left_out_runs"`
			Cells   []struct {
				Path      string `json:"path"`
				Completed int    `json:"completed"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if s.LeftOut != 4 {
			t.Errorf("strict %v: left_out_runs %d, want 4", strict, s.LeftOut)
		}
		for _, c := range s.Cells {
			if (c.Path == "ipv4") != (c.Completed > 0) {
				t.Errorf("strict %v: cell %+v: only ipv4's runs count", strict, c)
			}
		}
	}
}

// TestLeftOutSaysItsCount: the --strict error's count agrees with its
// noun and verb, one run as several.
func TestLeftOutSaysItsCount(t *testing.T) {
	for n, want := range map[int]string{1: "--strict: 1 counted run was left out of the figures", 4: "--strict: 4 counted runs were left out of the figures"} {
		if got := (&LeftOutError{Runs: n, Dir: "d"}).Error(); !strings.HasPrefix(got, want) {
			t.Errorf("%d runs: %q, want %q…", n, got, want)
		}
	}
}

// TestOffLabJobsRefuseLabOnlyPaths is the last door of the path-label rule:
// a job on loopback or against a named host that lists 6in4 or nat64
// measures nothing (its probe would reach plain ipv6) and leaves no
// result directory behind.
func TestOffLabJobsRefuseLabOnlyPaths(t *testing.T) {
	for _, target := range []result.Where{result.Loopback, result.Hosts} {
		for _, p := range path.LabOnly() {
			spec := experiment.CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv6, p}, Conns: []int{1}, Runs: 2, Warmup: 1,
				Timeout: experiment.Duration(time.Second), Baseline: path.IPv6}
			results := t.TempDir()
			probed := false
			j := Job{Exp: &experiment.Experiment{Name: "t", Where: "auto", Baseline: path.IPv6, Groups: []experiment.CellGroup{spec}},
				Target: target, Results: results,
				Probe: func(*experiment.CellGroup, path.Path) (load.Probe, error) { probed = true; return okProbe{}, nil }}
			_, err := Do(context.Background(), j, Output{Out: io.Discard, Err: io.Discard, Quiet: true})
			if err == nil || !strings.Contains(err.Error(), string(p)+" needs the lab") || probed {
				t.Errorf("%s over %s: err %v, probed %v", target, p, err, probed)
			}
			if ents, _ := os.ReadDir(results); len(ents) != 0 {
				t.Errorf("%s over %s left %d entries in the results directory", target, p, len(ents))
			}
		}
	}
}

// TestProgressSaysWhatWasWritten: the progress a job hands its display
// counts the samples the writer wrote and the bytes it stored, and the
// log's progress line says both (issue 43: a load run of millions of
// samples should not surprise anyone).
func TestProgressSaysWhatWasWritten(t *testing.T) {
	spec := experiment.CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{5}, Runs: 3,
		Timeout: experiment.Duration(time.Second), Baseline: path.IPv4}
	var last Written
	var steps []string
	o := Output{Out: io.Discard, Err: io.Discard, Progress: func(total, done int, w Written, _ *Pace) Progress {
		last = w
		return stepFunc(func(title string) { steps = append(steps, title+": "+WrittenText(w)) })
	}}
	j := Job{Exp: experiment.Single(spec, result.Loopback), Target: result.Loopback, Results: t.TempDir(),
		Probe: func(*experiment.CellGroup, path.Path) (load.Probe, error) { return okProbe{}, nil }}
	dir, err := Do(context.Background(), j, o)
	if err != nil {
		t.Fatal(err)
	}
	n, b := last()
	st, _ := os.Stat(filepath.Join(dir, result.SamplesName))
	if n != 30 || st == nil || b != st.Size() {
		t.Errorf("written: %d samples, %d bytes; the file has %v", n, b, st)
	}
	if len(steps) != 6 || !strings.HasPrefix(steps[0], "FAKE over ipv4, 5 conns: 5 samples, ") || !strings.HasPrefix(steps[5], "FAKE over ipv6, 5 conns: 30 samples, ") {
		t.Errorf("progress at each step: %q", steps)
	}
	var log strings.Builder
	l := Lines(&log, func() (int64, int64) { return 1234567, 45_600_000 }, nil).(*lines)
	l.every, l.last = 0, time.Time{}
	l.Step(1, 10, "DNS over ipv4, 100 conns", result.Run{Cell: "dns/ipv4/100"})
	if want := "v6lab: run 1/10 (10%), DNS over ipv4, 100 conns, 1,234,567 samples, 45.6 MB, about "; !strings.HasPrefix(log.String(), want) {
		t.Errorf("log line %q, want it to start %q", log.String(), want)
	}
}

type stepFunc func(title string)

func (f stepFunc) Step(_, _ int, title string, _ result.Run) { f(title) }
func (stepFunc) Done()                                       {}

// TestResultFilesNameTheSamplesFile: the "results:" line names the
// samples file a run writes to: a new result's compressed one, a resumed
// older result's plain one.
func TestResultFilesNameTheSamplesFile(t *testing.T) {
	dir := t.TempDir()
	if got := ResultFiles(dir); !strings.HasPrefix(got, "samples.jsonl.zst, ") {
		t.Errorf("a new result: %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "samples.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ResultFiles(dir); !strings.HasPrefix(got, "samples.jsonl, ") {
		t.Errorf("a resumed plain result: %q", got)
	}
}

// cutAt calls cancel as its call number cut begins: a Ctrl-C in the
// middle of that run.
type cutAt struct {
	calls  *int
	cut    int
	cancel func()
}

func (c cutAt) Do(ctx context.Context, user int) result.Sample {
	if *c.calls++; *c.calls == c.cut {
		c.cancel()
	}
	return load.Begin("fake", path.IPv4).Done("ok")
}

// TestAResumedSegmentKeepsItsSchedule: a segment on a --start-at schedule
// interrupted in its second run is resumed (run --resume gives no
// --start-at): the run whose slot has passed starts at once and records
// how late, the next waits for its slot, as the first process would
// have; none starts before its slot (trial7 F6: they ran back to back).
func TestAResumedSegmentKeepsItsSchedule(t *testing.T) {
	spec := experiment.CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4}, Conns: []int{2}, Runs: 3,
		Timeout: experiment.Duration(100 * time.Millisecond), Baseline: path.IPv4}
	exp := experiment.Single(spec, result.Hosts)
	start := time.Now().Add(100 * time.Millisecond).Truncate(time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	j := Job{Exp: exp, Target: result.Hosts, Results: t.TempDir(), Segment: &result.Segment{Index: 1, Count: 2}, StartAt: start,
		Probe: func(*experiment.CellGroup, path.Path) (load.Probe, error) { return cutAt{&calls, 2, cancel}, nil }}
	o := Output{Out: io.Discard, Err: io.Discard, Quiet: true}
	dir, err := Do(ctx, j, o)
	if err != nil && !strings.Contains(err.Error(), "interrupted") {
		t.Fatal(err)
	}
	rs, err := experiment.PrepareResume(dir)
	if err != nil || len(rs.Done) != 1 || !rs.StartAt.Equal(start) {
		t.Fatalf("resume: %v, %d done, schedule %v want %v", err, len(rs.Done), rs.StartAt, start)
	}
	time.Sleep(time.Until(start.Add(exp.Groups[0].Slot() + 200*time.Millisecond))) // run 1's slot has passed
	j2 := Job{Exp: rs.Exp, Target: result.Hosts, Results: j.Results, Resume: rs, ResumeDir: dir,
		Probe: func(*experiment.CellGroup, path.Path) (load.Probe, error) { return okProbe{}, nil }}
	if _, err := Do(context.Background(), j2, o); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, result.SamplesName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var runs []result.Run
	if _, err := result.Scan(f, "samples", result.Visitor{Run: func(r *result.Run) { runs = append(runs, *r) }}); err != nil {
		t.Fatal(err)
	}
	slots := exp.Schedule(start)
	for _, r := range runs {
		if r.Err != "" || r.Seq < 0 {
			continue
		}
		want := slots[r.Seq]
		if !r.Slot.Equal(want) || r.EarlyNS != 0 || r.Start.Before(want) {
			t.Errorf("step %d started %v, slot %v (want %v), early %d", r.Seq, r.Start, r.Slot, want, r.EarlyNS)
		}
		if late := r.Start.Sub(want); (late > result.LateAfter) != (r.LateNS > 0) || (r.Seq == 1 && r.LateNS < int64(150*time.Millisecond)) {
			t.Errorf("step %d started %v after its slot, late_ns %d", r.Seq, late, r.LateNS)
		}
	}
}

// TestASegmentsDirectoryNamesItsIndexOnce: --name web-seg0 (as run --help
// shows) names segment 0's directory web-seg0-…, not web-seg0-seg0-….
func TestASegmentsDirectoryNamesItsIndexOnce(t *testing.T) {
	for name, want := range map[string]string{"web": "web-seg0", "web-seg0": "web-seg0", "web-seg1": "web-seg1-seg0", "web-seg10": "web-seg10-seg0"} {
		exp := experiment.Single(experiment.CellGroup{Name: "t", Protocol: "fake"}, result.Hosts)
		exp.Name = name
		if got := (Job{Exp: exp, Segment: &result.Segment{Index: 0, Count: 2}}).dirName(); got != want {
			t.Errorf("--name %s: directory %s, want %s", name, got, want)
		}
	}
}
