package main

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"v6lab/internal/result"
	"v6lab/internal/testutil"

	"github.com/gopacket/gopacket/pcapgo"

	"v6lab/internal/lab"
	"v6lab/internal/report"
	"v6lab/internal/run/measure"
	"v6lab/internal/sock/evloop"
	"v6lab/internal/wire/capture"
)

// requireLab skips a test that builds a lab when not root.
func requireLab(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t, "the lab needs root")
}

// buildBinary builds v6lab into the test's own directory, for a test that
// needs a real process (go build's cache makes every build after the first
// quick).
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "v6lab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// labFile is a whole-run lab test's preamble: it needs root, builds the
// binary and writes yaml as the experiment file name in a directory of
// its own (where a topology it names may be written beside it).
func labFile(t *testing.T, name, yaml string) (bin, file string) {
	t.Helper()
	requireLab(t)
	bin = buildBinary(t)
	file = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return bin, file
}

// runLoaded runs bin with args, -q and --results in a directory of its
// own, and loads the one result it wrote: its directory, its samples file
// and summary, the command's output and error. A run that wrote no
// result, or one that does not load, ends the test, saying both.
func runLoaded(t *testing.T, bin string, args ...string) (dir string, f *result.File, s *report.Summary, out string, runErr error) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "r")
	b, runErr := exec.Command(bin, append(args, "-q", "--results", root)...).CombinedOutput()
	if _, err := os.Stat(root); err != nil {
		t.Fatalf("no results (run: %v)\n%s", runErr, b)
	}
	dir = onlyDir(t, root)
	f, s, err := report.Load(dir)
	if err != nil {
		t.Fatalf("%v (run: %v)\n%s", err, runErr, b)
	}
	return dir, f, s, string(b), runErr
}

// runCells is runLoaded of a run (its directory, samples file and
// summary) that must succeed, with cells cells
// (-1: any number); every sample of a dns-nodata cell has the IPv4-only
// name's AAAA as an empty answer, and of an https-pq cell the
// post-quantum key exchange agreed, over every path.
func runCells(t *testing.T, cells int, bin string, args ...string) (string, *result.File, *report.Summary) {
	t.Helper()
	dir, f, s, out, err := runLoaded(t, bin, args...)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if cells >= 0 && len(s.Cells) != cells {
		t.Fatalf("%d cells, want %d", len(s.Cells), cells)
	}
	for _, smp := range f.Samples {
		if strings.HasPrefix(smp.Cell, "dns-nodata/") && smp.Marker != "NOERROR, 0 AAAA" {
			t.Errorf("%s: marker %q", smp.Cell, smp.Marker)
		}
		if strings.HasPrefix(smp.Cell, "https-pq/") && !strings.Contains(smp.Marker, " X25519MLKEM768 ") {
			t.Errorf("%s: marker %q", smp.Cell, smp.Marker)
		}
	}
	return dir, f, s
}

func TestLabUpStatusDown(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	name := fmt.Sprintf("c%d", os.Getpid()%100000)
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { run("lab", "down", "--name", name) })
	topo := filepath.Join(t.TempDir(), "topo.yaml")
	os.WriteFile(topo, []byte("name: ignored\ntunnel: {mtu: 1280}\nlinks:\n  all: {rate: 100M}\n  r1-r2: {rate: 10M, mtu: 1400}\n"), 0o644)
	out, err := run("lab", "up", topo, "--name", name, "--bare-server", "--tunnel", "bpf")
	if err != nil || !strings.Contains(out, "is up (tunnel ") || strings.Contains(out, ";)") {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
	if out, err := run("lab", "up", "--name", name); err == nil || !strings.Contains(out, "is already up") {
		t.Errorf("second lab up: %v\n%s", err, out)
	}
	out, err = run("lab", "status", "--name", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kept by process", "192.0.2.2/24", "2001:db8:6:3::2/64", "2001:db8:46:3::2/64", "tunnel bpf", "route 2001:db8:46:3::/64 via 2001:db8:6:2::2 dev eth-r2 mtu 1280", "bpf eth-r2 egress (tcx): 6in4 encap: ", "qdisc tbf 100.0 Mbit/s", "qdisc tbf 10.0 Mbit/s", "mtu 1400", "tcp off: sack, timestamps, window_scaling"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if out, err := run("lab", "down", "--name", name); err != nil || !strings.Contains(out, "is down") {
		t.Fatalf("lab down: %v\n%s", err, out)
	}
	if left, _ := lab.Namespaces(lab.Prefix + name + "-"); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
	if pid := lab.Owner(name); pid != 0 {
		t.Errorf("owner process %d still alive", pid)
	}
	if _, err := os.Stat(filepath.Join(lab.StateDir, name+".log")); err == nil {
		t.Errorf("lab down left the owner's log behind")
	}
}

