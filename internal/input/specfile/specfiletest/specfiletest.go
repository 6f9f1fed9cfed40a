// Package specfiletest checks a decoder against its invalid-*.yaml files:
// each file's first line is "# want: <the exact error>".
package specfiletest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Invalid parses every file matching glob (at least min of them) with
// parse, called with the file's base name, and checks the error is exactly
// the one the file's first line wants.
func Invalid(t *testing.T, glob string, min int, parse func(name string, data []byte) error) {
	t.Helper()
	files, _ := filepath.Glob(glob)
	if len(files) < min {
		t.Fatalf("only %d files match %s", len(files), glob)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		want, ok := strings.CutPrefix(first, "# want: ")
		if !ok {
			t.Fatalf("%s: first line must be '# want: <message>'", f)
		}
		if err := parse(filepath.Base(f), data); err == nil || err.Error() != want {
			t.Errorf("%s:\n got  %v\n want %s", f, err, want)
		}
	}
}
