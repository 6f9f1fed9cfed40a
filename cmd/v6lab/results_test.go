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

// TestAGarbageSamplesFileIsBadInput (trial10 T10): a result directory
// whose samples file is not one v6lab wrote is bad input, status 2, for
// report, compare, export and merge alike, naming the file and its line.
func TestAGarbageSamplesFileIsBadInput(t *testing.T) {
	good := t.TempDir()
	if _, err := v6lab(t, "run", "quick", "--loopback", "--runs", "2", "--warmup", "0", "--paths", "ipv4", "--results", good, "--name", "g", "-q"); err != nil {
		t.Fatal(err)
	}
	goodDirs, _ := filepath.Glob(filepath.Join(good, "g-*"))
	for _, c := range []struct{ file, content, want string }{
		{"samples.jsonl.zst", "garbage\n", "samples.jsonl.zst:1: not a JSON object"},
		{"samples.jsonl", "{\"kind\":\"header\"}\n{\"kind\":\"nonsense\"}\n", ":"},
		{"samples.jsonl", "", "first line is not a v6lab header"},
		{"samples.jsonl.zst", "\x28\xb5\x2f\xfd garbage", "samples.jsonl.zst"},
	} {
		dir := t.TempDir()
		name := filepath.Join(dir, c.file)
		if err := os.WriteFile(name, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"report", dir}, {"report", dir, "--write"}, {"compare", goodDirs[0], dir},
			{"export", dir, "-o", filepath.Join(t.TempDir(), "x.parquet")}, {"merge", dir, goodDirs[0], "--results", t.TempDir()}} {
			_, err := v6lab(t, args...)
			if exitCode(err) != 2 || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (%q): %v (exit %d), want %s named, %q, exit 2", strings.Join(args, " "), c.content, err, exitCode(err), name, c.want)
			}
		}
	}
}
