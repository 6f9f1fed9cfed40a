package main

// What a second new user's trial of main found, each held by a test.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProbeNameCheckedBeforeAnythingIsCreated: a probe's --name is held
// to the result directory rule before any directory is made (../esc/x
// made esc/x-…; a newline made a directory; /abs gave a mkdir error).
func TestProbeNameCheckedBeforeAnythingIsCreated(t *testing.T) {
	root := t.TempDir()
	results := filepath.Join(root, "r2")
	os.Mkdir(results, 0o755)
	os.Mkdir(filepath.Join(root, "esc"), 0o755)
	for _, name := range []string{"../esc/x", "a\nb", "/abs/path"} {
		args := []string{"probe", "http", "http://127.0.0.1:9/", "--paths", "ipv4", "--conns", "1", "--runs", "2", "--results", results, "--name", name}
		_, err := v6lab(t, args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "--name: ") || !strings.Contains(err.Error(), "cannot name a result directory") {
			t.Errorf("--name %q: %v (exit %d)", name, err, exitCode(err))
		}
	}
	for _, dir := range []string{results, filepath.Join(root, "esc")} {
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s holds %d entries after refused names, first %q", dir, len(ents), ents[0].Name())
		}
	}
}
