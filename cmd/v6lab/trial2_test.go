package main

// What a second new user's trial of main found, each held by a test.

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/proto/all"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/report"
	"v6lab/internal/run/host"
)

// TestProbeNameCheckedBeforeAnythingIsCreated: a probe's --name is held
// to the result directory rule before any directory is made (../esc/x
// made esc/x-…; a newline made a directory; /abs gave a mkdir error).
func TestProbeNameCheckedBeforeAnythingIsCreated(t *testing.T) {
	root := t.TempDir()
	results := filepath.Join(root, "r2")
	os.Mkdir(results, 0o755)
	os.Mkdir(filepath.Join(root, "esc"), 0o755)
	for _, name := range []string{"../esc/x", "a\nb", "/abs/path"} {
		args := []string{"probe", "http", "http://127.0.0.1:9/", "--paths", "ipv4", "--conns", "1", "--runs", "2", "--results", results, "--name", name}
		_, err := v6lab(t, args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "--name: ") || !strings.Contains(err.Error(), "cannot name a result directory") {
			t.Errorf("--name %q: %v (exit %d)", name, err, exitCode(err))
		}
	}
	for _, dir := range []string{results, filepath.Join(root, "esc")} {
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s holds %d entries after refused names, first %q", dir, len(ents), ents[0].Name())
		}
	}
}

// TestFlagErrorsNameTheFlag: a bad value given by a flag is said of that
// flag, in every measuring command (probe said "experiment: runs: … (cell
// group http)", "experiment: conns[0]", "lab: loss -1% …").
func TestFlagErrorsNameTheFlag(t *testing.T) {
	h := []string{"probe", "http", "http://127.0.0.1:9/", "--paths", "ipv4"}
	cases := []struct {
		args []string
		want string
	}{
		{append(h, "--runs", "-1"), "--runs: -1: want 1 to 10000 runs per cell"},
		{append(h, "--warmup", "-1"), "--warmup: -1: must not be negative"},
		{append(h, "--runs", "2", "--warmup", "2"), "--warmup: 2 warm-up runs leave none of the 2 runs to count"},
		{append(h, "--timeout", "3h"), "--timeout: 3h0m0s is more than 2h0m0s"},
		{append(h, "--pause", "2h"), "--pause: 2h0m0s is more than 1h0m0s"},
		{append(h, "--duration", "25h"), "--duration: 25h0m0s is more than 24h0m0s"},
		{append(h, "--conns", "100001"), "--conns: 100001: want 1 to 100000 connections"},
		{append(h, "--conns", "0"), "--conns: 0: must be at least 1"},
		{[]string{"probe", "dns", "x.test", "--server", "127.0.0.1", "--paths", "dual"}, "--paths: dual races the families"},
		{[]string{"tcp", "127.0.0.1", "--paths", "ipv4", "--runs", "0"}, "--runs: 0: want 1 to 10000"},
		{[]string{"udp", "127.0.0.1", "--paths", "ipv4", "--timeout", "3h"}, "--timeout: 3h0m0s is more than 2h0m0s"},
		{[]string{"probe", "dns", "x.test", "--server", "127.0.0.1", "--pause", "-1s"}, "--pause: must not be negative"},
		{[]string{"run", "--runs", "-1", "--dry-run"}, "--runs: -1: want 1 to 10000 runs per cell"},
		{[]string{"run", "--loss", "-1", "--dry-run"}, "--loss: -1% is not a share of packets to drop"},
		{[]string{"run", "--delay", "-1s", "--dry-run"}, "--delay: -1s: must not be negative"},
		{[]string{"run", "--jitter", "-1s", "--dry-run"}, "--jitter: -1s: must not be negative"},
		{[]string{"lab", "up", "--loss", "-1"}, "--loss: -1% is not a share of packets to drop"},
		// One loss rule: --loss 100 was accepted where a cell's loss: 100 was not.
		{[]string{"run", "--loss", "100", "--dry-run"}, "--loss: 100% is not a share of packets to drop: want a percentage from 0 to less than 100"},
	}
	for _, c := range cases {
		_, err := v6lab(t, c.args...)
		if exitCode(err) != 2 || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v (exit %d), want %q", c.args, err, exitCode(err), c.want)
		}
	}
}

