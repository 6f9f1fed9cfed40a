package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"v6lab/internal/gen/traffic"
	"v6lab/internal/gen/transport"
	"v6lab/internal/proto/all"
	"v6lab/internal/proto/dns"
	"v6lab/internal/proto/ftp"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/report"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/measure"
	"v6lab/internal/sock/path"
)

// v6lab runs the command line in-process and returns stdout and the error.
func v6lab(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func exitCode(err error) int {
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return 1
	}
	return 0
}

func onlyDir(t *testing.T, root string) string {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil || len(ents) != 1 {
		t.Fatalf("result root %s: %v, %d entries", root, err, len(ents))
	}
	return filepath.Join(root, ents[0].Name())
}

func TestRunThenReportReRendersTheSameFigures(t *testing.T) {
	root := t.TempDir()
	out, err := v6lab(t, "run", "--loopback", "--conns", "1,5", "--runs", "3", "--pause", "0", "--spin", "0", "--results", root)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, want := range []string{"HTTP: average response time per connection", "HTTP: increase over ipv4", "confidence level", "results: ", "client spin 0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	dir := onlyDir(t, root)
	for format, file := range map[string]string{"json": report.SummaryFile, "csv": report.CSVFile, "text": report.TextFile, "html": report.HTMLFile} {
		got, err := v6lab(t, "report", dir, "--format", format)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(filepath.Join(dir, file))
		if got != string(want) {
			t.Errorf("report --format %s differs from %s", format, file)
		}
	}
	_, s, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells) != 4 || len(s.Comparisons) != 2 {
		t.Fatalf("%d cells, %d comparisons", len(s.Cells), len(s.Comparisons))
	}
	for _, c := range s.Cells {
		if c.Completed != 2*c.Conns || c.Failed != 0 || len(c.Runs) != 2 || len(c.WarmupRuns) != 1 {
			t.Errorf("cell %s/%d: %d ok %d failed %d runs", c.Path, c.Conns, c.Completed, c.Failed, len(c.Runs))
		}
	}
}

// sameResultIsSaid: compare of one result with itself (the same path
// twice, another way to write it, a link, a copy of its samples) says so
// plainly, with no table of zeros, and exits 0: no difference.
func sameResultIsSaid(t *testing.T, dir string) {
	t.Helper()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	cp := t.TempDir()
	name, _ := result.SamplesPath(dir)
	os.WriteFile(filepath.Join(cp, filepath.Base(name)), mustRead(t, name), 0o644)
	for b, why := range map[string]string{dir: "one directory", dir + "/": "one directory", link: "one directory", cp: "identical samples files"} {
		out, err := v6lab(t, "compare", dir, b)
		if err != nil || !strings.Contains(out, "A and B are the same result ("+why+"): there is no difference to show") || strings.Contains(out, "B - A") {
			t.Errorf("compare %s %s: %v\n%s", dir, b, err, out)
		}
		out, err = v6lab(t, "compare", dir, b, "--format", "json")
		var v report.Versus
		if jerr := json.Unmarshal([]byte(out), &v); err != nil || jerr != nil || v.Same != why || len(v.Cells) != 0 {
			t.Errorf("compare %s %s --format json: %v %v\n%s", dir, b, err, jerr, out)
		}
	}
}

func TestCompareTwoResultSets(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for _, name := range []string{"before", "after"} {
		if out, err := v6lab(t, "run", "-q", "--loopback", "--conns", "1,4", "--runs", "4", "--pause", "0", "--name", name, "--results", root); err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
		m, _ := filepath.Glob(filepath.Join(root, name+"-*"))
		dirs = append(dirs, m...)
	}
	if len(dirs) != 2 {
		t.Fatalf("result dirs %v", dirs)
	}
	out, err := v6lab(t, "compare", dirs[0], dirs[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"B - A", "http      ipv6      4", "confidence", "100.0% / 100.0%"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare output lacks %q:\n%s", want, out)
		}
	}
	out, err = v6lab(t, "compare", dirs[0], dirs[1], "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v report.Versus
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Cells) != 4 || v.Cells[0].Diff.DiffMS == nil || v.Cells[0].Diff.NA["p_paired"] == "" || v.Same != "" {
		t.Fatalf("compare json: %v %+v", err, v)
	}
	sameResultIsSaid(t, dirs[0])
	// report --write brings back a deleted report.html.
	os.Remove(filepath.Join(dirs[0], report.HTMLFile))
	if _, err := v6lab(t, "report", dirs[0], "--write"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dirs[0], report.HTMLFile)); err != nil || !strings.Contains(string(b), `data-plot="rt-http"`) {
		t.Errorf("report.html after --write: %v", err)
	}
}

func TestRunExperimentFilesAndBuiltins(t *testing.T) {
	out, err := v6lab(t, "run", "--list")
	if err != nil || !strings.Contains(out, "mitre2004") || !strings.Contains(out, "quick") {
		t.Fatalf("--list: %v\n%s", err, out)
	}
	printed, err := v6lab(t, "run", "--print", "mitre2004")
	if err != nil || !strings.Contains(printed, "conns: [1, 10, 100, 500, 1000, 5000]") {
		t.Fatalf("--print: %v\n%s", err, printed)
	}
	file := filepath.Join(t.TempDir(), "mine.yaml")
	os.WriteFile(file, []byte(printed), 0o644)
	out, err = v6lab(t, "run", file, "--loopback", "--scale", "0.01", "--dry-run")
	if err != nil || !strings.Contains(out, "experiment mitre2004: 54 runs on loopback") || !strings.Contains(out, "[1 5 10 50]") ||
		!strings.Contains(out, "ftp    ftp       [ipv4 ipv6]") {
		t.Fatalf("--dry-run: %v\n%s", err, out)
	}
	// An experiment with two cell groups, shuffled, interrupted, resumed.
	exp := filepath.Join(t.TempDir(), "two.yaml")
	os.WriteFile(exp, []byte(`name: two
where: loopback
runs: 6
pause: 0s
order: shuffled
seed: 3
cells:
  - protocol: http
    conns: [2]
    objects: 1
  - protocol: dns
    conns: [3]
    transport: tcp
`), 0o644)
	root := t.TempDir()
	if out, err := v6lab(t, "run", exp, "-q", "--results", root); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	dir := onlyDir(t, root)
	f, s, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells) != 4 || len(f.Runs) != 24 {
		t.Fatalf("%d cells, %d runs", len(s.Cells), len(f.Runs))
	}
	for _, c := range s.Cells {
		if c.Completed != 5*c.Conns || c.Failed != 0 {
			t.Errorf("%s/%s: %d completed, %d failed: %s", c.Protocol, c.Path, c.Completed, c.Failed, c.FirstError)
		}
	}
	if f.Samples[0].BytesIn < 1 {
		t.Errorf("first sample read nothing: %+v", f.Samples[0])
	}
	// Cut the file back to 10 runs, as a kill would, and resume.
	plain := plainSamples(t, dir) // a kill of an older version's run
	lines := strings.SplitAfter(string(mustRead(t, plain)), "\n")
	runs, cut := 0, 0
	for i, l := range lines {
		if strings.Contains(l, `"kind":"run"`) {
			if runs++; runs == 10 {
				cut = i + 1
			}
		}
	}
	os.WriteFile(plain, []byte(strings.Join(lines[:cut+1], "")+`{"kind":"sam`), 0o644)
	// An export of the interrupted result would lack the runs the resume
	// adds: the resume removes it.
	if out, err := v6lab(t, "export", dir); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	// A process still writes the file for a moment (as a killed lab run's
	// measuring process does): the resume waits for it.
	busy, err := os.Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	if err := result.Lock(busy); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.AfterFunc(500*time.Millisecond, func() { busy.Close() })
	out, err = v6lab(t, "run", "--resume", dir)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond {
		t.Errorf("the resume went on after %s, while the file was still held", waited)
	}
	f2, s2, err := report.Load(dir)
	rewarms := 0
	for _, r := range f2.Runs {
		rewarms += map[bool]int{true: 1}[r.Rewarm]
	}
	// The plan's 24 runs, and a re-warm before each of http's two paths'
	// first counted run after the resume (dns had not begun: its own
	// warm-ups run).
	if err != nil || len(f2.Runs) != 26 || rewarms != 2 || f2.Truncated {
		t.Fatalf("after resume: %v, %d runs, %d of them re-warms", err, len(f2.Runs), rewarms)
	}
	for _, c := range s2.Cells {
		if len(c.Runs) != 5 {
			t.Errorf("%s/%s: %d counted runs", c.Protocol, c.Path, len(c.Runs))
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "samples.unfinished-*.jsonl")); len(m) != 1 {
		t.Errorf("unfinished lines kept in %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, result.ParquetName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the export made before the resume is still there: %v", err)
	}
}

