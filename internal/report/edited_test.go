package report

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"v6lab/internal/result"
)

// An edited sample line never enters the figures: reading stops at it,
// naming the file, the line and what is wrong.
func TestEditedSamplesAreRefused(t *testing.T) {
	orig, err := os.ReadFile("testdata/formats/v3/samples.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ from, to, want string }{
		{`"path":"ipv6","conns":1,"run":1,`, `"path":"ipv9","conns":1,"run":1,`, `samples.jsonl:8: field path: "ipv9" is not a path v6lab measures (ipv4, ipv6, 6in4`},
		{`"path":"ipv6","conns":1,"run":1,`, `"path":"","conns":1,"run":1,`, `samples.jsonl:8: field path: missing`},
	}
	lines := strings.Split(string(orig), "\n")
	total := lines[7][strings.Index(lines[7], `"total_ns":`):]
	total = total[:strings.IndexAny(total, ",}")]
	cases = append(cases, struct{ from, to, want string }{total, `"total_ns":9223372036854775807`,
		"samples.jsonl:8: field total_ns: 9223372036854775807 ns is longer than any measurement v6lab makes (at most 26h0m0s)"})
	// What a new user's trial edited: a path, connection count or run the
	// experiment never had, a completed transaction without its time.
	cases = append(cases, []struct{ from, to, want string }{
		{`"path":"ipv6","conns":1,"run":1,`, `"path":"6in4","conns":1,"run":1,`, `samples.jsonl:8: field path: "6in4" is not a path cell group http measured ([ipv4 ipv6])`},
		{`"path":"ipv6","conns":1,"run":1,`, `"path":"ipv6","conns":7,"run":1,`, `samples.jsonl:8: field conns: 7 is not a connection count cell group http measured ([1 3])`},
		{`"path":"ipv6","conns":1,"run":1,`, `"path":"ipv6","conns":1,"run":99,`, `samples.jsonl:8: field run: 99 is not a run of cell group http (0 to 4)`},
		{`"proto":"http","path":"ipv6"`, `"proto":"quick","path":"ipv6"`, `samples.jsonl:8: field proto: "quick" is no cell group of this experiment`},
		{total, `"total_ns":0`, `samples.jsonl:8: field total_ns: a completed transaction takes time (0)`},
		{total + ",", ``, `samples.jsonl:8: field total_ns: a completed transaction takes time (0)`},
	}...)
	for _, c := range cases {
		t.Run(c.to, func(t *testing.T) {
			if !strings.Contains(lines[7], c.from) {
				t.Fatalf("line 8 lacks %s", c.from)
			}
			edited := append([]string(nil), lines...)
			edited[7] = strings.Replace(edited[7], c.from, c.to, 1)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "samples.jsonl"), []byte(strings.Join(edited, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open: %v, want %q", err, c.want)
			}
			// The export reads as the report does.
			if _, err := result.ExportParquet(filepath.Join(dir, "samples.jsonl"), io.Discard, CheckSample); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("ExportParquet: %v, want %q", err, c.want)
			}
		})
	}
	// The file as written reads.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "samples.jsonl"), orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err != nil {
		t.Fatal(err)
	}
}

// A sample line duplicated or removed no longer agrees with its run's
// record: refused at the record, naming it.
func TestALineAddedOrRemovedIsRefused(t *testing.T) {
	orig, err := os.ReadFile("testdata/formats/v3/samples.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(orig), "\n")
	if !strings.Contains(lines[7], `"kind":"sample"`) || !strings.Contains(lines[8], `"kind":"run"`) {
		t.Fatalf("lines 8 and 9 are not a sample and its run's record:\n%s\n%s", lines[7], lines[8])
	}
	for name, edited := range map[string][]string{
		"duplicated": slices.Insert(slices.Clone(lines), 7, lines[7]),
		"removed":    slices.Delete(slices.Clone(lines), 7, 8),
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "samples.jsonl"), []byte(strings.Join(edited, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "a line was added or removed") {
			t.Errorf("%s: Open: %v", name, err)
		}
	}
}