func TestLabCommandsExplainBadInput(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"lab", "up", "--name", "Bad Name"}, `bad lab name "Bad Name"`},
		{[]string{"lab", "up", "--tunnel-mtu", "9000"}, "tunnel MTU 9000 out of range"},
		{[]string{"lab", "up", "--tunnel", "gre"}, `unknown tunnel implementation "gre"`},
		{[]string{"lab", "down", "--name", "../../x"}, `bad lab name "../../x"`},
		{[]string{"lab", "down", "--name", "a/b"}, `bad lab name "a/b"`},
		{[]string{"lab", "down", "--orphans", "--name", "mine"}, "lab down: --name mine removes that lab only, --orphans and --all remove others too"},
		{[]string{"lab", "down", "--all", "--name", "mine"}, "lab down: --name mine removes that lab only"},
		{[]string{"lab", "status", "--name", "../x"}, `bad lab name "../x"`},
		{[]string{"lab", "status", "--name", "nosuchlab"}, `no lab named "nosuchlab"`},
		{[]string{"lab", "up", "--rate", "fast"}, `--rate: bad rate "fast"`},
		{[]string{"lab", "up", "../../internal/lab/testdata/invalid-rate.yaml"}, `invalid-rate.yaml:4: links.all.rate: bad rate "fast"`},
		{[]string{"lab", "up", "nosuch.yaml"}, "nosuch.yaml: no such file"},
		{[]string{"run", "--topology", "../../internal/lab/testdata/invalid-link-mtu.yaml"}, "invalid-link-mtu.yaml:4: links.client-r1.mtu: 1000 is out of range"},
		{[]string{"lab", "up", "--jitter", "1ms"}, "jitter needs a delay"},
	}
	for _, c := range cases {
		_, err := v6lab(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestRunMeasuresEveryPathInTheLab is the main job as root: ipv4, ipv6 and
// 6in4 across the routers, every run proven on the wire, the lab removed.
func TestRunMeasuresEveryPathInTheLab(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	root := t.TempDir()
	tmp := t.TempDir()
	// --strict reaches the measuring child: a run left out would end it
	// with status 3.
	run := exec.Command(bin, "run", "--conns", "1,3", "--runs", "3", "--pause", "0", "--pcap", "--strict", "--results", root)
	run.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	// Nothing of the run is left in the temporary directory (job files).
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the run left %d entries in TMPDIR, the first %s", len(left), left[0].Name())
	}
	dir := onlyDir(t, root)
	f, s, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Target != "lab" || f.Header.Lab["tunnel"] == "" {
		t.Errorf("header target %q lab %v", f.Header.Target, f.Header.Lab)
	}
	if want := evloop.SpinDefault().String(); f.Header.ClientSpin != want {
		t.Errorf("the measuring child records client spin %q, want the default %q", f.Header.ClientSpin, want)
	}
	if !slices.Contains(f.Header.Notes, measure.TimingNote) {
		t.Errorf("the header does not say how transactions are timed: %v", f.Header.Notes)
	}
	// Every completed transaction on every path has its wire time from the
	// kernel's stamps, within its own time, and the address its query left from.
	stamped := map[string]int{}
	for _, smp := range f.Samples {
		if !smp.OK() {
			continue
		}
		if smp.WireNS <= 0 || smp.WireNS > smp.TotalNS || smp.DNSLocal == "" {
			t.Errorf("%s/%d: wire %d of %d ns, query from %q", smp.Path, smp.Conns, smp.WireNS, smp.TotalNS, smp.DNSLocal)
			continue
		}
		// The page's first byte arrived on the wire within the wire time,
		// and no later than the client read it.
		if smp.WireFirstByteNS <= 0 || smp.WireFirstByteNS > smp.WireNS {
			t.Errorf("%s/%d: wire first byte %d of wire %d ns", smp.Path, smp.Conns, smp.WireFirstByteNS, smp.WireNS)
		}
		stamped[smp.Path]++
	}
	if stamped["ipv4"] == 0 || stamped["ipv6"] == 0 || (f.Header.Lab["tunnel"] != "none" && stamped["6in4"] == 0) {
		t.Errorf("stamped samples per path: %v", stamped)
	}
	paths := map[string]bool{}
	for _, c := range s.Cells {
		paths[c.Path] = true
		if c.Completed != 2*c.Conns || c.Failed != 0 {
			t.Errorf("%s/%d: %d completed, %d failed (%s)", c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
	}
	if !paths["ipv4"] || !paths["ipv6"] || !paths["6in4"] || len(s.Comparisons) != 4 {
		t.Errorf("paths %v, %d comparisons", paths, len(s.Comparisons))
	}
	for _, r := range f.Runs {
		if r.Wire == nil || r.Err != "" {
			t.Fatalf("run %s/%d: wire %v err %q", r.Cell, r.Run, r.Wire, r.Err)
		}
		counts := map[string]uint64{"ipv4": r.Wire.IPv4, "ipv6": r.Wire.IPv6, "6in4": r.Wire.SixIn4}
		if counts[r.Path] == 0 || r.Wire.IPv4+r.Wire.IPv6+r.Wire.SixIn4 != counts[r.Path] {
			t.Errorf("run %s/%d wire %+v", r.Cell, r.Run, *r.Wire)
		}
	}
	if left, _ := lab.Namespaces(lab.Prefix + f.Header.Lab["name"] + "-"); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
	// --pcap kept every counted packet, of all three kinds.
	var counted uint64
	for _, r := range f.Runs {
		counted += r.Wire.IPv4 + r.Wire.IPv6 + r.Wire.SixIn4
	}
	pf, err := os.Open(filepath.Join(dir, "capture.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	pr, err := pcapgo.NewReader(pf)
	if err != nil {
		t.Fatal(err)
	}
	remote, err := netip.ParseAddrPort(f.Samples[0].Remote)
	if err != nil {
		t.Fatal(err)
	}
	port := remote.Port()
	// The runs counted each transaction's DNS lookup too.
	var dnsPort uint16
	for _, kv := range strings.Fields(f.Header.Lab["wire_check_ports"]) {
		if v, ok := strings.CutPrefix(kv, "dns="); ok {
			p, _ := strconv.Atoi(v)
			dnsPort = uint16(p)
		}
	}
	if dnsPort == 0 {
		t.Fatalf("the header does not name the DNS port the wire check counted: %q", f.Header.Lab["wire_check_ports"])
	}
	kinds := map[capture.Class]uint64{}
	for {
		data, _, err := pr.ReadPacketData()
		if err != nil {
			break
		}
		kinds[capture.Classify(data, capture.Filter{Port: port, Also: dnsPort})]++
	}
	if kinds[capture.IPv4] == 0 || kinds[capture.IPv6] == 0 || kinds[capture.SixIn4] == 0 || kinds[capture.IPv4]+kinds[capture.IPv6]+kinds[capture.SixIn4] < counted {
		t.Errorf("capture.pcap holds %v, the runs counted %d", kinds, counted)
	}
}

// TestRunWithoutRootUsesAPrivateLab runs the main job as an unprivileged
// user: v6lab re-runs itself in a user namespace and measures in a lab of
// its own, proving each run on the wire (6in4 only where the user can make
// a tunnel).
func TestRunWithoutRootUsesAPrivateLab(t *testing.T) {
	testutil.RequireRoot(t, "needs root to become an unprivileged user for the test")
	dir, err := os.MkdirTemp("", "v6lab-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	bin := filepath.Join(dir, "v6lab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "run", "--conns", "1,2", "--runs", "2", "--warmup", "0", "--pause", "0", "--results", dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run as nobody: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "no lab (") {
		t.Skipf("this kernel gives unprivileged users no user namespace:\n%s", out)
	}
	res, _ := filepath.Glob(filepath.Join(dir, "quick-*"))
	if len(res) != 1 {
		t.Fatalf("result dirs %v\n%s", res, out)
	}
	f, s, err := report.Load(res[0])
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Target != "lab" || f.Header.Lab["privilege"] != "user namespace" {
		t.Errorf("header: target %q lab %v", f.Header.Target, f.Header.Lab)
	}
	paths := map[string]bool{}
	for _, c := range s.Cells {
		paths[c.Path] = true
		if c.Completed != 2*c.Conns || c.Failed != 0 {
			t.Errorf("%s/%d: %d completed, %d failed: %s", c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
	}
	if !paths["ipv4"] || !paths["ipv6"] {
		t.Errorf("paths %v", paths)
	}
	// No BPF in a user namespace: 6in4 falls back to the userspace tunnel
	// and says why, or, where TUN is root-only too, is left out with a
	// note naming all three ways.
	notes := strings.Join(f.Header.Notes, "\n") + string(out)
	if paths["6in4"] {
		if f.Header.Lab["tunnel"] != "userspace" || !strings.Contains(notes, "tc BPF) is not available") {
			t.Errorf("6in4 in a user namespace: tunnel %q, notes:\n%s", f.Header.Lab["tunnel"], notes)
		}
	} else if !strings.Contains(notes, "6in4 needs the kernel's sit module, tc BPF (") {
		t.Errorf("6in4 left out without the reason:\n%s", notes)
	}
	for _, r := range f.Runs {
		if r.Wire == nil || r.Err != "" {
			t.Errorf("run %s/%d: wire %v err %q", r.Cell, r.Run, r.Wire, r.Err)
		}
	}
	if st, err := os.Stat(res[0]); err != nil || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("results not owned by the user: %v", err)
	}
	if left, _ := lab.Namespaces(lab.Prefix + f.Header.Lab["name"] + "-"); len(left) != 0 {
		t.Errorf("namespaces visible on the host: %v", left)
	}
}

// TestTransportTrialsAndFTPInTheLab runs tcp and udp trials, both ways,
// FTP retrievals (passive and active), mail, an https page from the
// embedded https server and timed NXDOMAIN answers over ipv4, ipv6 and
// 6in4 on a shaped lab: every run proven on the wire, data included.
func TestTransportTrialsAndFTPInTheLab(t *testing.T) {
	bin, exp := labFile(t, "tr.yaml", `name: trlab
where: lab
runs: 2
warmup: 0
pause: 0s
cells:
  - {protocol: tcp, bytes: 2M, bottleneck: 100M, mss: 1200}
  - {protocol: udp, time: 500ms, omit: 300ms, rate: 20M, size: 1200}
  - {protocol: tcp, label: tcp-down, bytes: 2M, bottleneck: 100M, mss: 1200, reverse: true}
  - {protocol: udp, label: udp-down, time: 500ms, omit: 300ms, rate: 20M, size: 1200, reverse: true}
  - {protocol: ftp, file: 256K, conns: [2]}
  - {protocol: ftp, label: ftp-active, file: 256K, conns: [1], active: true}
  - {protocol: smtp, conns: [3]}
  - {protocol: imap, conns: [3]}
  - {protocol: http, tls: true, conns: [2]}
  - {protocol: http, label: https-pq, tls: true, tls_groups: pq, conns: [1]}
  - {protocol: dns, label: dns-nxdomain, query: nosuch.v6lab.test, expect: nxdomain, conns: [2]}
  - {protocol: dns, label: dns-nodata, query: v4only.v6lab.test, type: AAAA, expect: nodata, conns: [2]}
`)
	_, f, s := runCells(t, 36, bin, "run", exp, "--rate", "100M")
	for _, c := range s.Cells {
		if strings.HasPrefix(c.Protocol, "dns-") {
			if c.Completed != 2*c.Conns || c.Failed != 0 {
				t.Errorf("%s/%s: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Completed, c.Failed, c.FirstError)
			}
			continue
		}
		if strings.HasPrefix(c.Protocol, "ftp") || c.Protocol == "smtp" || c.Protocol == "imap" || strings.HasPrefix(c.Protocol, "https") {
			if c.Completed != 2*c.Conns || c.Failed != 0 {
				t.Errorf("%s/%s: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Completed, c.Failed, c.FirstError)
			}
			// The mail conversations (on the event loop), FTP's (on Go's
			// net package, passive and active) and https's count their
			// client turns on every path, inside the wire time.
			ct, w := c.Metrics[report.ClientTurnMetric], c.Metrics[report.WireMetric]
			if ct == nil || w == nil || ct.Mean <= 0 || ct.Mean >= w.Mean {
				t.Errorf("%s/%s: client turns %+v, wire %+v", c.Protocol, c.Path, ct, w)
			}
			continue
		}
		tp := c.Metrics["throughput_mbps"]
		if c.Completed != 2 || tp == nil || tp.Mean <= 0 || tp.Mean > 102 { // tbf lets its burst through at once
			t.Errorf("%s/%s: %d completed, throughput %+v (%s)", c.Protocol, c.Path, c.Completed, tp, c.FirstError)
		}
		if strings.HasPrefix(c.Protocol, "udp") { // a 300 ms warm-up of 1200-byte datagrams at 20 Mbit/s: 625 left out
			if w := c.Metrics["omitted_datagrams"]; w == nil || w.Mean != 625 {
				t.Errorf("%s/%s: warm-up datagrams %+v, want 625", c.Protocol, c.Path, w)
			}
		}
		if strings.HasPrefix(c.Protocol, "tcp") { // both directions: the server sends in tcp-down
			if r := c.Metrics["transfer_time_ratio"]; r == nil || r.Mean < 0.9 {
				t.Errorf("%s/%s: transfer time ratio %+v on a 100 Mbit/s link", c.Protocol, c.Path, r)
			}
		}
	}
	for _, r := range f.Runs {
		counts := map[string]uint64{"ipv4": r.Wire.IPv4, "ipv6": r.Wire.IPv6, "6in4": r.Wire.SixIn4}
		// The control connection alone is about 13 packets; the data adds
		// more (fewer than its segments: veth hands the capture GSO
		// super-packets). Two DNS queries are four datagrams.
		least := uint64(30)
		if strings.HasPrefix(r.Cell, "dns-") {
			least = 4
		}
		if r.Err != "" || counts[r.Path] < least || r.Wire.IPv4+r.Wire.IPv6+r.Wire.SixIn4 != counts[r.Path] {
			t.Errorf("run %s/%d: wire %+v err %q", r.Cell, r.Run, *r.Wire, r.Err)
		}
	}
}

// TestRunAgainstRealServersInTheLab measures nginx, Unbound, ProFTPD, Postfix and Dovecot, started
// with generated configurations in the lab's server host, over all paths.
func TestRunAgainstRealServersInTheLab(t *testing.T) {
	requireLab(t)
	for _, p := range []string{"nginx", "unbound", "proftpd", "dovecot", "postfix"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s is not installed (scripts/install-deps installs it)", p)
			}
		}
	}
	bin, exp := labFile(t, "real.yaml", `name: real
servers: real
runs: 2
pause: 0s
cells:
  - {protocol: http, conns: [1, 4]}
  - {protocol: http, label: http-embedded, server: embedded, conns: [2]}
  - {protocol: dns, conns: [3]}
  - {protocol: dns, label: dns-nodata, query: v4only.v6lab.test, type: AAAA, expect: nodata, conns: [2]}
  - {protocol: ftp, file: 128K, conns: [2]}
  - {protocol: imap, conns: [3]}
  - {protocol: smtp, conns: [3]}
`)
	_, f, s := runCells(t, 24, bin, "run", exp)
	srv := f.Header.Servers
	if !strings.Contains(srv["http (real)"], "nginx/") || !strings.Contains(srv["dns (real)"], "unbound") ||
		!strings.Contains(srv["ftp (real)"], "ProFTPD") || !strings.Contains(srv["imap (real)"], "Dovecot") ||
		!strings.Contains(srv["smtp (real)"], "Postfix") || !strings.Contains(srv["http"], "embedded") {
		t.Errorf("servers %v", srv)
	}
	// Only the servers that answered: the embedded http of its one cell
	// (and the embedded dns of its lookups), none of the embedded others.
	for _, k := range []string{"ftp", "smtp", "imap", "transport"} {
		if v, ok := srv[k]; ok {
			t.Errorf("the header names the embedded %s server (%s), which no cell used", k, v)
		}
	}
	// (runCells: Unbound knows the IPv4-only name too, its AAAA is an
	// empty answer.)
	for _, c := range s.Cells {
		if c.Completed != c.Conns || c.Failed != 0 {
			t.Errorf("%s/%d: %d completed (%s)", c.Path, c.Conns, c.Completed, c.FirstError)
		}
	}
	for _, r := range f.Runs {
		if r.Err != "" {
			t.Errorf("run %s/%d: %s", r.Cell, r.Run, r.Err)
		}
	}
}

// TestCongestionInTheLab runs the Towson shape small: a 320 KB fetch with
// no congestion (over all three paths, the tunnel's too) and under C4B, from the embedded server and from nginx, on
// a bare server host. Every congested run records its background flows,
// every fetch gets its server-side delay and throughput, and the congestion
// slows the fetch down.
func TestCongestionInTheLab(t *testing.T) {
	requireLab(t)
	if _, err := exec.LookPath("nginx"); err != nil {
		if _, err := os.Stat("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed (scripts/install-deps installs it)")
		}
	}
	bin, exp := labFile(t, "cong.yaml", `name: cong
where: lab
topology: towson.yaml
paths: [ipv4, ipv6]
runs: 3
warmup: 0
pause: 0s
cells:
  - {protocol: http, label: none, file: 320K, conns: [1], server_capture: true, paths: [ipv4, ipv6, 6in4]}
  - {protocol: http, label: c4b, file: 320K, conns: [1], background: C4B, server_capture: true}
  - {protocol: http, label: nginx-c4b, server: real, file: 320K, conns: [1], background: C4B, server_capture: true}
`)
	os.WriteFile(filepath.Join(filepath.Dir(exp), "towson.yaml"), []byte("generators: true\nlinks:\n  r1-r2:\n    rate: 100M\n"), 0o644)
	dir, f, s := runCells(t, -1, bin, "run", exp, "--bare-server")
	if f.Header.Lab["server_tcp"] == "" || f.Header.Lab["generators"] == "" || !strings.Contains(f.Header.Servers["http (real)"], "nginx/") {
		t.Errorf("header lab %v, servers %v", f.Header.Lab, f.Header.Servers)
	}
	if f.Header.ClientSpin != "0s" { // the generator shares the client's process
		t.Errorf("with background traffic the client spins %q, want 0s", f.Header.ClientSpin)
	}
	for _, r := range f.Runs {
		if r.Err != "" {
			t.Errorf("run %s/%d: %s", r.Cell, r.Run, r.Err)
		}
		if (r.Background != nil) != (r.Protocol != "none") {
			t.Errorf("run %s/%d: background %+v", r.Cell, r.Run, r.Background)
			continue
		}
		if r.Background != nil {
			if r.Background.Level != "C4B" || len(r.Background.Flows) != 10 {
				t.Errorf("run %s/%d: background %+v", r.Cell, r.Run, r.Background)
			}
			for _, fl := range r.Background.Flows {
				if fl.DeliveredMbps <= 0 || fl.Err != "" {
					t.Errorf("run %s/%d: flow %+v", r.Cell, r.Run, fl)
				}
			}
		}
	}
	for _, smp := range f.Samples {
		d, tput := smp.Metrics["server_delay_ms"], smp.Metrics["server_throughput_mbps"]
		total := float64(smp.TotalNS) / 1e6
		// The server's delay ends at the client's last ACK, which the
		// client may send after it has read the last byte (a delayed ACK
		// waits up to TCP_DELACK_MAX, 200 ms): it can exceed the client's
		// time by that much, no more.
		if !smp.OK() || d <= 0 || d >= total+200 || tput <= 0 || smp.Metrics["server_in_mbps"] <= 0 || smp.Metrics["server_bytes"] < 320<<10 {
			t.Errorf("sample %s/%s: %.2f ms total, server delay %.2f ms, %.1f Mbit/s, %v bytes (%s)", smp.Cell, smp.Local, total, d, tput, smp.Metrics["server_bytes"], smp.Err)
		}
		// One direction through the 100 Mbit/s bottleneck: at most its IP
		// share of the wire (1500 of every 1538 bytes), plus the shaper's
		// 1 ms burst (12.5 KB) spread over the transfer.
		if bound := 100*1500.0/1538 + 12500*8/(d/1000)/1e6; tput > bound*1.01 {
			t.Errorf("sample %s/%s: server throughput %.1f Mbit/s above the %.1f Mbit/s a 100 Mbit/s link carries in %.1f ms", smp.Cell, smp.Local, tput, bound, d)
		}
	}
	mean := map[string]float64{}
	for _, c := range s.Cells {
		if c.Metrics["server_delay_ms"] == nil {
			t.Errorf("cell %s/%s has no server-side delay", c.Protocol, c.Path)
			continue
		}
		mean[c.Protocol+"/"+c.Path] = c.Metrics["server_delay_ms"].Mean
	}
	for _, p := range []string{"ipv4", "ipv6"} {
		if mean["c4b/"+p] < 2*mean["none/"+p] {
			t.Errorf("%s: server-side delay %.1f ms under C4B, %.1f ms without: the background did not congest", p, mean["c4b/"+p], mean["none/"+p])
		}
	}
	txt, _ := os.ReadFile(filepath.Join(dir, report.TextFile))
	page, _ := os.ReadFile(filepath.Join(dir, report.HTMLFile))
	if !strings.Contains(string(txt), "Under background traffic") || !strings.Contains(string(page), `data-plot="congestion-delay"`) {
		t.Errorf("reports lack the congestion table or plot")
	}
}
