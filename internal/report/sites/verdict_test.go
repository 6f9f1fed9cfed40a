package sites

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// dual is a dual-stacked site whose discovery found the page over both
// families.
func dual(name string) *result.Site {
	return &result.Site{Name: name,
		Lookups:  []result.Lookup{{Type: "A", Addrs: []string{"192.0.2.1"}}, {Type: "AAAA", Addrs: []string{"2001:db8::1"}}},
		Families: []result.SiteFamily{{Path: "ipv4", URL: "https://x/", Connected: true}, {Path: "ipv6", URL: "https://x/", Connected: true}}}
}

// pages are runs page transactions per family, ipv4's v4 ms and ipv6's
// v6 ms plus a jitter that is the same over both (a paired design
// cancels it); run 0 warm-up.
func pages(runs int, v4, v6 float64) []result.Sample {
	var out []result.Sample
	for r := range runs {
		jitter := float64(r%3) * 0.3
		for _, p := range []struct {
			path string
			ms   float64
		}{{"ipv4", v4}, {"ipv6", v6}} {
			out = append(out, result.Sample{Path: p.path, Run: r, Warmup: r == 0, ConnectNS: 300_000,
				TotalNS: int64((p.ms + jitter + float64(r%2)*0.01) * 1e6)})
		}
	}
	return out
}

func TestJudgeTimedVerdicts(t *testing.T) {
	c := Criteria{Threshold: time.Millisecond}
	for _, tc := range []struct {
		v4, v6 float64
		want   Verdict
	}{{10, 30, Slower}, {30, 10, Faster}, {10, 10.2, Same}} {
		r := Judge(dual("a.example"), pages(8, tc.v4, tc.v6), c)
		if r.V != tc.want || r.Pairs != 7 || r.N != [2]int{7, 7} {
			t.Errorf("%v vs %v ms: %s (%+v)", tc.v4, tc.v6, r.V, r)
		}
		if want := tc.v6 - tc.v4; math.Abs(r.DiffMS-want) > 0.05 {
			t.Errorf("%v vs %v ms: diff %v", tc.v4, tc.v6, r.DiffMS)
		}
	}
	// Too few pairs to say.
	if r := Judge(dual("b.example"), pages(2, 10, 30), c); r.V != Undecided {
		t.Errorf("one pair: %s", r.V)
	}
}

func TestJudgeBrokenPartialAndMissing(t *testing.T) {
	c := Criteria{Threshold: time.Millisecond}
	s := dual("broken.example")
	s.Families[1] = result.SiteFamily{Path: "ipv6", Err: "discover: connect: timeout"}
	smp := pages(4, 10, 10)
	var v4only []result.Sample
	for _, x := range smp {
		if x.Path == "ipv4" {
			v4only = append(v4only, x)
		}
	}
	v4only = append(v4only, result.Sample{Path: "ipv6", Run: 0, Err: "connect: timeout"})
	if r := Judge(s, v4only, c); r.V != Broken || !strings.Contains(r.Why, "timeout") {
		t.Errorf("no IPv6 connection: %s %q", r.V, r.Why)
	}

	p := dual("partial.example")
	p.Objects = []result.SiteObject{{URL: "https://cdn.example/x.js", Err: map[string]string{"ipv4": "", "ipv6": "resolve: no AAAA"}},
		{URL: "https://ok.example/y.js", Err: map[string]string{"ipv4": "", "ipv6": ""}}}
	if r := Judge(p, pages(4, 10, 10), c); r.V != Partial || len(r.Objects) != 1 || r.Objects[0] != "https://cdn.example/x.js" {
		t.Errorf("object over IPv4 only: %s %v %q", r.V, r.Objects, r.Why)
	}

	n := &result.Site{Name: "v4.example", Lookups: []result.Lookup{{Type: "A", Addrs: []string{"192.0.2.1"}}, {Type: "AAAA", Err: "NODATA"}}}
	if r := Judge(n, nil, c); r.V != NoAAAA {
		t.Errorf("no AAAA: %s", r.V)
	}
	if r := Judge(&result.Site{Name: "x", Skip: "excluded: the exclusion list names x"}, nil, c); r.V != Excluded {
		t.Errorf("excluded: %s", r.V)
	}
	if r := Judge(&result.Site{Name: "x", Skip: "not a name: one label"}, nil, c); r.V != Invalid {
		t.Errorf("invalid: %s", r.V)
	}
}

