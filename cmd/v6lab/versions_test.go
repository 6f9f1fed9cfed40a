package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/report"
)

// TestHTTPVersionsOnEveryPathInTheLab: a cell of http_version [2, 3] over
// ipv4, ipv6, 6in4 (a tunnel of MTU 1280: QUIC's first packets fit) and
// nat64, clean and at 5% loss between the routers (every path's packets
// dropped, 6in4's encapsulated ones too): every run proven on the
// wire (HTTP/3's as UDP alone), the protocol spoken in every sample and in
// summary.json, every clean transaction complete, the lossy ones counted.
func TestHTTPVersionsOnEveryPathInTheLab(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	root := t.TempDir()
	file := filepath.Join(t.TempDir(), "versions.yaml")
	os.WriteFile(file, []byte(`name: versions
paths: [ipv4, ipv6, 6in4, nat64]
runs: 3
warmup: 1
pause: 100ms
cells:
  - protocol: http
    http_version: [2, 3]
    conns: [1, 10]
  - protocol: http
    label: lossy
    http_version: [2, 3]
    loss: 5
    conns: [10]
`), 0o644)
	out, runErr := exec.Command(bin, "run", file, "--tunnel-mtu", "1280", "--strict", "-q", "--results", root).CombinedOutput()
	f, s, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatalf("run: %v\n%s\n%v", runErr, out, err)
	}
	if runErr != nil {
		for _, r := range f.Runs {
			if r.Err != "" {
				t.Errorf("run %s/%d: %s", r.Cell, r.Run, r.Err)
			}
		}
		t.Fatalf("run: %v\n%s", runErr, out)
	}
	if f.Header.Lab["tunnel_mtu"] != "1280" {
		t.Errorf("tunnel MTU %q", f.Header.Lab["tunnel_mtu"])
	}
	want := map[string]string{"http/2": "h2", "http/3": "h3", "lossy/2": "h2", "lossy/3": "h3"}
	for _, smp := range f.Samples {
		if smp.OK() && smp.Negotiated != want[smp.Protocol] {
			t.Fatalf("%s/%s: spoke %q", smp.Protocol, smp.Path, smp.Negotiated)
		}
	}
	for _, r := range f.Runs {
		if r.Wire == nil || r.Err != "" {
			t.Fatalf("run %s/%d: wire %v err %q", r.Cell, r.Run, r.Wire, r.Err)
		}
		// Every path loses its packets, 6in4's encapsulated ones too (a
		// run carries hundreds of packets: none dropped at 5% is a loss
		// program that never saw them).
		if l := r.Links["r1-r2 egress, both ends"]; strings.HasPrefix(r.Cell, "lossy") &&
			(!strings.Contains(l, "loss 5%") || strings.Contains(l, ": 0 packets dropped")) {
			t.Errorf("run %s/%d links %v", r.Cell, r.Run, r.Links)
		}
	}
	cells := 0
	for _, c := range s.Cells {
		cells++
		if c.Negotiated[want[c.Protocol]] != c.Completed || c.Completed == 0 {
			t.Errorf("%s/%s/%d: %d completed, spoke %v", c.Protocol, c.Path, c.Conns, c.Completed, c.Negotiated)
		}
		if !strings.HasPrefix(c.Protocol, "lossy") && c.Failed != 0 {
			t.Errorf("%s/%s/%d: %d failed (%s)", c.Protocol, c.Path, c.Conns, c.Failed, c.FirstError)
		}
		if c.Metrics["handshake_ms"] == nil || c.Metrics["ttfb_ms"] == nil {
			t.Errorf("%s/%s/%d: no handshake or first byte: %v", c.Protocol, c.Path, c.Conns, c.Metrics)
		}
	}
	if cells != 2*4*2+2*4 || s.HTTPVersions["http/3"] != "3" {
		t.Errorf("%d cells, versions %v", cells, s.HTTPVersions)
	}
	txt, err := os.ReadFile(filepath.Join(onlyDir(t, root), "report.txt"))
	if err != nil || !strings.Contains(string(txt), "HTTP versions side by side") {
		t.Errorf("report.txt has no versions table: %v", err)
	}
}
