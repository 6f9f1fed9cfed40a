package report

import (
	"slices"
	"strings"
	"testing"
)

// TestFileTablesInTheStudysShape: ftp cells of three files over two paths
// make one table, largest file first, with each path's MB/s, the second
// path's rate against the baseline's and the comparison's confidence; a
// lone http file makes none, and the swept cells leave the table of
// differences to the protocols that are not a sweep.
func TestFileTablesInTheStudysShape(t *testing.T) {
	s := &Summary{Baseline: "ipv4"}
	rate := map[string]float64{"ipv4": 10, "ipv6": 12}
	for _, size := range []float64{5879824, 14269432, 2183355160} {
		label := "ftp-" + figure(size)
		for _, p := range []string{"ipv4", "ipv6"} {
			s.Cells = append(s.Cells, Cell{Protocol: label, Path: p, Conns: 1, Metrics: map[string]*MetricStat{
				"file_bytes": {N: 2, Mean: size, CI95: &[2]float64{size, size}}, "mbytes_per_s": stat(rate[p])}})
		}
		s.Comparisons = append(s.Comparisons, Comparison{Protocol: label, Path: "ipv6", Baseline: "ipv4", Conns: 1, Confidence: ptr(0.97)})
	}
	for _, p := range []string{"ipv4", "ipv6"} {
		s.Cells = append(s.Cells, Cell{Protocol: "http-1m", Path: p, Conns: 1, Metrics: map[string]*MetricStat{
			"file_bytes": stat(1e6), "mbytes_per_s": stat(5)}})
		s.Cells = append(s.Cells, Cell{Protocol: "smtp", Path: p, Conns: 1})
		s.Comparisons = append(s.Comparisons, Comparison{Protocol: "smtp", Path: p, Baseline: "ipv4", Conns: 1, CI95DiffMS: &[2]float64{-1, 1}})
		s.Comparisons = append(s.Comparisons, Comparison{Protocol: "http-1m", Path: p, Baseline: "ipv4", Conns: 1, CI95DiffMS: &[2]float64{-1, 1}})
	}
	secs := FileTables(s)
	if len(secs) != 1 {
		t.Fatalf("%d tables: %+v", len(secs), secs)
	}
	ft := secs[0]
	wantHead := []string{"file", "size (bytes)", "size (MiB)", "ipv4 MiB/s", "ipv6 MiB/s", "ipv6 vs ipv4", "confidence"}
	if !strings.HasPrefix(ft.Title, "FTP file transfers") || !slices.Equal(ft.Head, wantHead) || len(ft.Rows) != 3 {
		t.Fatalf("table %q %v %v", ft.Title, ft.Head, ft.Rows)
	}
	// In the study's unit: 2,183,355,160 bytes are 2082.21 MiB; 10 MB/s (10^6) is 9.54 MiB/s.
	want := []string{"ftp-2183355160", "2183355160", "2082.21", "9.54 (8.58–10.49)", "11.44 (10.49–12.40)", "+20.0%", "97%"}
	if !slices.Equal(ft.Rows[0], want) {
		t.Errorf("first row %v, want %v", ft.Rows[0], want)
	}
	if ft.Rows[2][0] != "ftp-5879824" || ft.Rows[2][2] != "5.61" { // the study's 5,61 MB
		t.Errorf("last row %v", ft.Rows[2])
	}
	// The table of differences keeps http-1m and smtp, not the sweep.
	diff, ok := DifferenceCIs(s)
	if !ok || len(diff.Rows) != 4 {
		t.Fatalf("differences: %v %v", ok, diff.Rows)
	}
	for _, r := range diff.Rows {
		if strings.HasPrefix(r[0], "FTP") {
			t.Errorf("swept cell in the differences: %v", r)
		}
	}
}

