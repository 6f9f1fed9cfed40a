package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"v6lab/internal/report"
	"v6lab/internal/testutil"
)

// TestProbeHTTPVersionsAgainstServeHTTP: v6lab serve http --tls on both
// loopbacks, then probe http https://HOST/ --http-version 2 and 3 --paths
// ipv4,ipv6, the certificate the server printed pinned: every transaction
// speaks the version asked (h2 by ALPN; h3 over QUIC on the port's UDP) to
// the address of the path's family, the page and its objects.
func TestProbeHTTPVersionsAgainstServeHTTP(t *testing.T) {
	port, pin := serveTLSOnLoopbacks(t)
	for version, want := range map[string]string{"2": "h2", "3": "h3"} {
		root := t.TempDir()
		o, err := v6lab(t, "probe", "http", fmt.Sprintf("https://www.serve.test:%d/", port), "--http-version", version,
			"--paths", "ipv4,ipv6", "--resolve", "www.serve.test=127.0.0.1,::1", "--tls-pin", pin,
			"--conns", "1,4", "--runs", "2", "--warmup", "0", "--results", root)
		if err != nil {
			t.Fatalf("--http-version %s: %v\n%s", version, err, o)
		}
		f, _, err := report.Load(onlyDir(t, root))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range f.Samples {
			n++
			family := "127.0.0.1:"
			if s.Path == "ipv6" {
				family = "[::1]:"
			}
			if !s.OK() || s.Negotiated != want || !strings.HasPrefix(s.Marker, "200 OK, 4 objects, "+want) || !strings.HasPrefix(s.Remote, family) {
				t.Errorf("--http-version %s, %s/%d: %q spoke %q (%s) to %s", version, s.Path, s.Conns, s.Err, s.Negotiated, s.Marker, s.Remote)
			}
		}
		if n != 2*2*(1+4) {
			t.Errorf("--http-version %s: %d samples", version, n)
		}
	}
}

// serveTLSOnLoopbacks runs v6lab serve http --tls (and extra) on 127.0.0.1
// and [::1] at a free port until the test ends; it returns the port and the
// certificate's pin once both sockets serve.
func serveTLSOnLoopbacks(t *testing.T, extra ...string) (int, string) {
	t.Helper()
	port := testutil.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	srv := newRoot()
	out := &syncBuffer{}
	srv.SetOut(out)
	srv.SetArgs(append([]string{"serve", "http", "--tls", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--listen", fmt.Sprintf("[::1]:%d", port)}, extra...))
	done := make(chan error, 1)
	go func() { done <- srv.ExecuteContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	re := regexp.MustCompile(`SHA-256 ([0-9a-f]{64})`)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil && strings.Count(out.String(), "serving") == 2 {
			return port, m[1]
		}
	}
	t.Fatalf("serve http --tls did not start: %q", out.String())
	return 0, ""
}
