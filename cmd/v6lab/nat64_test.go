package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"v6lab/internal/lab"
	"v6lab/internal/report"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// TestEveryProtocolOverNat64: in the lab, HTTP (and HTTPS), DNS (an
// NXDOMAIN timed too), FTP (EPSV), SMTP,
// IMAP and the TCP and UDP transport tests (1460-byte datagrams, which
// travel in two fragments, either way) all work over the nat64 path,
// compared with ipv4 in the same run: each transaction went from the
// client's IPv6-only address to the server's address under 64:ff9b::/96
// (found through DNS64), the wire between the routers carried only the
// path's translated IPv4 and DNS64 lookups, and r1's link to the client
// only IPv6.
func TestEveryProtocolOverNat64(t *testing.T) {
	_, f, s, out, err := labRun(t, `name: nat64
paths: [ipv4, nat64]
runs: 2
warmup: 0
pause: 0s
cells:
  - {protocol: http, conns: [1, 3]}
  - {protocol: http, tls: true, conns: [1]}
  - {protocol: dns, conns: [1, 3]}
  - {protocol: dns, label: dns-nxdomain, query: nosuch.v6lab.test, expect: nxdomain, conns: [1]}
  - {protocol: dns, label: dns-nodata, query: v4only.v6lab.test, type: AAAA, expect: nodata, conns: [1]}
  - {protocol: ftp, conns: [1, 2], file: /64K}
  - {protocol: smtp, conns: [1, 2]}
  - {protocol: imap, conns: [1, 2]}
  - {protocol: tcp, conns: [1], bytes: 2M}
  - {protocol: udp, conns: [1], rate: 10M, time: 500ms}
  - {protocol: udp, label: udp-reverse, conns: [1], rate: 10M, time: 500ms, reverse: true}
`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if len(s.Cells) != 2*(5*2+6) { // paths × (five protocols at two counts; https, NXDOMAIN, NODATA, tcp and two udp at one)
		t.Fatalf("%d cells", len(s.Cells))
	}
	for _, c := range s.Cells {
		if c.Failed != 0 || c.Completed != 2*c.Conns {
			t.Errorf("%s/%s/%d: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
	}
	// The embedded DNS server's header names the view of the run's paths
	// alone: DNS64 for nat64, not 6in4's, which no cell measured.
	if dns := f.Header.Servers["dns"]; !strings.HasSuffix(dns, ", a DNS64 view on the nat64 path's address in the server namespace") {
		t.Errorf("dns server described %q", dns)
	}
	if !strings.Contains(s.Lab["nat64"], "stateless translator (SIIT, RFC 7915) in tc BPF on r1") {
		t.Errorf("header's lab: %v", s.Lab)
	}
	client, under := netip.MustParsePrefix("2001:db8:64:1::/64"), lab.Nat64Prefix
	nx := 0
	for _, smp := range f.Samples {
		// The IPv4-only name's AAAA is empty over ipv4 and through the
		// translator (a dns cell asks the server, not the DNS64 view).
		if strings.HasPrefix(smp.Cell, "dns-nodata/") && smp.Marker != "NOERROR, 0 AAAA" {
			t.Errorf("%s: marker %q", smp.Cell, smp.Marker)
		}
		if strings.HasPrefix(smp.Cell, "dns-nxdomain/") && smp.Marker != "NXDOMAIN, 0 "+map[string]string{"ipv4": "A", "nat64": "AAAA"}[smp.Path] {
			t.Errorf("%s: marker %q", smp.Cell, smp.Marker)
		} else if strings.HasPrefix(smp.Cell, "dns-nxdomain/") {
			nx++
		}
		if smp.Path != string(path.NAT64) || smp.Remote == "" {
			continue
		}
		local, remote := netip.MustParseAddrPort(smp.Local).Addr(), netip.MustParseAddrPort(smp.Remote).Addr()
		if !client.Contains(local) || !under.Contains(remote) {
			t.Errorf("%s: a nat64 transaction from %v to %v", smp.Cell, local, remote)
		}
		if smp.DNSLocal != "" && !client.Contains(netip.MustParseAddrPort(smp.DNSLocal).Addr()) {
			t.Errorf("%s: its DNS64 lookup left from %s", smp.Cell, smp.DNSLocal)
		}
	}
	if nx != 4 {
		t.Errorf("%d NXDOMAIN answers timed, want 4 (2 runs of each path)", nx)
	}
	for _, r := range f.Runs {
		w, _ := json.Marshal(r.Wire)
		switch {
		case r.Wire == nil || r.Err != "":
			t.Errorf("run %s#%d: wire %s, err %q", r.Cell, r.Run, w, r.Err)
		case r.Path == "nat64" && (r.Wire.NAT64 == 0 || r.Wire.IPv4+r.Wire.IPv6+r.Wire.SixIn4 != 0):
			t.Errorf("nat64 run %s#%d: wire %s", r.Cell, r.Run, w)
		case r.Path == "nat64" && (r.Wire.ClientSide == nil || r.Wire.ClientSide.IPv6 == 0 || r.Wire.ClientSide.IPv4 != 0):
			// The same run on the client's side of r1: IPv6 only.
			t.Errorf("nat64 run %s#%d: client side %s", r.Cell, r.Run, w)
		case r.Path == "ipv4" && r.Wire.NAT64 != 0:
			t.Errorf("ipv4 run %s#%d counted nat64 packets: %s", r.Cell, r.Run, w)
		}
	}
}

// TestNat64TranslatesEchoAndDropsTheUnmapped: ping through the
// translator works from the client's nat64 address; from its native IPv6
// address (no mapping, RFC 7757) it is dropped, and lab status says so.
func TestNat64TranslatesEchoAndDropsTheUnmapped(t *testing.T) {
	requireLab(t)
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("no ping here (iputils-ping)")
	}
	bin := buildBinary(t)
	name := fmt.Sprintf("n%d", os.Getpid()%100000)
	if out, err := exec.Command(bin, "lab", "up", "--name", name).CombinedOutput(); err != nil {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(bin, "lab", "down", "--name", name).Run() })
	to := path.Embed(lab.Nat64Prefix, lab.Plan().Server(path.IPv4)).String()
	ping := func(from string) error {
		return exec.Command("ip", "netns", "exec", lab.NS(name, lab.Client), "ping", "-c", "3", "-i", "0.2", "-W", "1", "-I", from, to).Run()
	}
	if err := ping("2001:db8:64:1::2"); err != nil {
		t.Errorf("ping %s through the translator: %v", to, err)
	}
	if err := ping(lab.Plan().Client(path.IPv6).String()); err == nil {
		t.Error("a ping from an unmapped source was answered")
	}
	out, err := exec.Command(bin, "lab", "status", "--name", name).CombinedOutput()
	if err != nil {
		t.Fatalf("lab status: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`nat64 \(6 to 4\): (\d+) IPv6 to IPv4, (\d+) IPv4 to IPv6, dropped (\d+) unmapped source`).FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("lab status shows no translator:\n%s", out)
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	if n(m[1]) != 3 || n(m[2]) != 3 || n(m[3]) != 3 {
		t.Errorf("translator counters %v, want 3 echo requests out, 3 replies back, 3 unmapped dropped", m[1:])
	}
}

// TestActiveFTPOverNat64FailsAsInTheField: EPRT carries the client's IPv6
// address, which a stateless translator does not rewrite: every such
// transaction fails with the server's refusal, recorded, and the notes
// say why; ipv4 in the same run works.
func TestActiveFTPOverNat64FailsAsInTheField(t *testing.T) {
	_, _, s, out, err := labRun(t, "name: ftpa\npaths: [ipv4, nat64]\nruns: 2\nwarmup: 0\npause: 0s\ntimeout: 5s\ncells:\n  - {protocol: ftp, conns: [1], file: /64K, active: true}\n")
	if err == nil || !strings.Contains(out, "every counted transaction of ftp/nat64/1 failed (first: protocol: ftp: EPRT: the server answered \"501") {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, c := range s.Cells {
		if (c.Path == "ipv4" && c.Completed != 2) || (c.Path == "nat64" && (c.Completed != 0 || c.Failed != 2)) {
			t.Errorf("%s: %d completed, %d failed", c.Path, c.Completed, c.Failed)
		}
	}
	if !strings.Contains(strings.Join(s.Notes, "\n"), "FTP's active mode over nat64 sends the client's IPv6 address in EPRT") {
		t.Errorf("notes: %q", s.Notes)
	}
}

// TestRealServersOverNat64: with --server real, nginx answers over nat64
// and the path's names come from a second Unbound whose own dns64 module
// synthesises the AAAA under 64:ff9b::/96.
func TestRealServersOverNat64(t *testing.T) {
	requireLab(t)
	for _, p := range []string{"nginx", "unbound"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s is not installed (scripts/install-deps installs it)", p)
			}
		}
	}
	_, f, s, out, err := labRun(t, "name: realn64\npaths: [ipv4, nat64]\nservers: real\nruns: 2\nwarmup: 0\npause: 0s\ncells:\n  - {protocol: http, conns: [1, 3]}\n  - {protocol: dns, label: dns-nodata, query: v4only.v6lab.test, type: AAAA, expect: nodata, conns: [1]}\n")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if !strings.Contains(s.Servers["dns64 (real)"], "its dns64 module synthesises AAAA under 64:ff9b::/96") {
		t.Errorf("servers %v", s.Servers)
	}
	for _, c := range s.Cells {
		if c.Failed != 0 || c.Completed != 2*c.Conns {
			t.Errorf("%s/%d: %d completed, %d failed (%s)", c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
	}
	n := 0
	for _, smp := range f.Samples {
		// Unbound knows the IPv4-only name: its AAAA is empty, over ipv4
		// and through the translator.
		if strings.HasPrefix(smp.Cell, "dns-nodata/") && smp.Marker != "NOERROR, 0 AAAA" {
			t.Errorf("%s: marker %q", smp.Cell, smp.Marker)
		}
		if smp.Path == "nat64" && strings.HasPrefix(smp.Cell, "http/") {
			n++
			if !lab.Nat64Prefix.Contains(netip.MustParseAddrPort(smp.Remote).Addr()) {
				t.Errorf("a nat64 transaction went to %s", smp.Remote)
			}
		}
	}
	if n != 8 {
		t.Errorf("%d nat64 samples", n)
	}
}

// labRun writes experiment yaml, runs it in the lab (quietly, as root:
// labFile), and returns the result directory, loaded, with the command's
// output and error (a run may fail on purpose).
func labRun(t *testing.T, yaml string) (string, *result.File, *report.Summary, string, error) {
	t.Helper()
	bin, exp := labFile(t, "exp.yaml", yaml)
	return runLoaded(t, bin, "run", exp)
}
