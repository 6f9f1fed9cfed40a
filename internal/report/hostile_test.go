package report

import (
	"os"
	"path/filepath"
	"testing"

	"v6lab/internal/result"
)

// TestWriteAllNeverFollowsAPlantedSymlink: a symlink at the old temporary
// name (summary.json.tmp) pointing outside the result directory is left
// alone, and so is its target.
func TestWriteAllNeverFollowsAPlantedSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep me"), 0o644)
	for _, name := range []string{SummaryFile, TextFile, CSVFile, HTMLFile} {
		os.Symlink(victim, filepath.Join(dir, name+".tmp"))
	}
	f := build(baseMS, otherMS)
	fh, _ := os.Create(filepath.Join(dir, SamplesFile))
	w := result.NewWriter(fh)
	w.Header(f.Header)
	for _, s := range f.Samples {
		w.Sample(s)
	}
	w.Close()
	fh.Close()
	if _, err := WriteAll(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	if st, err := os.Stat(filepath.Join(dir, SummaryFile)); err != nil || st.Mode()&os.ModeSymlink != 0 || st.Mode().Perm() != 0o644 {
		t.Errorf("summary.json: %v %v", st, err)
	}
}
