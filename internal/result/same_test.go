package result

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSameResult: one directory (twice, or through a link) and a copy of
// its samples are the same result; another result with as many bytes of
// samples, or a directory that holds none, is not.
func TestSameResult(t *testing.T) {
	write := func(content string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, SamplesName), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a := write("samples of a, run 1")
	link := filepath.Join(t.TempDir(), "a")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b, want string
	}{
		{a, "one directory"},
		{a + "/.", "one directory"},
		{link, "one directory"},
		{write("samples of a, run 1"), "identical samples files"},
		{write("samples of b, run 1"), ""},       // as long, not the same
		{write("samples of a, run 1 and 2"), ""}, // longer
		{t.TempDir(), ""},                        // no samples: its reader says so
	} {
		if got := Same(a, c.b); got != c.want {
			t.Errorf("Same(%s, %s) = %q, want %q", a, c.b, got, c.want)
		}
	}
	empty := t.TempDir()
	if got := Same(empty, empty); got != "" {
		t.Errorf("a directory without samples, twice: %q", got)
	}
}
