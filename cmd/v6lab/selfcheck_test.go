package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/report"
	"v6lab/internal/result"
)

// serveHTTP starts `v6lab serve http` on a free loopback port, a process
// of its own, and returns its URL.
func serveHTTP(t *testing.T, bin string, args ...string) string {
	t.Helper()
	serving := startServer(t, 1, append([]string{bin, "serve", "http", "--listen", "127.0.0.1:0"}, args...)...)
	rest, ok := strings.CutPrefix(serving[0], "serving http on ")
	if !ok {
		t.Fatalf("the server said %q", serving[0])
	}
	return "http://" + strings.Fields(rest)[0] + "/"
}

// TestSelfCheckMarksASaturatedClient: a client pinned to one CPU with
// 400 users making new connections as fast as they can is the bottleneck
// of its own run: its cell is marked (summary.json's self_check, a note
// in report.txt naming it and what to do, a dotted ring in the plot). A
// run of one user is not marked as a saturated client.
func TestSelfCheckMarksASaturatedClient(t *testing.T) {
	bin := buildBinary(t)
	url := serveHTTP(t, bin, "--objects", "0")
	root := t.TempDir()
	probe := func(dir string, pin bool, args ...string) *report.Summary {
		t.Helper()
		argv := append([]string{bin, "probe", "http", url, "--paths", "ipv4", "--no-objects", "-q", "--results", filepath.Join(root, dir)}, args...)
		if pin {
			argv = append([]string{"taskset", "-c", "0"}, argv...)
		}
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
		_, s, err := report.Load(onlyDir(t, filepath.Join(root, dir)))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Cells) != 1 || s.Cells[0].SelfCheck == nil || s.Cells[0].SelfCheck.Runs == 0 {
			t.Fatalf("no self-check in %+v", s.Cells)
		}
		return s
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset (util-linux) is missing")
	}

	s := probe("forced", true, "--conns", "400", "--runs", "1", "--warmup", "0", "--duration", "1s")
	sc := s.Cells[0].SelfCheck
	if !sc.ClientSaturated || sc.ClientRuns != 1 || sc.CPUs != 1 {
		t.Fatalf("a client pinned to one CPU with 400 users is not marked: %+v", sc)
	}
	dir := onlyDir(t, filepath.Join(root, "forced"))
	txt, _ := os.ReadFile(filepath.Join(dir, "report.txt"))
	if !strings.Contains(string(txt), "self-check: the client was saturated in http/ipv4/400") || !strings.Contains(string(txt), "--segment") {
		t.Errorf("report.txt does not name the saturated cell and what to do:\n%s", txt)
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(html), `class="dot saturated"`) || !strings.Contains(string(html), "dotted ring: client or host saturated") {
		t.Error("report.html does not draw the saturated cell dotted")
	}

	s = probe("one", false, "--conns", "1", "--runs", "1", "--warmup", "0", "--duration", "1s")
	sc = s.Cells[0].SelfCheck
	// One user never uses the client's CPUs; its replies wait for it only
	// when other work on this machine (other tests) takes the host's CPUs,
	// and then the host is marked too, which is what the client's mark
	// then says (result.Decide).
	if sc.ClientCPU >= result.SaturatedCPU*float64(sc.CPUs) || (sc.ClientSaturated && !sc.HostSaturated) {
		t.Errorf("one user's runs are marked as a saturated client: %+v", sc)
	}
	// The host's mark follows its figure (other work on this machine may
	// keep its CPUs busy; nothing of this test does).
	if sc.HostSaturated != (sc.HostRuns > 0) || (sc.HostRuns == 0 && strings.Contains(strings.Join(s.Notes, " "), "self-check:")) {
		t.Errorf("an unsaturated run has a self-check note: %+v %q", sc, s.Notes)
	}
}