// TestHTTPSCellOnTheEmbeddedServer: an http cell with tls fetches from
// v6lab's own https server (a second instance, on a port of its own, its
// self-signed certificate pinned) over every path, the dual path's race
// included, beside plain http in the same run; its group is named https.
// tls_resume and tls_groups reach their groups alone.
func TestHTTPSCellOnTheEmbeddedServer(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "tls.yaml")
	os.WriteFile(exp, []byte(`name: tls
where: loopback
paths: [ipv4, ipv6, dual]
runs: 3
warmup: 1
pause: 0s
cells:
  - {protocol: http, conns: [2]}
  - {protocol: http, tls: true, conns: [2]}
  - {protocol: http, label: https-file, tls: true, file: 64K, conns: [1]}
  - {protocol: http, label: https-back, tls: true, tls_resume: true, conns: [2]}
  - {protocol: http, label: https-pq, tls: true, tls_groups: pq, conns: [1]}
`), 0o644)
	root := t.TempDir()
	if out, err := v6lab(t, "run", exp, "-q", "--strict", "--results", root); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	f, s, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells) != 15 {
		t.Fatalf("%d cells", len(s.Cells))
	}
	for _, c := range s.Cells {
		if c.Completed != 2*c.Conns || c.Failed != 0 {
			t.Errorf("%s/%s: %d completed, %d failed: %s", c.Protocol, c.Path, c.Completed, c.Failed, c.FirstError)
		}
	}
	if !strings.Contains(f.Header.Servers["https"], "crypto/tls") {
		t.Errorf("servers %v", f.Header.Servers)
	}
	ports := map[string]map[string]bool{} // cell group: remote ports
	resumed := map[string]int{}
	for _, smp := range f.Samples {
		group := strings.Split(smp.Cell, "/")[0]
		tls := strings.Contains(smp.Marker, "TLS 1.3")
		if tls != strings.HasPrefix(group, "https") {
			t.Errorf("%s: marker %q", smp.Cell, smp.Marker)
		}
		if strings.Contains(smp.Marker, " resumed") {
			resumed[group]++
		}
		// The key exchange offered: the post-quantum hybrid where the
		// group asks for it (tls_groups: pq), the classic X25519 elsewhere.
		if want := map[bool]string{true: " X25519MLKEM768 ", false: " X25519 "}[group == "https-pq"]; tls && !strings.Contains(smp.Marker, want) {
			t.Errorf("%s: marker %q, want the key exchange%s", smp.Cell, smp.Marker, want)
		}
		remote := netip.MustParseAddrPort(smp.Remote)
		if smp.Path != "dual" && path.Path(smp.Path).Accepts(remote.Addr()) == false {
			t.Errorf("%s: remote %v", smp.Cell, remote)
		}
		if ports[group] == nil {
			ports[group] = map[string]bool{}
		}
		ports[group][strconv.Itoa(int(remote.Port()))] = true
	}
	// Returning users (tls_resume) resume with the tickets of their
	// earlier runs; new users never do.
	if resumed["https-back"] == 0 || resumed["https"] != 0 || resumed["https-file"] != 0 {
		t.Errorf("resumed handshakes by group %v: want some in https-back alone", resumed)
	}
	if len(ports["http"]) != 1 || len(ports["https"]) != 1 || maps.Equal(ports["http"], ports["https"]) {
		t.Errorf("remote ports by group %v: want one each, http's and https's apart", ports)
	}
}

// plainSamples turns dir's compressed samples file into a plain
// samples.jsonl, as v6lab wrote them before 2026-11-26 (every reader and
// resume take both), and returns its name.
func plainSamples(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, result.PlainSamplesName)
	if err := os.WriteFile(name, []byte(samplesText(t, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, result.SamplesName))
	return name
}

