package result

import (
	"os"
	"strings"
	"testing"
)

// TestGroupTitlesAreAsDocumented: docs/metrics.md's table of group titles
// is what GroupTitle gives, a labelled cell with one version among them
// (trial9 N13: `{label: web, http_version: 2}` is `web` in files and
// results.csv, "WEB/2" in titles, as the label's HTTP/2 group of a list),
// h2c said wherever the group spoke it (trial10 T4), and a label that
// ends in its version not given it again.
func TestGroupTitlesAreAsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| group's name | its `http_version` | it spoke | titled |")
	if !ok {
		t.Fatal("docs/metrics.md has no table of group titles")
	}
	rows := 0
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cols := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cols) != 4 {
			t.Fatalf("row %q: want 4 columns", line)
		}
		group, version := strings.Trim(cols[0], "`"), cols[1]
		if version == "none" {
			version = ""
		}
		if got := GroupTitle(group, version, cols[2] == "h2c"); got != cols[3] {
			t.Errorf("group %s of version %q that spoke %s titled %q, docs/metrics.md says %q", group, version, cols[2], got, cols[3])
		}
		rows++
	}
	if rows < 10 {
		t.Errorf("docs/metrics.md's table of group titles has %d rows", rows)
	}
	// A labelled group's name with one version is titled as the same
	// label's group of that version in a list, h2c's too.
	for _, v := range []string{"1.1", "2", "3", "h2c"} {
		listed, version, h2c := "web", v, v == "h2c"
		if h2c {
			version = "2"
		}
		if v != "1.1" {
			listed += "/" + v
		}
		want := "WEB/" + version
		if h2c {
			want += " (h2c)"
		}
		if one, list := GroupTitle("web", version, h2c), GroupTitle(listed, version, h2c); one != list || one != want {
			t.Errorf("%s: web titled %q, the list's %s %q; want both %s", v, one, listed, list, want)
		}
	}
	if got := GroupCalled("dns", "", false); got != "dns" {
		t.Errorf("an unversioned group called %q in notes", got)
	}
}
