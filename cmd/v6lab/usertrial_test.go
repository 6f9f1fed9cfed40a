package main

// What a new user's trial found (issue 40), each held by a test.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"v6lab/experiments"
	"v6lab/internal/lab"
	"v6lab/internal/testutil"
)

// TestPrintedPresetsRunAsTheBuiltIns: every built-in experiment written
// out with --print and saved under its own name (rubio.yaml, whose
// topology was rubio.yaml) plans exactly what the built-in does.
func TestPrintedPresetsRunAsTheBuiltIns(t *testing.T) {
	dir := t.TempDir()
	for _, name := range experiments.Names() {
		printed, err := v6lab(t, "run", "--print", name)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, name+".yaml")
		os.WriteFile(file, []byte(printed), 0o644)
		want, err := v6lab(t, "run", name, "--dry-run")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := v6lab(t, "run", file, "--dry-run")
		if err != nil || got != want {
			t.Errorf("%s printed: %v\n%s\nwant\n%s", name, err, got, want)
		}
	}
}

// TestLabDownOfNoLabSaysSo: lab down of a name nothing on the machine
// bears fails (exit 1) and says so, as lab status does; it said "down".
func TestLabDownOfNoLabSaysSo(t *testing.T) {
	testutil.RequireRoot(t, "lab down needs root")
	_, err := v6lab(t, "lab", "down", "--name", "nosuchlab")
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), `lab "nosuchlab" is not up`) {
		t.Errorf("lab down --name nosuchlab: %v (exit %d)", err, exitCode(err))
	}
}

// TestDryRunRefusesWhatTheLabWould: a dry run of a lab refuses what
// building it would (a congestion control the kernel lacks; delay on a
// kernel without netem), as the real run does.
func TestDryRunRefusesWhatTheLabWould(t *testing.T) {
	testutil.RequireRoot(t, "a dry run plans the lab only as root")
	if _, err := v6lab(t, "run", "--congestion", "nosuchcc", "--dry-run"); exitCode(err) != 2 || !strings.Contains(err.Error(), `congestion control "nosuchcc" is not available`) {
		t.Errorf("--congestion nosuchcc: %v", err)
	}
	_, err := v6lab(t, "run", "--delay", "5ms", "--dry-run")
	if netem := lab.HasNetem(); (netem == nil) != (err == nil) || (err != nil && !errors.Is(err, lab.ErrNoNetem)) {
		t.Errorf("--delay 5ms: %v (the kernel's netem: %v)", err, netem)
	}
	// Trial: --tunnel sit on a kernel without sit planned a run that
	// failed when it built the lab; lab up likewise.
	sit := lab.HasSit()
	for _, args := range [][]string{{"run", "quick", "--tunnel", "sit", "--dry-run"}, {"lab", "up", "--tunnel", "sit", "--name", fmt.Sprintf("nosit%d", os.Getpid()%100000)}} {
		if sit == nil && args[0] == "lab" {
			continue // it would build a lab
		}
		_, err = v6lab(t, args...)
		if (sit == nil) != (err == nil) || (err != nil && (exitCode(err) != 2 || !errors.Is(err, lab.ErrNoSit) || !strings.Contains(err.Error(), "tunnel sit (--tunnel, or a topology's tunnel.implementation): "))) {
			t.Errorf("%s: %v (exit %d; the kernel's sit: %v)", strings.Join(args, " "), err, exitCode(err), sit)
		}
	}
}

// TestDryRunListsTheServersItStarts: a dry run says which servers the run
// would start, embedded and real.
func TestDryRunListsTheServersItStarts(t *testing.T) {
	out, err := v6lab(t, "run", "--dry-run", "--loopback")
	if err != nil || !strings.Contains(out, "servers the run starts: embedded http, dns") {
		t.Errorf("%v\n%s", err, out)
	}
	testutil.RequireRoot(t, "real servers run in the lab, which a dry run plans only as root")
	out, err = v6lab(t, "run", "mitre2004", "--server", "real", "--dry-run")
	if err != nil || !strings.Contains(out, "servers the run starts: real nginx (http), unbound (dns), proftpd (ftp), postfix (smtp), dovecot (imap)") {
		t.Errorf("%v\n%s", err, out)
	}
}