// TestProbeMailTakesTheURLForm: probe smtp and imap take the form an
// experiment file's url: has (smtp://HOST:PORT), which was read as the
// host "smtp" and measured; another scheme, a path or a user is refused.
func TestProbeMailTakesTheURLForm(t *testing.T) {
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	ss, err := smtp.Listen(context.Background(), lo, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	is, err := imap.Listen(context.Background(), lo, 0, 10, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	for _, c := range [][]string{
		{"smtp", fmt.Sprintf("smtp://127.0.0.1:%d", ss.Port)},
		{"imap", fmt.Sprintf("imap://127.0.0.1:%d", is.Port), "--users", "10"},
	} {
		root := t.TempDir()
		args := append([]string{"probe"}, c...)
		if out, err := v6lab(t, append(args, "--paths", "ipv4", "--conns", "1", "--runs", "2", "-q", "--results", root)...); err != nil {
			t.Errorf("%s: %v\n%s", c[1], err, out)
			continue
		}
		_, sum, err := report.Load(onlyDir(t, root))
		if err != nil || len(sum.Cells) != 1 || sum.Cells[0].Failed != 0 {
			t.Errorf("%s: %v %+v", c[1], err, sum)
		}
	}
	for _, bad := range []string{"http://127.0.0.1:25", "smtp://127.0.0.1:25/inbox", "smtp://u:secret@127.0.0.1:25", "imap://x"} {
		root := t.TempDir()
		_, err := v6lab(t, "probe", "smtp", bad, "--paths", "ipv4", "--results", root)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "want smtp://host[:port]") || strings.Contains(err.Error(), "secret") {
			t.Errorf("probe smtp %s: %v (exit %d)", bad, err, exitCode(err))
		}
		if ents, _ := os.ReadDir(root); len(ents) != 0 {
			t.Errorf("probe smtp %s wrote a result", bad)
		}
	}
}

// TestDNSNamesRefusedUpFront: a query name DNS cannot carry is refused
// before anything is measured or written, on the command line and in a
// file (--dry-run passed "www.lab.test\r\n"), and serve dns refuses such
// a record.
func TestDNSNamesRefusedUpFront(t *testing.T) {
	root := t.TempDir()
	for name, want := range map[string]string{
		strings.Repeat("a", 300): "300 characters (at most 253)",
		"www\x01lab.test":        `holds '\x01' at byte 3`,
		";id":                    `";id" is not a DNS name: it holds ';' at byte 0`, // review: was accepted
		"www.lab.test/x":         `holds '/' at byte 12`,
	} {
		_, err := v6lab(t, "probe", "dns", name, "--server", "127.0.0.1:9", "--paths", "ipv4", "--results", root)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "query: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("probe dns %.40q: %v (exit %d)", name, err, exitCode(err))
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 0 {
		t.Errorf("refused queries wrote %d results", len(ents))
	}
	file := filepath.Join(t.TempDir(), "q.yaml")
	os.WriteFile(file, []byte("name: q\nwhere: loopback\ncells:\n  - protocol: dns\n    conns: [1]\n    query: \"www.lab.test\\r\\n\"\n"), 0o644)
	if _, err := v6lab(t, "run", file, "--dry-run"); exitCode(err) != 2 || !strings.Contains(err.Error(), `q.yaml:6: cells[0].query: "www.lab.test\r\n" is not a DNS name`) {
		t.Errorf("a query with CR LF in a file: %v", err)
	}
	if err := v6labFor(5*time.Second, "serve", "dns", "--listen", "127.0.0.1:0", "--record", "www\r.x=1.2.3.4"); exitCode(err) != 2 || !strings.Contains(err.Error(), "--record: ") || !strings.Contains(err.Error(), "is not a DNS name") {
		t.Errorf("serve dns --record with CR: %v", err)
	}
}

// v6labFor runs the command line in-process for at most d (a server that
// should have refused its settings would serve until then).
func v6labFor(d time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	root := newRoot()
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// TestOneRuleWhicheverWay: run --paths, the flag that overrides every
// cell group's paths, applies before the rules of paths (a cell naming
// 6in4 in a loopback file refused --paths ipv4), and its own errors name
// it; a probe past the open-file limit is bad input (exit 2) as a run's.
func TestOneRuleWhicheverWay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "h1.yaml")
	os.WriteFile(file, []byte("name: h1\nwhere: loopback\ncells:\n  - protocol: http\n    conns: [1]\n    paths: [ipv4, 6in4]\n  - protocol: dns\n    conns: [1]\n    paths: [ipv4, dual]\n"), 0o644)
	if out, err := v6lab(t, "run", file, "--paths", "ipv4", "--dry-run"); err != nil || !strings.Contains(out, "http/ipv4/1#0") || strings.Contains(out, "6in4") {
		t.Errorf("run h1.yaml --paths ipv4: %v\n%s", err, out)
	}
	for paths, want := range map[string]string{
		"ipv4,6in4": "--paths: 6in4 needs the lab (its tunnel or translator), but loopback has only ipv4, ipv6 and dual",
		"ipv4,dual": "--paths: dual races the families by Happy Eyeballs, which only http cells do, not dns",
	} {
		if _, err := v6lab(t, "run", file, "--paths", paths, "--dry-run"); exitCode(err) != 2 || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("run h1.yaml --paths %s: %v, want %q", paths, err, want)
		}
	}
	// Without --paths the file's own are refused where it names them.
	if _, err := v6lab(t, "run", file, "--dry-run"); exitCode(err) != 2 || !strings.Contains(err.Error(), "h1.yaml:6: cells[0].paths[1]: 6in4 needs the lab") {
		t.Errorf("run h1.yaml: %v", err)
	}
	if host.NoFileHard() >= 100000+256 {
		t.Skipf("the hard open-file limit (%d) holds 100000 connections", host.NoFileHard())
	}
	root := t.TempDir()
	if _, err := v6lab(t, "probe", "http", "http://127.0.0.1:9/", "--paths", "ipv4", "--conns", "100000", "--results", root); exitCode(err) != 2 || !strings.Contains(err.Error(), "--conns: 100000 simultaneous connections need about") {
		t.Errorf("probe --conns 100000: %v (exit %d)", err, exitCode(err))
	}
}

