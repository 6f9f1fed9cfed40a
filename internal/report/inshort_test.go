package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// TestInShortIsShortWhenThereAreMany: 20 groups over two paths, at 2
// counted runs each under --scale 0.05: one note says once that the runs
// are too few and what to run; the differences (significant or shown by
// their raw interval) and failures stay in full, and the rest are grouped
// by what they say, compactly, with how many.
func TestInShortIsShortWhenThereAreMany(t *testing.T) {
	s := &Summary{Baseline: "ipv4", Scale: 0.05}
	for g := range 20 {
		group := fmt.Sprintf("g%02d", g)
		for _, p := range []string{"ipv6", "nat64"} {
			c := cmpOf(group, p, 1, 1, 0.9) // within ±2%: same
			switch {
			case g == 0 && p == "ipv6":
				c = cmpOf(group, p, 1, 30, 0.001) // significant
			case g == 1 && p == "ipv6":
				c.PairedDiffMS, c.CI95PairedDiffMS = f64(7), &[2]float64{5, 9} // shown by its raw interval
			case g >= 10:
				c.CI95PairedDiffMS = &[2]float64{-40, 40} // too wide
			case g == 5:
				c = Comparison{Protocol: group, Path: p, Conns: 1, NA: map[string]string{"pct_increase": "no values"}}
			}
			c.Pairs = 2
			s.Comparisons = append(s.Comparisons, c)
		}
		s.Cells = append(s.Cells, Cell{Protocol: group, Path: "ipv4", Conns: 1, MeanMS: f64(100), Runs: []float64{99, 101}})
	}
	lines := VerdictLines(s)
	want := []string{
		"too few runs for verdicts: at most 2 counted runs per cell (--scale 0.05 shrank them), fewer than 5,",
		"g00 over ipv6: 30% slower at every load, significant",
		"g01 over ipv6: slower by 7.00 ms (95% interval +5.00 to +9.00 ms), not significant after Holm's correction over 38 comparisons at 2 runs each",
		"same as ipv4 within ±5%, 16: g00 over nat64; g01 over nat64; g02 over ipv6, nat64;",
		"not comparable, no values, 2: g05 over ipv6, nat64",
		"no difference the runs can tell, the 95% interval too wide (run more), 20: g10 over ipv6, nat64; g11 over ipv6, nat64;",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n %q\n want it to begin %q", i, lines[i], w)
		}
	}
	// Enough runs: no note; few groups: every verdict in full.
	for i := range s.Cells {
		s.Cells[i].Runs = []float64{1, 2, 3, 4, 5}
	}
	s.Comparisons = s.Comparisons[:4]
	if lines := VerdictLines(s); len(lines) != 4 || strings.HasPrefix(lines[0], "too few") {
		t.Errorf("few verdicts, enough runs:\n%s", strings.Join(lines, "\n"))
	}
}

