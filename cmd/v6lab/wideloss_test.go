package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLabWideLossIsEachCellsCondition: `run FILE --loss 3` (the lab's
// loss on every link, tc BPF here) is recorded as each cell's condition,
// as a cell's own loss: is: every counted run's record says what it
// dropped, every cell of summary.json its loss, results.csv's loss
// columns and report.txt's "dropped by loss" row are filled (trial9 N1:
// every row read as clean).
func TestLabWideLossIsEachCellsCondition(t *testing.T) {
	bin, file := labFile(t, "wide.yaml", `name: wide
paths: [ipv4, ipv6]
runs: 2
warmup: 1
pause: 100ms
cells:
  - protocol: http
    conns: [3]
`)
	dir, f, s, out, err := runLoaded(t, bin, "run", file, "--loss", "3")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if dns := f.Header.Servers["dns"]; strings.Contains(dns, "view") {
		t.Errorf("a run over ipv4 and ipv6 describes the dns server with views: %q", dns)
	}
	rec := regexp.MustCompile(`^loss 3% \(tc BPF\): \d+ packets? dropped in the run$`)
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
		if !regexp.MustCompile(`,loss 3% on every link,\d+,`).MatchString(row) {
			t.Errorf("results.csv row reads as clean: %s", row)
		}
	}
	txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil || !strings.Contains(string(txt), "dropped by loss") {
		t.Errorf("report.txt has no dropped by loss row: %v", err)
	}
	dryRunSaysConditions(t, string(txt), 1, bin, "run", file, "--loss", "3")
}

// dryRunSaysConditions: `--dry-run` of the command that wrote txt (a
// report.txt) prints the lab's links and, for each of want cell groups,
// its conditions line as the run's report says it (leftovers4: a lab dry
// run said no word of its loss or links).
func dryRunSaysConditions(t *testing.T, txt string, want int, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, append(args, "--dry-run")...).CombinedOutput()
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	links := regexp.MustCompile(`(?m)^links: .*$`).FindString(txt)
	if links == "" || !strings.Contains(string(out), "\nlab "+links+"\n") {
		t.Errorf("dry run does not say the header's %q:\n%s", links, out)
	}
	lines := regexp.MustCompile(`(?m)^(.+) conditions \(as its runs will record them\): (.+)$`).FindAllStringSubmatch(string(out), -1)
	for _, l := range lines {
		if said := l[1] + " conditions (as its runs recorded them): " + l[2]; !strings.Contains(txt, said+"\n") {
			t.Errorf("dry run's %q is not the report's:\n%s", l[0], txt)
		}
	}
	if len(lines) != want {
		t.Errorf("dry run says %d groups' conditions, want %d:\n%s", len(lines), want, out)
	}
}

// TestATopologysLossIsRecordedWhereItIs (trial10 T11, T13): a topology's
// loss on r1-r2 alone is recorded as r1-r2's, never as every link's, and a
// cell group's own loss: beside it (the same link, its own programs) is
// counted apart: each cell's loss counts its runs, not its runs' loss
// records, and each loss's drops; report.txt has a row per loss.
func TestATopologysLossIsRecordedWhereItIs(t *testing.T) {
	bin, file := labFile(t, "exp.yaml", `name: topoloss
paths: [ipv4, ipv6]
runs: 2
warmup: 1
pause: 100ms
cells:
  - {protocol: http, conns: [3]}
  - {protocol: http, label: lossy, conns: [3], loss: 3}
`)
	topo := filepath.Join(filepath.Dir(file), "topo.yaml")
	os.WriteFile(topo, []byte("links: {r1-r2: {loss: 5%}}\n"), 0o644)
	dir, f, s, out, err := runLoaded(t, bin, "run", file, "--topology", topo)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	lab := regexp.MustCompile(`^loss 5% \(tc BPF\): \d+ packets? dropped in the run$`)
	own := regexp.MustCompile(`^loss 3% \(tc BPF\): \d+ packets? dropped in the run$`)
	counted := map[string]int{}
	for _, r := range f.Runs {
		if _, ok := r.Links["every link end's egress (the lab's loss)"]; ok {
			t.Errorf("run %s/%d links %v: r1-r2's loss recorded as every link's", r.Cell, r.Run, r.Links)
		}
		if l := r.Links["r1-r2 egress, both ends (the lab's loss)"]; !lab.MatchString(l) {
			t.Errorf("run %s/%d links %v: no record of r1-r2's loss", r.Cell, r.Run, r.Links)
		}
		if l, ok := r.Links["r1-r2 egress, both ends"]; ok != (r.Protocol == "lossy") || ok && !own.MatchString(l) {
			t.Errorf("run %s/%d links %v: the cell's own loss", r.Cell, r.Run, r.Links)
		}
		if !r.Warmup && r.Err == "" {
			counted[r.Protocol+"/"+r.Path]++
		}
	}
	for _, c := range s.Cells {
		want := []string{"loss 5%/r1-r2"}
		if c.Protocol == "lossy" {
			want = []string{"loss 3%/r1-r2", "loss 5%/r1-r2"}
		}
		var got []string
		var sum int64
		for _, p := range c.Loss.Each {
			got, sum = append(got, p.Condition+"/"+p.Where), sum+p.Dropped
		}
		if n := counted[c.Protocol+"/"+c.Path]; c.Loss.Runs != n || n == 0 || strings.Join(got, " ") != strings.Join(want, " ") || sum != c.Loss.Dropped {
			t.Errorf("cell %s/%s loss %+v, want %v over its %d counted runs", c.Protocol, c.Path, c.Loss, want, n)
		}
	}
	txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	for _, want := range []string{"dropped by loss 3% on r1-r2", "dropped by loss 5% on r1-r2", "r1-r2 egress, both ends (the lab's loss): loss 5% (tc BPF)"} {
		if err != nil || !strings.Contains(string(txt), want) {
			t.Errorf("report.txt lacks %q (%v):\n%s", want, err, txt)
		}
	}
	dryRunSaysConditions(t, string(txt), 2, bin, "run", file, "--topology", topo)
}

// TestSettlingAtTheLabsLossGoesOn: a lab run at a loss no transaction
// gets through (--loss 90 on every link) is not ended by settling (trial10
// T2: --loss 30 died there, exit 1, "does not work in the lab", nothing
// kept): its runs go on and record their failures, the result is kept,
// report.txt's notes say settling failed at that loss and what each try
// was given, and the exit status is that of every transaction of a cell
// failing (1).
func TestSettlingAtTheLabsLossGoesOn(t *testing.T) {
	bin, file := labFile(t, "lossy.yaml", `name: lossy
paths: [ipv4]
runs: 2
warmup: 1
pause: 100ms
timeout: 1s
cells:
  - protocol: http
    conns: [1]
`)
	dir, _, _, out, err := runLoaded(t, bin, "run", file, "--loss", "90")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "every counted transaction of http/ipv4/1 failed") ||
		strings.Contains(out, "does not work in the lab") {
		t.Fatalf("run --loss 90: %v, want exit 1 for the cell's failed transactions\n%s", err, out)
	}
	txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	want := "settling: http over path ipv4 completed no transaction in 3 tries at the lab's loss 90% on every link: "
	floor := "(settling gives a try at least 5s, over the cell's timeout 1s); left to its runs, which record their failures"
	if err != nil || !strings.Contains(string(txt), want) || !strings.Contains(string(txt), floor) {
		t.Errorf("report.txt: %v; no note %q … %q\n%s", err, want, floor, txt)
	}
}