// TestNaturalOrder: cell groups with sizes in their names sort by size.
func TestNaturalOrder(t *testing.T) {
	got := []string{"ftp-14269432", "ftp-5879824", "http-2", "ftp-2183355160", "ftp", "ftp-05879825", "dns"}
	slices.SortFunc(got, func(a, b string) int {
		if naturalLess(a, b) {
			return -1
		}
		if naturalLess(b, a) {
			return 1
		}
		return 0
	})
	want := []string{"dns", "ftp", "ftp-5879824", "ftp-05879825", "ftp-14269432", "ftp-2183355160", "http-2"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestChecksumsPrintAsIdentities: a CRC reads in hex when every run saw
// the same one, and says so when they differ; a constant reads without CI.
func TestChecksumsPrintAsIdentities(t *testing.T) {
	same := &MetricStat{N: 2, Mean: 0x85467382, Runs: []float64{0x85467382, 0x85467382}, CI95: &[2]float64{0x85467382, 0x85467382}}
	differ := &MetricStat{N: 2, Mean: 2.5, Runs: []float64{2, 3}, CI95: &[2]float64{-4, 9}}
	for _, c := range []struct {
		k    string
		m    *MetricStat
		want string
	}{
		{"body_crc32c", same, "85467382"},
		{"body_crc32c", differ, "differs between runs"},
		{"file_bytes", &MetricStat{N: 2, Mean: 65536, CI95: &[2]float64{65536, 65536}}, "65536"},
		{"mbytes_per_s", differ, "2.50 (-4–9)"},
		{"cwnd", nil, "-"},
	} {
		if got := metricText(c.k, c.m); got != c.want {
			t.Errorf("%s %+v: %q, want %q", c.k, c.m, got, c.want)
		}
	}
}

// TestFileTablesLeadReportTxt: with a file sweep, report.txt opens with the
// study's table and leaves the sweep's cell groups their own tables only in
// report.html; other groups keep theirs.
func TestFileTablesLeadReportTxt(t *testing.T) {
	s := &Summary{Name: "sweep", Baseline: "ipv4"}
	for _, size := range []float64{5879824, 14269432} {
		label := "ftp-" + figure(size)
		for _, p := range []string{"ipv4", "ipv6"} {
			s.Cells = append(s.Cells, Cell{Protocol: label, Path: p, Conns: 1, MeanMS: ptr(100.0), Metrics: map[string]*MetricStat{
				"file_bytes": stat(size), "mbytes_per_s": stat(10)}})
		}
	}
	for _, p := range []string{"ipv4", "ipv6"} {
		s.Cells = append(s.Cells, Cell{Protocol: "smtp", Path: p, Conns: 1, MeanMS: ptr(2.0)})
	}
	var b strings.Builder
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	ft, smtp := strings.Index(out, "FTP file transfers"), strings.Index(out, "SMTP: average response time")
	if ft < 0 || smtp < 0 || ft > smtp {
		t.Errorf("the file table does not lead (at %d, smtp at %d):\n%s", ft, smtp, out)
	}
	if strings.Contains(out, "FTP-5879824: average response time") {
		t.Errorf("a file cell group kept its own tables in report.txt:\n%s", out)
	}
}

// TestFileTablesOnlyFileSizeSeries: two cells that fetch a file but whose
// labels end in no file size (the eyeballs preset's curl-ipv6-blackholed
// and curl-ipv6-lossy) are no file table: each keeps its own section.
func TestFileTablesOnlyFileSizeSeries(t *testing.T) {
	s := &Summary{Name: "eyeballs", Baseline: "ipv4"}
	for _, label := range []string{"curl-ipv6-blackholed", "curl-ipv6-lossy", "foo-2024", "foo-2025"} { // review: foo-2024 of a 64K file grouped
		for _, p := range []string{"ipv4", "dual"} {
			s.Cells = append(s.Cells, Cell{Protocol: label, Path: p, Conns: 1, MeanMS: ptr(100.0), Metrics: map[string]*MetricStat{
				"file_bytes": stat(65536), "mbytes_per_s": stat(10)}})
		}
	}
	if secs := FileTables(s); len(secs) != 0 {
		t.Errorf("file tables of no file sweep: %+v", secs)
	}
	var b strings.Builder
	if err := Text(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"CURL-IPV6-BLACKHOLED: average response time", "CURL-IPV6-LOSSY: average response time", "FOO-2024: average response time", "FOO-2025: average response time"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "file transfers") {
		t.Errorf("a file table of no file sweep:\n%s", out)
	}
	for label, want := range map[string]string{"ftp-10m-5879824": "ftp-10m", "http-wget-5879824": "http-wget", "http-64K": "http", "curl-ipv6-lossy": "curl-ipv6-lossy", "ftp-clamp": "ftp-clamp",
		"http-10MB": "http", "http-10M": "http", "foo-2024": "foo-2024", "foo-64": "foo-64", "foo-64KB": "foo"} {
		size := map[bool]float64{true: 5879824, false: 65536}[strings.HasSuffix(label, "5879824")]
		if strings.Contains(label, "10M") {
			size = 10e6
		}
		if got := fileSeries(label, size); got != want {
			t.Errorf("fileSeries(%q) of %g bytes = %q, want %q", label, size, got, want)
		}
	}
}