// TestWhatIfRacesTheFamilies checks the timer what-if against races
// worked by hand. Five sites' connect times (ipv4, ipv6 ms); IPv6 starts
// at 0, IPv4 at the timer T, the first to connect is kept:
//
//	a (10, 20):  IPv6 at 20 before IPv4 at T+10 for every T: the slower
//	b (30, 10):  IPv6, the faster
//	c (30, 270): IPv4 at T+30 = 80, 180 < 270 for T 50, 150; at T 250
//	             IPv4 would connect at 280, after IPv6's 270: the slower
//	d (20, 100): IPv4 at 70 for T 50; IPv6 at 100 after: the slower
//	e (5, 5):    IPv6, neither is slower
//
// so the timer picks the slower family at a only (T 50), a and d (150),
// a, c and d (250, 300): 1, 2, 3, 3 of 5; of the three sites whose IPv6
// is slower (a, c, d) it takes IPv6 at 1, 2, 3, 3. It ends on IPv6 at 3,
// 4, 5, 5 of the 5 (IPv4 at c and d for T 50, c for 150). Time lost
// against the faster family at once: T 50: a 10, c 50 (80 - 30), d 50
// (70 - 20) = 22 ms mean; T 150: a 10, c 150, d 80 = 48 ms; T 250, 300:
// a 10, c 240, d 80 = 66 ms. (The rule this replaced took IPv6 wherever it connected
// within T: at 250 ms it left c out, as if IPv4 connected at T.)
func TestWhatIfRacesTheFamilies(t *testing.T) {
	got := whatIf([][2]float64{{10, 20}, {30, 10}, {30, 270}, {20, 100}, {5, 5}})
	want := map[float64][4]float64{ // slower of 5, ipv6 when slower of 3, ipv6 of 5, lost ms
		50: {1, 1, 3, 22}, 150: {2, 2, 4, 48}, 250: {3, 3, 5, 66}, 300: {3, 3, 5, 66},
	}
	if len(got) != 4 {
		t.Fatalf("%d timers, want 4", len(got))
	}
	for _, w := range got {
		e := want[w.TimerMS]
		if w.Count != int(e[0]) || w.Of != 5 || w.IPv6WhenSlower.Count != int(e[1]) || w.IPv6WhenSlower.Of != 3 ||
			w.IPv6.Count != int(e[2]) || w.IPv6.Of != 5 || math.Abs(w.LostMeanMS-e[3]) > 1e-9 {
			t.Errorf("%g ms: slower %d of %d, ipv6 when slower %d of %d, ipv6 %d of %d, lost %g; want %v",
				w.TimerMS, w.Count, w.Of, w.IPv6WhenSlower.Count, w.IPv6WhenSlower.Of, w.IPv6.Count, w.IPv6.Of, w.LostMeanMS, e)
		}
		if math.Abs(w.Share.Share-e[0]/5) > 1e-12 || math.Abs(w.IPv6WhenSlower.Share-e[1]/3) > 1e-12 {
			t.Errorf("%g ms: shares %v %v", w.TimerMS, w.Share.Share, w.IPv6WhenSlower.Share)
		}
		if lo, hi := w.CI[0], w.CI[1]; !(lo <= w.Share.Share && w.Share.Share <= hi && hi-lo > 0.3) {
			t.Errorf("%g ms: Wilson interval %v of %d of 5", w.TimerMS, w.CI, w.Count)
		}
	}
	if got := whatIf(nil); got[0].Of != 0 || got[0].Share.Share != 0 {
		t.Errorf("no site: %+v", got[0])
	}
}

