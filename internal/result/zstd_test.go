package result

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestAFIFOIsNoSamplesFile: a FIFO planted as a samples file is refused
// at once (a reader would wait on it forever).
func TestAFIFOIsNoSamplesFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, SamplesName), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if _, err := SamplesPath(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("SamplesPath: %v", err)
	}
}