// TestSmallRulesOfTheTrial: the low findings of the trial, each refused
// up front with what is wrong (each was accepted, or said wrongly).
func TestSmallRulesOfTheTrial(t *testing.T) {
	h := []string{"probe", "http", "http://www.x.test:9/", "--paths", "ipv4"}
	cases := []struct {
		args []string
		want string
	}{
		{append(h, "--conns", "1,,2"), `--conns: "1,,2": entry 2 is empty (a comma too many)`},
		{append(h, "--conns", "1,2,"), `--conns: "1,2,": entry 3 is empty`},
		{[]string{"probe", "http", "http://www.x.test:9/", "--paths", "ipv4,,ipv6"}, `--paths: path: "ipv4,,ipv6": entry 2 is empty`},
		{[]string{"probe", "http", "http://www.x.test:9/", "--paths", "ipv4,dual", "--attempt-delay", "0s"}, "--attempt-delay: 0s: want 10ms to 2s"},
		{append(h, "--resolve", "x=192.0.2.1"), `--resolve: "x" names no host of the target: its url's host is www.x.test`},
		{append(h, "--resolve", "www.x.test\r\n=192.0.2.1"), `--resolve: "www.x.test`}, // the flag's CSV reading drops the \r
		{[]string{"serve", "transport", "--request-timeout", "0s"}, "--request-timeout: 0s: want more than 0 and at most 1h"},
		{[]string{"tcp", "127.0.0.1", "--paths", "6in4"}, "--paths: 6in4 needs the lab (its tunnel or translator), but a probe's host has only ipv4 and ipv6 ("},
		{[]string{"probe", "http", "http://[::ffff:127.0.0.1]:18180/", "--paths", "ipv4"}, "path ipv4: ::ffff:127.0.0.1 is an IPv4-mapped IPv6 address, which is IPv4: give 127.0.0.1"},
		{[]string{"probe", "http", "http://[::ffff:127.0.0.1]:18180/", "--paths", "ipv6"}, "path ipv6: ::ffff:127.0.0.1 is an IPv4-mapped IPv6 address, which is IPv4: give an IPv6 address, or a name"},
	}
	for _, c := range cases {
		args := c.args
		if args[0] != "serve" { // a regression writes where the test cleans up
			args = append(args, "--results", t.TempDir())
		}
		err := v6labFor(10*time.Second, args...)
		if exitCode(err) != 2 || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v (exit %d), want %q", c.args, err, exitCode(err), c.want)
		}
	}
	file := filepath.Join(t.TempDir(), "ad.yaml")
	os.WriteFile(file, []byte("name: ad\nwhere: loopback\npaths: [ipv4, dual]\ncells:\n  - protocol: http\n    conns: [1]\n    attempt_delay: 0s\n"), 0o644)
	if _, err := v6lab(t, "run", file, "--dry-run"); exitCode(err) != 2 || !strings.Contains(err.Error(), "ad.yaml:7: cells[0].attempt_delay: 0s: want 10ms to 2s") {
		t.Errorf("attempt_delay: 0s: %v", err)
	}
}

// TestDNSExamplesWorkTogether: every name probe dns's examples ask of a
// local server is one serve dns's example serves (they asked
// www.example.test of a server serving www.lab.test), or is asked to
// fail with --expect nxdomain.
func TestDNSExamplesWorkTogether(t *testing.T) {
	serve, probe := all.MustGet("dns").Server.Command.Example, all.MustGet("dns").Command.Example
	for _, line := range strings.Split(probe, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "v6lab" || !strings.Contains(line, ":5353") {
			continue
		}
		name := f[3]
		if served := strings.Contains(serve, "--record "+name+"="); served == strings.Contains(line, "--expect nxdomain") {
			t.Errorf("probe dns example asks %s (served by serve dns's example: %v): %s", name, served, line)
		}
	}
}
