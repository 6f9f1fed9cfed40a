package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"v6lab/internal/lab"
	"v6lab/internal/report"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// TestASplitRunMergesToOneRun: against one kept lab's servers, three
// segment processes started together (--segment I/3, one --start-at) and
// merged give the cells, users and completions of one unsplit run of the
// same experiment, and a summary whose figures are those of the pooled
// samples.
func TestASplitRunMergesToOneRun(t *testing.T) {
	requireLab(t)
	bin := buildBinary(t)
	name := fmt.Sprintf("s%d", os.Getpid()%100000)
	ns := func(role string) string { return lab.Prefix + name + "-" + role }
	if out, err := exec.Command(bin, "lab", "up", "--name", name).CombinedOutput(); err != nil {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command(bin, "lab", "down", "--name", name).Run() })
	v4, v6 := lab.Plan().Server(path.IPv4), lab.Plan().Server(path.IPv6)
	startServer(t, 2, "ip", "netns", "exec", ns("server"), bin, "serve", "http", "--listen", v4.String()+":80", "--listen", "["+v6.String()+"]:80")
	startServer(t, 2, "ip", "netns", "exec", ns("server"), bin, "serve", "dns", "--listen", v4.String()+":53", "--listen", "["+v6.String()+"]:53",
		"--record", "www.lab.test="+v4.String(), "--record", "www.lab.test="+v6.String())
	dir := t.TempDir()
	exp := filepath.Join(dir, "web.yaml")
	os.WriteFile(exp, []byte(fmt.Sprintf(`name: web
where: hosts
runs: 2
warmup: 0
timeout: 1s
pause: 0s
cells:
  - protocol: http
    url: http://www.lab.test/
    dns_servers: [%s, "%s"]
    conns: [2, 7]
`, v4, v6)), 0o644)
	client := []string{"ip", "netns", "exec", ns("client"), bin, "run", exp, "-q"}
	// The three segments, started together on one schedule.
	start := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	var segs []*exec.Cmd
	for i := range 3 {
		c := exec.Command(client[0], append(client[1:], "--segment", fmt.Sprintf("%d/3", i), "--start-at", start, "--results", filepath.Join(dir, "vol"))...)
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		segs = append(segs, c)
	}
	for i, c := range segs {
		if err := c.Wait(); err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
	}
	out, err := exec.Command(bin, "merge", filepath.Join(dir, "vol"), "-q", "--results", filepath.Join(dir, "merged")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "merged 3 segments: ") {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	merged := onlyDir(t, filepath.Join(dir, "merged"))
	if out, err := exec.Command(client[0], append(client[1:], "--results", filepath.Join(dir, "whole"))...).CombinedOutput(); err != nil {
		t.Fatalf("unsplit run: %v\n%s", err, out)
	}
	whole := onlyDir(t, filepath.Join(dir, "whole"))
	_, ms, err := report.Load(merged)
	if err != nil {
		t.Fatal(err)
	}
	_, ws, err := report.Load(whole)
	if err != nil {
		t.Fatal(err)
	}
	cells := func(s *report.Summary) string {
		var out []string
		for _, c := range s.Cells {
			out = append(out, fmt.Sprintf("%s/%s/%d: %d ok %d failed", c.Protocol, c.Path, c.Conns, c.Completed, c.Failed))
		}
		return strings.Join(out, ", ")
	}
	if cells(ms) != cells(ws) || !strings.Contains(cells(ms), "http/ipv6/7: 14 ok 0 failed") {
		t.Errorf("merged cells %s\nunsplit cells %s", cells(ms), cells(ws))
	}
	// Every user of every run once, in the merged samples as in the
	// unsplit run's.
	if u, w := usersPerRun(t, merged), usersPerRun(t, whole); u != w {
		t.Errorf("users per run: merged %s, unsplit %s", u, w)
	}
	// The merged figures are the pooled samples': mean of run means.
	for _, c := range ms.Cells {
		want := pooledMean(t, filepath.Join(dir, "vol"), c.Path, c.Conns)
		if c.MeanMS == nil || math.Abs(*c.MeanMS-want) > 1e-9 {
			t.Errorf("%s/%d: merged mean %v, pooled samples' %v", c.Path, c.Conns, c.MeanMS, want)
		}
	}
	if len(ms.Segments) != 3 || ms.Segments[0].Completed+ms.Segments[1].Completed+ms.Segments[2].Completed != 2*2*(2+7) {
		t.Errorf("segments %+v", ms.Segments)
	}
}

// startServer starts a server process and waits for its first n
// "serving" lines, which it returns; the process ends with the test.
func startServer(t *testing.T, n int, args ...string) []string {
	t.Helper()
	c := exec.Command(args[0], args[1:]...)
	stdout, _ := c.StdoutPipe()
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	sc := bufio.NewScanner(stdout)
	var serving []string
	for len(serving) < n && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "serving ") {
			serving = append(serving, sc.Text())
		}
	}
	if len(serving) < n {
		t.Fatalf("%v: the server did not start", args)
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return serving
}

// usersPerRun lists, per cell and run, the users that reported.
func usersPerRun(t *testing.T, dir string) string {
	t.Helper()
	f := readSamplesFile(t, dir)
	users := map[string][]int{}
	for _, s := range f.Samples {
		k := fmt.Sprintf("%s#%d", s.Cell, s.Run)
		users[k] = append(users[k], s.User)
	}
	var out []string
	for k, us := range users {
		seen := map[int]bool{}
		for _, u := range us {
			seen[u] = true
		}
		out = append(out, fmt.Sprintf("%s:%d/%d", k, len(seen), len(us)))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// pooledMean computes a cell's mean of run means from every segment's
// samples, apart from the merge.
func pooledMean(t *testing.T, vol, p string, conns int) float64 {
	t.Helper()
	sum, n := map[int]float64{}, map[int]int{}
	dirs, _ := filepath.Glob(filepath.Join(vol, "*"))
	for _, d := range dirs {
		for _, s := range readSamplesFile(t, d).Samples {
			if s.Path == p && s.Conns == conns && s.OK() {
				sum[s.Run] += float64(s.TotalNS) / 1e6
				n[s.Run]++
			}
		}
	}
	var total float64
	for r := range sum {
		total += sum[r] / float64(n[r])
	}
	return total / float64(len(sum))
}

func readSamplesFile(t *testing.T, dir string) *result.File {
	t.Helper()
	f, _, err := report.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