// samplesText is the text of dir's samples file, of either form.
func samplesText(t *testing.T, dir string) string {
	t.Helper()
	name, err := result.SamplesPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text, err := result.Decompress(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(text)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestQuietPrintsOnlyWhereResultsWent(t *testing.T) {
	out, err := v6lab(t, "run", "-q", "--loopback", "--conns", "1", "--runs", "2", "--pause", "0", "--results", t.TempDir())
	if err != nil || !strings.HasPrefix(out, "results: ") || strings.Count(out, "\n") != 1 {
		t.Fatalf("quiet output %q, %v", out, err)
	}
}

// localServers starts the embedded servers and returns the page URL and
// the DNS server flags.
func localServers(t *testing.T) (localSrv, []string) {
	t.Helper()
	at, err := experiment.LoopbackPlace([]path.Path{path.IPv4, path.IPv6})
	if err != nil {
		t.Fatal(err)
	}
	st, err := all.Start(context.Background(), []string{"http", "dns"}, at)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := localSrv{URL: fmt.Sprintf("http://%s:%d/", experiment.LocalName, st.Running["http"].Port()), DNS: st.Running["dns"].Addrs()}
	var flags []string
	for _, a := range l.DNS {
		flags = append(flags, "--dns-server", a.String())
	}
	return l, flags
}

// localSrv is where the embedded HTTP and DNS servers answer on loopback.
type localSrv struct {
	URL string
	DNS []netip.AddrPort
}

func TestProbeHTTPAgainstAHost(t *testing.T) {
	l, dnsFlags := localServers(t)
	root := t.TempDir()
	args := append([]string{"probe", "http", l.URL, "--conns", "1,3", "--runs", "2", "--pause", "0", "-q", "--results", root, "--dns-over", "ipv4"}, dnsFlags...)
	if out, err := v6lab(t, args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	_, s, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Cells {
		if c.Completed != c.Conns || c.Failed != 0 {
			t.Errorf("%s/%d: %d completed, %d failed (%s)", c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
	}
}

// TestProbeHTTPDualPathFlags: probe http's dual path takes its dialer
// and Connection Attempt Delay from flags, records them in the header,
// and races with each dialer (IPv6 winning on loopback).
func TestProbeHTTPDualPathFlags(t *testing.T) {
	l, dnsFlags := localServers(t)
	for _, dialer := range []string{"v6lab", "go"} {
		root := t.TempDir()
		args := append([]string{"probe", "http", l.URL, "--paths", "ipv6,dual", "--conns", "1", "--runs", "2", "--warmup", "0", "--pause", "0", "-q", "--results", root,
			"--dns-over", "ipv4", "--dialer", dialer, "--attempt-delay", "100ms"}, dnsFlags...)
		if out, err := v6lab(t, args...); err != nil {
			t.Fatalf("%s: %v\n%s", dialer, err, out)
		}
		f, s, err := report.Load(onlyDir(t, root))
		if err != nil {
			t.Fatal(err)
		}
		spec, _ := f.Header.Spec.(map[string]any)
		cells, _ := spec["cells"].([]any)
		if len(cells) != 1 {
			t.Fatalf("%s: the header's spec %v", dialer, spec)
		}
		if p, _ := cells[0].(map[string]any)["params"].(map[string]any); p["dialer"] != dialer || p["attempt_delay"] != "100ms" {
			t.Errorf("%s: the header's params %v", dialer, p)
		}
		for _, c := range s.Cells {
			if c.Completed != 2 || (c.Path == "dual" && metricOf(c, "ipv6_won") != 1) {
				t.Errorf("%s: %s/%d: %d completed (%s), ipv6_won %v", dialer, c.Path, c.Conns, c.Completed, c.FirstError, metricOf(c, "ipv6_won"))
			}
		}
		// The report says when Go's resolver is in the dual cell's cost.
		txt := string(mustRead(t, filepath.Join(onlyDir(t, root), "report.txt")))
		if s.Dialers["http"] != dialer || strings.Contains(txt, report.EyeballsGoDialerNote) != (dialer == "go") {
			t.Errorf("%s: dialers %v, the report's note on Go's resolver: %v", dialer, s.Dialers, strings.Contains(txt, report.EyeballsGoDialerNote))
		}
		// With either dialer the wire time starts at the first query out,
		// as on the pinned path beside it: never at the SYN, never absent.
		for _, smp := range f.Samples {
			if smp.OK() && (smp.WireNS <= 0 || smp.WireNS > smp.TotalNS || smp.DNSLocal == "") {
				t.Errorf("%s: %s: wire %d of %d ns, query from %q", dialer, smp.Path, smp.WireNS, smp.TotalNS, smp.DNSLocal)
			}
		}
	}
}

func TestProbeHTTPHostWithoutAAAAFailsThatPath(t *testing.T) {
	ctx := context.Background()
	srv, err := httpp.Listen(ctx, httpp.DefaultServerConfig, []netip.Addr{path.IPv4.Loopback()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	z := dns.Zone{}
	z.Add("v4only.test", path.IPv4.Loopback())
	d, err := dns.Listen(ctx, z, []netip.Addr{path.IPv4.Loopback(), path.IPv6.Loopback()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	root := t.TempDir()
	url := fmt.Sprintf("http://v4only.test:%d/", srv.Port)
	args := []string{"probe", "http", url, "--conns", "2", "--runs", "2", "--pause", "0", "-q", "--results", root}
	for _, a := range d.Addrs() {
		args = append(args, "--dns-server", a.String())
	}
	_, err = v6lab(t, args...)
	if err == nil || !strings.Contains(err.Error(), "every counted transaction of http/ipv6/2 failed") ||
		!strings.Contains(err.Error(), "v4only.test has no AAAA record") {
		t.Fatalf("err %v", err)
	}
	// The IPv4 path was still measured and kept.
	_, s, lerr := report.Load(onlyDir(t, root))
	if lerr != nil || s.Cells[0].Path != "ipv4" || s.Cells[0].Completed != 2 {
		t.Fatalf("ipv4 results lost: %v %+v", lerr, s.Cells)
	}
}

func TestProbeFTP(t *testing.T) {
	s, err := ftp.Listen(context.Background(), []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct{ url, path, mode string }{
		{fmt.Sprintf("ftp://127.0.0.1:%d/64K", s.Port), "ipv4", "--active=false"},
		{fmt.Sprintf("ftp://user:pw@[::1]:%d/64K", s.Port), "ipv6", "--active"},
	} {
		root := t.TempDir()
		if out, err := v6lab(t, "probe", "ftp", c.url, "--paths", c.path, "--conns", "1,3", "--runs", "2", c.mode, "-q", "--results", root); err != nil {
			t.Fatalf("%s: %v\n%s", c.url, err, out)
		}
		f, sum, err := report.Load(onlyDir(t, root))
		if err != nil {
			t.Fatal(err)
		}
		for _, cell := range sum.Cells {
			if cell.Completed != cell.Conns || cell.Failed != 0 {
				t.Errorf("%s %d: %d completed (%s)", c.url, cell.Conns, cell.Completed, cell.FirstError)
			}
		}
		if smp := f.Samples[0]; smp.BytesIn != 64<<10 || !strings.HasPrefix(smp.Marker, "226") {
			t.Errorf("sample %+v", smp)
		}
	}
	if _, err := v6lab(t, "probe", "ftp", "http://x/"); err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "want ftp://") {
		t.Errorf("bad URL: %v", err)
	}
}

func TestProbeSMTP(t *testing.T) {
	s, err := smtp.Listen(context.Background(), []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	root := t.TempDir()
	if out, err := v6lab(t, "probe", "smtp", fmt.Sprintf("localhost:%d", s.Port), "--dns-server", "127.0.0.1:1", "--paths", "ipv4", "--runs", "2", "-q", "--results", root, "--timeout", "3s"); err == nil {
		t.Errorf("a name no DNS server answers for was measured: %s", out)
	}
	root = t.TempDir()
	if out, err := v6lab(t, "probe", "smtp", fmt.Sprintf("[::1]:%d", s.Port), "--paths", "ipv6", "--conns", "1,20", "--runs", "2", "--size", "2K", "-q", "--results", root); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	_, sum, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sum.Cells {
		if c.Completed != c.Conns || c.Failed != 0 {
			t.Errorf("%d: %d completed (%s)", c.Conns, c.Completed, c.FirstError)
		}
	}
	// Every message sent (warm-up runs included) was kept: nothing lost.
	if kept, _ := s.Kept(); kept != 2*(1+20) || s.Accepted.Load() != int64(kept) {
		t.Errorf("the server kept %d messages, accepted %d; 42 were sent", kept, s.Accepted.Load())
	}
	// STARTTLS: the self-signed certificate is refused unless --insecure.
	target := fmt.Sprintf("127.0.0.1:%d", s.Port)
	if out, err := v6lab(t, "probe", "smtp", target, "--starttls", "--paths", "ipv4", "--conns", "1", "--runs", "2", "-q", "--results", t.TempDir()); err == nil {
		t.Errorf("an unverified certificate was accepted: %s", out)
	}
	root = t.TempDir()
	if out, err := v6lab(t, "probe", "smtp", target, "--starttls", "--insecure", "--paths", "ipv4", "--conns", "1", "--runs", "2", "-q", "--results", root); err != nil {
		t.Fatalf("--starttls --insecure: %v\n%s", err, out)
	}
	if _, sum, err = report.Load(onlyDir(t, root)); err != nil || len(sum.Cells) != 1 || sum.Cells[0].Failed != 0 {
		t.Errorf("--starttls --insecure: %v %+v", err, sum)
	}
}

func TestProbeIMAP(t *testing.T) {
	s, err := imap.Listen(context.Background(), []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, 0, 50, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	root := t.TempDir()
	if out, err := v6lab(t, "probe", "imap", fmt.Sprintf("[::1]:%d", s.Port), "--paths", "ipv6", "--conns", "1,60", "--runs", "2", "--users", "50", "-q", "--results", root); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f, sum, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range sum.Cells {
		if c.Completed != c.Conns || c.Failed != 0 {
			t.Errorf("%d: %d completed (%s)", c.Conns, c.Completed, c.FirstError)
		}
	}
	users := map[string]bool{}
	for _, smp := range f.Samples {
		users[smp.Marker[strings.LastIndex(smp.Marker, " ")+1:]] = true
	}
	if len(users) != 50 {
		t.Errorf("%d distinct users logged in, want all 50", len(users))
	}
	if _, err := v6lab(t, "probe", "imap", "127.0.0.1", "--user-format", "nobody"); err == nil || exitCode(err) != 2 {
		t.Errorf("bad --user-format: %v", err)
	}
}

func TestTrafficCommand(t *testing.T) {
	s, err := traffic.ListenSink(context.Background(), []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := v6lab(t, "traffic", "--level", "C3B", "--to", fmt.Sprintf("127.0.0.1:%d", s.Port), "--to", fmt.Sprintf("[::1]:%d", s.Port), "--time", "500ms")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "level C3B: 75 Mbit/s, 25% IPv6") || strings.Count(out, "poisson") != 8 || strings.Count(out, "periodic") != 2 {
		t.Errorf("output:\n%s", out)
	}
	time.Sleep(100 * time.Millisecond)
	for id := 1; id <= 10; id++ {
		if s.Delivered(id) == 0 {
			t.Errorf("flow %d delivered nothing", id)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"traffic", "--level", "C9B", "--to", "127.0.0.1", "--to", "::1"}, `no congestion level "C9B"`},
		{[]string{"traffic", "--to", "127.0.0.1"}, "give one IPv4 and one IPv6 sink"},
		{[]string{"traffic", "--to", "127.0.0.1", "--to", "::1", "--time", "2h"}, "--time: want more than 0 and at most 1h0m0s"},
	} {
		if _, err := v6lab(t, c.args...); err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

func TestProbeDNS(t *testing.T) {
	l, _ := localServers(t)
	root := t.TempDir()
	args := []string{"probe", "dns", experiment.LocalName, "--conns", "1,10", "--runs", "2", "--pause", "0", "-q", "--results", root}
	for _, a := range l.DNS {
		args = append(args, "--server", a.String())
	}
	if out, err := v6lab(t, args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dir := onlyDir(t, root)
	_, s, _ := report.Load(dir)
	if len(s.Cells) != 4 || s.Cells[3].Completed != 10 {
		t.Fatalf("cells %+v", s.Cells)
	}
	// export never writes over a result's own files, only a new file or an
	// earlier export.
	samples := filepath.Join(dir, result.SamplesName)
	before, _ := os.ReadFile(samples)
	for _, own := range []string{samples, filepath.Join(dir, report.SummaryFile), dir} {
		if _, err := v6lab(t, "export", dir, "-o", own); exitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--output: "+own) {
			t.Errorf("export -o %s: %v", own, err)
		}
	}
	if after, _ := os.ReadFile(samples); !bytes.Equal(before, after) {
		t.Fatal("export changed the result's samples")
	}
	for range 2 {
		if out, err := v6lab(t, "export", dir); err != nil || !strings.Contains(out, "wrote ") {
			t.Errorf("export (again over its own earlier export): %v\n%s", err, out)
		}
	}
	// Nor into another result's directory, nor over a file that only
	// begins as Parquet does.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, result.SamplesName), before, 0o644)
	notes := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notes, []byte("PAR1 is how my notes begin"), 0o644)
	for _, bad := range []string{filepath.Join(other, result.ParquetName), notes} {
		if _, err := v6lab(t, "export", dir, "-o", bad); exitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--output: "+bad) {
			t.Errorf("export -o %s: %v", bad, err)
		}
	}
	if b, _ := os.ReadFile(notes); string(b) != "PAR1 is how my notes begin" {
		t.Error("export wrote over a file that only begins with PAR1")
	}
}

func TestBadInputIsAClearError(t *testing.T) {
	l, _ := localServers(t)
	bgFile := filepath.Join(t.TempDir(), "bg.yaml")
	os.WriteFile(bgFile, []byte("name: bg\ncells:\n  - {protocol: http, conns: [1], background: C1B}\n"), 0o644)
	v3File := filepath.Join(t.TempDir(), "v3x.yaml")
	os.WriteFile(v3File, []byte("name: v3x\nwhere: lab\npaths: [ipv4, dual]\ncells:\n  - {protocol: http, conns: [1], tls: true, dialer: v3}\n"), 0o644)
	hostsFile := func(name, lines string) string { // trial9 N2: a where: hosts cell's url that cannot fit a path
		f := filepath.Join(t.TempDir(), name+".yaml")
		os.WriteFile(f, []byte("name: "+name+"\nwhere: hosts\npaths: [ipv4, ipv6]\ncells:\n  - protocol: http\n    conns: [1]\n"+lines), 0o644)
		return f
	}
	v6URL := hostsFile("v6url", "    url: \"https://[::1]:8443/\"\n")
	mappedURL := hostsFile("mapped", "    url: \"http://[::ffff:127.0.0.1]:8080/\"\n")
	v4Resolve := hostsFile("v4resolve", "    url: \"http://www.x.test/\"\n    resolve: [www.x.test=127.0.0.1]\n")
	hostsLoss := hostsFile("hostsloss", "    url: \"http://www.example.test/\"\n    dns_servers: [\"192.0.2.53\"]\n")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "--paths", "ipv5"}, 2, `--paths: path: unknown path "ipv5"`},
		// trial9 N2: the same refused in an experiment file when it is read, by file, line and field.
		{[]string{"run", v6URL, "--dry-run"}, 2, v6URL + ":7: cells[0].url: path ipv4: ::1 is an IPv6 address, which is not looked up: give an IPv4 one, or a name (with resolve: for an address of each family)"},
		{[]string{"run", mappedURL, "--dry-run"}, 2, mappedURL + ":7: cells[0].url: path ipv4: ::ffff:127.0.0.1 is an IPv4-mapped IPv6 address, which is IPv4: give 127.0.0.1"},
		{[]string{"run", v4Resolve, "--dry-run"}, 2, v4Resolve + ":8: cells[0].resolve[0]: path ipv6: www.x.test: resolve: gives it no IPv6 address ([127.0.0.1])"},
		{[]string{"run", v6URL, "--paths", "ipv4", "--dry-run"}, 2, "--paths: ipv4: " + v6URL + "'s cell http (url https://[::1]:8443/) cannot run over it: path ipv4: ::1 is an IPv6 address"},
		{[]string{"run", "--conns", "0"}, 2, "--conns: 0: must be at least 1"},
		{[]string{"run", "--conns", "ten"}, 2, `--conns: "ten" is not a whole number`},
		{[]string{"run", "--runs", "1", "--warmup", "1"}, 2, "--warmup: 1 warm-up runs leave none of the 1 runs to count"},
		{[]string{"run", "--conns", "1,1", "--dry-run"}, 2, "--conns: 1 is listed twice"},
		// trial8 F3: an address of the other family is refused before anything is sent.
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--paths", "ipv4,ipv6", "--runs", "2"}, 2, "path ipv6: 127.0.0.1 is an IPv4 address, which is not looked up: give an IPv6 one, or a name (with --resolve for an address of each family)"},
		{[]string{"probe", "http", "http://[::1]:9/", "--paths", "ipv4", "--runs", "2"}, 2, "path ipv4: ::1 is an IPv6 address, which is not looked up: give an IPv4 one"},
		// trial8 F9: an error the flag's value caused names the flag, not the file's line.
		{[]string{"run", "web2026", "--paths", "ipv4,dual", "--dry-run"}, 2, "--paths: dual: built-in web2026's cell web/3 (http_version 3) cannot run over it: 3 over the dual path: "},
		{[]string{"run", v3File, "--paths", "ipv4,ipv6", "--dry-run"}, 2, "--paths: ipv4,ipv6: no dual path, which " + v3File + "'s cell v3 (dialer v3) needs: v3 races the dual path's families"},
		{[]string{"run", "--conns", "1000000", "--dry-run"}, 2, "--conns: 1000000: want 1 to 100000 connections"},
		{[]string{"run", "--pause", "-1s", "--dry-run"}, 2, "--pause: must not be negative"},
		{[]string{"run", "--pause", "100000h", "--dry-run"}, 2, "--pause: 100000h0m0s is more than 1h0m0s"},
		{[]string{"run", "--timeout", "8760h", "--dry-run"}, 2, "--timeout: 8760h0m0s is more than 2h0m0s"},
		{[]string{"run", "--duration", "100h", "--dry-run"}, 2, "--duration: 100h0m0s is more than 24h0m0s"},
		{[]string{"run", "--spin", "20ms", "--dry-run"}, 2, "--spin: 20ms is more than 10ms"},
		{[]string{"run", "--loopback", "--spin", "1ms", "--results", t.TempDir()}, 1, "spin: the embedded servers run in this process here (loopback)"},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--paths", "ipv4", "--spin", "-1ms"}, 2, "--spin: -1ms is negative"},
		{[]string{"run", "--name", "../x", "--dry-run"}, 2, `experiment: name: "../x" cannot name a result directory`},
		{[]string{"run", "--loss", "NaN", "--dry-run"}, 2, "--loss: NaN% is not a share of packets to drop"},
		{[]string{"run", "--rate", "0.5bit", "--dry-run"}, 2, `--rate: bad rate "0.5bit": below 1 bit/s`},
		{[]string{"run", "--rate", "7k", "--dry-run"}, 2, "lab: rate 7000 bit/s is below 8 kbit/s"},
		{[]string{"tcp", "127.0.0.1", "--paths", "ipv4", "--interval", "0s"}, 2, "--interval: 0s: want at least 10ms"},
		{[]string{"probe", "smtp", "127.0.0.1", "--to", ""}, 2, "--to: is empty: give a mail address"},
		{[]string{"run", "--queue-limit", "1", "--dry-run"}, 2, "lab: link client-r1: queue limit 1 B holds less than two full frames"},
		{[]string{"lab", "up", "--loss", "NaN"}, 2, "--loss: NaN% is not a share of packets to drop"},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--conns", "1,1"}, 2, "--conns: 1 is listed twice"},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--pause", "-1s"}, 2, "--pause: must not be negative"},
		{[]string{"serve", "transport", "--max-tests", "0"}, 2, "--max-tests: 0 is not between 1 and 10000"},
		{[]string{"serve", "transport", "--request-timeout", "0s"}, 2, "--request-timeout: 0s: want more than 0 and at most 1h"},
		{[]string{"run", "--congestion", "Bad!", "--dry-run"}, 2, `lab: "Bad!" is not a congestion control name (cubic, reno, bbr, …)`},
		{[]string{"tcp", "127.0.0.1", "--paths", "ipv4", "--congestion", "nosuchcc"}, 2, `--congestion: congestion control "nosuchcc" is not available in this kernel`},
		{[]string{"lab", "up", "--tunnel", "bpf", "--congestion", "x y"}, 2, `lab: "x y" is not a congestion control name`},
		{[]string{"probe", "dns", "x", "--server", "127.0.0.1", "--mode", "fast"}, 2, `--mode: "fast": want stub or load`},
		{[]string{"run", "--ptb-blackhole", "ipv7", "--dry-run"}, 2, `--ptb-blackhole: "ipv7": want ipv6 (drop ICMPv6 Packet Too Big), ipv4 (drop ICMPv4 fragmentation needed) or both`},
		{[]string{"lab", "up", "--fragments", "all"}, 2, `--fragments: "all": want drop (IPv6 and IPv4 fragments), ipv6 or ipv4`},
		{[]string{"run", "--fragments=", "--dry-run"}, 2, `--fragments: "": want drop`},
		{[]string{"run", "--tcp-mtu-probing", "3", "--dry-run"}, 2, "--tcp-mtu-probing: 3: want 0 (off), 1 (probe once a black hole is detected) or 2 (always probe)"},
		// trial10 T3: every flag that sets the lab is refused where no lab is
		// built (loopback, real hosts), dry run or not, never taken silently.
		{[]string{"run", "--loopback", "--mss-clamp", "--dry-run"}, 2, "--mss-clamp sets the lab, but --loopback: no lab is built, and the run would measure as if it had not been given"},
		{[]string{"run", "--loopback", "--loss", "3", "--dry-run"}, 2, "--loss 3 sets the lab, but --loopback: no lab is built, and the run would measure as if it had not been given"},
		{[]string{"run", "--loopback", "--rate", "10M", "--tunnel-mtu", "1280", "--dry-run"}, 2, "--tunnel-mtu 1280 and --rate 10M set the lab, but --loopback: no lab is built, and the run would measure as if they had not been given"},
		{[]string{"run", "--loopback", "--delay", "10ms", "--tunnel", "sit", "--congestion", "reno", "--results", t.TempDir()}, 2, "--tunnel sit, --delay 10ms and --congestion reno set the lab, but --loopback: no lab is built"},
		{[]string{"run", hostsLoss, "--loss", "3", "--dry-run"}, 2, "--loss 3 sets the lab, but this experiment runs on hosts: no lab is built, and the run would measure as if it had not been given"},
		{[]string{"run", hostsLoss, "--loss", "3", "--results", t.TempDir()}, 2, "--loss 3 sets the lab, but this experiment runs on hosts"},
		{[]string{"probe", "dns", "x", "--server", "127.0.0.1", "--edns", "100"}, 2, "--edns: 100: want a UDP payload size from 512 to 65535 (1232 as DNS Flag Day 2020 advised), or 0 for no EDNS"},
		{[]string{"probe", "dns", "x", "--server", "127.0.0.1", "--mode", "load", "--resend", "1s"}, 2, "--resend: the load engine sends each query once, as dnsperf does"},
		{[]string{"probe", "dns", "x", "--server", "127.0.0.1", "--resend", "5ms"}, 2, "--resend: 5ms: want 10ms to 10s"},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--tls-groups", "quantum"}, 2, `--tls-groups: http: unknown TLS groups "quantum" (want classic or pq)`},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--tls-groups", "pq"}, 2, `--tls-groups: chooses the TLS key exchange, but the url is not https://`},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--tls-resume"}, 2, `--tls-resume: resumes TLS sessions, but the url is not https://`},
		{[]string{"probe", "dns", "x", "--server", "127.0.0.1", "--mode", "load", "--tcp"}, 2, "--mode: the load engine sends over UDP"},
		{[]string{"run", "--loopback", "--paths", "ipv4,6in4", "--results", t.TempDir()}, 2, "6in4 needs the lab"},
		{[]string{"run", "--rate", "fast"}, 2, "bad rate"},
		// A lab-only path is refused by every command that measures off the
		// lab: over [::1] it would be plain ipv6 under another label.
		{[]string{"probe", "http", "http://[::1]:9/", "--paths", "6in4,nat64"}, 2, "--paths: 6in4 needs the lab (its tunnel or translator), but a probe's host has only ipv4, ipv6 and dual"},
		{[]string{"probe", "http", "http://[::1]:9/", "--paths", "ipv6,nat64"}, 2, "--paths: nat64 needs the lab"},
		{[]string{"probe", "dns", "x.test", "--server", "::1", "--paths", "6in4"}, 2, "--paths: 6in4 needs the lab"},
		{[]string{"probe", "ftp", "ftp://[::1]:9/1M", "--paths", "6in4"}, 2, "--paths: 6in4 needs the lab"},
		{[]string{"probe", "smtp", "[::1]:9", "--paths", "nat64"}, 2, "--paths: nat64 needs the lab"},
		{[]string{"probe", "imap", "[::1]:9", "--paths", "6in4"}, 2, "--paths: 6in4 needs the lab"},
		{[]string{"tcp", "::1", "--paths", "nat64"}, 2, "--paths: nat64 needs the lab"},
		{[]string{"udp", "::1", "--paths", "6in4"}, 2, "--paths: 6in4 needs the lab"},
		{[]string{"run", "mitre1999"}, 2, `no built-in experiment "mitre1999" (built in: eyeballs, ipv6only, mitre2004, pmtu, quick, regensburg, rubio, towson2013, transition, web2026)`},
		{[]string{"run", "nosuch.yaml"}, 2, "nosuch.yaml: no such file"},
		{[]string{"run", "--server", "real", "--loopback"}, 2, "real servers run in the lab's server host"},
		{[]string{"run", bgFile, "--loopback"}, 2, "background traffic runs between the lab's generator hosts, but --loopback"},
		{[]string{"run", "towson2013", "--loopback"}, 2, "--loopback: the experiment runs on lab"},
		{[]string{"run", "--server", "apache"}, 2, `--server: "apache" is not embedded or real`},
		{[]string{"serve", "imap", "--users", "0"}, 2, "--users: want 1 to 100000"},
		{[]string{"serve", "imap", "--size", "1G"}, 2, "--size: want 0 to 64M"},
		{[]string{"serve", "http", "--objects", "-1"}, 2, "--objects: -1: want 0 to 256 embedded objects"},
		{[]string{"serve", "http", "--objects", "100000000"}, 2, "--objects: 100000000: want 0 to 256 embedded objects"},
		{[]string{"serve", "http", "--object-size", "lots"}, 2, "--object-size: "},
		{[]string{"serve", "dns"}, 2, "--record is required"},
		{[]string{"traffic", "--to", "x"}, 2, `--to: "x": want ADDR or ADDR:PORT`},
		{[]string{"serve", "ftp", "--listen", "127.0.0.1"}, 2, `"127.0.0.1" is not ADDR:PORT`},
		{[]string{"serve", "transport", "--listen", "127.0.0.1:1", "--listen", "[::1]:2"}, 2, "every address must use the same port"},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--engine", "epoll"}, 2, `--engine: http: unknown engine "epoll" (auto, go, evloop, go-dial)`},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--paths", "dual", "--dialer", "curl"}, 2, `--dialer: "curl": want v6lab or v2 (RFC 8305, the default), v3 (Happy Eyeballs version 3) or go`},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--paths", "dual", "--dialer", "v3", "--min-attempt-delay", "5ms"}, 2, `--min-attempt-delay: 5ms: a subsequent attempt MUST NOT start within 10ms of the previous one`},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--paths", "dual", "--dialer", "v3", "--resolution-delay=-1s"}, 2, `--resolution-delay: -1s: a delay is not negative`},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--paths", "dual", "--dialer", "v3"}, 2, `--dialer: v3 races QUIC and TCP with TLS (HTTP/3, h2)`},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--paths", "ipv4", "--dialer", "v3"}, 2, `--dialer: v3 races the dual path's families, and the cell's paths have no dual`},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--paths", "ipv4", "--whatif"}, 2, `--whatif: times the dual path's families, and the cell's paths have no dual`},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--paths", "dual", "--dialer", "go", "--whatif"}, 2, `--whatif: times v6lab's own race (dialer v2 or v3): Go's dialer's attempts are not visible`},
		{[]string{"serve", "dns", "--record", "www.lab.test=::1", "--https", "www.lab.test=1 . port=8443"}, 2, `--https: dns: HTTPS record for www.lab.test. "1 . port=8443" has no alpn: give alpn=h3,h2`},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--paths", "dual", "--attempt-delay", "soon"}, 2, `invalid argument "soon" for "--attempt-delay" flag`},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--engine", "go-dial"}, 2, `--engine: http: the go-dial engine runs plain http (https needs --engine go)`},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--no-objects", "--engine", "evloop"}, 2, "--engine: http: the evloop engine runs plain http with v6lab's own dialer (https needs --engine go"},
		{[]string{"probe", "smtp", "127.0.0.1:99999"}, 2, `smtp URL "smtp://127.0.0.1:99999": bad port`},
		{[]string{"probe", "smtp", "127.0.0.1", "--size", "-5"}, 2, `--size: "-5": want bytes, such as 4096 or 100K`},
		{[]string{"probe", "smtp", "127.0.0.1", "--size", "65M"}, 2, "--size: 68157440: want 0 to"},
		{[]string{"probe", "imap", "127.0.0.1", "--users", "0"}, 2, "--users: 0: want at least 1"},
		// A value that goes on a protocol's command line cannot hold a
		// line break: it would send the rest as a command of its own.
		{[]string{"probe", "imap", "127.0.0.1", "--password", "x\r\nA2 LOGOUT"}, 2, `--password: "x\r\nA2 LOGOUT" holds a control character (U+000D)`},
		{[]string{"probe", "imap", "127.0.0.1", "--user-format", "u%d\nA2 LOGOUT"}, 2, "--user-format: "},
		{[]string{"probe", "ftp", "ftp://u:p%0d%0aDELE%20x@127.0.0.1/1M"}, 2, "holds a control character"},
		{[]string{"probe", "http", "http://127.0.0.1:9/a%0d%0aX-Injected:%201"}, 2, "holds a control character"},
		{[]string{"probe", "smtp", "127.0.0.1", "--from", "a@b\x00"}, 2, "--from: "},
		{[]string{"tcp", "127.0.0.1", "--paths", "ipv4", "--bottleneck", "fast"}, 2, `--bottleneck: want a rate such as 10M, up to 100G, not "fast"`},
		{[]string{"tcp", "127.0.0.1", "--paths", "ipv4", "--bytes", "lots"}, 2, "--bytes: want an amount"},
		{[]string{"report", t.TempDir(), "--format", "html", "--write"}, 2, "samples.jsonl"},
		{[]string{"run", "../../internal/run/experiment/testdata/invalid-conns.yaml"}, 2, "invalid-conns.yaml:5: cells[0].conns[1]: 0: want 1 to 100000 connections"},
		{[]string{"run", "--scale", "2", "--dry-run"}, 2, "--scale: 2: want more than 0 and at most 1"},
		{[]string{"run", "--print", "nosuch"}, 2, `no built-in experiment "nosuch"`},
		{[]string{"run", "--resume", t.TempDir()}, 2, "no samples.jsonl.zst nor samples.jsonl in it"},
		{[]string{"probe", "http", "ftp://x/"}, 2, "scheme must be http or https"},
		{[]string{"probe", "http", l.URL, "--dns-over", "ipv7"}, 2, `--dns-over: "ipv7" is not path, ipv4 or ipv6`},
		{[]string{"probe", "http", l.URL, "--dns-server", "dns.example"}, 2, `bad DNS server "dns.example"`},
		{[]string{"probe", "dns", "x.test"}, 2, "--server is required"},
		{[]string{"probe", "dns", ""}, 2, "NAME is empty"},
		{[]string{"probe", "smtp", " "}, 2, "HOST[:PORT] is empty"},
		{[]string{"tcp", ""}, 2, "SERVER is empty"},
		{[]string{"probe", "dns", "x.test", "--server", "127.0.0.1", "--paths", "ipv6"}, 2, "path ipv6: path: no IPv6 DNS server"},
		{[]string{"probe", "dns", "x.test", "--server", "127.0.0.1", "--type", "BOGUS", "--paths", "ipv4"}, 2, `unknown record type "BOGUS"`},
		{[]string{"report", "/nonexistent/dir"}, 2, "result: /nonexistent/dir does not exist"},
		{[]string{"report", t.TempDir(), "--format", "xml"}, 2, `--format: "xml" is not text, json, csv or html`},
		{[]string{"compare", t.TempDir()}, 2, "give two result directories, A then B (v6lab compare results/before results/after), not 1 argument"},
		{[]string{"export", t.TempDir(), "--format", "csv"}, 2, `--format: "csv" is not parquet, the one format export writes; the figures per cell as CSV are results.csv in the result directory (v6lab report DIR --format csv prints them)`},
		{[]string{"compare", "/nonexistent/a", "/nonexistent/b"}, 2, "result: /nonexistent/a does not exist"},
		{[]string{"serve", "http", "--listen", "localhost:80"}, 2, `"localhost:80" is not ADDR:PORT`},
		{[]string{"serve", "dns", "--record", "x"}, 2, `bad record "x"`},
		// trial4 F14: the zone was dropped and the AAAA served
		{[]string{"serve", "dns", "--record", "z.lab.test=fe80::1%eth0", "--listen", "127.0.0.1:0"}, 2, `--record: dns: bad record "z.lab.test=fe80::1%eth0": fe80::1%eth0 names a zone (%eth0), which an AAAA record cannot carry`},
		{[]string{"run", "--segment", "3/3", "--dry-run"}, 2, `--segment "3/3": segment 3: the segments of 3 are numbered 0 to 2`},
		{[]string{"run", "--segment", "half", "--dry-run"}, 2, `--segment "half": want I/N, e.g. 0/3`},
		{[]string{"run", "--start-at", "10:00", "--dry-run"}, 2, `--start-at "10:00": not an RFC 3339 time`},
		{[]string{"run", "--start-at", "2000-01-01T00:00:00Z", "--dry-run"}, 2, `--start-at "2000-01-01T00:00:00Z": the whole schedule (`},
		{[]string{"run", "--segment", "0/2", "--shuffle", "--dry-run"}, 2, "--segment with a shuffled order needs --seed"},
		{[]string{"run", "--segment", "0/2", "--loopback", "--dry-run"}, 2, "--segment and --start-at split one experiment across client hosts that measure the same servers, so they need where: hosts; this experiment runs on loopback"},
		{[]string{"run", "--resume", t.TempDir(), "--segment", "0/2"}, 2, "--resume keeps the segment its directory ran"},
		{[]string{"probe", "dns", "x.test", "--server", "127.0.0.1", "--paths", "ipv4", "--sample-every", "0"}, 2, "--sample-every: 0: want 1 (every sample) to 1000000"},
		{[]string{"run", "--sample-every", "10", "--segment", "0/2", "--dry-run"}, 2, "sample_every: 10 with --segment: merge's per-segment figures need every sample's row"},
		{[]string{"run", "pmtu", "--sample-every", "10", "--dry-run"}, 2, "--sample-every: 10, but cell group http-bulk-ptb sets path MTU conditions (ptb_blackhole ipv6; the PMTU tables count every transaction's row)"},
		{[]string{"run", "--resume", t.TempDir(), "--paths", "ipv4", "--conns", "5", "--runs", "3"}, 2, "--resume continues the experiment as its directory recorded it: --conns, --paths, --runs would change it"},
		{[]string{"merge", t.TempDir()}, 2, "no samples file (samples.jsonl.zst or samples.jsonl) in it nor in a directory below it"},
		// HTTP/2 and HTTP/3: each rule names its flag.
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--http-version", "3"}, 2, "--http-version: 3 runs over QUIC, which is always TLS, but the url is http://: give an https:// url"},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--http-version", "4"}, 2, `--http-version: "4" is not an HTTP version v6lab speaks: want 1.1, 2 or 3`},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--http-version", "3", "--engine", "evloop"}, 2, "--engine: http: the evloop engine speaks HTTP/1.1"},
		{[]string{"probe", "http", "http://127.0.0.1:9/", "--http-version", "2", "--engine", "evloop"}, 2, "--engine: http: the evloop engine speaks HTTP/1.1; http_version 2 runs on the go engine (HTTP/2: v6lab's own framing; HTTP/3: quic-go)"},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--zero-rtt"}, 2, "--zero-rtt: sends the first request in QUIC's 0-RTT data: give --http-version 3"},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--http-version", "3", "--zero-rtt"}, 2, "--zero-rtt: needs a session to resume: give --tls-resume too (the first"},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--keepalive"}, 2, "--keepalive: keeps each user's HTTP/2 or HTTP/3 connection: give --http-version 2 or 3 (HTTP/1.1"},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--http-version", "2", "--streams", "4"}, 2, "--streams: 4 shares each user's connection among its transactions: give --keepalive too"},
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--http-verison", "3"}, 2, "unknown flag: --http-verison: did you mean --http-version?"},
		{[]string{"probe", "http"}, 2, "give one URL (v6lab probe http URL; --help has examples), not 0 arguments"},
		// trial6 F18: the first run's new connections would count as kept
		{[]string{"probe", "http", "https://127.0.0.1:9/", "--paths", "ipv4", "--http-version", "2", "--keepalive", "--warmup", "0"}, 2, "--warmup: 0 with keepalive: each user's first transaction opens its connection"},
		{[]string{"probe", "http", "https://[::1]:9/", "--http-version", "3", "--paths", "ipv6,dual"}, 2, "--http-version: 3 over the dual path: its Happy Eyeballs (RFC 8305) races TCP connections, not QUIC: give --dialer v3 (Happy Eyeballs version 3 races QUIC; or measure HTTP/3 over ipv4 and ipv6 alone)"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := v6lab(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != c.code {
				t.Fatalf("err %v (exit %d), want %q (exit %d)", err, exitCode(err), c.want, c.code)
			}
		})
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"probe", "http", "--help"}, {"probe", "dns", "--help"},
		{"serve", "http", "--help"}, {"serve", "dns", "--help"}, {"report", "--help"}, {"compare", "--help"},
		{"tcp", "--help"}, {"udp", "--help"}, {"serve", "transport", "--help"}, {"probe", "ftp", "--help"}, {"serve", "ftp", "--help"}, {"probe", "smtp", "--help"}, {"serve", "smtp", "--help"}, {"probe", "imap", "--help"}, {"serve", "imap", "--help"}, {"traffic", "--help"}, {"serve", "traffic", "--help"},
		{"lab", "--help"}, {"lab", "up", "--help"}} {
		out, err := v6lab(t, args...)
		if err != nil || !strings.Contains(out, "Examples:") {
			t.Errorf("%v: no examples (%v)", args, err)
		}
	}
}

