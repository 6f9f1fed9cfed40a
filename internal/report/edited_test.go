package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
