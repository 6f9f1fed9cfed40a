package sites

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"v6lab/internal/result"
)

// snakeKeys lists every key of a JSON document (by its path) that is not
// snake_case.
func snakeKeys(v any, path string, bad *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(k) {
				*bad = append(*bad, path+"."+k)
			}
			snakeKeys(e, path+"."+k, bad)
		}
	case []any:
		for _, e := range x {
			snakeKeys(e, path+"[]", bad)
		}
	}
}

// TestSummaryJSONIsSnakeCaseThroughout (review): a problem row in a
// survey's summary.json had Go's casing (Site, PageMS). Every key of the
// whole document is snake_case: a segment's survey with every kind of
// problem (no AAAA, broken, partly failed), shares, the study's measures,
// the CDF and the what-if.
func TestSummaryJSONIsSnakeCaseThroughout(t *testing.T) {
	dir, err := result.NewDir(t.TempDir(), "s", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f, w, err := result.CreateSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.Header(result.Header{Tool: "v6lab", Name: "s", Created: time.Now(), Target: result.Sites, Baseline: "ipv4",
		Segment: &result.Segment{Index: 0, Count: 1, Host: "h"},
		Spec:    map[string]any{"threshold": "1ms", "sites_count": 5, "site_conns": 1}})
	broken, partial, v4 := dual("broken.example"), dual("partial.example"), dual("v4.example")
	broken.Families[1] = result.SiteFamily{Path: "ipv6", Err: "discover: connect: timeout"}
	partial.Objects = []result.SiteObject{{URL: "https://cdn.example/x.js", Err: map[string]string{"ipv4": "", "ipv6": "resolve: no AAAA"}}}
	v4.Lookups[1] = result.Lookup{Type: "AAAA", Err: "NODATA"}
	v4.Families = v4.Families[:1]
	for i, s := range []*result.Site{dual("a.example"), dual("b.example"), broken, partial, v4} {
		s.Index, s.Line = i, i+1
		for _, smp := range pages(4, 10, 10+float64(i)) {
			if (s == broken || s == v4) && smp.Path == "ipv6" {
				continue
			}
			smp.Cell, smp.User = s.Name, i
			w.Sample(smp)
		}
		w.Site(*s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s, err := WriteAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) < 3 || len(s.WhatIf) == 0 {
		t.Fatalf("the test's survey has %d problems and %d what-ifs", len(s.Problems), len(s.WhatIf))
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var bad []string
	snakeKeys(doc, "", &bad)
	if len(bad) > 0 {
		t.Errorf("keys not in snake_case: %v\n%s", bad, b)
	}
}