func TestWriteFileIsReadableByAll(t *testing.T) {
	name := t.TempDir() + "/report.txt"
	if err := writeFile(name, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(name); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("%v %v", st.Mode(), err)
	}
}

// TestJudgeNoAAAAKeepsItsIPv4Figures: a site with no AAAA is measured over
// IPv4 all the same (discovery, page runs): its row carries what was
// measured, so results.csv shows ipv4_ms and ipv4_ok/ipv4_n, not 0.
func TestJudgeNoAAAAKeepsItsIPv4Figures(t *testing.T) {
	n := &result.Site{Name: "v4.example", Lookups: []result.Lookup{{Type: "A", Addrs: []string{"192.0.2.1"}}, {Type: "AAAA", Err: "NODATA"}},
		Families: []result.SiteFamily{{Path: "ipv4", URL: "https://v4.example/", Connected: true}}}
	var v4 []result.Sample
	for _, x := range pages(7, 12, 0) {
		if x.Path == "ipv4" {
			v4 = append(v4, x)
		}
	}
	r := Judge(n, v4, Criteria{Threshold: time.Millisecond})
	if r.V != NoAAAA || r.N != [2]int{6, 0} || r.OK != [2]int{6, 0} || math.Abs(r.PageMS[0]-12.3) > 0.5 || !math.IsNaN(r.PageMS[1]) || !math.IsNaN(r.DiffMS) {
		t.Errorf("%+v", r)
	}
	row := strings.Join(csvRow(r), ",")
	if !strings.Contains(row, ",no_aaaa,true,false,,12.") || !strings.Contains(row, ",6,6,0,0,") {
		t.Errorf("results.csv row %s", row)
	}
}

