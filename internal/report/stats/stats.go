// Package stats is the pure mathematics behind every figure v6lab reports:
// descriptive statistics with Student-t confidence intervals, Welch's and the
// pooled t-test, the paired t-test, Mann–Whitney U with the normal
// approximation, and HDR-histogram percentiles. Formulas are in
// docs/metrics.md; tests reproduce independent reference values.
//
// Every function is defined on every input: empty, one value, constant
// values, NaN and ±Inf. A statistic that cannot be computed (too few
// values, zero variance, a value that is not a finite number) carries an
// explicit reason in NA, and its numbers are zero, never NaN or Inf.
//
// It imports nothing of v6lab: figures in, figures out.
package stats

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Level is the confidence level of every interval v6lab reports.
const Level = 0.95

// Desc describes one sample of values (here: the run means of one cell).
type Desc struct {
	N    int
	Mean float64
	SD   float64 // sample standard deviation (n-1)
	// NA says why Mean and SD are not available (no values, or a value
	// that is not a finite number).
	NA string
	// CI95 is the Student-t 95% interval of the mean; valid when CINA == "".
	CI95 [2]float64
	CINA string
}

// NotFinite is the reason given when an input holds NaN or ±Inf.
const NotFinite = "a value is not a finite number"

// finite says whether every value is a finite number.
func finite(xs ...[]float64) bool {
	for _, x := range xs {
		for _, v := range x {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}

// Describe computes n, mean, sd and the 95% t interval of xs.
func Describe(xs []float64) Desc {
	d := Desc{N: len(xs)}
	switch {
	case d.N == 0:
		d.NA, d.CINA = "no values", "no values"
		return d
	case !finite(xs):
		d.NA, d.CINA = NotFinite, NotFinite
		return d
	}
	d.Mean = mean(xs)
	if d.N < 2 {
		d.CINA = "n < 2"
		return d
	}
	d.SD = math.Sqrt(variance(xs, d.Mean))
	h := tQuantile(d.N-1) * d.SD / math.Sqrt(float64(d.N))
	d.CI95 = [2]float64{d.Mean - h, d.Mean + h}
	if !finite(d.CI95[:], []float64{d.Mean, d.SD}) {
		// Finite values whose sum overflows (near ±1.8e308).
		return Desc{N: d.N, NA: "values too large to sum", CINA: "values too large to sum"}
	}
	return d
}

// Test is the result of comparing "other" against "baseline".
type Test struct {
	// Diff is mean(other) - mean(baseline); PctIncrease is 100*Diff/mean(baseline).
	Diff        float64
	PctIncrease float64
	T           float64
	DF          float64
	// P is the two-sided p-value; Confidence is 1 - P.
	P          float64
	Confidence float64
	CI95Diff   [2]float64
	// NA, when not empty, says why T, DF, P, Confidence and CI95Diff are
	// not available. Diff is still valid when both means exist.
	NA string
	// PctNA says why PctIncrease is not available (zero baseline).
	PctNA string
}

func diffOf(base, other []float64) Test {
	var t Test
	switch {
	case len(base) == 0 || len(other) == 0:
		t.NA, t.PctNA = "no values", "no values"
		return t
	case !finite(base, other):
		t.NA, t.PctNA = NotFinite, NotFinite
		return t
	}
	mb, mo := mean(base), mean(other)
	t.Diff = mo - mb
	if mb == 0 {
		t.PctNA = "baseline mean is zero"
	} else {
		t.PctIncrease = 100 * t.Diff / mb
	}
	if !finite([]float64{t.Diff, t.PctIncrease}) {
		return Test{NA: "values too large to compare", PctNA: "values too large to compare"}
	}
	return t
}

func (t *Test) finish(se, df float64) {
	t.DF = df
	t.T = t.Diff / se
	t.P = twoSidedT(t.T, df)
	t.Confidence = 1 - t.P
	h := tQuantileDF(df) * se
	t.CI95Diff = [2]float64{t.Diff - h, t.Diff + h}
	if !finite([]float64{t.T, t.DF, t.P, t.CI95Diff[0], t.CI95Diff[1]}) {
		t.T, t.DF, t.P, t.Confidence, t.CI95Diff = 0, 0, 0, 0, [2]float64{}
		t.NA = "values too large to compare"
	}
}

// Welch is Welch's unequal-variance t-test with the Welch–Satterthwaite df.
func Welch(base, other []float64) Test {
	t := diffOf(base, other)
	if t.NA != "" {
		return t
	}
	n1, n2 := float64(len(base)), float64(len(other))
	if n1 < 2 || n2 < 2 {
		t.NA = "n < 2 in a path"
		return t
	}
	v1, v2 := variance(base, mean(base))/n1, variance(other, mean(other))/n2
	if v1+v2 == 0 {
		t.NA = "zero variance in both paths"
		return t
	}
	df := (v1 + v2) * (v1 + v2) / (v1*v1/(n1-1) + v2*v2/(n2-1))
	t.finish(math.Sqrt(v1+v2), df)
	return t
}

// Pooled is Student's two-sample t-test assuming equal variances.
func Pooled(base, other []float64) Test {
	t := diffOf(base, other)
	if t.NA != "" {
		return t
	}
	n1, n2 := float64(len(base)), float64(len(other))
	// Defined with one value in a path, as long as the other has two
	// (df = n1 + n2 - 2 >= 1): the pooled variance comes from it alone.
	if n1+n2 < 3 {
		t.NA = "fewer than 3 values in both paths together"
		return t
	}
	ss := func(xs []float64) float64 {
		if len(xs) < 2 {
			return 0
		}
		return float64(len(xs)-1) * variance(xs, mean(xs))
	}
	sp2 := (ss(base) + ss(other)) / (n1 + n2 - 2)
	if sp2 == 0 {
		t.NA = "zero variance in both paths"
		return t
	}
	t.finish(math.Sqrt(sp2*(1/n1+1/n2)), n1+n2-2)
	return t
}

// Paired is the paired t-test on other[i] - base[i]; the inputs must be the
// same length (runs interleaved in the same order). Diff is the mean of the
// differences; PctIncrease is relative to mean(base).
func Paired(base, other []float64) Test {
	t := diffOf(base, other)
	if t.NA != "" {
		return t
	}
	if len(base) != len(other) {
		t.NA = "unequal run counts, cannot pair"
		return t
	}
	n := len(base)
	if n < 2 {
		t.NA = "n < 2 pairs"
		return t
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = other[i] - base[i]
	}
	md := mean(d)
	t.Diff = md
	sd := math.Sqrt(variance(d, md))
	if !finite([]float64{md, sd}) {
		return Test{NA: "values too large to compare", PctNA: "values too large to compare"}
	}
	if sd == 0 {
		t.NA = "zero variance of the differences"
		return t
	}
	t.finish(sd/math.Sqrt(float64(n)), float64(n-1))
	return t
}

// MW is the result of a Mann–Whitney U test.
type MW struct {
	// U is the U statistic of "other" (count of pairs where other > base,
	// ties counting one half).
	U float64
	// Z and P use the normal approximation with tie and continuity
	// corrections; P is two-sided.
	Z  float64
	P  float64
	NA string
}

// MannWhitney compares other against base without assuming normality.
func MannWhitney(base, other []float64) MW {
	n1, n2 := len(base), len(other)
	if n1 == 0 || n2 == 0 {
		return MW{NA: "no values"}
	}
	if !finite(base, other) {
		// NaN never equals itself: the tie loop below would never end.
		return MW{NA: NotFinite}
	}
	type obs struct {
		v     float64
		other bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range base {
		all = append(all, obs{v, false})
	}
	for _, v := range other {
		all = append(all, obs{v, true})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	n := float64(n1 + n2)
	var rOther, tieSum float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of ranks i+1 … j
		for k := i; k < j; k++ {
			if all[k].other {
				rOther += rank
			}
		}
		t := float64(j - i)
		tieSum += t*t*t - t
		i = j
	}
	f1, f2 := float64(n1), float64(n2)
	m := MW{U: rOther - f2*(f2+1)/2}
	mu := f1 * f2 / 2
	sigma := math.Sqrt(f1 * f2 / 12 * ((n + 1) - tieSum/(n*(n-1))))
	if sigma == 0 || math.IsNaN(sigma) {
		m.NA = "all values tied"
		return m
	}
	// Two-sided: use the larger U, as SciPy does, then the continuity correction.
	u := math.Max(m.U, f1*f2-m.U)
	m.Z = (u - mu - 0.5) / sigma
	m.P = math.Min(1, 2*distuv.UnitNormal.Survival(m.Z))
	return m
}

func mean(xs []float64) float64 {
	// Kahan summation keeps the run means of long runs exact enough.
	var s, c float64
	for _, x := range xs {
		y := x - c
		t := s + y
		c = (t - s) - y
		s = t
	}
	return s / float64(len(xs))
}

func variance(xs []float64, m float64) float64 {
	var ss float64
	for _, x := range xs {
		d := x - m
		ss += d * d
	}
	return ss / float64(len(xs)-1)
}

func tQuantile(df int) float64 { return tQuantileDF(float64(df)) }

func tQuantileDF(df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-Level)/2)
}

func twoSidedT(t, df float64) float64 {
	return math.Min(1, 2*distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t)))
}
