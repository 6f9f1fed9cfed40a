package sites

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
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
	return writeSurveySpec(t, sites, order, map[string]any{"threshold": "1ms", "sites_count": len(order)})
}

func writeSurveySpec(t *testing.T, sites map[string][2]float64, order []string, spec map[string]any) string {
	t.Helper()
	return writeSurveyWith(t, sites, order, spec, nil)
}

// writeSurveyWith writes the survey, each sample through edit when given.
func writeSurveyWith(t *testing.T, sites map[string][2]float64, order []string, spec map[string]any, edit func(*result.Sample)) string {
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
		Spec: spec})
	for i, name := range order {
		site := dual(name)
		site.Index, site.Line = i, i+1
		for _, smp := range pages(4, sites[name][0], sites[name][1]) {
			smp.Cell, smp.User = name, i
			if edit != nil {
				edit(&smp)
			}
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
		if s.A.Count != w[0] || s.B.Count != w[1] || s.A.Of != 4 || s.B.Of != 4 || s.Diff == nil || math.Abs(*s.Diff-float64(w[1]-w[0])/4) > 1e-12 || s.CI95 == nil {
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

// TestCompareNamesTheOptionsThatDiffer: two surveys of one list taken
// with another threshold and number of runs say so, with both values;
// the list's count is no option.
func TestCompareNamesTheOptionsThatDiffer(t *testing.T) {
	sites := map[string][2]float64{"x.example": {10, 30}}
	a := writeSurveySpec(t, sites, []string{"x.example"}, map[string]any{"threshold": "40ms", "runs": 6, "timeout": "10s", "sites_count": 1, "name": "a"})
	b := writeSurveySpec(t, sites, []string{"x.example"}, map[string]any{"threshold": "1ms", "runs": 3, "timeout": "10s", "sites_count": 1, "name": "b"})
	v, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"the surveys' options differ: runs 6 in A, 3 in B", "the surveys' options differ: threshold 40ms in A, 1ms in B"}
	if !slices.Equal(v.Notes, want) {
		t.Errorf("notes %q, want %q", v.Notes, want)
	}
	var text bytes.Buffer
	if err := VersusText(&text, v); err != nil || !strings.Contains(text.String(), "note: "+want[1]) {
		t.Errorf("%v\n%s", err, text.String())
	}
	if v, err := Compare(a, a); err != nil || len(v.Notes) != 0 {
		t.Errorf("one survey against itself: %v %q", err, v.Notes)
	}
}

// TestCompareGivesNoDifferenceAgainstNoSites (trial6 F4): B's page
// fetches all failed, so no site of B was compared: its "faster over
// IPv6" share is of no site. compare gives no B − A for it (says why),
// where A's is 2 of 3; and the sites are failed in B, not undecided.
func TestCompareGivesNoDifferenceAgainstNoSites(t *testing.T) {
	sites := map[string][2]float64{"x.example": {30, 10}, "y.example": {30, 10}, "z.example": {10, 30}}
	order := []string{"x.example", "y.example", "z.example"}
	spec := map[string]any{"threshold": "1ms", "sites_count": 3}
	a := writeSurveySpec(t, sites, order, spec)
	b := writeSurveyWith(t, sites, order, spec, func(s *result.Sample) {
		s.TotalNS, s.ConnectNS, s.Err = 0, 0, "no QUIC answer over "+s.Path+" in 3 s"
	})
	v, err := Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	f := v.Study[0]
	if f.A.Count != 2 || f.A.Of != 3 || f.B.Of != 0 || f.Diff != nil || f.CI95 != nil || !strings.Contains(f.NA, "no site in B") {
		t.Errorf("faster over IPv6: %+v", f)
	}
	var out bytes.Buffer
	if err := VersusText(&out, v); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`faster over IPv6, of the dual-stacked sites compared.*`).FindString(out.String())
	if strings.Contains(line, " pt") || !strings.Contains(line, "n/a") || !strings.Contains(line, "no B − A: a share of no site in B") || !strings.Contains(out.String(), "ipv6_faster → failed") {
		t.Errorf("compare:\n%s", out.String())
	}
}