// TestRowJSONIsSnakeCaseWithNulls: a problem row in summary.json has
// snake_case keys and null for what was not measured, never 0.
func TestRowJSONIsSnakeCaseWithNulls(t *testing.T) {
	n := &result.Site{Name: "v4.example", Lookups: []result.Lookup{{Type: "A", Addrs: []string{"192.0.2.1"}}, {Type: "AAAA", Err: "NODATA"}}}
	b, err := json.Marshal(Judge(n, nil, Criteria{Threshold: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{`"page_ms":[null,null]`, `"connect_ms":[null,null]`, `"diff_ms":null`, `"diff_ci95_ms":[null,null]`, `"n":[0,0]`, `"verdict":"no_aaaa"`} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in %s", want, got)
		}
	}
	if strings.Contains(got, "PageMS") || strings.Contains(got, "DiffMS") {
		t.Errorf("Go casing in %s", got)
	}
}

// TestJudgeLeavesOutRunsV6labStalledIn: one pair of a site the same over
// both families, its IPv6 page 500 ms late because v6lab itself waited
// for a CPU, would leave the site undecided at a 100 ms threshold; with
// its stall recorded (beyond the threshold, the other pairs' none) the
// run is not counted and the site is the same; a stall within the
// threshold counts the run, and so does one like every other pair's.
func TestJudgeLeavesOutRunsV6labStalledIn(t *testing.T) {
	c := Criteria{Threshold: 100 * time.Millisecond}
	late := func(stall, others float64) []result.Sample {
		smp := pages(10, 10, 10)
		for i := range smp {
			smp[i].Metrics = map[string]float64{StallMetric: others}
			if smp[i].Run == 3 {
				smp[i].Metrics[StallMetric] = stall
				if smp[i].Path == "ipv6" {
					smp[i].TotalNS += 500e6
				}
			}
		}
		return smp
	}
	if r := Judge(dual("a.example"), late(0, 0), c); r.V != Undecided || r.Stalled != 0 || r.Pairs != 9 {
		t.Errorf("the late pair counted: %s, %d stalled, %d pairs", r.V, r.Stalled, r.Pairs)
	}
	if r := Judge(dual("a.example"), late(100, 0), c); r.V != Undecided || r.Stalled != 0 {
		t.Errorf("a stall of the threshold: %s, %d stalled", r.V, r.Stalled)
	}
	r := Judge(dual("a.example"), late(480, 2), c)
	if r.V != Same || r.Stalled != 1 || r.Pairs != 8 || r.N != [2]int{8, 8} {
		t.Errorf("a stall of 480 ms among stalls of 2: %s, %d stalled, %d pairs, n %v", r.V, r.Stalled, r.Pairs, r.N)
	}
	// Every pair stalled 480 ms alike: a stall every pair shares is the
	// machine's noise, which the CI measures; none is left out, and the
	// late pair makes the site undecided.
	if r := Judge(dual("a.example"), late(480, 480), c); r.V != Undecided || r.Stalled != 0 || r.Pairs != 9 {
		t.Errorf("every pair stalled alike: %s, %d stalled, %d pairs", r.V, r.Stalled, r.Pairs)
	}
	// Undecided with runs left out, it says so: the late pair stalled
	// no more than most, four others far beyond (in pages of 210 ms
	// over both families, which a stall of 480 ms can have moved by up to
	// 210 ms).
	smp := late(0, 0)
	for i := range smp {
		if smp[i].Run >= 6 {
			smp[i].Metrics[StallMetric] = 480
			smp[i].TotalNS += 200e6
		}
	}
	if r := Judge(dual("a.example"), smp, c); r.V != Undecided || r.Stalled != 4 || r.Pairs != 5 || !strings.Contains(r.Why, "4 runs not counted: v6lab's process stalled while they ran") {
		t.Errorf("four runs stalled, the late one not: %s, %d stalled, %d pairs, %q", r.V, r.Stalled, r.Pairs, r.Why)
	}
}

// TestUncountedLooksAtTheStallsOnly: the rule leaves out a pair whose stall
// exceeds the threshold and lies far beyond the site's other stalls, and
// nothing else; fewer than three pairs have no fence.
func TestUncountedLooksAtTheStallsOnly(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		what   string
		stalls []float64
		t      time.Duration
		want   []bool
	}{
		{"none", nil, ms, []bool{}},
		{"two pairs: no fence", []float64{0, 900}, ms, []bool{false, false}},
		{"a quiet machine", []float64{0.2, 0.4, 0.3, 0.9, 0.5}, ms, []bool{false, false, false, false, false}},
		{"a busy machine: every pair alike", []float64{300, 320, 280, 310, 290}, 100 * ms, []bool{false, false, false, false, false}},
		{"one far beyond the others", []float64{2, 3, 2, 4, 600}, 100 * ms, []bool{false, false, false, false, true}},
		{"far beyond, within the threshold", []float64{0, 0, 0, 0, 90}, 100 * ms, []bool{false, false, false, false, false}},
		{"beyond the threshold, within the fence", []float64{80, 120, 60, 140, 150}, 100 * ms, []bool{false, false, false, false, false}},
		{"two of seven", []float64{1, 2, 900, 1, 3, 700, 2}, ms, []bool{false, false, true, false, false, true, false}},
	} {
		long := make([]float64, len(tc.stalls))
		for i := range long {
			long[i] = 1000 // pages longer than any stall: no bound
		}
		if got := Uncounted(tc.stalls, long, tc.t); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v at %v: %v, want %v", tc.what, tc.stalls, tc.t, got, tc.want)
		}
	}
}

