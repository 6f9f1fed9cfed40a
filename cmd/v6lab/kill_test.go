package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"v6lab/internal/lab"
	"v6lab/internal/report"
	"v6lab/internal/result"
)

// waitRuns waits until the samples file under root holds n finished runs
// and returns the result directory and the lab's name from its header.
func waitRuns(t *testing.T, root string, n int) (string, string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		dirs, _ := filepath.Glob(filepath.Join(root, "*", report.SamplesFile))
		if len(dirs) != 1 {
			continue
		}
		f, err := os.Open(dirs[0])
		if err != nil {
			continue
		}
		runs, name := 0, ""
		text, err := result.Decompress(f) // a frame still open reads up to it
		if err != nil {
			f.Close()
			continue
		}
		sc := bufio.NewScanner(text)
		sc.Buffer(nil, result.MaxLine)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, `"kind":"run"`) {
				runs++
			}
			if strings.Contains(line, `"kind":"header"`) {
				if i := strings.Index(line, `"name":"run`); i >= 0 {
					name = strings.SplitN(line[i+8:], `"`, 2)[0]
				}
			}
		}
		f.Close()
		if runs >= n && name != "" {
			return filepath.Dir(dirs[0]), name
		}
	}
	t.Fatal("the run never finished enough runs")
	return "", ""
}

// TestAKilledRunLeavesNothingItCannotFindAndLosesNothing: kill -9 of a
// lab run's owner process leaves its lab, which lab status --all lists as
// an orphan, a plain lab down names, and lab down --name removes whole;
// every finished run is on disk and --resume completes the experiment.
func TestAKilledRunLeavesNothingItCannotFindAndLosesNothing(t *testing.T) {
	bin, exp := labFile(t, "k.yaml", "name: killed\nwhere: lab\nruns: 12\nwarmup: 1\npause: 100ms\ncells:\n  - {protocol: http, conns: [1]}\n  - {protocol: ftp, conns: [1]}\n")
	root := t.TempDir()
	run := exec.Command(bin, "run", exp, "-q", "--results", root)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	dir, name := waitRuns(t, root, 4)
	run.Process.Signal(syscall.SIGKILL)
	run.Wait()
	t.Cleanup(func() { exec.Command(bin, "lab", "down", "--name", name).Run() })
	rec, err := lab.ReadRecord(name)
	if err != nil || len(rec.Namespaces) != 4 || len(rec.Daemons) == 0 || len(rec.Dirs) == 0 {
		t.Fatalf("owner record of %s: %+v, %v", name, rec, err)
	}
	running := map[int]bool{}
	for _, d := range rec.Daemons {
		running[d.PID] = d.Running()
	}
	out, _ := exec.Command(bin, "lab", "status", "--all").CombinedOutput()
	if !strings.Contains(string(out), `lab "`+name+`": orphan (owner process`) || !strings.Contains(string(out), "daemon: v6lab serve ftp") ||
		!strings.Contains(string(out), "daemon: v6lab run --lab-child (measuring)") {
		t.Errorf("lab status --all:\n%s", out)
	}
	// Each daemon is said to run or to have exited as it does (servers go
	// with their owner; the measuring process after its last run): checked
	// where its state was the same before and after the listing.
	for _, d := range rec.Daemons {
		line := fmt.Sprintf("daemon: %s (pid %d)", d.What, d.PID)
		if !d.Running() {
			line = fmt.Sprintf("daemon: %s (pid %d, exited)", d.What, d.PID)
		}
		if before := running[d.PID]; before == d.Running() && !strings.Contains(string(out), line) {
			t.Errorf("lab status --all does not say %q:\n%s", line, out)
		}
	}
	if out, err := exec.Command(bin, "lab", "status").CombinedOutput(); err != nil || !strings.Contains(string(out), "without an owner process are not shown: v6lab lab status --all") {
		t.Errorf("lab status: %v\n%s", err, out)
	}
	// A plain lab down (the default lab is not up) names the orphan.
	if out, err := exec.Command(bin, "lab", "down").CombinedOutput(); err == nil || !strings.Contains(string(out), name) {
		t.Errorf("plain lab down: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "lab", "down", "--name", name).CombinedOutput(); err != nil {
		t.Fatalf("lab down --name %s: %v\n%s", name, err, out)
	}
	if left, _ := lab.Namespaces(lab.NS(name, "")); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
	for _, d := range rec.Daemons {
		if st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(d.PID), "stat")); err == nil && !strings.Contains(string(st), ") Z ") {
			t.Errorf("%s (pid %d) still runs: %s", d.What, d.PID, st)
		}
	}
	for _, d := range rec.Dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("directory %s left", d)
		}
	}
	// Nothing finished is lost: the resume completes every run.
	if out, err := exec.Command(bin, "run", "--resume", dir, "-q").CombinedOutput(); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	_, s, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Cells {
		if len(c.Runs) != 11 || c.Failed != 0 {
			t.Errorf("%s/%s after resume: %d counted runs, %d failed", c.Protocol, c.Path, len(c.Runs), c.Failed)
		}
	}
}

