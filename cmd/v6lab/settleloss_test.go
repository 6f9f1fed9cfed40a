package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSettlingAtTheLabsLossGoesOn: a lab run at a loss no transaction
// gets through (--loss 90 on every link) is not ended by settling (trial10
// T2: --loss 30 died there, exit 1, "does not work in the lab", nothing
// kept): its runs go on and record their failures, the result is kept,
// report.txt's notes say settling failed at that loss and what each try
// was given, and the exit status is that of every transaction of a cell
// failing (1).
func TestSettlingAtTheLabsLossGoesOn(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	root := t.TempDir()
	file := filepath.Join(t.TempDir(), "lossy.yaml")
	os.WriteFile(file, []byte(`name: lossy
paths: [ipv4]
runs: 2
warmup: 1
pause: 100ms
timeout: 1s
cells:
  - protocol: http
    conns: [1]
`), 0o644)
	out, err := exec.Command(bin, "run", file, "--loss", "90", "-q", "--results", root).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "every counted transaction of http/ipv4/1 failed") ||
		strings.Contains(string(out), "does not work in the lab") {
		t.Fatalf("run --loss 90: %v, want exit 1 for the cell's failed transactions\n%s", err, out)
	}
	txt, err := os.ReadFile(filepath.Join(onlyDir(t, root), "report.txt"))
	want := "settling: http over path ipv4 completed no transaction in 3 tries at the lab's loss 90% on every link: "
	floor := "(settling gives a try at least 5s, over the cell's timeout 1s); left to its runs, which record their failures"
	if err != nil || !strings.Contains(string(txt), want) || !strings.Contains(string(txt), floor) {
		t.Errorf("report.txt: %v; no note %q … %q\n%s", err, want, floor, txt)
	}
}
