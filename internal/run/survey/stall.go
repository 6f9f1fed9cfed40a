package survey

import (
	"bytes"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"time"
)

// The survey's self-check of a pair of page transactions: a survey
// measures many sites at once in one process (and, in a lab of sites,
// serves them too), so on a busy machine a transaction can wait for the
// CPU behind v6lab's own work (other sites' TLS handshakes, its servers'),
// hundreds of milliseconds on two loaded CPUs, while the other family's
// transaction of the pair does not. Such a pair's difference is v6lab's,
// not the network's. A stall is the longest any of the process's
// goroutines waited, runnable, for a CPU (or for the world to restart
// after a garbage collector's stop) while the pair ran, from the Go
// runtime's own histograms (which sample), or the longest any of its
// threads waited on the kernel's run queues meanwhile (schedstat), the
// longer; a pair whose stall exceeds the threshold is
// kept but not counted, and run again (docs/survey.md).

// stallSource reads the stall of what runs between start and since.
type stallSource interface {
	start()
	since() time.Duration
}

// stallNames are the runtime's histograms a stall is read from.
var stallNames = []string{"/sched/latencies:seconds", "/sched/pauses/stopping/gc:seconds", "/sched/pauses/total/gc:seconds"}

// stallMeter reads the histograms; one per goroutine.
type stallMeter struct {
	s      []metrics.Sample
	before [][]uint64
	queued map[string]time.Duration // thread -> its run-queue wait
}

func newStallMeter() *stallMeter {
	m := &stallMeter{s: make([]metrics.Sample, len(stallNames)), before: make([][]uint64, len(stallNames))}
	for i, n := range stallNames {
		m.s[i].Name = n
	}
	return m
}

// start takes the histograms' counts and the threads' run-queue wait now.
func (m *stallMeter) start() {
	m.queued = runQueueWaits(m.queued)
	metrics.Read(m.s)
	for i := range m.s {
		if m.s[i].Value.Kind() == metrics.KindFloat64Histogram {
			m.before[i] = append(m.before[i][:0], m.s[i].Value.Float64Histogram().Counts...)
		}
	}
}

// since is the longest wait counted since start: the lower bound of the
// highest bucket that grew (at least that long), 0 when none did.
func (m *stallMeter) since() time.Duration {
	metrics.Read(m.s)
	var longest float64
	for i := range m.s {
		if m.s[i].Value.Kind() != metrics.KindFloat64Histogram {
			continue
		}
		h := m.s[i].Value.Float64Histogram()
		for b := len(h.Counts) - 1; b >= 0; b-- {
			if b < len(m.before[i]) && h.Counts[b] > m.before[i][b] {
				if lo := h.Buckets[b]; !math.IsInf(lo, -1) {
					longest = max(longest, lo)
				}
				break
			}
		}
	}
	var queued time.Duration
	for tid, w := range runQueueWaits(nil) {
		if w0, ok := m.queued[tid]; ok {
			queued = max(queued, w-w0)
		}
	}
	return max(time.Duration(longest*1e9), queued)
}

// runQueueWaits is how long each of this process's threads has waited,
// runnable, on the kernel's run queues (its schedstat's second figure, in
// ns), into into (cleared) or a new map.
func runQueueWaits(into map[string]time.Duration) map[string]time.Duration {
	if into == nil {
		into = map[string]time.Duration{}
	}
	clear(into)
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return into
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if f := bytes.Fields(b); len(f) >= 2 {
			ns, _ := strconv.ParseInt(string(f[1]), 10, 64)
			into[e.Name()] = time.Duration(ns)
		}
	}
	return into
}