// TestInterruptSaysInterruptedOnly: Ctrl-C during a lab run says that it
// was interrupted and where the finished runs are, and nothing about a
// failed measurement.
func TestInterruptSaysInterruptedOnly(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	root := t.TempDir()
	run := exec.Command(bin, "run", "--conns", "1", "--runs", "40", "--pause", "100ms", "--results", root)
	var out strings.Builder
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, root, 3)
	run.Process.Signal(os.Interrupt)
	err := run.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Errorf("exit %v, want 130", err)
	}
	msg := out.String()
	if !strings.Contains(msg, "interrupted: every finished run is kept in") || strings.Contains(msg, "measurement in the lab failed") || strings.Contains(msg, "did not start") {
		t.Errorf("output:\n%s", msg)
	}
}

// TestAKilledMeasuringProcessIsSaid (trial10 T5): kill -9 of a lab run's
// measuring process (run --lab-child) ends the run with status 1, a word
// of what happened (the signal), the reports of what it kept and the
// partial line with its resume command; the lab is removed.
func TestAKilledMeasuringProcessIsSaid(t *testing.T) {
	bin, exp := labFile(t, "kc.yaml", "name: killchild\nwhere: lab\nruns: 60\nwarmup: 1\npause: 100ms\ncells:\n  - {protocol: http, conns: [1], paths: [ipv4, ipv6]}\n")
	root := t.TempDir()
	run := exec.Command(bin, "run", exp, "--results", root)
	var out strings.Builder
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	dir, name := waitRuns(t, root, 3)
	t.Cleanup(func() { exec.Command(bin, "lab", "down", "--name", name).Run() })
	rec, err := lab.ReadRecord(name)
	if err != nil {
		t.Fatal(err)
	}
	child := 0
	for _, d := range rec.Daemons {
		if strings.Contains(d.What, "--lab-child") {
			child = d.PID
		}
	}
	if child == 0 {
		t.Fatalf("no measuring process in the lab's record: %+v", rec.Daemons)
	}
	syscall.Kill(child, syscall.SIGKILL)
	err = run.Wait()
	msg := out.String()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want 1\n%s", err, msg)
	}
	want := fmt.Sprintf("v6lab: the measuring process (v6lab run --lab-child, pid %d) was killed by signal 9 (SIGKILL); every finished run is kept in %s: partial: ", child, dir)
	if !strings.Contains(msg, want) || !strings.Contains(msg, "resume with `v6lab run --resume "+dir+"`") || !strings.Contains(msg, "results: "+dir+" (") {
		t.Errorf("output does not say %q and how to resume:\n%s", want, msg)
	}
	s, err := report.Open(dir)
	if err != nil || s.Partial == nil || s.Partial.Writing || s.Partial.RunsDone < 3 {
		t.Fatalf("the result after the kill: %v, partial %+v", err, s.Partial)
	}
	if _, err := os.Stat(filepath.Join(dir, report.TextFile)); err != nil {
		t.Errorf("no report.txt: %v", err)
	}
	if left, _ := lab.Namespaces(lab.NS(name, "")); len(left) != 0 {
		t.Errorf("the lab is left: %v", left)
	}
}

