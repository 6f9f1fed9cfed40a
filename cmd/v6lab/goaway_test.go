package main

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"v6lab/internal/report"
)

// TestProbeHTTP2KeptAgainstServeKeepaliveRequests (trial6 F1): serve http
// --tls --keepalive-requests 5 ends each HTTP/2 connection with GOAWAY
// (NO_ERROR) after its fifth request, as nginx does; a page of 3 objects
// is 4 requests, so every second kept transaction's objects are not
// processed on its connection (net/http's GOAWAY names the streams it
// read before it was sent: 1 to 3 of them). probe --http-version 2 --keepalive sends
// them again on a new connection: every transaction completes, those say
// so, and the rest run on kept connections, over either family (the new
// connection is dialed pinned to the first one's).
func TestProbeHTTP2KeptAgainstServeKeepaliveRequests(t *testing.T) {
	port, pin := serveTLSOnLoopbacks(t, "--keepalive-requests", "5", "--objects", "3")
	root := t.TempDir()
	o, err := v6lab(t, "probe", "http", fmt.Sprintf("https://www.serve.test:%d/", port), "--http-version", "2", "--keepalive",
		"--paths", "ipv4,ipv6", "--resolve", "www.serve.test=127.0.0.1,::1", "--tls-pin", pin,
		"--conns", "1", "--runs", "2", "--warmup", "0", "--duration", "300ms", "--results", root)
	if err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	f, _, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	n, again, kept := 0, map[string]int{}, 0
	for _, s := range f.Samples {
		n++
		if ap, err := netip.ParseAddrPort(s.Remote); err != nil || ap.Addr().Unmap().Is4() != (s.Path == "ipv4") {
			t.Errorf("run %d of %s: remote %q (%v)", s.Run, s.Path, s.Remote, err)
		}
		if !s.OK() {
			t.Errorf("run %d: %s", s.Run, s.Err)
		}
		if s.Again > 0 {
			again[s.Path]++
			if s.Again > 3 || !strings.Contains(s.Marker, fmt.Sprintf(" %d request", s.Again)) || !strings.Contains(s.Marker, " again on a new connection after GOAWAY") {
				t.Errorf("run %d: again %d, marker %q", s.Run, s.Again, s.Marker)
			}
		}
		if s.Kept {
			kept++
		}
	}
	if n < 8 || again["ipv4"] == 0 || again["ipv6"] == 0 || kept == 0 {
		t.Errorf("%d samples, with requests again %v, %d kept\n%s", n, again, kept, o)
	}
	if !strings.Contains(o, "100.0%") {
		t.Errorf("not every transaction completed:\n%s", o)
	}
}