// TestPathsHelpListsDualWhereItRaces: --paths lists the dual path for a
// command whose client races the families, and says it is not one for
// the others (trial7 F8: udp and tcp listed it, "http only").
func TestPathsHelpListsDualWhereItRaces(t *testing.T) {
	for _, c := range []struct {
		args []string
		dual bool
	}{{[]string{"probe", "http"}, true}, {[]string{"udp"}, false}, {[]string{"tcp"}, false}, {[]string{"probe", "dns"}, false}} {
		out, err := v6lab(t, append(c.args, "--help")...)
		i := strings.Index(out, "--paths string")
		if err != nil || i < 0 {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
		line, _, _ := strings.Cut(out[i:], "\n")
		if got := strings.Contains(line, "ipv6, dual (a dual-stack client"); got != c.dual || strings.Contains(line, "only)") ||
			!c.dual && !strings.Contains(line, "(not dual: it races the families by Happy Eyeballs, which only http cells do)") {
			t.Errorf("%v: %s", c.args, line)
		}
	}
}

func TestTCPAndUDPCommands(t *testing.T) {
	srv, err := transport.ListenAndServe(context.Background(), []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	v4, v6 := fmt.Sprintf("127.0.0.1:%d", srv.Port), fmt.Sprintf("[::1]:%d", srv.Port)
	for _, c := range []struct {
		args    []string
		metrics []string
	}{
		{[]string{"tcp", v4, v6, "--time", "300ms", "--interval", "100ms", "--streams", "2", "--bottleneck", "10G"},
			[]string{"throughput_mbps", "retransmits", "rtt_ms", "tcp_efficiency_pct", "transfer_time_ratio"}},
		{[]string{"tcp", v4, v6, "--bytes", "2M", "--mss", "1200", "--window", "64K"}, []string{"throughput_mbps", "mss"}},
		{[]string{"tcp", v4, v6, "-R", "--time", "300ms", "--interval", "100ms", "--omit", "200ms"}, []string{"throughput_mbps", "retransmits", "rtt_ms", "cwnd", "omit_s"}},
		{[]string{"udp", v4, v6, "--time", "300ms", "--rate", "5M", "--size", "1000", "--reverse"},
			[]string{"throughput_mbps", "loss_pct", "jitter_ms", "duplicates", "reordered"}},
		{[]string{"udp", v4, v6, "--time", "300ms", "--rate", "5M", "--size", "1000", "-O", "100ms"},
			[]string{"throughput_mbps", "loss_pct", "jitter_ms", "duplicates", "reordered", "omitted_datagrams"}},
	} {
		root := t.TempDir()
		out, err := v6lab(t, append(c.args, "--runs", "2", "--results", root)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.args, err, out)
		}
		f, s, err := report.Load(onlyDir(t, root))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Cells) != 2 {
			t.Fatalf("%v: %d cells", c.args, len(s.Cells))
		}
		// A trial is timed as iperf3 times it, not as a transaction.
		trialNote := slices.ContainsFunc(f.Header.Notes, func(n string) bool { return strings.HasPrefix(n, "timing ("+c.args[0]+" trials)") })
		if !trialNote || slices.Contains(f.Header.Notes, measure.TimingNote) || slices.Contains(f.Header.Notes, measure.LingerNote) {
			t.Errorf("%v: notes %q: want the trial's timing note and not the transactions'", c.args, f.Header.Notes)
		}
		for _, cell := range s.Cells {
			if cell.Completed != 2 {
				t.Errorf("%v %s: %d completed: %s", c.args, cell.Path, cell.Completed, cell.FirstError)
			}
			for _, m := range c.metrics {
				if cell.Metrics[m] == nil || cell.Metrics[m].N != 2 {
					t.Errorf("%v %s: metric %s missing", c.args, cell.Path, m)
				}
			}
		}
		if !strings.Contains(out, "by interval") {
			t.Errorf("no interval table:\n%s", out)
		}
		if !strings.Contains(out, "transfer time percentiles") || strings.Contains(out, "response time percentiles") || strings.Contains(out, "rate/s") {
			t.Errorf("%v: a trial's percentiles are of its transfer time, with no rate:\n%s", c.args, out)
		}
		// TCP_INFO's columns only where there is TCP_INFO.
		if tcpColumns := strings.Contains(out, "retrans   rtt ms"); tcpColumns != (c.args[0] == "tcp") {
			t.Errorf("%v: the interval table's TCP columns shown: %v\n%s", c.args, tcpColumns, out)
		}
		// Two warm-up intervals per path; one where a loaded machine woke
		// the interval timer late, past the warm-up's end.
		if n := strings.Count(out, "(omitted)"); slices.Contains(c.args, "--omit") && (n < 2 || n > 2*2) {
			t.Errorf("the warm-up's intervals are not marked:\n%s", out)
		}
		if c.args[0] == "udp" && s.Cells[0].Metrics["loss_pct"].Mean > 5 {
			t.Errorf("udp loss on loopback %g%%", s.Cells[0].Metrics["loss_pct"].Mean)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tcp", "1.2.3.4.5"}, `server "1.2.3.4.5": want ADDR or ADDR:PORT`},
		{[]string{"tcp", v4}, "path ipv6: no IPv6 server address"},
		{[]string{"tcp", v4, "--paths", "ipv4", "--streams", "500"}, "--streams: 500: want 1 to 128"},
		{[]string{"tcp", v4, "--paths", "ipv4", "--reverse", "--time", "1h", "--interval", "10ms"}, "360000 intervals, at most 3600"},
		{[]string{"tcp", v4, "--paths", "ipv4", "--reverse", "--congestion", "Cubic!"}, `congestion "Cubic!"`},
		{[]string{"udp", v4, "--paths", "ipv4", "--size", "8"}, "--size: 8: want 32 to 65507"},
		{[]string{"udp", v4, "--paths", "ipv4", "--rate", "fast"}, `--rate: want a rate such as 10M, up to 100G, not "fast"`},
		{[]string{"tcp", v4, "--paths", "ipv4", "--window", "lots"}, `--window: want bytes up to 256M`},
		{[]string{"tcp", v4, "--paths", "ipv4", "--omit", "2s", "--bytes", "10M"}, "--omit: a warm-up is left out of a trial bound by its time"},
		{[]string{"udp", v4, "--paths", "ipv4", "--omit", "-1s"}, "--omit: -1s: want 0 to"},
	} {
		if _, err := v6lab(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != 2 {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

func TestExperimentWithTransportCells(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "tr.yaml")
	os.WriteFile(exp, []byte(`name: tr
where: loopback
runs: 2
warmup: 0
pause: 0s
cells:
  - protocol: tcp
    time: 300ms
    interval: 100ms
  - protocol: udp
    time: 300ms
    rate: 5M
  - protocol: ftp
    file: 100K
    conns: [3]
  - protocol: smtp
    size: 1000
    conns: [4]
  - protocol: imap
    conns: [5]
  - protocol: http
    label: http-file
    file: 3M
    conns: [1]
  - {protocol: http, label: http-curl, file: 3M, client: curl, conns: [1]}
  - {protocol: ftp, label: ftp-wget, file: 3M, client: wget, conns: [1]}
`), 0o644)
	root := t.TempDir()
	out, err := v6lab(t, "run", exp, "--results", root)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"TCP: transport figures", "UDP: transport figures", "TCP: transfer time per trial"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	_, s, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cells) != 16 {
		t.Fatalf("%d cells", len(s.Cells))
	}
	for _, c := range s.Cells {
		if c.Protocol == "http-file" || c.Protocol == "http-curl" || c.Protocol == "ftp-wget" {
			if c.Completed != 2 || c.Metrics["file_bytes"] == nil || c.Metrics["file_bytes"].Mean < 3<<20 || c.Metrics["mbytes_per_s"] == nil {
				t.Errorf("http file: %d completed, metrics %v (%s)", c.Completed, c.Metrics, c.FirstError)
			}
			continue
		}
		if c.Protocol == "ftp" || c.Protocol == "smtp" || c.Protocol == "imap" {
			if c.Completed != 2*c.Conns || c.Failed != 0 {
				t.Errorf("ftp/%s: %d completed (%s)", c.Path, c.Completed, c.FirstError)
			}
			continue
		}
		if c.Completed != 2 || c.Metrics["throughput_mbps"] == nil || c.Metrics["throughput_mbps"].Mean <= 0 {
			t.Errorf("%s/%s: %d completed, metrics %v (%s)", c.Protocol, c.Path, c.Completed, c.Metrics, c.FirstError)
		}
	}
}

// TestDryRunNamesTheHosts: a dry run of an experiment against real hosts
// shows where each cell group sends its transactions.
func TestDryRunNamesTheHosts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hosts.yaml")
	os.WriteFile(file, []byte(`name: h
where: hosts
paths: [ipv4, ipv6]
cells:
  - {protocol: http, conns: [1], url: "http://www.example.test/", dns_servers: ["192.0.2.53"]}
  - {protocol: dns, conns: [1], dns_servers: ["192.0.2.53"], query: www.example.test}
`), 0o644)
	out, err := v6lab(t, "run", file, "--dry-run")
	if err != nil || !strings.Contains(out, "TARGET") || !strings.Contains(out, "http://www.example.test/ (names from 192.0.2.53)") ||
		!strings.Contains(out, "www.example.test at 192.0.2.53") {
		t.Fatalf("--dry-run: %v\n%s", err, out)
	}
	// A lab run's cells have no target of their own: no column.
	if out, err := v6lab(t, "run", "--loopback", "--dry-run"); err != nil || strings.Contains(out, "TARGET") {
		t.Errorf("loopback dry run: %v\n%s", err, out)
	}
}

// TestProbeResolveKeepsTheName: --resolve NAME=ADDR,ADDR probes a name no
// DNS knows: each path connects to the address of its family, with no
// lookup (resolve time 0), and the report says the names were given.
func TestProbeResolveKeepsTheName(t *testing.T) {
	l, _ := localServers(t)
	u, _ := url.Parse(l.URL)
	target := "http://www.not-in-dns.test:" + u.Port() + "/"
	root := t.TempDir()
	out, err := v6lab(t, "probe", "http", target, "--resolve", "www.not-in-dns.test=127.0.0.1,::1", "--paths", "ipv4,ipv6",
		"--conns", "1", "--runs", "3", "--results", root)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "100.0% (2/2)") || !strings.Contains(out, "were given, not looked up") {
		t.Errorf("report:\n%s", out)
	}
	f, _, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.Samples {
		if !s.OK() || s.ResolveNS > int64(time.Millisecond) {
			t.Errorf("%s: %s, resolve %v", s.Path, s.Err, time.Duration(s.ResolveNS))
		}
	}
	for args, want := range map[string]string{
		"--resolve=www.x.test":                    `--resolve: "www.x.test": want NAME=ADDR[,ADDR]`,
		"--resolve=www.x.test=300.1.1.1":          `--resolve: "300.1.1.1" is not an address`,
		"--resolve=www.not-in-dns.test=127.0.0.1": "path ipv6: www.not-in-dns.test: --resolve gives it no IPv6 address ([127.0.0.1]): add one, or leave ipv6 out of the paths",
	} {
		if _, err := v6lab(t, "probe", "http", target, args, "--paths", "ipv4,ipv6"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
