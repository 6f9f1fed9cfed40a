package sites

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// TestInShortNamesEveryDualVerdict: the sentence's shares add up, the
// undecided and failed sites named beside the others.
func TestInShortNamesEveryDualVerdict(t *testing.T) {
	s := &Summary{ThresholdMS: 1}
	for v, n := range map[Verdict]int{Faster: 1, Slower: 2, Undecided: 3, Broken: 1, Partial: 1, Failed: 1} {
		s.Dual = append(s.Dual, Share{Verdict: v, Count: n, Of: 9, Share: float64(n) / 9})
	}
	got := InShort(s)
	for _, want := range []string{"of 9 dual-stacked sites", "faster at 11.1%", "the same within 1 ms at 0.0%", "slower at 22.2%", "undecided at 33.3%", "broken at 11.1%", "partly broken at 11.1%", "failed at 11.1%"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in %q", want, got)
		}
	}
	if strings.Contains(got, "IPv4 broken") {
		t.Errorf("IPv4 broken named at none: %q", got)
	}
}

// TestHTMLSaysTheMillisecondsLost: report.html's what-if rows give the
// mean milliseconds lost, as report.txt does.
func TestHTMLSaysTheMillisecondsLost(t *testing.T) {
	s := &Summary{ThresholdMS: 1, WhatIf: []WhatIf{{Share: Share{What: "timer 250 ms picks the slower family", Count: 2, Of: 9, Share: 2.0 / 9}, LostMeanMS: 12.5}}}
	var b strings.Builder
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "2 of 9; 12.5 ms lost on average") {
		t.Errorf("no ms lost in:\n%s", b.String())
	}
}

// TestReportsSayTheHTTPVersionCompared: report.txt, report.html and
// summary.json name the HTTP version the sites' page fetches were compared
// over, and a site not timed over both families has no version in its row
// (it was compared over none: trial4 F11).
func TestReportsSayTheHTTPVersionCompared(t *testing.T) {
	c := Criteria{Threshold: time.Millisecond}
	timed := dual("a.example")
	timed.Version = "2"
	noAAAA := &result.Site{Name: "v4.example", Version: "2", Lookups: []result.Lookup{{Type: "A", Addrs: []string{"192.0.2.1"}}, {Type: "AAAA", Err: "NODATA"}},
		Families: []result.SiteFamily{{Path: "ipv4", URL: "https://v4.example/", Connected: true}}}
	broken := dual("b.example")
	broken.Version = "2"
	broken.Families[1] = result.SiteFamily{Path: "ipv6", Err: "connect: timeout"}
	var v4 []result.Sample
	for _, x := range pages(7, 12, 0) {
		if x.Path == "ipv4" {
			v4 = append(v4, x)
		}
	}
	agg := newAggregator()
	rows := []Row{Judge(timed, pages(8, 10, 12), c), Judge(noAAAA, v4, c), Judge(broken, v4, c)}
	for i, want := range []string{"2", "", ""} {
		if rows[i].Version != want {
			t.Errorf("%s (%s): version %q, want %q", rows[i].Name, rows[i].V, rows[i].Version, want)
		}
		agg.add(rows[i])
	}
	s := &Summary{Name: "t", ThresholdMS: 1}
	agg.finish(s)
	if len(s.HTTPVersions) != 1 || s.HTTPVersions["2"] != 1 {
		t.Errorf("http_versions %v, want 2: 1", s.HTTPVersions)
	}
	var txt, html strings.Builder
	if err := Text(&txt, s); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "\nPage fetches compared over HTTP/2 (1 site)\n") || !strings.Contains(html.String(), "Page fetches compared over HTTP/2 (1 site).") {
		t.Errorf("report.txt:\n%s\nreport.html does not say the version either way", txt.String())
	}
	if got := VersionsText(map[string]int{"1.1": 1, "3": 2, "2": 1}); got != "HTTP/3 (2 sites), HTTP/2 (1 site), HTTP/1.1 (1 site)" {
		t.Errorf("versions text %q", got)
	}
}

