package survey

import (
	"cmp"
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/report/sites"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// fixedProbe completes every transaction at once, recording a page time
// of ns (0: 2 s, longer than any stall the tests script).
type fixedProbe struct{ ns int64 }

func (p fixedProbe) Do(context.Context, int) result.Sample {
	return result.Sample{TotalNS: cmp.Or(p.ns, 2e9)}
}

// scripted is a stall source that reports stalls[i] for the i-th pair.
type scripted struct {
	stalls []time.Duration
	n      int
}

func (s *scripted) start() {}
func (s *scripted) since() time.Duration {
	s.n++
	if s.n-1 < len(s.stalls) {
		return s.stalls[s.n-1]
	}
	return 0
}

// TestAStalledPairIsRunAgain: a counted pair in which v6lab stalled beyond
// the threshold and far beyond the site's other pairs is kept, with its
// stall, and one more pair is run in its place; a stall in the warm-up,
// within the threshold, or like every other pair's changes nothing.
func TestAStalledPairIsRunAgain(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		what   string
		stalls []time.Duration
		pairs  int
	}{
		{"none", nil, 4},
		{"warm-up", []time.Duration{500 * ms}, 4},
		{"within the threshold", []time.Duration{0, 100 * ms}, 4},
		{"one counted", []time.Duration{0, 0, 101 * ms}, 5},
		{"every pair alike", []time.Duration{time.Second, time.Second, time.Second, time.Second}, 4},
		{"two of them, one after the other", []time.Duration{0, 0, 0, time.Second, 0, time.Second, 0}, 7},
		// The pair run in place of run 3 stalls as long: two of four alike
		// are no longer beyond the others', both count, no more is run.
		{"the pair run again stalls alike", []time.Duration{0, 0, 0, time.Second, time.Second, 0}, 5},
		// trial6 F12: a stall of 1 s in a pair whose pages took 1 ms
		// moved its difference by 1 ms at most, within the threshold.
		{"beyond the others, in pages of 1 ms", []time.Duration{0, 0, time.Second}, 4},
	} {
		o := Defaults()
		o.Runs, o.Warmup, o.Threshold = 4, 1, proto.Duration(100*ms)
		if tc.what == "two of them, one after the other" {
			o.Runs = 5
		}
		src := &scripted{stalls: tc.stalls}
		m := &measurer{o: o, pacer: newPacer(1_000_000), stalls: func() stallSource { return src }}
		finds := map[path.Path]found{path.IPv4: {fam: result.SiteFamily{Connected: true}}, path.IPv6: {fam: result.SiteFamily{Connected: true}}}
		pr := fixedProbe{}
		if tc.what == "beyond the others, in pages of 1 ms" {
			pr.ns = 1e6
		}
		probes := map[path.Path]load.Probe{path.IPv4: pr, path.IPv6: pr}
		out := m.runs(context.Background(), Entry{Name: "a.example"}, newGate(m.pacer, 2), Families, finds, probes, "http")
		if len(out) != 2*tc.pairs {
			t.Errorf("%s: %d samples, want %d pairs", tc.what, len(out), tc.pairs)
			continue
		}
		for i, smp := range out {
			r := i / 2
			want := 0.0
			if r < len(tc.stalls) {
				want = float64(tc.stalls[r]) / 1e6
			}
			if smp.Run != r || smp.Metrics[sites.StallMetric] != want || smp.Warmup != (r == 0) {
				t.Errorf("%s: sample %d: run %d, stall %v ms (want %v), warm-up %v", tc.what, i, smp.Run, smp.Metrics[sites.StallMetric], want, smp.Warmup)
			}
		}
	}
}

// TestTheStallMeterSeesAWaitForTheCPU: with one P and goroutines that
// spin, a goroutine made runnable waits for the P; the meter reads a
// stall of at least a millisecond. (The runtime times one goroutine
// transition in eight, at random: 64 goroutines all untimed is a chance
// of (7/8)^64, under 1 in 5,000.)
func TestTheStallMeterSeesAWaitForTheCPU(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	m := newStallMeter()
	m.start()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for end := time.Now().Add(3 * time.Millisecond); time.Now().Before(end); {
			}
		})
	}
	wg.Wait()
	if s := m.since(); s < time.Millisecond {
		t.Errorf("64 goroutines spinning 3 ms each on one P: a stall of %v", s)
	}
}
