package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

type vectorCase struct {
	Name     string    `json:"name"`
	Baseline []float64 `json:"baseline"`
	Other    []float64 `json:"other"`
	BaseDesc struct {
		N    int        `json:"n"`
		Mean float64    `json:"mean"`
		SD   float64    `json:"sd"`
		CI95 [2]float64 `json:"ci95"`
	} `json:"baseline_desc"`
	OtherDesc struct {
		N    int        `json:"n"`
		Mean float64    `json:"mean"`
		SD   float64    `json:"sd"`
		CI95 [2]float64 `json:"ci95"`
	} `json:"other_desc"`
	Diff        float64 `json:"diff"`
	PctIncrease float64 `json:"pct_increase"`
	Welch       struct {
		T          float64    `json:"t"`
		DF         float64    `json:"df"`
		P          float64    `json:"p_two_sided"`
		Confidence float64    `json:"confidence"`
		CI95Diff   [2]float64 `json:"ci95_diff"`
	} `json:"welch"`
	Pooled struct {
		T  float64 `json:"t"`
		DF float64 `json:"df"`
		P  float64 `json:"p_two_sided"`
	} `json:"pooled"`
	MannWhitney struct {
		U float64 `json:"U_other"`
		P float64 `json:"p_two_sided_asymptotic_cc"`
	} `json:"mann_whitney"`
	Paired *struct {
		T        float64    `json:"t"`
		DF       float64    `json:"df"`
		P        float64    `json:"p_two_sided"`
		MeanDiff float64    `json:"mean_diff"`
		CI95Diff [2]float64 `json:"ci95_diff"`
	} `json:"paired"`
}

const vectorsFile = "../../../shared/testdata/stats-vectors.json"

func loadVectors(t *testing.T) []vectorCase {
	t.Helper()
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Skipf("reference vectors not found beside the repository (%v)", err)
	}
	var v struct {
		Cases []vectorCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no cases in reference vectors")
	}
	return v.Cases
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	tol := 1e-6 * math.Max(math.Abs(want), 1e-12)
	if math.Abs(want) < 1e-9 {
		tol = 1e-12
	}
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.15g, want %.15g (rel err %.3g)", what, got, want, math.Abs(got-want)/math.Abs(want))
	}
}

func TestReferenceVectors(t *testing.T) {
	for _, c := range loadVectors(t) {
		t.Run(c.Name, func(t *testing.T) {
			b, o := Describe(c.Baseline), Describe(c.Other)
			if b.N != c.BaseDesc.N || o.N != c.OtherDesc.N {
				t.Fatalf("n = %d,%d", b.N, o.N)
			}
			near(t, "baseline mean", b.Mean, c.BaseDesc.Mean)
			near(t, "baseline sd", b.SD, c.BaseDesc.SD)
			near(t, "baseline ci lo", b.CI95[0], c.BaseDesc.CI95[0])
			near(t, "baseline ci hi", b.CI95[1], c.BaseDesc.CI95[1])
			near(t, "other mean", o.Mean, c.OtherDesc.Mean)
			near(t, "other sd", o.SD, c.OtherDesc.SD)
			near(t, "other ci lo", o.CI95[0], c.OtherDesc.CI95[0])
			near(t, "other ci hi", o.CI95[1], c.OtherDesc.CI95[1])

			w := Welch(c.Baseline, c.Other)
			if w.NA != "" {
				t.Fatalf("welch n/a: %s", w.NA)
			}
			near(t, "diff", w.Diff, c.Diff)
			near(t, "pct increase", w.PctIncrease, c.PctIncrease)
			near(t, "welch t", w.T, c.Welch.T)
			near(t, "welch df", w.DF, c.Welch.DF)
			near(t, "welch p", w.P, c.Welch.P)
			near(t, "welch confidence", w.Confidence, c.Welch.Confidence)
			near(t, "welch ci lo", w.CI95Diff[0], c.Welch.CI95Diff[0])
			near(t, "welch ci hi", w.CI95Diff[1], c.Welch.CI95Diff[1])

			p := Pooled(c.Baseline, c.Other)
			near(t, "pooled t", p.T, c.Pooled.T)
			near(t, "pooled df", p.DF, c.Pooled.DF)
			near(t, "pooled p", p.P, c.Pooled.P)

			m := MannWhitney(c.Baseline, c.Other)
			near(t, "mann-whitney U", m.U, c.MannWhitney.U)
			near(t, "mann-whitney p", m.P, c.MannWhitney.P)

			pt := Paired(c.Baseline, c.Other)
			if c.Paired == nil {
				if pt.NA == "" {
					t.Errorf("paired test on unequal lengths gave no n/a")
				}
				return
			}
			near(t, "paired t", pt.T, c.Paired.T)
			near(t, "paired df", pt.DF, c.Paired.DF)
			near(t, "paired p", pt.P, c.Paired.P)
			near(t, "paired mean diff", pt.Diff, c.Paired.MeanDiff)
			near(t, "paired ci lo", pt.CI95Diff[0], c.Paired.CI95Diff[0])
			near(t, "paired ci hi", pt.CI95Diff[1], c.Paired.CI95Diff[1])
		})
	}
}