// TestAKeptLabKeepsItsTunnel: run --keep leaves the lab up after the run's
// process exits, and its bpf tunnel with it (cls_bpf filters live with the
// namespaces; TCX links would have closed with the process); lab down
// removes it.
func TestAKeptLabKeepsItsTunnel(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	root := t.TempDir()
	out, err := exec.Command(bin, "run", "--conns", "1", "--runs", "2", "--warmup", "0", "--pause", "0", "--tunnel", "bpf", "--keep", "-q", "--results", root).CombinedOutput()
	if err != nil {
		t.Fatalf("run --keep: %v\n%s", err, out)
	}
	f, _, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	name := f.Header.Lab["name"]
	t.Cleanup(func() { exec.Command(bin, "lab", "down", "--name", name).Run() })
	st, err := exec.Command(bin, "lab", "status", "--name", name).CombinedOutput()
	if err != nil || !strings.Contains(string(st), "tunnel bpf") || !strings.Contains(string(st), "egress (clsact): 6in4 encap") {
		t.Fatalf("status of the kept lab %s: %v\n%s", name, err, st)
	}
	if out, err := exec.Command(bin, "lab", "down", "--name", name).CombinedOutput(); err != nil {
		t.Fatalf("lab down: %v\n%s", err, out)
	}
	if left, _ := lab.Namespaces(lab.NS(name, "")); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
}

// TestFileTransfersAreEstimatedAtTheLinksRate: a dry run of regensburg at
// --scale 0.01 --rate 10M estimates its file transfers at the link's
// goodput (it said 3 min, and ran 15.6 min; the estimate is now 17 min).
func TestFileTransfersAreEstimatedAtTheLinksRate(t *testing.T) {
	testutil.RequireRoot(t, "a dry run plans the lab only as root")
	out, err := v6lab(t, "run", "regensburg", "--scale", "0.01", "--rate", "10M", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(out, "estimated time about ")
	if i < 0 {
		t.Fatalf("no estimate:\n%s", out)
	}
	est, err := time.ParseDuration(strings.Fields(out[i+len("estimated time about "):])[0])
	if err != nil || est < 12*time.Minute || est > 20*time.Minute {
		t.Errorf("estimate %v (%v), measured about 15.6 min", est, err)
	}
}

// TestAKilledBPFLabSaysWhatItLost: lab status of a lab whose owner was
// killed names the bpf tunnel its owner took with it (TCX links close with
// the process), not a userspace tunnel it never had.
func TestAKilledBPFLabSaysWhatItLost(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	name := fmt.Sprintf("kb%d", os.Getpid()%10000)
	if out, err := exec.Command(bin, "lab", "up", "--name", name, "--tunnel", "bpf").CombinedOutput(); err != nil {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(bin, "lab", "down", "--name", name).Run() })
	pid := lab.Owner(name)
	if pid <= 0 {
		t.Fatalf("lab %s has no owner process after lab up", name)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 50 && lab.Owner(name) != 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	// The kernel lets go of a killed process's TCX links a moment after
	// it is gone (its files are released late): ask again for a while.
	var st []byte
	for i := 0; i < 50; i++ {
		st, _ = exec.Command(bin, "lab", "status", "--all").CombinedOutput()
		if strings.Contains(string(st), "the bpf tunnel's programs ended with their owner") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(string(st), "the bpf tunnel's programs ended with their owner") || strings.Contains(string(st), "a userspace tunnel is down") {
		t.Errorf("status after the owner's kill:\n%s", st)
	}
}
