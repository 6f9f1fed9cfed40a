package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHTTPVersionsOnEveryPathInTheLab: a cell of http_version [2, 3] over
// ipv4, ipv6, 6in4 (a tunnel of MTU 1280: QUIC's first packets fit) and
// nat64, clean and at 5% loss between the routers (every path's packets
// dropped, 6in4's encapsulated ones too): every run proven on the
// wire (HTTP/3's as UDP alone), the protocol spoken in every sample and in
// summary.json, every clean transaction complete, the lossy ones counted.
func TestHTTPVersionsOnEveryPathInTheLab(t *testing.T) {
	bin, file := labFile(t, "versions.yaml", `name: versions
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
`)
	dir, f, s, out, runErr := runLoaded(t, bin, "run", file, "--tunnel-mtu", "1280", "--strict")
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
	txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil || !strings.Contains(string(txt), "HTTP versions side by side") {
		t.Errorf("report.txt has no versions table: %v", err)
	}
}

// TestKeptQUICConnectionsOfOtherPathsAreStray is trial8 F0: with HTTP/3
// and keepalive, each path's users keep their QUIC connections across
// runs, and the runs of the paths interleave; the kept connections' idle
// datagrams (quic-go's path MTU probes, ACKs) land in other paths' runs.
// They are counted apart as stray: every run, warm-ups too, is proven on
// its path and none is left out (--strict would exit 3).
func TestKeptQUICConnectionsOfOtherPathsAreStray(t *testing.T) {
	bin, file := labFile(t, "h3ka.yaml", `name: h3ka
paths: [ipv4, ipv6, 6in4, nat64]
runs: 4
warmup: 1
timeout: 10s
cells:
  - protocol: http
    http_version: 3
    conns: [10]
    keepalive: true
`)
	_, f, s, out, runErr := runLoaded(t, bin, "run", file, "--strict")
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