func TestDegenerateCasesAreNA(t *testing.T) {
	cases := []struct {
		name        string
		base, other []float64
		wantWelch   string
		wantPaired  string
		wantMW      string
		wantDescNA  string
		wantPctNA   string
	}{
		{"empty", nil, []float64{1, 2}, "no values", "no values", "no values", "no values", "no values"},
		{"single", []float64{1}, []float64{2}, "n < 2 in a path", "n < 2 pairs", "", "n < 2", ""},
		{"constant", []float64{3, 3, 3}, []float64{3, 3, 3}, "zero variance in both paths", "zero variance of the differences", "all values tied", "", ""},
		{"zero baseline", []float64{0, 0}, []float64{1, 2}, "", "", "", "", "baseline mean is zero"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := Welch(c.base, c.other)
			if w.NA != c.wantWelch {
				t.Errorf("welch NA = %q, want %q", w.NA, c.wantWelch)
			}
			if w.NA == "" && (math.IsNaN(w.P) || math.IsNaN(w.CI95Diff[0])) {
				t.Errorf("valid welch has NaN: %+v", w)
			}
			if w.PctNA != c.wantPctNA {
				t.Errorf("pct NA = %q, want %q", w.PctNA, c.wantPctNA)
			}
			if p := Paired(c.base, c.other); p.NA != c.wantPaired {
				t.Errorf("paired NA = %q, want %q", p.NA, c.wantPaired)
			}
			if m := MannWhitney(c.base, c.other); m.NA != c.wantMW {
				t.Errorf("mann-whitney NA = %q, want %q", m.NA, c.wantMW)
			}
			if d := Describe(c.base); d.CINA != c.wantDescNA {
				t.Errorf("describe NA = %q, want %q", d.CINA, c.wantDescNA)
			}
		})
	}
}

func TestOneSidedZeroVarianceStillTests(t *testing.T) {
	// One path perfectly steady, the other not: Welch is defined.
	w := Welch([]float64{5, 5, 5, 5}, []float64{6, 7, 6, 7})
	if w.NA != "" || w.DF <= 0 || w.P <= 0 || w.P >= 1 {
		t.Fatalf("welch = %+v", w)
	}
}

func TestLatencyQuantiles(t *testing.T) {
	l := NewLatency()
	for i := 1; i <= 1000; i++ {
		l.Record(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.9, 900 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {0.999, 999 * time.Millisecond}} {
		got := l.Quantile(c.q)
		if d := got - c.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("p%g = %v, want %v ±1ms", c.q*100, got, c.want)
		}
	}
	if NewLatency().Quantile(0.5) != 0 {
		t.Error("empty histogram quantile not zero")
	}
}

// The sparse histogram's percentiles are the dense one's (the library's
// Distribution, which the reports read before 2026-11-26), value for
// value, over the whole range: the streaming summary moved no figure.
func TestLatencyMatchesDenseHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for trial := range 40 {
		sparse, dense := NewLatency(), hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
		n := 1 + r.IntN(5000)
		for range n {
			// Log-uniform over 1 µs .. 2 h (past the top: clamped).
			us := int64(math.Exp(r.Float64() * math.Log(7.2e9)))
			sparse.Record(time.Duration(us) * time.Microsecond)
			dense.RecordValue(min(max(us, 1), dense.HighestTrackableValue()))
		}
		qs := []float64{0, 0.001, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1}
		got := sparse.Quantiles(qs...)
		for i, q := range qs {
			want := denseQuantile(dense, q)
			if got[i] != want {
				t.Fatalf("trial %d (n %d): q %v: sparse %v, dense %v", trial, n, q, got[i], want)
			}
		}
		// Buckets rebuild it exactly.
		copyOf := NewLatency()
		sparse.Buckets(func(us, c int64) bool { copyOf.RecordMicros(us, c); return true })
		if a, b := copyOf.Quantiles(qs...), got; !slices.Equal(a, b) || copyOf.Count() != sparse.Count() {
			t.Fatalf("rebuilt from buckets: %v, want %v", a, b)
		}
	}
}

// denseQuantile is nearest rank over the dense library histogram, as
// Latency read it before it was sparse.
func denseQuantile(h *hdrhistogram.Histogram, q float64) time.Duration {
	want := int64(1)
	if q > 0 {
		want = int64(rank(min(q, 1), int(h.TotalCount())))
	}
	var seen int64
	for _, b := range h.Distribution() {
		seen += b.Count
		if b.Count > 0 && seen >= want {
			return time.Duration(b.To) * time.Microsecond
		}
	}
	return time.Duration(h.Max()) * time.Microsecond
}
