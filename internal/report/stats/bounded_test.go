package stats

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// moreVectors are reference values computed independently with
// statsmodels and numpy (testdata/vectors.py):
//   - Holm (1979): sort p ascending; adjusted p(i) = max_{j<=i} min(1, (m-j+1) p(j));
//     statsmodels.stats.multitest.multipletests(p, method="holm").
//   - Wilson (1927): (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z = 1.95996;
//     statsmodels.stats.proportion.proportion_confint(k, n, method="wilson").
//   - nearest rank: the value of rank ceil(q·n); numpy.percentile(x, 100q, method="inverted_cdf").
type moreVectors struct {
	Holm []struct {
		P, Holm []float64
	} `json:"holm"`
	Wilson []struct {
		K, N int
		CI95 [2]float64 `json:"ci95"`
	} `json:"wilson"`
	NearestRank []struct {
		Values, Q   []float64
		NearestRank []float64 `json:"nearest_rank"`
	} `json:"nearest_rank"`
}

func loadMore(t *testing.T) moreVectors {
	b, err := os.ReadFile("testdata/more-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v moreVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHolmWilsonAndNearestRankMatchReferences(t *testing.T) {
	v := loadMore(t)
	for _, c := range v.Holm {
		got := Holm(c.P)
		for i := range got {
			if !within(got[i], c.Holm[i], 1e-12) {
				t.Errorf("Holm(%v)[%d] = %v, want %v", c.P, i, got[i], c.Holm[i])
			}
		}
	}
	for _, c := range v.Wilson {
		got, ok := Wilson(c.K, c.N)
		if !ok || !within(got[0], c.CI95[0], 1e-9) || !within(got[1], c.CI95[1], 1e-9) {
			t.Errorf("Wilson(%d, %d) = %v, want %v", c.K, c.N, got, c.CI95)
		}
	}
	for _, c := range v.NearestRank {
		h := NewLatency()
		for _, x := range c.Values {
			h.Record(time.Duration(x * float64(time.Microsecond)))
		}
		for i, q := range c.Q {
			got, ok := NearestRank(c.Values, q)
			if !ok || got != c.NearestRank[i] {
				t.Errorf("NearestRank(q=%v) = %v, want %v", q, got, c.NearestRank[i])
			}
			// The histogram (microseconds, whole) agrees where its values
			// are exact: whole microseconds below 2048.
			if whole(c.Values) {
				if got := h.Quantile(q); got != time.Duration(c.NearestRank[i])*time.Microsecond {
					t.Errorf("Latency.Quantile(%v) = %v, want %vµs", q, got, c.NearestRank[i])
				}
			}
		}
	}
	// The example: p99 of 60 values is the 60th.
	xs := make([]float64, 60)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	if v, _ := NearestRank(xs, 0.99); v != 60 {
		t.Errorf("p99 of 1…60 = %v, want 60", v)
	}
}

func whole(xs []float64) bool {
	for _, x := range xs {
		if x != math.Trunc(x) || x < 1 || x >= 2048 {
			return false
		}
	}
	return true
}

func within(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// special are the inputs every function must survive.
var special = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, 1, -1, 1e-300, 1e300, math.MaxFloat64}

func randomSample(r *rand.Rand) []float64 {
	n := r.IntN(8)
	xs := make([]float64, n)
	for i := range xs {
		switch r.IntN(4) {
		case 0:
			xs[i] = special[r.IntN(len(special))]
		case 1:
			xs[i] = 5 // ties
		default:
			xs[i] = r.NormFloat64()*10 + 50
		}
	}
	return xs
}

// finiteOut fails t when any reported number is NaN or Inf.
func finiteOut(t *testing.T, what string, vs ...float64) {
	t.Helper()
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s gave %v (%v)", what, v, vs)
		}
	}
}

func checkAll(t *testing.T, a, b []float64) {
	t.Helper()
	d := Describe(a)
	finiteOut(t, "Describe", d.Mean, d.SD, d.CI95[0], d.CI95[1])
	for name, f := range map[string]func(x, y []float64) Test{"Welch": Welch, "Pooled": Pooled, "Paired": Paired} {
		r := f(a, b)
		finiteOut(t, name, r.Diff, r.PctIncrease, r.T, r.DF, r.P, r.Confidence, r.CI95Diff[0], r.CI95Diff[1])
		if r.NA == "" && (r.P < 0 || r.P > 1) {
			t.Fatalf("%s p = %v", name, r.P)
		}
	}
	m := MannWhitney(a, b)
	finiteOut(t, "MannWhitney", m.U, m.Z, m.P)
	if v, ok := NearestRank(a, 0.99); ok {
		finiteOut(t, "NearestRank", v)
	}
}

