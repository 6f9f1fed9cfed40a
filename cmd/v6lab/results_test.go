package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResultsMakesOnlyItsLastDirectory (trial): --results deep in a path
// that does not exist made the whole chain, as root. Now every command
// that writes results refuses it before it measures, naming the missing
// parent, and makes nothing; a missing last directory is still made.
func TestResultsMakesOnlyItsLastDirectory(t *testing.T) {
	top := t.TempDir()
	deep := filepath.Join(top, "no", "such", "deeper")
	want := "--results " + deep + ": its parent directory " + filepath.Dir(deep) + " does not exist"
	for _, args := range [][]string{
		{"run", "quick", "--dry-run", "--results", deep},
		{"probe", "http", "http://127.0.0.1:9/", "--paths", "ipv4", "--results", deep},
		{"probe", "dns", "www.lab.test", "--server", "127.0.0.1:9", "--paths", "ipv4", "--results", deep},
	} {
		if _, err := v6lab(t, args...); exitCode(err) != 2 || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v (exit %d), want %q", strings.Join(args, " "), err, exitCode(err), want)
		}
	}
	if ents, _ := os.ReadDir(top); len(ents) != 0 {
		t.Errorf("made %v", ents)
	}
	file := filepath.Join(top, "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := v6lab(t, "run", "quick", "--dry-run", "--results", file); exitCode(err) != 2 || !strings.Contains(err.Error(), "--results "+file+": it is a file, not a directory") {
		t.Errorf("--results a file: %v", err)
	}
	sub := filepath.Join(file, "sub", "deeper")
	if _, err := v6lab(t, "run", "quick", "--dry-run", "--results", sub); exitCode(err) != 2 || !strings.Contains(err.Error(), "--results "+sub+": "+file+" is a file, not a directory") {
		t.Errorf("--results under a file: %v", err)
	}
	for _, args := range [][]string{
		{"run", "quick", "--dry-run", "--results", ""},
		{"probe", "http", "http://127.0.0.1:9/", "--paths", "ipv4", "--results", ""},
	} {
		if _, err := v6lab(t, args...); exitCode(err) != 2 || !strings.Contains(err.Error(), "--results is empty") {
			t.Errorf("%s: %v (exit %d)", strings.Join(args, " "), err, exitCode(err))
		}
	}
	if _, err := v6lab(t, "run", "quick", "--dry-run", "--results", filepath.Join(top, "new")); err != nil {
		t.Errorf("--results of a missing last directory: %v", err)
	}
}
