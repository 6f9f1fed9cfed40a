package stats

import (
	"math"
	"slices"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Wilson is the Wilson score interval (Wilson 1927) of a proportion k/n at
// Level: unlike the normal approximation it stays within [0, 1] and is
// defined at k = 0 and k = n. ok is false when n is 0.
func Wilson(k, n int) (ci [2]float64, ok bool) {
	if n <= 0 || k < 0 || k > n {
		return ci, false
	}
	z := distuv.UnitNormal.Quantile(1 - (1-Level)/2)
	fn, p := float64(n), float64(k)/float64(n)
	den := 1 + z*z/fn
	center := (p + z*z/(2*fn)) / den
	half := z / den * math.Sqrt(p*(1-p)/fn+z*z/(4*fn*fn))
	return [2]float64{math.Max(0, center-half), math.Min(1, center+half)}, true
}

// Holm adjusts p-values for multiple comparisons (Holm 1979, the step-down
// Bonferroni method): sorted ascending, p(i) becomes max over j <= i of
// min(1, (m-j+1) p(j)). It controls the family-wise error rate at the
// nominal level for any dependence between the tests. The result is in
// the input's order; NaN inputs (not available) stay NaN and do not count
// in m.
func Holm(ps []float64) []float64 {
	out := make([]float64, len(ps))
	idx := make([]int, 0, len(ps))
	for i, p := range ps {
		out[i] = math.NaN()
		if !math.IsNaN(p) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return ps[idx[a]] < ps[idx[b]] })
	m := float64(len(idx))
	running := 0.0
	for j, i := range idx {
		adj := math.Min(1, (m-float64(j))*ps[i])
		running = math.Max(running, adj)
		out[i] = running
	}
	return out
}

// NearestRank is the q-quantile (0 < q <= 1) of xs by the nearest-rank
// definition: the smallest value with at least q·n values at or below it,
// the value of rank ceil(q·n) in sorted order. ok is false for no values,
// a value that is not finite, or q outside (0, 1].
func NearestRank(xs []float64, q float64) (v float64, ok bool) {
	if len(xs) == 0 || !finite(xs) || !(q > 0 && q <= 1) {
		return 0, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[rank(q, len(s))-1], true
}

// rank is the nearest rank of q among n values, 1 … n. The small epsilon
// keeps q·n that is whole in exact arithmetic (0.9·10) from rounding up.
func rank(q float64, n int) int {
	r := int(math.Ceil(q*float64(n) - 1e-9))
	return min(max(r, 1), n)
}

// Outliers returns the indexes of values beyond Tukey's far fences (Tukey
// 1977): below Q1 − 3·IQR or above Q3 + 3·IQR, quartiles by nearest rank.
// With fewer than 4 values, or no spread between the quartiles, a value is
// an outlier when it is more than 3 times the median (or less than a
// third of it). Non-finite values give none.
func Outliers(xs []float64) []int {
	if len(xs) < 3 || !finite(xs) {
		return nil
	}
	q1, _ := NearestRank(xs, 0.25)
	med, _ := NearestRank(xs, 0.5)
	q3, _ := NearestRank(xs, 0.75)
	iqr := q3 - q1
	var out []int
	for i, x := range xs {
		far := false
		if len(xs) >= 4 && iqr > 0 {
			far = x < q1-3*iqr || x > q3+3*iqr
		} else if med > 0 {
			far = x > 3*med || x < med/3
		}
		if far {
			out = append(out, i)
		}
	}
	return out
}

// MinSamples is how many values a percentile needs before its estimate
// means much: at least 1/(1-q) (p99: 100, p99.9: 1000), so that at least
// one value lies above it.
func MinSamples(q float64) int {
	if q >= 1 {
		return math.MaxInt
	}
	return int(math.Ceil(1/(1-q) - 1e-9))
}

// ClampBelow bounds an interval of a quantity that cannot be negative (a
// time, a count): a lower end below zero becomes zero.
func ClampBelow(ci [2]float64) [2]float64 {
	return [2]float64{math.Max(0, ci[0]), math.Max(0, ci[1])}
}
