package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/report"
)

// TestKeptQUICConnectionsOfOtherPathsAreStray is trial8 F0: with HTTP/3
// and keepalive, each path's users keep their QUIC connections across
// runs, and the runs of the paths interleave; the kept connections' idle
// datagrams (quic-go's path MTU probes, ACKs) land in other paths' runs.
// They are counted apart as stray: every run, warm-ups too, is proven on
// its path and none is left out (--strict would exit 3).
func TestKeptQUICConnectionsOfOtherPathsAreStray(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	root := t.TempDir()
	file := filepath.Join(t.TempDir(), "h3ka.yaml")
	os.WriteFile(file, []byte(`name: h3ka
paths: [ipv4, ipv6, 6in4, nat64]
runs: 4
warmup: 1
timeout: 10s
cells:
  - protocol: http
    http_version: 3
    conns: [10]
    keepalive: true
`), 0o644)
	out, runErr := exec.Command(bin, "run", file, "--strict", "-q", "--results", root).CombinedOutput()
	f, s, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatalf("run: %v\n%s\n%v", runErr, out, err)
	}
	if len(f.Runs) == 0 {
		t.Fatalf("run: no run recorded: %v\n%s", runErr, out)
	}
	var strays uint64
	runs := map[string]int{}
	first := f.Runs[0]
	for _, r := range f.Runs {
		if r.Seq < first.Seq {
			first = r
		}
		if r.Wire == nil || r.Err != "" {
			t.Errorf("run %s/%d: wire %+v err %q", r.Cell, r.Run, r.Wire, r.Err)
			continue
		}
		strays += r.Wire.Stray
		runs[r.Path]++
	}
	if runErr != nil {
		t.Fatalf("run: %v\n%s", runErr, out)
	}
	for _, p := range []string{"ipv4", "ipv6", "6in4", "nat64"} {
		if runs[p] != 4 {
			t.Errorf("path %s: %d runs proven, want 4 (a warm-up and 3 counted)", p, runs[p])
		}
	}
	// The first run follows only settling: its connections are closed
	// when settling ends, so nothing of theirs is stray in it.
	if first.Wire != nil && first.Wire.Stray != 0 {
		t.Errorf("first run (%s/%d, seq %d): %d stray packets: settling's connections sent into it", first.Cell, first.Run, first.Seq, first.Wire.Stray)
	}
	if strays == 0 {
		t.Error("no stray datagram: the kept connections of the other paths sent nothing into any run")
	}
	for _, c := range s.Cells {
		if c.Failed != 0 || c.Completed != 30 {
			t.Errorf("%s/%s/%d: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
	}
	if notes := strings.Join(s.Notes, "\n"); !strings.Contains(notes, "other paths' kept QUIC connections") {
		t.Errorf("no note of the strays:\n%s", notes)
	}
}