// TestSummaryNotesTheRunsLeftOutForStalls: the summary (and so report.txt
// and report.html) says how many runs of how many sites were not counted
// for v6lab's own stalls; none, no note.
func TestSummaryNotesTheRunsLeftOutForStalls(t *testing.T) {
	a := newAggregator()
	a.add(Row{V: Same, Stalled: 2})
	a.add(Row{V: Undecided, Stalled: 1})
	a.add(Row{V: Slower, DiffMS: 5})
	s := &Summary{}
	a.finish(s)
	if len(s.Notes) != 1 || !strings.HasPrefix(s.Notes[0], "3 runs of 2 sites not counted: v6lab's process stalled while they ran, beyond the threshold (the stall bounded by the pair's longer page)") || strings.Contains(s.Notes[0], "in them") {
		t.Errorf("notes %q", s.Notes)
	}
	a = newAggregator()
	a.add(Row{V: Same})
	s = &Summary{}
	a.finish(s)
	if len(s.Notes) != 0 {
		t.Errorf("no stalls: notes %q", s.Notes)
	}
}

// TestSharesOfNoSitesAreNA (trial6 F4): a share whose population is no
// site is n/a in report.txt, report.html and summary.json, not "0.0% (0
// of 0)" with a 0-0 CI.
func TestSharesOfNoSitesAreNA(t *testing.T) {
	a := newAggregator()
	for range 3 {
		a.add(Row{V: Failed, DiffMS: math.NaN(), ConnectMS: [2]float64{math.NaN(), math.NaN()}})
	}
	s := &Summary{Name: "none", ThresholdMS: 40}
	a.finish(s)
	var txt, html, js strings.Builder
	if err := Text(&txt, s); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&html, s); err != nil {
		t.Fatal(err)
	}
	if err := JSON(&js, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "faster over IPv6, of the dual-stacked sites compared") || !regexp.MustCompile(`compared +n/a \(no sites\)`).MatchString(txt.String()) || strings.Contains(txt.String(), "(0 of 0)") {
		t.Errorf("report.txt:\n%s", txt.String())
	}
	if !strings.Contains(html.String(), "n/a (no sites)") || strings.Contains(html.String(), "0 of 0") {
		t.Errorf("report.html:\n%s", html.String())
	}
	var doc struct {
		Study map[string]map[string]any `json:"study"`
	}
	if err := json.Unmarshal([]byte(js.String()), &doc); err != nil {
		t.Fatal(err)
	}
	f := doc.Study["faster_over_ipv6"]
	if f["share"] != nil || f["ci95"] != nil || f["na"] != NA {
		t.Errorf("summary.json faster_over_ipv6: %v", f)
	}
	if p := doc.Study["partly_failed"]; p["share"] != 0.0 || p["na"] != nil {
		t.Errorf("summary.json partly_failed (0 of 3): %v", p)
	}
}

// TestWhatIfNoteInALabOrBelowNoise (trial6 F7): the what-if of a lab of
// sites, or of connects that differ by under 0.1 ms everywhere, carries
// a note in report.txt and summary.json that it is not a finding; real
// sites' connects a millisecond apart carry none.
func TestWhatIfNoteInALabOrBelowNoise(t *testing.T) {
	for _, tc := range []struct {
		what     string
		lab      bool
		connects [2]float64
		note     string
	}{
		{"a lab of sites", true, [2]float64{0.02, 0.5}, "lab of sites"},
		{"connects 15 us apart", false, [2]float64{0.020, 0.035}, "0.015 ms at most"},
		{"connects ms apart", false, [2]float64{12, 14}, ""},
	} {
		a := newAggregator()
		a.add(Row{V: Same, DiffMS: 1, ConnectMS: tc.connects})
		a.add(Row{V: Same, DiffMS: 1, ConnectMS: [2]float64{tc.connects[0] + 1, tc.connects[1] + 1}})
		s := &Summary{lab: tc.lab}
		a.finish(s)
		var txt, js, html strings.Builder
		if err := Text(&txt, s); err != nil {
			t.Fatal(err)
		}
		if err := JSON(&js, s); err != nil {
			t.Fatal(err)
		}
		if err := HTML(&html, s); err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(txt.String(), "not a finding") && strings.Contains(js.String(), `"happy_eyeballs_what_if_note"`)
		if strings.Contains(html.String(), "not a finding") != has {
			t.Errorf("%s: report.html and report.txt disagree on the note", tc.what)
		}
		if has != (tc.note != "") || !strings.Contains(s.WhatIfNote, tc.note) {
			t.Errorf("%s: note %q\n%s", tc.what, s.WhatIfNote, txt.String())
		}
	}
}
