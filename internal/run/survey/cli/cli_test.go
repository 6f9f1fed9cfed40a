package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
	"v6lab/internal/run/survey"
)

// interrupted writes the header of a survey begun in lab (LabKey's value,
// "" for none) and interrupted before its first site.
func interrupted(t *testing.T, lab string) string {
	t.Helper()
	dir, err := result.NewDir(t.TempDir(), "s", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f, w, err := result.CreateSamples(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := result.Header{Tool: "v6lab", Name: "s", Created: time.Now(), Target: result.Sites, Baseline: "ipv4",
		Spec: map[string]any{"name": "s", "where": "sites", "sites": "lab.sites", "sites_count": 1, "sites_sha256": "ab", "threshold": "40ms", "insecure": true}}
	if lab != "" {
		h.Lab = map[string]string{survey.LabKey: lab}
	}
	w.Header(h)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dir
}

func runSurvey(args ...string) error {
	cmd := Command("test")
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd.Execute()
}

// TestResumeAsksForTheLabAndRefusesOtherOptions: resuming a survey taken
// in lab NAME asks for --lab NAME (not for a contact); a flag of the
// survey's own options, or another list, is refused by name rather than
// silently ignored.
func TestResumeAsksForTheLabAndRefusesOtherOptions(t *testing.T) {
	inLab, inOwn, old := interrupted(t, "lab:t2lab"), interrupted(t, "sites:lab.sites"), interrupted(t, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--resume", inLab}, "was taken in lab t2lab: give --lab t2lab"},
		{[]string{"--resume", inOwn}, "give --lab-sites lab.sites"},
		{[]string{"--resume", old}, "give --lab NAME or --lab-sites FILE"},
		{[]string{"--resume", inLab, "--threshold", "1ms"}, "--threshold cannot be given with it"},
		{[]string{"--resume", inLab, "--segment", "0/2", "--runs", "3"}, "--runs, --segment cannot be given"},
		{[]string{"--resume", inLab, "other.sites"}, "give no SITES (other.sites)"},
	} {
		err := runSurvey(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "--contact") {
			t.Errorf("%v: asks for a contact: %v", c.args, err)
		}
	}
}

// TestCompareSaysWhatDoesNotExist: a directory that is not there is named
// as missing, not as a result of another kind.
func TestCompareSaysWhatDoesNotExist(t *testing.T) {
	a := interrupted(t, "")
	err := Compare(io.Discard, a, "/nonexistent-t2fix", "text")
	if err == nil || err.Error() != "compare: /nonexistent-t2fix does not exist" {
		t.Errorf("%v", err)
	}
}

// TestInsecureIsForALabOfSites: --insecure (insecure: in a survey file)
// against real sites is refused before anything is sent; without it the
// same dry run passes.
func TestInsecureIsForALabOfSites(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "top.txt")
	os.WriteFile(list, []byte("example.org\n"), 0o644)
	file := filepath.Join(dir, "top.yaml")
	os.WriteFile(file, []byte("name: top\nwhere: sites\nsites: "+list+"\ncontact: mailto:ops@example.org\ninsecure: true\n"), 0o644)
	base := []string{"--contact", "mailto:ops@example.org", "--dns-server", "192.0.2.53", "--dry-run"}
	if err := runSurvey(append([]string{list}, base...)...); err != nil {
		t.Fatalf("without --insecure: %v", err)
	}
	for _, args := range [][]string{append([]string{list, "--insecure"}, base...), {file, "--dns-server", "192.0.2.53", "--dry-run"}} {
		if err := runSurvey(args...); err == nil || !strings.Contains(err.Error(), "--insecure (insecure: in a file) accepts any certificate, so it is for a lab of sites only") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestDryRunNamesTheStartAndCountsInTheSingular: --dry-run says when a
// survey would start (--start-at) and counts one site and one excluded
// name in the singular.
func TestDryRunNamesTheStartAndCountsInTheSingular(t *testing.T) {
	dir := t.TempDir()
	list, excl := filepath.Join(dir, "one.txt"), filepath.Join(dir, "excl.txt")
	os.WriteFile(list, []byte("example.org\n"), 0o644)
	os.WriteFile(excl, []byte("example.net\n"), 0o644)
	cmd := Command("test")
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{list, "--contact", "mailto:ops@example.org", "--dns-server", "192.0.2.53", "--exclude", excl, "--dry-run", "--start-at", "2099-01-02T03:04:05Z"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 of the 1 site of", "starts at 2099-01-02T03:04:05Z (--start-at; in ", "; 1 name excluded;"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}

// TestDryRunNamesTheFlag: an option refused in a dry run is named by its
// flag, as in a survey, not by its file key.
func TestDryRunNamesTheFlag(t *testing.T) {
	list := filepath.Join(t.TempDir(), "one.txt")
	os.WriteFile(list, []byte("example.org\n"), 0o644)
	err := runSurvey(list, "--contact", "mailto:ops@example.org", "--site-conns", "0", "--dry-run")
	if err == nil || !strings.Contains(err.Error(), "--site-conns: 0") {
		t.Errorf("%v", err)
	}
}
