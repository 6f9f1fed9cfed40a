package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/report"
)

// TestProbeHTTP2Streams: probe --http-version 2 --keepalive --streams 4
// against serve http --tls on both loopbacks: 2 connections a path (the
// users), 4 transactions at once on each; every sample is one of the 2
// users', over its path's family, and each user's first transaction of
// the run opened its connection, the rest say they shared it.
func TestProbeHTTP2Streams(t *testing.T) {
	port, pin := serveTLSOnLoopbacks(t, "--objects", "2")
	root := t.TempDir()
	o, err := v6lab(t, "probe", "http", fmt.Sprintf("https://www.serve.test:%d/", port), "--http-version", "2", "--keepalive", "--streams", "4",
		"--paths", "ipv4,ipv6", "--resolve", "www.serve.test=127.0.0.1,::1", "--tls-pin", pin,
		"--conns", "2", "--runs", "1", "--warmup", "0", "--duration", "300ms", "--results", root)
	if err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	f, _, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	opened := map[string]int{}
	shared := 0
	for _, s := range f.Samples {
		if !s.OK() || s.Conns != 2 || s.User < 0 || s.User > 1 {
			t.Fatalf("%s user %d of %d: %s", s.Path, s.User, s.Conns, s.Err)
		}
		if ap, err := netip.ParseAddrPort(s.Remote); err != nil || ap.Addr().Unmap().Is4() != (s.Path == "ipv4") {
			t.Errorf("%s: remote %q (%v)", s.Path, s.Remote, err)
		}
		switch {
		case !s.Kept:
			opened[s.Path]++
		case strings.Contains(s.Marker, "2 objects, h2, kept connection shared by 4"):
			shared++
		default:
			t.Errorf("a kept transaction's marker %q", s.Marker)
		}
	}
	if opened["ipv4"] != 2 || opened["ipv6"] != 2 || shared < 40 {
		t.Errorf("connections opened by path %v, %d transactions on shared ones\n%s", opened, shared, o)
	}
}

// TestDryRunCountsStreams (trial11 MEDIUM 7): the plan counts a streams
// group's transactions as its users run them: streams a user at once.
func TestDryRunCountsStreams(t *testing.T) {
	exp := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(exp, []byte(`name: s
where: loopback
runs: 3
cells:
  - protocol: http
    http_version: 2
    keepalive: true
    streams: 4
    paths: [ipv4]
    conns: [2]
  - protocol: http
    label: one
    http_version: 2
    keepalive: true
    paths: [ipv4]
    conns: [2]
`), 0o644)
	out, err := v6lab(t, "run", exp, "--dry-run")
	if err != nil || !strings.Contains(out, "30 transactions") {
		t.Fatalf("%v\n%s", err, out)
	}
}
