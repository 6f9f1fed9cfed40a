package sites

import (
	"math"
	"slices"
	"time"

	"v6lab/internal/result"
)

// StallMetric is a survey sample's Metrics key of the stall of its pair,
// in ms: the longest any of the survey process's goroutines or threads
// waited for a CPU (or a garbage collector's stop) while the pair ran.
// A stall moves the pair's difference by at most its length, either way.
const StallMetric = "client_stall_ms"

// StallFence is how far above the median of a site's stalls, in robust
// standard deviations (1.4826 × the median absolute deviation), a pair's
// stall must lie for the pair to be left out (Uncounted): 3, Leys et
// al.'s "very conservative" outlier bound (J. Exp. Soc. Psychol. 49(4),
// 2013). In busy surveys 2.5 gave the same verdicts and ran more pairs
// again (docs/survey.md).
const StallFence = 3

// Bounded is a pair's stall (ms) as Uncounted compares it with the
// threshold: no more than the pair's longer page time (ms). StallMetric is
// the whole process's longest wait ending while the pair ran, which can
// exceed the pair's own duration tenfold; a wait can delay a page by at
// most that page's time, so it can move the pair's difference
// (ipv6 - ipv4) by at most max(t4, t6), either way.
func Bounded(stallMS, longestMS float64) float64 { return min(stallMS, longestMS) }

// Uncounted says which of a site's counted pairs (not warm-up, both
// families completed), given each one's stall and its longer page time
// (ms), are left out of its verdict: those whose stall lies above the
// fence of the site's stalls, median + StallFence robust standard
// deviations (a stall like the others' is noise every pair shares, which
// the CI's spread already measures; one far beyond them is a disturbance
// of that pair alone), and whose stall Bounded by the longer page still
// exceeds the threshold (a shorter one cannot by itself carry a CI across
// ±threshold). It never looks at the pairs' differences: the fence is of
// the stalls alone, and the bound reads max(t4, t6), which is the same
// whichever family was the slower, so which pairs count favours neither
// family (docs/survey.md). With fewer than three pairs there is no fence
// and none is left out.
func Uncounted(stalls, longest []float64, threshold time.Duration) []bool {
	out := make([]bool, len(stalls))
	if len(stalls) < 3 {
		return out
	}
	mid := median(stalls)
	dev := make([]float64, len(stalls))
	for i, s := range stalls {
		dev[i] = math.Abs(s - mid)
	}
	th := float64(threshold) / 1e6
	fence := max(th, mid+StallFence*1.4826*median(dev))
	for i, s := range stalls {
		out[i] = s > fence && Bounded(s, longest[i]) > th
	}
	return out
}

// uncounted marks as warm-up (kept, not counted) the samples of every run
// Uncounted leaves out, and counts those runs in r.Stalled.
func uncounted(samples []result.Sample, c Criteria, r *Row) []result.Sample {
	done := map[int]int{} // run -> its completed counted samples
	stall := map[int]float64{}
	longest := map[int]float64{} // run -> its longer page, ms
	for i := range samples {
		if smp := &samples[i]; !smp.Warmup && smp.OK() {
			done[smp.Run]++
			stall[smp.Run] = smp.Metrics[StallMetric]
			longest[smp.Run] = max(longest[smp.Run], float64(smp.TotalNS)/1e6)
		}
	}
	var runs []int
	for run, n := range done {
		if n == 2 {
			runs = append(runs, run)
		}
	}
	slices.Sort(runs)
	stalls, pages := make([]float64, len(runs)), make([]float64, len(runs))
	for i, run := range runs {
		stalls[i], pages[i] = stall[run], longest[run]
	}
	left := map[int]bool{}
	for i, out := range Uncounted(stalls, pages, c.Threshold) {
		if out {
			left[runs[i]] = true
		}
	}
	if len(left) == 0 {
		return samples
	}
	r.Stalled = len(left)
	out := slices.Clone(samples)
	for i := range out {
		if left[out[i].Run] {
			out[i].Warmup = true
		}
	}
	return out
}
