package sites

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"v6lab/internal/result"
)

// stallWorld draws a site's pairs as a busy survey sees them: the
// network's difference mu ± sd, and v6lab's stall, short (under half the
// threshold) in most pairs and an exponential of 1.5 thresholds' mean in
// three in ten, moving the pair's difference by a random part of half of
// it, either way (it falls on one page of the pair or the other).
type stallWorld struct {
	rng       *rand.Rand
	t, mu, sd float64 // ms
}

func (w stallWorld) pair(run int) []result.Sample {
	s := w.rng.Float64() * w.t / 2
	if w.rng.Float64() < 0.3 {
		s = w.rng.ExpFloat64() * 1.5 * w.t
	}
	d := w.mu + w.sd*w.rng.NormFloat64() + (w.rng.Float64()*2-1)*s/2
	m := map[string]float64{StallMetric: s}
	return []result.Sample{{Path: "ipv4", Run: run, Warmup: run == 0, TotalNS: 50e6, Metrics: m},
		{Path: "ipv6", Run: run, Warmup: run == 0, TotalNS: int64((50 + d) * 1e6), Metrics: m}}
}

// site runs a site's pairs as the survey does: runs, and one more for
// each pair left out (by leftOut, given the counted pairs' stalls and
// differences), at most 2 × runs.
func (w stallWorld) site(runs int, leftOut func(stalls, diffs []float64) []bool) []result.Sample {
	var out []result.Sample
	var stalls, diffs []float64
	for r := 0; ; r++ {
		n := runs
		for _, x := range leftOut(stalls, diffs) {
			if x {
				n++
			}
		}
		if r >= min(n, 2*runs) {
			return out
		}
		p := w.pair(r)
		out = append(out, p...)
		if r > 0 {
			stalls = append(stalls, p[0].Metrics[StallMetric])
			diffs = append(diffs, float64(p[1].TotalNS-p[0].TotalNS)/1e6)
		}
	}
}

// byDifference is the rule Uncounted is not: a pair is left out when its
// stall could carry its difference across a boundary, |d − b| < S for b =
// ±threshold. It marks those pairs warm-up and drops the stall metric, so
// Judge counts the rest.
func byDifference(smp []result.Sample, t float64) []result.Sample {
	for i := 0; i+1 < len(smp); i += 2 {
		s := smp[i].Metrics[StallMetric]
		d := float64(smp[i+1].TotalNS-smp[i].TotalNS) / 1e6
		out := math.Abs(d-t) < s || math.Abs(d+t) < s
		for j := i; j < i+2; j++ {
			smp[j].Metrics = nil
			smp[j].Warmup = smp[j].Warmup || out
		}
	}
	return smp
}

// TestUncountedKeepsTheVerdictsHonest simulates 4,000 sites (6 runs, one
// warm-up, 1 ms threshold) in stallWorld. At a difference on the boundary
// (+1 ms: neither same nor slower) a 95% CI gives a timed verdict about 5%
// of the time; Uncounted, which looks at the stalls alone, keeps it near
// that, while the rule that looks at each pair's difference gives more
// (it drops the pairs near the boundary, pushing the counted ones'
// mean away from it and their spread wider: the sites look decided). At a
// difference of 0, leaving out the stalled pairs gives more sites their
// true verdict, same, than counting every pair. (Seeded: the figures are
// the same every run; -v prints them.)
func TestUncountedKeepsTheVerdictsHonest(t *testing.T) {
	const sites, threshold = 4000, 1.0
	c := Criteria{Threshold: time.Millisecond}
	rules := map[string]func(stalls, diffs []float64) []bool{
		"every pair": func(stalls, _ []float64) []bool { return nil },
		"Uncounted": func(stalls, diffs []float64) []bool {
			longest := make([]float64, len(diffs))
			for i, d := range diffs {
				longest[i] = 50 + max(d, 0) // the pages' times in stallWorld
			}
			return Uncounted(stalls, longest, c.Threshold)
		},
		"by difference": func(stalls, diffs []float64) []bool {
			out := make([]bool, len(diffs))
			for i, d := range diffs {
				out[i] = math.Abs(d-threshold) < stalls[i] || math.Abs(d+threshold) < stalls[i]
			}
			return out
		},
	}
	share := map[string]map[float64]map[Verdict]float64{}
	for name, rule := range rules {
		share[name] = map[float64]map[Verdict]float64{}
		for _, mu := range []float64{threshold, 0} {
			w := stallWorld{rng: rand.New(rand.NewPCG(1, uint64(mu*10))), t: threshold, mu: mu, sd: 0.5}
			got := map[Verdict]float64{}
			for range sites {
				smp := w.site(6, rule)
				switch name {
				case "every pair":
					smp = byDifference(smp, math.Inf(1)) // no pair within an infinite distance: metrics dropped
				case "by difference":
					smp = byDifference(smp, threshold)
				}
				got[Judge(dual("a.example"), smp, c).V] += 100.0 / sites
			}
			share[name][mu] = got
			t.Logf("%-13s difference %v ms: %.1f%% same, %.1f%% ipv6_slower, %.1f%% ipv6_faster, %.1f%% undecided",
				name, mu, got[Same], got[Slower], got[Faster], got[Undecided])
		}
	}
	timed := func(name string) float64 { return share[name][threshold][Same] + share[name][threshold][Slower] }
	if u := timed("Uncounted"); u > 6 || timed("by difference") < u+1.5 {
		t.Errorf("at the boundary, timed verdicts: Uncounted %.1f%% (want about 5%%), by difference %.1f%% (want more)", u, timed("by difference"))
	}
	if share["Uncounted"][0][Same] < share["every pair"][0][Same]+5 {
		t.Errorf("at 0: same %.1f%% with Uncounted, %.1f%% counting every pair", share["Uncounted"][0][Same], share["every pair"][0][Same])
	}
}