// TestInShortWhenEverythingFailed: when no transaction of any cell, the
// baseline's included, completed, "In short" says so in one headline with
// the first error, not that the runs were too few (trial8 F2).
func TestInShortWhenEverythingFailed(t *testing.T) {
	s := &Summary{Baseline: "ipv4"}
	for _, p := range []string{"ipv4", "ipv6"} {
		s.Cells = append(s.Cells, Cell{Protocol: "http", Path: p, Conns: 1, Failed: 3,
			FirstError: "the server refused ALPN h2: it does not speak HTTP/2 over TLS"})
	}
	s.Comparisons = []Comparison{{Protocol: "http", Path: "ipv6", Conns: 1, NA: map[string]string{"pct_increase": "no values"}}}
	lines := VerdictLines(s)
	want := "every transaction failed on every path (first error, ipv4 at 1 connection: the server refused ALPN h2: it does not speak HTTP/2 over TLS)"
	if len(lines) != 1 || lines[0] != want {
		t.Fatalf("In short:\n%s\nwant the one line\n%s", strings.Join(lines, "\n"), want)
	}
	// report.html says it as its In short too.
	var b bytes.Buffer
	if err := HTML(&b, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<strong>every transaction failed on every path (first error, ipv4 at 1 connection: ") {
		t.Errorf("report.html does not say every transaction failed")
	}
	// One path that completed one transaction: the usual verdicts.
	s.Cells[1].Completed = 1
	if lines := VerdictLines(s); len(lines) == 0 || strings.HasPrefix(lines[0], "every transaction failed") {
		t.Errorf("one transaction completed, still:\n%s", strings.Join(lines, "\n"))
	}
}

// TestInShortNamesAGroupWhoseTitleSaysMore (trial10 T7, T4): with one
// cell group, "In short" names it as its tables are titled whenever the
// title says what the path alone does not (a version, a label): a probe's
// http of HTTP/2 is "HTTP/2 over ipv6", in report.txt and report.html; a
// group that spoke h2c is titled and called "(h2c)" whether a list or a
// single version named it; a plain http group alone is its path's.
func TestInShortNamesAGroupWhoseTitleSaysMore(t *testing.T) {
	for _, tc := range []struct {
		group, spec string
		conn        func(*result.Sample)
		want        string
	}{
		{"http", `"label":"http","protocol":"http","http_version":"2","tls":true`, tlsConn, "HTTP/2 over ipv6: "},
		{"http", `"label":"http","protocol":"http","http_version":"2","url":"http://localhost:8080/"`, plainConn, "HTTP/2 (h2c) over ipv6: "},
		{"web", `"label":"web","protocol":"http","http_version":"2","tls":false`, plainConn, "WEB/2 (h2c) over ipv6: "},
		{"web/h2c", `"label":"web/h2c","protocol":"http","http_version":"2","tls":false`, plainConn, "WEB/2 (h2c) over ipv6: "},
		{"web", `"label":"web","protocol":"http"`, plainConn, "web over ipv6: "},
		{"http", `"label":"http","protocol":"http"`, plainConn, "ipv6: "},
	} {
		f := build(baseMS, otherMS)
		if err := json.Unmarshal([]byte(`{"cells":[{`+tc.spec+`}]}`), &f.Header.Spec); err != nil {
			t.Fatal(err)
		}
		for i := range f.Samples {
			tc.conn(&f.Samples[i])
			f.Samples[i].Protocol, f.Samples[i].Cell = tc.group, result.CellKey(tc.group, f.Samples[i].Path, 2)
		}
		for i := range f.Runs {
			f.Runs[i].Protocol, f.Runs[i].Cell = tc.group, result.CellKey(tc.group, f.Runs[i].Path, 2)
		}
		s := Summarize(f)
		lines := VerdictLines(s)
		if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], tc.want) {
			t.Errorf("%s: In short %q, want its verdict to begin %q", tc.spec, lines, tc.want)
		}
		title, _, _ := strings.Cut(tc.want, " over ")
		if strings.Contains(tc.want, " over ") && tc.group != "web" && !strings.HasPrefix(groupTitle(s, tc.group), title) {
			t.Errorf("%s: tables titled %q, In short calls it %q", tc.spec, groupTitle(s, tc.group), title)
		}
		var txt, page bytes.Buffer
		if err := Text(&txt, s); err != nil {
			t.Fatal(err)
		}
		if err := HTML(&page, s); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(tc.want, " over ") && (!strings.Contains(txt.String(), "\n"+groupTitle(s, tc.group)+": ") || !strings.Contains(html.UnescapeString(page.String()), "<strong>"+title+" over ipv6")) {
			t.Errorf("%s: report.txt's tables or report.html's In short do not say %q", tc.spec, title)
		}
		if !strings.Contains(tc.want, " over ") && strings.Contains(html.UnescapeString(page.String()), " over ipv6</strong>") {
			t.Errorf("%s: report.html names a group whose title says nothing more", tc.spec)
		}
	}
}