// TestEveryFunctionIsDefinedOnEveryInput: random samples mixing NaN, ±Inf,
// 0, 1, huge values and ties; every figure is finite or not available,
// and nothing hangs (MannWhitney once looped forever on NaN).
func TestEveryFunctionIsDefinedOnEveryInput(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkAll(t, randomSample(r), randomSample(r))
	}
	for _, c := range []struct{ a, b []float64 }{
		{nil, nil}, {[]float64{1}, nil}, {[]float64{1}, []float64{2}},
		{[]float64{math.NaN()}, []float64{math.NaN(), 1}},
		{[]float64{3, 3, 3}, []float64{3, 3, 3}},
	} {
		checkAll(t, c.a, c.b)
	}
	// 10^6 identical values in each path: all tied, zero variance.
	same := make([]float64, 1_000_000)
	for i := range same {
		same[i] = 7.25
	}
	done := make(chan struct{})
	go func() { checkAll(t, same, same); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("10^6 tied values did not finish in 30 s")
	}
	if m := MannWhitney(same, same); m.NA != "all values tied" {
		t.Errorf("MannWhitney of ties: %+v", m)
	}
	if d := Describe(same); d.Mean != 7.25 || d.SD != 0 || d.CI95 != [2]float64{7.25, 7.25} {
		t.Errorf("Describe of 10^6 identical values: %+v", d)
	}
	if d := Describe([]float64{math.NaN(), 1}); d.NA != NotFinite || d.Mean != 0 {
		t.Errorf("Describe with NaN: %+v", d)
	}
	if m := MannWhitney([]float64{1, math.NaN()}, []float64{2}); m.NA != NotFinite {
		t.Errorf("MannWhitney with NaN: %+v", m)
	}
}

// TestPooledAcceptsOneValueAgainstMany: df = n1 + n2 - 2 is defined.
func TestPooledAcceptsOneValueAgainstMany(t *testing.T) {
	r := Pooled([]float64{10}, []float64{11, 12, 13})
	// By hand: sp² = (2·1)/2 = 1, se = sqrt(1·(1 + 1/3)), t = 2/se.
	se := math.Sqrt(4.0 / 3)
	if r.NA != "" || r.DF != 2 || !within(r.T, 2/se, 1e-12) {
		t.Errorf("Pooled(1 vs 3) = %+v", r)
	}
	if r := Pooled([]float64{10}, []float64{11}); r.NA == "" {
		t.Errorf("Pooled(1 vs 1) is not defined, got %+v", r)
	}
}

func TestBoundsAndSmallSamples(t *testing.T) {
	if ci := ClampBelow([2]float64{-450.8, 546}); ci != [2]float64{0, 546} {
		t.Errorf("ClampBelow: %v", ci)
	}
	for q, want := range map[float64]int{0.5: 2, 0.9: 10, 0.99: 100, 0.999: 1000} {
		if got := MinSamples(q); got != want {
			t.Errorf("MinSamples(%v) = %d, want %d", q, got, want)
		}
	}
	if _, ok := Wilson(0, 0); ok {
		t.Error("Wilson(0, 0) defined")
	}
	if adj := Holm([]float64{0.01, math.NaN(), 0.04}); !math.IsNaN(adj[1]) || adj[0] != 0.02 || adj[2] != 0.04 {
		t.Errorf("Holm with a missing p: %v", adj)
	}
}

// FuzzStatistics feeds arbitrary samples (8 bytes a value) to every
// function: finite or not available, never a hang.
func FuzzStatistics(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f})
	f.Add([]byte{}, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		checkAll(t, floats(a), floats(b))
	})
}

func floats(b []byte) []float64 {
	var out []float64
	for len(b) >= 8 && len(out) < 64 {
		out = append(out, math.Float64frombits(uint64(b[0])|uint64(b[1])<<8|uint64(b[2])<<16|uint64(b[3])<<24|
			uint64(b[4])<<32|uint64(b[5])<<40|uint64(b[6])<<48|uint64(b[7])<<56))
		b = b[8:]
	}
	return out
}

func TestOutliersByTukeysFarFences(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want []int
	}{
		{[]float64{2.1, 2.0, 406.3, 2.2, 1.9, 2.0, 2.1, 2.3, 2.0, 2.1}, []int{2}},
		{[]float64{10, 11, 12, 13, 14, 15, 16, 17}, nil},
		{[]float64{5, 5, 5, 5, 40}, []int{4}}, // no spread: 3x the median
		{[]float64{1, 2}, nil},
		{[]float64{1, math.NaN(), 2, 3}, nil},
	} {
		if got := Outliers(c.xs); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("Outliers(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}