// TestUncountedBoundsTheStallByThePages (trial6 F12): the process's stall
// of 47.1 ms, far beyond the site's others, in a pair whose pages took
// 2.41 and 4.69 ms, cannot have moved its difference by more than 4.69
// ms, never across a 40 ms threshold: the pair counts. The same stall in
// a pair whose longer page took 60 ms is left out.
func TestUncountedBoundsTheStallByThePages(t *testing.T) {
	stalls := []float64{7.9, 12, 23.5, 9, 10, 47.1}
	long := []float64{4, 4.2, 4.5, 4.1, 3.9, 4.69}
	if got := Uncounted(stalls, long, 40*time.Millisecond); slices.Contains(got, true) {
		t.Errorf("a 47.1 ms stall in a pair of pages of 4.69 ms at most is left out: %v", got)
	}
	long[5] = 60
	if got := Uncounted(stalls, long, 40*time.Millisecond); !got[5] {
		t.Errorf("a 47.1 ms stall in a pair whose longer page took 60 ms counted: %v", got)
	}
	smp := pages(7, 2.41, 4.69)
	for i := range smp {
		smp[i].Metrics = map[string]float64{StallMetric: stalls[max(smp[i].Run-1, 0)]}
	}
	if r := Judge(dual("same.v6lab.test"), smp, Criteria{Threshold: 40 * time.Millisecond}); r.Stalled != 0 || r.Pairs != 6 || r.V != Same {
		t.Errorf("the trial's site: %s, %d stalled, %d pairs", r.V, r.Stalled, r.Pairs)
	}
}

// TestJudgeLeavesOutByStallNotByDifference: which runs count depends on
// the stalls alone. A pair far from the verdict's boundaries with a stall
// far beyond the others' is left out, whatever its difference; the same
// stalls over other differences leave out the same runs. (A rule that
// looked at a pair's difference, leaving out only pairs a stall could
// carry across ±threshold, would keep pairs far from the boundaries and
// drop those near them: docs/survey.md says why that is a bias.)
func TestJudgeLeavesOutByStallNotByDifference(t *testing.T) {
	c := Criteria{Threshold: time.Millisecond}
	withStalls := func(smp []result.Sample) []result.Sample {
		for i := range smp {
			st := 0.4 + 0.1*float64(smp[i].Run%3)
			if smp[i].Run == 5 {
				st = 40
			}
			smp[i].Metrics = map[string]float64{StallMetric: st}
		}
		return smp
	}
	for _, v6 := range []float64{10, 30, 10.2, 60} {
		r := Judge(dual("a.example"), withStalls(pages(10, 10, v6)), c)
		if r.Stalled != 1 || r.Pairs != 8 {
			t.Errorf("ipv6 %v ms: %d stalled, %d pairs (want run 5 alone left out)", v6, r.Stalled, r.Pairs)
		}
	}
}

// TestJudgeNoPageOverEitherFamily (trial6 F4): discovery found the page,
// but every fetch of it failed over both families (a forced HTTP/3 the
// site does not offer): the site failed, the errors in its why, not
// undecided with none. Undecided always says why.
func TestJudgeNoPageOverEitherFamily(t *testing.T) {
	c := Criteria{Threshold: 40 * time.Millisecond}
	smp := pages(5, 10, 10)
	for i := range smp {
		smp[i].TotalNS, smp[i].ConnectNS = 0, 0
		smp[i].Err = "no QUIC answer over " + smp[i].Path + " in 3 s"
	}
	site := dual("same.v6lab.test")
	site.Version = "3"
	r := Judge(site, smp, c)
	if r.V != Failed || !strings.Contains(r.Why, "no page over either family") || !strings.Contains(r.Why, "no QUIC answer over ipv6 in 3 s") || !strings.Contains(r.Why, "HTTP/3 was forced and discovery found it offered over neither family") {
		t.Errorf("every fetch failed over both: %s %q", r.V, r.Why)
	}
	if r := Judge(dual("b.example"), pages(2, 10, 30), c); r.V != Undecided || !strings.Contains(r.Why, "1 counted run completed over both families") || !strings.Contains(r.Why, "fewer than two pairs") {
		t.Errorf("one pair: %s %q", r.V, r.Why)
	}
	straddle := pages(10, 10, 10)
	for i := range straddle {
		if straddle[i].Run == 3 && straddle[i].Path == "ipv6" {
			straddle[i].TotalNS += 500e6
		}
	}
	if r := Judge(dual("c.example"), straddle, c); r.V != Undecided || !strings.Contains(r.Why, "straddles ±40 ms") {
		t.Errorf("a CI across the threshold: %s %q", r.V, r.Why)
	}
}
