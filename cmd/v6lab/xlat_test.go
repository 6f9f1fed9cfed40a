package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/lab"
	"v6lab/internal/result"
)

// requireNft skips a test of the stateful NAT64 or the AFTR where
// nftables is missing.
func requireNft(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("no nft here: the stateful NAT64 and the AFTR need nftables (scripts/install-deps --lab)")
	}
}

// statefulLab writes a topology whose NAT64 is stateful, with a pool of
// one address and the ports given, and returns its file.
func statefulLab(t *testing.T, ports string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "lab.yaml")
	if err := os.WriteFile(f, []byte("nat64:\n  mode: stateful\n  pool: 198.18.0.2\n  ports: "+ports+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestEveryProtocolOverXlatAndDSLite: in a lab whose NAT64 is stateful,
// HTTP (1.1, 2 and 3), DNS, FTP (EPSV), SMTP, IMAP and the TCP and UDP transport tests
// (1460-byte datagrams: fragments at the CLAT and the B4, either way) all
// work over 464xlat and dslite beside ipv4, unchanged IPv4 clients: each
// transaction went from RFC 7335's addresses (the CLAT's 192.0.0.4, the
// B4's 192.0.0.2) to the server's own IPv4 address; r1's link to the client
// carried only IPv6 (and IPv4 inside IPv6), and between the routers the
// 464xlat runs were IPv4 from the PLAT's pool, the dslite runs IPv4 inside
// IPv6 only.
func TestEveryProtocolOverXlatAndDSLite(t *testing.T) {
	requireLab(t)
	requireNft(t)
	_, f, s, out, err := labRun(t, `name: xlat
topology: `+statefulLab(t, "1024-65535")+`
paths: [ipv4, 464xlat, dslite]
runs: 2
warmup: 0
pause: 0s
cells:
  - {protocol: http, conns: [1, 3]}
  - {protocol: http, http_version: [2, 3], conns: [1]}
  - {protocol: http, label: http-curl, file: /64K, client: curl, conns: [1]}
  - {protocol: http, label: http-wget, file: /64K, client: wget, conns: [1]}
  - {protocol: dns, conns: [1, 3]}
  - {protocol: ftp, conns: [1, 2], file: /64K}
  - {protocol: smtp, conns: [1, 2]}
  - {protocol: imap, conns: [1, 2]}
  - {protocol: tcp, conns: [1], bytes: 2M}
  - {protocol: udp, conns: [1], rate: 10M, time: 500ms, size: 1460}
  - {protocol: udp, label: udp-reverse, conns: [1], rate: 10M, time: 500ms, size: 1460, reverse: true}
`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if len(s.Cells) != 3*(5*2+7) {
		t.Fatalf("%d cells", len(s.Cells))
	}
	for _, c := range s.Cells {
		if c.Failed != 0 || c.Completed != 2*c.Conns {
			t.Errorf("%s/%s/%d: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
		// HTTP/2 over TLS and HTTP/3 over QUIC (UDP through the CLAT,
		// the PLAT and the softwire) are spoken, not fallen back from.
		if want := map[string]string{"http/2": "h2", "http/3": "h3"}[c.Protocol]; want != "" && c.Negotiated[want] != c.Completed {
			t.Errorf("%s/%s: spoke %v", c.Protocol, c.Path, c.Negotiated)
		}
	}
	if !strings.Contains(s.Lab["464xlat"], "found by PREF64 (RFC 8781)") || !strings.Contains(s.Lab["dslite"], "MTU 1460 inside") ||
		!strings.Contains(s.Lab["nat64"], "stateful NAT64 (RFC 6146)") {
		t.Errorf("header's lab: %v", s.Lab)
	}
	from := map[string]netip.Addr{"464xlat": lab.CLAT4, "dslite": lab.B4v4}
	server := lab.Plan().ServerV4
	for _, smp := range f.Samples {
		src, ok := from[smp.Path]
		if !ok || smp.Local == "" || smp.Remote == "" {
			continue
		}
		if l, r := netip.MustParseAddrPort(smp.Local).Addr(), netip.MustParseAddrPort(smp.Remote).Addr(); l != src || r != server {
			t.Errorf("%s: a %s transaction from %v to %v", smp.Cell, smp.Path, l, r)
		}
	}
	checkXlatWire(t, f.Runs)
}

// checkXlatWire: every run proven; 464xlat's IPv6 on the access link and
// the pool's IPv4 between the routers, dslite's IPv4 in IPv6 on both.
func checkXlatWire(t *testing.T, runs []result.Run) {
	t.Helper()
	for _, r := range runs {
		w, _ := json.Marshal(r.Wire)
		cs := r.Wire.ClientSide
		switch {
		case r.Wire == nil || r.Err != "":
			t.Errorf("run %s#%d: wire %s, err %q", r.Cell, r.Run, w, r.Err)
		case r.Path == "464xlat" && (r.Wire.NAT64 == 0 || r.Wire.IPv4+r.Wire.IPv6+r.Wire.SixIn4+r.Wire.DSLite != 0 ||
			cs == nil || cs.IPv6 == 0 || cs.IPv4+cs.DSLite != 0):
			t.Errorf("464xlat run %s#%d: wire %s", r.Cell, r.Run, w)
		case r.Path == "dslite" && (r.Wire.DSLite == 0 || r.Wire.IPv4+r.Wire.IPv6+r.Wire.SixIn4+r.Wire.NAT64 != 0 ||
			cs == nil || cs.DSLite == 0 || cs.IPv4+cs.IPv6 != 0):
			t.Errorf("dslite run %s#%d: wire %s", r.Cell, r.Run, w)
		case r.Path == "ipv4" && (r.Wire.IPv4 == 0 || r.Wire.NAT64+r.Wire.DSLite != 0):
			t.Errorf("ipv4 run %s#%d: wire %s", r.Cell, r.Run, w)
		}
	}
}

// TestStatefulPoolExhaustionIsNamed: a stateful NAT64 with one address
// and 16 ports, loaded past them by 40 users over nat64 and 464xlat (which
// share it), fails the excess connections, and each failure is named for
// the pool (pool_exhausted, naming the pool and its ports), while one user
// before them completes. The 464xlat users' lookups cross the NAT too, and
// each holds its port for UDP's 5 minutes (RFC 6146 §4): at most 16 of
// them can complete.
func TestStatefulPoolExhaustionIsNamed(t *testing.T) {
	requireLab(t)
	requireNft(t)
	dir, f, s, out, _ := labRun(t, `name: exhaust
topology: `+statefulLab(t, "1024-1039")+`
paths: [nat64, 464xlat]
baseline: nat64
runs: 1
warmup: 0
timeout: 2s
pause: 0s
cells:
  - {protocol: http, conns: [1, 40]}
`)
	completed := map[string]int{}
	for _, c := range s.Cells {
		completed[fmt.Sprintf("%s/%d", c.Path, c.Conns)] = c.Completed
	}
	if completed["nat64/1"] != 1 || completed["464xlat/1"] != 1 || completed["464xlat/40"] > 16 {
		t.Fatalf("completed: %v\n%s", completed, out)
	}
	failed := 0
	for _, smp := range f.Samples {
		if smp.Conns != 40 || smp.OK() {
			continue
		}
		failed++
		if smp.ErrKind != result.ErrPoolExhausted || !strings.Contains(smp.Err, "nat pool exhausted: the PLAT at r1 (pool 198.18.0.2/32, ports 1024-1039) had no free port") {
			t.Errorf("%s: %s: %s", smp.Cell, smp.ErrKind, smp.Err)
		}
	}
	if failed < 24 {
		t.Errorf("%d of 80 loaded transactions failed\n%s", failed, out)
	}
	if rep, err := os.ReadFile(filepath.Join(dir, "report.txt")); err != nil || !strings.Contains(string(rep), "pool_exhausted") {
		t.Errorf("report.txt does not name the failures:\n%s", rep)
	}
}

// TestXlatPathsNeedTheLab: 464xlat and dslite are refused off the lab, and
// bad NAT64 settings name their field.
func TestXlatPathsNeedTheLab(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		f := filepath.Join(dir, name)
		os.WriteFile(f, []byte(body), 0o644)
		return f
	}
	hosts := write("hosts.yaml", "name: h\nwhere: hosts\npaths: [ipv4, dslite]\ncells:\n  - {protocol: http, url: \"http://192.0.2.1/\", conns: [1]}\n")
	lo := write("lo.yaml", "name: l\nwhere: loopback\npaths: [ipv4, 464xlat]\ncells:\n  - {protocol: http, conns: [1]}\n")
	prefix := write("prefix.yaml", "nat64:\n  prefix: 64:ff9b::/64\n")
	pool := write("pool.yaml", "nat64:\n  mode: stateful\n  pool: 2001:db8::1\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--paths", "464xlat"}, "--paths: 464xlat needs the lab (its tunnel or translator), but a probe's host has only ipv4, ipv6 and dual"},
		{[]string{"run", "--loopback", "--paths", "ipv4,dslite", "--dry-run"}, "--paths: dslite needs the lab (its tunnel or translator), but loopback has only ipv4, ipv6 and dual"},
		{[]string{"run", hosts, "--dry-run"}, "hosts.yaml:3: paths[1]: dslite needs the lab (its tunnel or translator), but where: hosts has only ipv4, ipv6 and dual"},
		{[]string{"run", lo, "--dry-run"}, "lo.yaml:3: paths[1]: 464xlat needs the lab (its tunnel or translator), but where: loopback has only ipv4, ipv6 and dual"},
		{[]string{"lab", "up", prefix, "--name", "never"}, "prefix.yaml:2: nat64.prefix: 64:ff9b::/64: the translator takes a /96"},
		{[]string{"run", "--topology", pool, "--dry-run"}, "pool.yaml:3: nat64.pool: 2001:db8::1/128 is not IPv4: the pool holds the IPv4 addresses the clients share"},
	} {
		_, err := v6lab(t, c.args...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (code %d), want %q", c.args, err, exitCode(err), c.want)
		}
	}
}

// TestRealServersOverXlatAndDSLite: nginx and Unbound answer over 464xlat
// and dslite as over ipv4, in a lab whose NAT64 is stateful, every run
// proven.
func TestRealServersOverXlatAndDSLite(t *testing.T) {
	requireLab(t)
	requireNft(t)
	for _, p := range []string{"nginx", "unbound"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s is not installed (scripts/install-deps installs it)", p)
			}
		}
	}
	_, f, s, out, err := labRun(t, "name: realxlat\ntopology: "+statefulLab(t, "1024-65535")+
		"\npaths: [ipv4, 464xlat, dslite]\nservers: real\nruns: 2\nwarmup: 0\npause: 0s\ncells:\n  - {protocol: http, conns: [1, 3]}\n  - {protocol: dns, conns: [1, 3]}\n")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if !strings.Contains(s.Servers["http (real)"], "nginx") {
		t.Errorf("servers %v", s.Servers)
	}
	if len(s.Cells) != 3*4 {
		t.Errorf("%d cells", len(s.Cells))
	}
	for _, c := range s.Cells {
		if c.Failed != 0 || c.Completed != 2*c.Conns {
			t.Errorf("%s/%s/%d: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
	}
	checkXlatWire(t, f.Runs)
}
