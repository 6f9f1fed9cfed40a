package sites

import (
	"io"
	"math"
	"os"
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

func TestWhatIfCountsTheSlowerIPv6ATimerWouldPick(t *testing.T) {
	// Three sites connect slower over IPv6 (at 20, 200 and 400 ms), one
	// faster: a 250 ms timer takes IPv6 at two of the three.
	got := whatIf([][2]float64{{1, 20}, {1, 200}, {1, 400}, {5, 2}})
	for _, w := range got {
		want := map[float64]int{50: 1, 150: 1, 250: 2, 300: 2}[w.TimerMS]
		if w.Count != want || w.Of != 3 {
			t.Errorf("%g ms: %d of %d, want %d of 3", w.TimerMS, w.Count, w.Of, want)
		}
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
