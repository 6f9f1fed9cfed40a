package measure

import (
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
)

// TestTimeLeftCountsDuration: once the quick runs are done, the runs of
// a sustained cell left (4 of 2 s) make about 8 s, not the quick runs'
// pace times 4 (trial12 M8: "about 5s left" with 48 s to go).
func TestTimeLeftCountsDuration(t *testing.T) {
	quick := experiment.CellGroup{Name: "q", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1}, Runs: 8,
		Timeout: experiment.Duration(time.Second), Baseline: path.IPv4}
	kept := quick
	kept.Name, kept.Runs, kept.Duration = "k", 2, experiment.Duration(2*time.Second)
	exp := experiment.Single(quick, result.Loopback)
	exp.Groups = append(exp.Groups, kept)
	plan := exp.Plan()
	if len(plan) != 20 {
		t.Fatalf("plan of %d steps", len(plan))
	}
	p := NewPace(exp, plan, nil)
	// The 16 quick runs took 16 × 50 ms, their estimate.
	left := p.Left(16, p.start.Add(800*time.Millisecond))
	if d, err := time.ParseDuration(left); err != nil || d < 7*time.Second || d > 10*time.Second {
		t.Errorf("after the quick runs: %s left, want about 8s", left)
	}
	if got := p.Left(0, time.Now()); got != "?" {
		t.Errorf("before any run: %q", got)
	}
	// A resume that did the quick runs weighs only the runs it does.
	done := map[int]bool{}
	for _, st := range plan[:16] {
		done[st.Seq] = true
	}
	r := NewPace(exp, plan, done)
	if got := r.Left(18, r.start.Add(4*time.Second)); got != "4s" {
		t.Errorf("resumed, 2 of 4 sustained runs done in 4 s: %s left, want 4s", got)
	}
	var log strings.Builder
	l := Lines(&log, func() (int64, int64) { return 0, 0 }, p).(*lines)
	l.every, l.last = 0, time.Time{}
	p.start = time.Now().Add(-800 * time.Millisecond)
	l.Step(16, 20, "FAKE over ipv6, 1 conn", result.Run{})
	if !strings.Contains(log.String(), "about 8s left") && !strings.Contains(log.String(), "about 9s left") {
		t.Errorf("log line %q", log.String())
	}
}
