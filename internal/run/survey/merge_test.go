package survey

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
)

// writeSegment writes segment i of n of a survey of sites sites (each a
// sample per family and its record), its spec sp.
func writeSegment(t *testing.T, root string, i, n, sites int, sp *Spec) string {
	t.Helper()
	dir, err := result.NewDir(root, "s-seg", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f, w, err := result.CreateSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	w.Header(result.Header{Tool: "v6lab", Name: sp.Name, Created: time.Now(), Target: result.Sites, Baseline: "ipv4", Spec: sp,
		Segment: &result.Segment{Index: i, Count: n}})
	for k := i; k < sites; k += n {
		name := "s" + string(rune('a'+k)) + ".example"
		for _, p := range []string{"ipv4", "ipv6"} {
			w.Sample(result.Sample{Cell: name, Protocol: "web", Path: p, Conns: 1, User: k, TotalNS: 1e6, Start: time.Now()})
		}
		w.Site(result.Site{Index: k, Line: k + 1, Name: name, Start: time.Now(), End: time.Now()})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dir
}

func TestMergeJoinsSegmentsInListOrder(t *testing.T) {
	root := t.TempDir()
	sp := &Spec{Name: "s", Where: result.Sites, Sites: "list.txt", SitesCount: 5, SitesSHA256: "ab", Options: *Defaults()}
	d0, d1 := writeSegment(t, root+"/a", 0, 2, 5, sp), writeSegment(t, root+"/b", 1, 2, 5, sp)
	if !IsSurvey(d0) || IsSurvey(t.TempDir()) {
		t.Fatal("IsSurvey")
	}
	// Review: a --name with a slash put the merged directory outside
	// --results.
	if _, _, err := Merge([]string{d1, d0}, root+"/m", "../escape", []string{"v6lab", "merge"}); err == nil || !strings.Contains(err.Error(), `--name "../escape" cannot name a result directory`) {
		t.Errorf("merge --name ../escape: %v", err)
	}
	if left, _ := filepath.Glob(root + "/escape*"); len(left) != 0 {
		t.Errorf("made %v", left)
	}
	dir, s, err := Merge([]string{d1, d0}, root+"/m", "", []string{"v6lab", "merge"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Judged != 5 || len(s.Merged) != 2 || s.Segment != nil {
		t.Errorf("merged summary: %d judged, %d segments, segment %v", s.Judged, len(s.Merged), s.Segment)
	}
	var order []int
	samples := 0
	readAll(t, dir, result.Visitor{Site: func(x *result.Site) { order = append(order, x.Index) }, Sample: func(*result.Sample) { samples++ }})
	if len(order) != 5 || samples != 10 || order[0] != 0 || order[4] != 4 || order[1] != 1 {
		t.Errorf("sites in order %v, %d samples", order, samples)
	}
	if _, _, err := Merge([]string{d0}, root+"/m", "", nil); err == nil || !strings.Contains(err.Error(), "segment 1/2 is missing") {
		t.Errorf("one of two: %v", err)
	}
	other := *sp
	other.Runs = 3
	d2 := writeSegment(t, root+"/c", 1, 2, 5, &other)
	if _, _, err := Merge([]string{d0, d2}, root+"/m", "", nil); err == nil || !strings.Contains(err.Error(), "not segments of one survey: runs 3 in "+filepath.Base(d2)+", 6 in "+filepath.Base(d0)) {
		t.Errorf("other options: %v", err)
	}
}

func readAll(t *testing.T, dir string, v result.Visitor) {
	t.Helper()
	name, err := result.SamplesPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := result.Scan(f, name, v); err != nil {
		t.Fatal(err)
	}
}
