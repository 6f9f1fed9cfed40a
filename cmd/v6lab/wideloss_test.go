package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"v6lab/internal/report"
)

// TestLabWideLossIsEachCellsCondition: `run FILE --loss 3` (the lab's
// loss on every link, tc BPF here) is recorded as each cell's condition,
// as a cell's own loss: is: every counted run's record says what it
// dropped, every cell of summary.json its loss, results.csv's loss
// columns and report.txt's "dropped by loss" row are filled (trial9 N1:
// every row read as clean).
func TestLabWideLossIsEachCellsCondition(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	root := t.TempDir()
	file := filepath.Join(t.TempDir(), "wide.yaml")
	os.WriteFile(file, []byte(`name: wide
paths: [ipv4, ipv6]
runs: 2
warmup: 1
pause: 100ms
cells:
  - protocol: http
    conns: [3]
`), 0o644)
	out, err := exec.Command(bin, "run", file, "--loss", "3", "-q", "--results", root).CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	dir := onlyDir(t, root)
	f, s, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec := regexp.MustCompile(`^loss 3% \(tc BPF\): \d+ packets dropped in the run$`)
	for _, r := range f.Runs {
		if l := r.Links["every link end's egress (the lab's loss)"]; !rec.MatchString(l) {
			t.Errorf("run %s/%d links %v: no record of the lab's loss", r.Cell, r.Run, r.Links)
		}
	}
	counted := map[string]int{}
	for _, r := range f.Runs {
		if !r.Warmup && r.Err == "" {
			counted[r.Path]++
		}
	}
	for _, c := range s.Cells {
		if c.Loss == nil || c.Loss.Condition != "loss 3%" || c.Loss.Runs != counted[c.Path] || c.Loss.Runs == 0 {
			t.Errorf("cell %s/%s/%d loss %+v, want loss 3%% over its %d counted runs", c.Protocol, c.Path, c.Conns, c.Loss, counted[c.Path])
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(csv)), "\n")
	for _, row := range rows[1:] {
		if !regexp.MustCompile(`,loss 3%,\d+$`).MatchString(row) {
			t.Errorf("results.csv row reads as clean: %s", row)
		}
	}
	txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil || !strings.Contains(string(txt), "dropped by loss") {
		t.Errorf("report.txt has no dropped by loss row: %v", err)
	}
}
