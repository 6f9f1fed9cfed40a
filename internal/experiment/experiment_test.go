package experiment

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/result"
)

func TestPlanInterleavesPaths(t *testing.T) {
	s := Spec{Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1, 10}, Runs: 3, Warmup: 1}
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
	good := Spec{Name: "x", Paths: []path.Path{path.IPv4}, Conns: []int{1}, Runs: 2, Warmup: 1, Timeout: Duration(time.Second)}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(*Spec){
		"runs must be at least 1":           func(s *Spec) { s.Runs = 0 },
		"must be fewer than runs":           func(s *Spec) { s.Warmup = 2 },
		"timeout must be positive":          func(s *Spec) { s.Timeout = 0 },
		"connection count must be at least": func(s *Spec) { s.Conns = []int{0} },
		"no paths":                          func(s *Spec) { s.Paths = nil },
	}
	for want, mut := range cases {
		s := good
		mut(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
}

func TestNewDirNeverReuses(t *testing.T) {
	root := t.TempDir()
	now := time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC)
	a, err := NewDir(root, "quick", now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewDir(root, "quick", now)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || filepath.Base(a) != "quick-20261122T140000Z" || filepath.Base(b) != "quick-20261122T140000Z-2" {
		t.Fatalf("dirs %s, %s", a, b)
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
	spec := Spec{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1, 3}, Runs: 3, Warmup: 1,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	steps := 0
	r := &Runner{Spec: spec, Probe: func(p path.Path) (load.Probe, error) { return counting{fail: true}, nil },
		OnStep: func(done, total int, _ result.Run) { steps = done }}
	if err := r.Run(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	fh, _ := os.Open(filepath.Join(dir, "samples.jsonl"))
	defer fh.Close()
	f, err := result.Read(fh, "samples.jsonl")
	if err != nil {
		t.Fatal(err)
	}
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
	if err := r.Run(context.Background(), dir); err == nil {
		t.Fatal("second run overwrote samples.jsonl")
	}
}

func TestRunnerInterruptedKeepsFinishedRuns(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	spec := Spec{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4}, Conns: []int{2}, Runs: 10,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	r := &Runner{Spec: spec, Probe: func(path.Path) (load.Probe, error) { return counting{}, nil },
		OnStep: func(done, _ int, _ result.Run) {
			if done == 4 {
				cancel()
			}
		}}
	if err := r.Run(ctx, dir); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
	fh, _ := os.Open(filepath.Join(dir, "samples.jsonl"))
	defer fh.Close()
	f, err := result.Read(fh, "samples.jsonl")
	if err != nil || len(f.Runs) != 4 || len(f.Samples) != 8 {
		t.Fatalf("after interrupt: %v, %d runs, %d samples", err, len(f.Runs), len(f.Samples))
	}
}

func TestStartLocalRefusesSixIn4(t *testing.T) {
	_, err := StartLocal(context.Background(), []path.Path{path.IPv4, path.SixIn4}, DefaultTestConfig)
	if err == nil || !strings.Contains(err.Error(), "6in4 needs the lab") {
		t.Fatalf("err %v", err)
	}
}
