package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"v6lab/internal/lab"
)

// TestAnEarlyInterruptStopsTheRun (trial12 M1): Ctrl-C while the lab is
// being built, or as the measuring process starts, stops the run with
// status 130 and "interrupted", the lab removed; it used to kill the
// owner process (its lab left behind) or the measuring one ("killed by
// signal 2", status 1), or, where SIGINT was ignored until then, be lost.
func TestAnEarlyInterruptStopsTheRun(t *testing.T) {
	bin, exp := labFile(t, "early.yaml", "name: early\nwhere: lab\nruns: 3\nwarmup: 1\ncells:\n  - {protocol: dns, conns: [1], paths: [ipv4, ipv6], duration: 2s}\n")
	for _, at := range []string{"owner", "measuring"} {
		t.Run(at, func(t *testing.T) {
			run := exec.Command(bin, "run", exp, "--results", t.TempDir())
			var out strings.Builder
			run.Stdout, run.Stderr = &out, &out
			if err := run.Start(); err != nil {
				t.Fatal(err)
			}
			name, pid := labOf(t, run.Process.Pid, at == "measuring")
			t.Cleanup(func() { exec.Command(bin, "lab", "down", "--name", name).Run() })
			syscall.Kill(pid, syscall.SIGINT)
			err := run.Wait()
			msg := out.String()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
				t.Errorf("exit %v, want 130\n%s", err, msg)
			}
			if !strings.Contains(msg, "v6lab: interrupted") || strings.Contains(msg, "killed by") {
				t.Errorf("output:\n%s", msg)
			}
			if left, _ := lab.Namespaces(lab.NS(name, "")); len(left) != 0 {
				t.Errorf("the lab is left: %v", left)
			}
		})
	}
}

// labOf waits for the lab whose owner is the process owner and returns
// its name and the pid to interrupt: the owner's, or, with child, the
// measuring process's as soon as it is recorded.
func labOf(t *testing.T, owner int, child bool) (string, int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		names, _ := lab.Names()
		for _, n := range names {
			rec, err := lab.ReadRecord(n)
			if err != nil || rec.PID != owner {
				continue
			}
			if !child {
				return n, owner
			}
			for _, d := range rec.Daemons {
				if strings.Contains(d.What, "--lab-child") {
					return n, d.PID
				}
			}
		}
	}
	t.Fatal("the run's lab or measuring process never appeared")
	return "", 0
}
