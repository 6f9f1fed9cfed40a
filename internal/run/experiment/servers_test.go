package experiment

import (
	"slices"
	"testing"

	"v6lab/internal/sock/path"
)

// TestRealServersStartedAreThoseTheCellsUse (trial10 T8): a run against
// the real servers starts, and says it starts, only the servers some cell
// uses: Caddy without nginx when every http cell speaks HTTP/3, nginx
// without Caddy for HTTP/1.1 and HTTP/2, Unbound always (every real cell
// looks its name up there); and the paths the real cells run over are
// what the DNS64 Unbound's start reads (nat64 among them or not).
func TestRealServersStartedAreThoseTheCellsUse(t *testing.T) {
	for _, tc := range []struct{ file, started string }{
		{"name: r\nwhere: lab\nservers: real\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: http, http_version: 3, conns: [1]}\n",
			"real caddy (http), unbound (dns)"},
		{"name: r\nwhere: lab\nservers: real\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: http, http_version: [1.1, 2], tls: true, conns: [1]}\n",
			"real nginx (http), unbound (dns)"},
		{"name: r\nwhere: lab\nservers: real\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: http, http_version: [2, 3], conns: [1]}\n",
			"real nginx (http), caddy (http), unbound (dns)"},
		{"name: r\nwhere: lab\nservers: real\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: dns, conns: [1]}\n",
			"real unbound (dns)"},
	} {
		e, err := Parse("r.yaml", []byte(tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := e.ServersStarted(); got != tc.started {
			t.Errorf("%q: servers started %q, want %q", tc.file, got, tc.started)
		}
	}
	e, err := Parse("r.yaml", []byte("name: r\nwhere: lab\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: dns, conns: [1], server: real}\n  - {protocol: http, conns: [1], paths: [ipv4, nat64]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.RealPaths(); !slices.Equal(got, []path.Path{path.IPv4, path.IPv6}) {
		t.Errorf("real paths %v: want the real cell's ipv4, ipv6 (the embedded cell's nat64 asks the embedded DNS64)", got)
	}
	if got := e.ServersStarted(); got != "embedded http, dns; real unbound (dns)" {
		t.Errorf("servers started %q", got)
	}
}
