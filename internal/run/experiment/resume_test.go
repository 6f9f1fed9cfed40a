package experiment

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/report"
	"v6lab/internal/result"
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

// TestResumeWarmsAgainBeforeCounting: a resumed experiment runs each
// cell's warm-up again before its first counted run, so that run is on
// kept connections like every other, not all new ones averaged in unmarked
// (trial4 F9). The re-warm is a warm-up: not counted, no step of the plan.
func TestResumeWarmsAgainBeforeCounting(t *testing.T) {
	dir := t.TempDir()
	spec := CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{2}, Runs: 4, Warmup: 1,
		Timeout: Duration(time.Second), Baseline: path.IPv4}
	process := func(_ *CellGroup, p path.Path) (load.Probe, error) { return &keeping{p: p, open: map[int]bool{}}, nil }
	ctx, cancel := context.WithCancel(context.Background())
	// Both warm-ups and ipv4's first counted run, then Ctrl-C.
	r := &Executor{Exp: Single(spec, result.Loopback), Probe: process, OnStep: func(done, _ int, _ result.Run) {
		if done == 3 {
			cancel()
		}
	}}
	if err := r.Execute(ctx, dir); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("err %v", err)
	}
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
