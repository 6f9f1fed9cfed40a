package report

import (
	"strings"
	"testing"
)

// TestVersionsSideBySide: groups that name their HTTP version are set side
// by side per path (mean, handshake, first byte, completion, the protocol
// spoken), each version's difference from the baseline with its CI, and
// a plot with a line per version per path; one version alone, none of it.
func TestVersionsSideBySide(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	ci := func(a, b float64) *[2]float64 { return &[2]float64{a, b} }
	s := &Summary{Baseline: "ipv4", HTTPVersions: map[string]string{"http": "1.1", "http/2": "2", "http/3": "3"}}
	for _, g := range []string{"http", "http/2", "http/3"} {
		for _, p := range []string{"ipv4", "ipv6"} {
			neg := map[string]string{"http": "http/1.1", "http/2": "h2", "http/3": "h3"}[g]
			s.Cells = append(s.Cells, Cell{Protocol: g, Path: p, Conns: 10, MeanMS: ms(3), Completed: 10, CompletionRate: ms(1),
				Negotiated: map[string]int{neg: 10}, Metrics: map[string]*MetricStat{"handshake_ms": stat(1.5), "ttfb_ms": stat(2)}})
		}
		s.Comparisons = append(s.Comparisons, Comparison{Protocol: g, Path: "ipv6", Conns: 10, DiffMS: ms(0.25), CI95DiffMS: ci(-0.5, 1)})
	}
	sec, ok := VersionsTable(s)
	if !ok || len(sec.Rows) != 2*3*5 {
		t.Fatalf("%v %d rows", ok, len(sec.Rows))
	}
	if got := strings.Join(sec.Rows[5], "|"); got != "|HTTP/2|mean|3.00" {
		t.Errorf("http/2 row %q", got)
	}
	if got := strings.Join(sec.Rows[14], "|"); got != "||spoke|h3" {
		t.Errorf("h3 spoke row %q", got)
	}
	if got := strings.Join(sec.Rows[16], "|"); got != "||handshake|1.50" {
		t.Errorf("ipv6 http handshake row %q", got)
	}
	if len(sec.Footer) != 0 {
		t.Errorf("footer %q, though every version ran alike", sec.Footer)
	}
	// One precision a column: a handshake of 104 ms under a mean of 106.3
	// reads 104.0 (trial13: 106.3 beside 104 and 105).
	long := s.Cells[0]
	long.MeanMS, long.Metrics = ms(106.3), map[string]*MetricStat{"handshake_ms": stat(104), "ttfb_ms": stat(105)}
	sl := &Summary{Baseline: "ipv4", HTTPVersions: s.HTTPVersions, Cells: []Cell{long, s.Cells[2]}}
	if lsec, _ := VersionsTable(sl); len(lsec.Rows) < 3 || strings.Join([]string{lsec.Rows[0][3], lsec.Rows[1][3], lsec.Rows[2][3]}, " ") != "106.3 104.0 105.0" {
		t.Errorf("rows %q", lsec.Rows)
	}
	// HTTP/1.1 in cleartext beside TLS versions: said in its row and under
	// the table (a trial read h2 as 4x slower than a cleartext h1).
	s.HTTPCleartext = []string{"http"}
	sec, _ = VersionsTable(s)
	if got := strings.Join(sec.Rows[4], "|"); got != "||spoke|http/1.1 cleartext" || len(sec.Footer) != 1 || !strings.HasPrefix(sec.Footer[0], "HTTP/1.1 ran in cleartext") {
		t.Errorf("cleartext http: spoke row %q, footer %q", got, sec.Footer)
	}
	// With h2c beside it, both said, neither as over TLS (trial10 T4).
	s.HTTPH2C = []string{"http/2"}
	sec, _ = VersionsTable(s)
	if len(sec.Footer) != 1 || !strings.HasPrefix(sec.Footer[0], "HTTP/1.1, HTTP/2 (h2c) ran in cleartext, the other versions over TLS: their handshake") || groupTitle(s, "http/2") != "HTTP/2 (h2c)" {
		t.Errorf("cleartext http and h2c: footer %q, title %q", sec.Footer, groupTitle(s, "http/2"))
	}
	s.HTTPCleartext, s.HTTPH2C = nil, nil
	if got := groupTitle(&Summary{HTTPVersions: map[string]string{"http": "2"}}, "http"); got != "HTTP/2" {
		t.Errorf("an http group that spoke h2 is titled %q", got)
	}
	if got := groupTitle(s, "http/3"); got != "HTTP/3" {
		t.Errorf("http/3 is titled %q", got)
	}
	d, ok := VersionDiffs(s)
	if !ok || len(d.Rows) != 3 || strings.Join(d.Rows[2], "|") != "|HTTP/3|+0.250 (-0.500 to 1.00)" {
		t.Errorf("diffs %v %q", ok, d.Rows)
	}
	pl := versionPlot(s)
	if pl == nil || len(pl.Series) != 6 || pl.Series[3].Name != "ipv6 HTTP/1.1" || pl.Series[5].Class != "s-ipv6 v-3" {
		t.Fatalf("plot %+v", pl)
	}
	s.HTTPVersions = map[string]string{"http/3": "3"}
	if _, ok := VersionsTable(s); ok || versionPlot(s) != nil {
		t.Error("one version alone has a side-by-side table")
	}
}
