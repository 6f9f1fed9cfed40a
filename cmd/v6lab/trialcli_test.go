package main

// What the first trial of a new user found (the trial's numbering), each
// held by a test.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// TestUnknownSubcommandIsBadInput (4): an argument naming no subcommand of
// serve, probe or lab is bad input (exit 2) naming it and the valid ones;
// it printed the help and exited 0. Alone, the group still prints its help.
func TestUnknownSubcommandIsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "gopher"}, `unknown command "gopher" for "v6lab serve" (want dns, ftp, http, imap, smtp, traffic, transport)`},
		{[]string{"probe", "gopher", "x"}, `unknown command "gopher" for "v6lab probe" (want dns, ftp, http, imap, smtp)`},
		{[]string{"lab", "frob"}, `unknown command "frob" for "v6lab lab" (want down, status, up)`},
	} {
		_, err := v6lab(t, c.args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (exit %d), want %q", c.args, err, exitCode(err), c.want)
		}
	}
	for _, group := range []string{"serve", "probe", "lab"} {
		out, err := v6lab(t, group)
		if err != nil || !strings.Contains(out, "Available Commands:") {
			t.Errorf("%s alone: %v\n%s", group, err, out)
		}
	}
}

// TestExportRefusesABadOutputUpFront (7): an --output that is a directory,
// or in a directory that does not exist, is bad input named as the flag and
// the path, before the export starts; the errors named the temporary file
// beside it. A result directory that does not exist is bad input too (18).
func TestExportRefusesABadOutputUpFront(t *testing.T) {
	res := t.TempDir()
	os.WriteFile(filepath.Join(res, result.PlainSamplesName), nil, 0o644)
	dir := t.TempDir()
	for _, c := range []struct{ output, want string }{
		{dir, "--output: " + dir + " is a directory: give a file's name"},
		{"/nonexistent2/x.parquet", "--output: directory /nonexistent2 does not exist"},
		{filepath.Join(res, result.PlainSamplesName, "x"), "--output: " + filepath.Join(res, result.PlainSamplesName) + " is not a directory"},
	} {
		_, err := v6lab(t, "export", res, "-o", c.output)
		if exitCode(err) != 2 || err.Error() != c.want {
			t.Errorf("-o %s: %v (exit %d), want %q", c.output, err, exitCode(err), c.want)
		}
	}
	if _, err := v6lab(t, "export", "/nonexistent"); exitCode(err) != 2 {
		t.Errorf("export /nonexistent: %v (exit %d), want exit 2", err, exitCode(err))
	}
}

// TestAHostThatIsNoNameNorAddressIsRefused (9): a url whose host is neither
// a DNS name nor an IP address is bad input naming the url, for every
// protocol with a url; "http://;id/" sent a DNS query for ";id".
func TestAHostThatIsNoNameNorAddressIsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"probe", "http", "http://;id/"},
		{"probe", "ftp", "ftp://;id/1M"},
		{"probe", "smtp", ";id"},
		{"probe", "imap", "a..b"},
	} {
		_, err := v6lab(t, args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "is neither a DNS name nor an IP address") || !strings.Contains(err.Error(), "url: \"") {
			t.Errorf("%v: %v (exit %d)", args, err, exitCode(err))
		}
	}
}

// TestNotARegularFileSaysWhatItIs (16): a directory given as a spec file
// is named as one; it read "not a regular file (d---------)".
func TestNotARegularFileSaysWhatItIs(t *testing.T) {
	dir := t.TempDir()
	_, err := v6lab(t, "run", dir)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), dir+": not a regular file (a directory): give a spec file") {
		t.Errorf("run DIR: %v (exit %d)", err, exitCode(err))
	}
}

// TestAResultDirectoryThatIsNoneIsBadInput (18): report, compare, export
// and run --resume of a directory that does not exist or holds no samples
// exit 2, as bad input does, and compare's errors do not begin "report:".
func TestAResultDirectoryThatIsNoneIsBadInput(t *testing.T) {
	empty := t.TempDir()
	spec := filepath.Join(t.TempDir(), "my.yaml") // an experiment file given as a result
	if err := os.WriteFile(spec, []byte("name: my\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "/nonexistent"}, "result: /nonexistent does not exist"},
		{[]string{"compare", "/nonexistent", empty}, "result: /nonexistent does not exist"},
		{[]string{"compare", empty, empty}, "result: " + empty + ": no samples.jsonl.zst nor samples.jsonl in it: not a result directory"},
		{[]string{"compare", spec, empty}, "result: " + spec + " is a file, not a result directory (a run's --results directory, with its samples.jsonl.zst)"},
		{[]string{"export", "/nonexistent"}, "result: /nonexistent does not exist"},
		{[]string{"run", "--resume", "/nonexistent"}, "resume: result: /nonexistent does not exist"},
	} {
		_, err := v6lab(t, c.args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) || strings.HasPrefix(err.Error(), "report:") {
			t.Errorf("%v: %v (exit %d), want %q", c.args, err, exitCode(err), c.want)
		}
	}
}

// TestAMissingTopologyNamesTheExperimentsLine (20): an experiment whose
// topology cannot be read names the experiment file, its line and the
// field; it said only "lab: topology: open …".
func TestAMissingTopologyNamesTheExperimentsLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tt.yaml")
	os.WriteFile(file, []byte("name: tt\ntopology: /nonexistent/topo.yaml\ncells:\n  - {protocol: http, conns: [1]}\n"), 0o644)
	_, err := v6lab(t, "run", file, "--dry-run")
	if want := file + ":2: topology: open /nonexistent/topo.yaml: no such file or directory"; exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v (exit %d), want %q", err, exitCode(err), want)
	}
}

// TestLabUpOfAnExperimentFileSaysWhatToRun (21): lab up given an
// experiment file says it is one and how to run it; it said "description:
// unknown field".
func TestLabUpOfAnExperimentFileSaysWhatToRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "q.yaml")
	os.WriteFile(file, []byte("name: q\ndescription: a test\ncells:\n  - {protocol: http, conns: [1]}\n"), 0o644)
	_, err := v6lab(t, "lab", "up", file, "--name", "nosuchlabq")
	want := file + " is an experiment file, not a topology (run it with v6lab run " + file + ")"
	if exitCode(err) != 2 || err == nil || err.Error() != want {
		t.Errorf("%v (exit %d), want %q", err, exitCode(err), want)
	}
}
