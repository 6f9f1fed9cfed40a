package result

import (
	"os"
	"strings"
	"testing"
)

// TestGroupTitlesAreAsDocumented: docs/metrics.md's table of group titles
// is what GroupTitle gives, a labelled cell with one version among them
// (trial9 N13: `{label: web, http_version: 2}` is `web` in files and
// results.csv, "WEB/2" in titles, as the label's HTTP/2 group of a list).
func TestGroupTitlesAreAsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| group's name | its `http_version` | titled |")
	if !ok {
		t.Fatal("docs/metrics.md has no table of group titles")
	}
	rows := 0
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cols := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cols) != 3 {
			t.Fatalf("row %q: want 3 columns", line)
		}
		group, version := strings.Trim(cols[0], "`"), cols[1]
		if version == "none" {
			version = ""
		}
		if got := GroupTitle(group, version); got != cols[2] {
			t.Errorf("group %s of version %q titled %q, docs/metrics.md says %q", group, version, got, cols[2])
		}
		rows++
	}
	if rows < 5 {
		t.Errorf("docs/metrics.md's table of group titles has %d rows", rows)
	}
	// A labelled group's name with one version is titled as the same
	// label's group of that version in a list.
	for _, v := range []string{"1.1", "2", "3"} {
		listed := "web"
		if v != "1.1" {
			listed += "/" + v
		}
		if one, list := GroupTitle("web", v), GroupTitle(listed, v); one != list || one != "WEB/"+v {
			t.Errorf("version %s: web titled %q, the list's %s %q; want both WEB/%s", v, one, listed, list, v)
		}
	}
}
