package sites

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// TestDiffCIIsNewcombes: Newcombe (1998), Table II, example (a): 56/70
// against 48/80, a difference of 0.2000 with method 10's interval 0.0524
// to 0.3339.
func TestDiffCIIsNewcombes(t *testing.T) {
	ci, ok := DiffCI(shareOf(48, 80), shareOf(56, 70))
	if !ok || math.Abs(ci[0]-0.0524) > 5e-5 || math.Abs(ci[1]-0.3339) > 5e-5 {
		t.Errorf("56/70 - 48/80: %v %v, want 0.0524 to 0.3339", ci, ok)
	}
	if _, ok := DiffCI(shareOf(0, 0), shareOf(1, 2)); ok {
		t.Error("a share of no site has an interval")
	}
}

// writeSurvey writes a survey result of dual-stacked sites, each with
// four runs per family (the first warm-up) of the page times v4 and v6
// ms its entry gives.
func writeSurvey(t *testing.T, sites map[string][2]float64, order []string) string {
	t.Helper()
	dir, err := result.NewDir(t.TempDir(), "s", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f, w, err := result.CreateSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.Header(result.Header{Tool: "v6lab", Name: "s", Created: time.Now(), Target: result.Sites, Baseline: "ipv4",
		Spec: map[string]any{"threshold": "1ms", "sites_count": len(order)}})
	for i, name := range order {
		site := dual(name)
		site.Index, site.Line = i, i+1
		for _, smp := range pages(4, sites[name][0], sites[name][1]) {
			smp.Cell, smp.User = name, i
			w.Sample(smp)
		}
		w.Site(*site)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dir
}

// TestCompareSetsTwoSurveysSideBySide: of three sites in both, one turns
// from ipv6_slower to ipv6_faster; one site is only in A, one only in B.
func TestCompareSetsTwoSurveysSideBySide(t *testing.T) {
	a := writeSurvey(t, map[string][2]float64{"x.example": {10, 30}, "y.example": {10, 10}, "z.example": {30, 10}, "a.example": {10, 10}},
		[]string{"x.example", "y.example", "z.example", "a.example"})
	b := writeSurvey(t, map[string][2]float64{"x.example": {30, 10}, "y.example": {10, 10}, "z.example": {30, 10}, "b.example": {10, 30}},
		[]string{"x.example", "y.example", "z.example", "b.example"})
	v, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if v.Common != 3 || v.OnlyA != 1 || v.OnlyB != 1 || v.Changed != 1 || len(v.Changes) != 1 {
		t.Fatalf("%+v", v)
	}
	if c := v.Changes[0]; c.Name != "x.example" || c.A != Slower || c.B != Faster || math.Abs(c.DiffA-20) > 0.1 || math.Abs(c.DiffB+20) > 0.1 {
		t.Errorf("change %+v", c)
	}
	want := map[string][2]int{"ipv6_faster": {1, 2}, "same": {2, 1}, "ipv6_slower": {1, 1}}
	if len(v.Shares) != len(want) {
		t.Errorf("shares %+v", v.Shares)
	}
	for _, s := range v.Shares {
		w := want[s.What]
		if s.A.Count != w[0] || s.B.Count != w[1] || s.A.Of != 4 || s.B.Of != 4 || math.Abs(s.Diff-float64(w[1]-w[0])/4) > 1e-12 || s.CI95 == nil {
			t.Errorf("%s: %+v", s.What, s)
		}
	}
	var text, js bytes.Buffer
	if err := VersusText(&text, v); err != nil || !strings.Contains(text.String(), "x.example  ipv6_slower → ipv6_faster") || !strings.Contains(text.String(), "3 sites in both, 1 changed verdict; 1 only in A, 1 only in B") {
		t.Errorf("%v\n%s", err, text.String())
	}
	var back Versus
	if err := VersusJSON(&js, v); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || back.Changed != 1 || back.Changes[0].B != Faster {
		t.Errorf("json: %v\n%s", err, js.String())
	}
	if _, err := Compare(a, t.TempDir()); err == nil {
		t.Error("compare with a directory of no survey")
	}
}
