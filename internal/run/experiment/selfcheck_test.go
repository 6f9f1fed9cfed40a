package experiment

import (
	"testing"
	"time"

	"v6lab/internal/result"
)

// TestRunsCarryTheirSelfCheck: every run record has its load, read
// over the run: this process's CPU and the median of its completions.
func TestRunsCarryTheirSelfCheck(t *testing.T) {
	c := prepareCheck(nil)
	c.begin()
	deadline := time.Now().Add(150 * time.Millisecond)
	for time.Now().Before(deadline) { // a busy client: one CPU
	}
	for _, ms := range []int64{1, 2, 3} {
		c.record(&result.Sample{TotalNS: ms * int64(time.Millisecond)})
	}
	c.record(&result.Sample{TotalNS: 1, Err: "io: failed"}) // not a completion
	l := c.end(0)
	// The busy loop has at most one CPU (less when other work shares
	// it), and the host's CPUs did at least that much.
	if l.CPUs < 1 || l.ClientCPU < 0.1 || l.ClientCPU > 1.1 || l.HostTicks == 0 || l.HostBusy*float64(l.CPUs) < l.ClientCPU-0.2 {
		t.Errorf("a busy loop of 150 ms: %+v", l)
	}
	if l.MedianNS < int64(1800*time.Microsecond) || l.MedianNS > int64(2200*time.Microsecond) {
		t.Errorf("median of 1, 2, 3 ms: %v", time.Duration(l.MedianNS))
	}
}
