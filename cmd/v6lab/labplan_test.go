package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnUnshapedGroupBesideALinkRateHasNoConditions (trial11 M3, L4): in a
// lab run with a link_rate group, the group without conditions of its own
// records none (its links unshaped, as the header says), so report.txt
// has no conditions line of six "noqueue"s for it and the dry run's lines
// are the report's; the dry run names the tunnel auto takes on this
// kernel, the one the result's header names.
func TestAnUnshapedGroupBesideALinkRateHasNoConditions(t *testing.T) {
	bin, file := labFile(t, "rate.yaml", `name: rate
paths: [ipv4, 6in4]
runs: 1
warmup: 0
pause: 100ms
cells:
  - {protocol: http, conns: [1]}
  - {protocol: http, label: slow, conns: [1], link_rate: 10M}
`)
	dir, f, s, out, err := runLoaded(t, bin, "run", file)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, r := range f.Runs {
		for end, q := range r.Links {
			if r.Protocol != "slow" || q != "tbf 10.0 Mbit/s" {
				t.Errorf("run %s/%d links %s: %q, want only slow's tbf 10.0 Mbit/s", r.Cell, r.Run, end, q)
			}
		}
		if r.Protocol == "slow" && len(r.Links) != 6 {
			t.Errorf("run %s/%d: %d link ends recorded, want 6: %v", r.Cell, r.Run, len(r.Links), r.Links)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	txt := string(b)
	if err != nil || strings.Contains(txt, "noqueue") || strings.Contains(txt, "\nHTTP conditions") || !strings.Contains(txt, "\nSLOW conditions (as its runs recorded them): client-r1 client: tbf 10.0 Mbit/s;") {
		t.Errorf("report.txt (%v): want SLOW's conditions line alone, no noqueue:\n%s", err, txt)
	}
	dryRunSaysConditions(t, txt, 1, bin, "run", file)
	dry, err := exec.Command(bin, "run", file, "--dry-run").CombinedOutput()
	want := "6in4 tunnel: auto (" + s.Lab["tunnel"] + " on this kernel), MTU " + s.Lab["tunnel_mtu"] + "\n"
	if err != nil || s.Lab["tunnel"] == "" || !strings.Contains(string(dry), want) {
		t.Errorf("dry run (%v) does not say %q:\n%s", err, want, dry)
	}
}
