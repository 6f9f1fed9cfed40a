package report

import (
	"slices"
	"testing"
)

// TestLookupQueriesShownWhenSomeWereResent: the figures table leaves
// dns_queries out while every cell's lookups took a lossless lookup's
// queries (1; 2 on the dual path), and shows it once one re-sent.
func TestLookupQueriesShownWhenSomeWereResent(t *testing.T) {
	cells := func(v4, dual float64) []Cell {
		return []Cell{
			{Protocol: "http", Path: "ipv4", Conns: 1, Metrics: map[string]*MetricStat{"dns_queries": stat(v4), "ttfb_ms": stat(1)}},
			{Protocol: "http", Path: "dual", Conns: 1, Metrics: map[string]*MetricStat{"dns_queries": stat(dual), "ttfb_ms": stat(1)}},
		}
	}
	for _, c := range []struct {
		v4, dual float64
		shown    bool
	}{{1, 2, false}, {1.05, 2, true}, {1, 2.5, true}} {
		sec, ok := metricSection("HTTP", cells(c.v4, c.dual))
		if !ok || slices.Contains(sec.Head, "dns_queries") != c.shown || !slices.Contains(sec.Head, "ttfb_ms") {
			t.Errorf("ipv4 %v, dual %v: head %v", c.v4, c.dual, sec.Head)
		}
	}
	// Dialer v3's race asks HTTPS, AAAA and A: 3 is its lossless lookup.
	v3 := func(q float64) []Cell {
		return []Cell{{Protocol: "http", Path: "dual", Conns: 1, Metrics: map[string]*MetricStat{"dns_queries": stat(q), "he_failed": stat(0)}}}
	}
	for q, shown := range map[float64]bool{3: false, 3.5: true} {
		if sec, _ := metricSection("HTTP", v3(q)); slices.Contains(sec.Head, "dns_queries") != shown {
			t.Errorf("dialer v3, %v queries: head %v", q, sec.Head)
		}
	}
	only := []Cell{{Protocol: "http", Path: "ipv4", Conns: 1, Metrics: map[string]*MetricStat{"dns_queries": stat(1)}}}
	if sec, ok := metricSection("HTTP", only); ok {
		t.Errorf("a table of only ones: %+v", sec)
	}
}
