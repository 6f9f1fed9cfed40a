package experiment

import (
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

func TestDecideSaturation(t *testing.T) {
	ms := int64(time.Millisecond)
	for _, c := range []struct {
		name         string
		l            result.Load
		client, host bool
		why          string
	}{
		{"idle", result.Load{CPUs: 2, ClientCPU: 0.3, HostBusy: 0.4, HostTicks: 200}, false, false, ""},
		{"client on all its CPUs", result.Load{CPUs: 1, ClientCPU: 0.97, HostBusy: 0.6, HostTicks: 200}, true, false, "the client used 0.97 of the 1 CPUs"},
		{"host busy, replies read at once", result.Load{CPUs: 2, ClientCPU: 0.8, HostBusy: 0.99, HostTicks: 200, LagReads: 5000, LagP50NS: ms / 50, MedianNS: ms}, false, true, "the host's CPUs were 99% busy"},
		{"host busy, replies waited", result.Load{CPUs: 2, ClientCPU: 0.8, HostBusy: 0.99, HostTicks: 200, LagReads: 5000, LagP50NS: ms / 4, MedianNS: ms}, true, true, "replies waited 250µs (median) for the client, 25%"},
		{"too few reads for the lag", result.Load{CPUs: 2, ClientCPU: 0.8, HostBusy: 0.99, HostTicks: 200, LagReads: 10, LagP50NS: ms / 4, MedianNS: ms}, false, true, ""},
		{"too few ticks for the host", result.Load{CPUs: 2, ClientCPU: 0.1, HostBusy: 1, HostTicks: 3, LagReads: 5000, LagP50NS: ms / 4, MedianNS: ms}, false, false, ""},
	} {
		l := c.l
		decide(&l)
		if l.Client != c.client || l.Host != c.host || !strings.Contains(l.Why, c.why) {
			t.Errorf("%s: client %v host %v (%q), want %v %v (%q)", c.name, l.Client, l.Host, l.Why, c.client, c.host, c.why)
		}
	}
}

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
