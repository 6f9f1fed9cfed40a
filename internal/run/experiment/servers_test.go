package experiment

import (
	"encoding/json"
	"slices"
	"testing"

	"v6lab/internal/sock/path"
)

// TestV3CellServedOnEveryPath (trial8 F10, F11): a file whose only https
// cell races with dialer v3 starts the server that cell asks for on every
// one of its paths, the pinned ipv4 too, also once the plan has been read
// back from JSON (the lab child's job, where the derived RacesFamilies is
// not kept); the cell, naming no http_version, is named after its dialer
// (v3), not after HTTP/3, which only its dual row may speak.
func TestV3CellServedOnEveryPath(t *testing.T) {
	e, err := Parse("v3x.yaml", []byte(`name: v3x
where: lab
paths: [ipv4, dual]
runs: 3
warmup: 1
cells:
  - {protocol: http, conns: [1], tls: true, dialer: v3}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Groups[0].CellName(); got != "v3" {
		t.Errorf("the unlabelled v3 cell is named %q, want v3", got)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Experiment
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, x := range []*Experiment{e, &back} {
		started := x.EmbeddedServers()
		c := &x.Groups[0]
		for _, p := range c.Paths {
			if k := c.WireKey(); !slices.Contains(started, k) {
				t.Errorf("path %s asks for server %s, the run starts %v", p, k, started)
			}
		}
	}
	// The child asks first (it settles ipv4 before anything else): the
	// key must not depend on who asked before it.
	if k, want := back.Groups[0].WireKey(), e.Groups[0].WireKey(); k != want {
		t.Errorf("read back, the cell asks for %s; as parsed, %s", k, want)
	}
}

// TestRealServersStartedAreThoseTheCellsUse (trial10 T8): a run against
// the real servers starts, and says it starts, only the servers some cell
// uses: Caddy without nginx when every http cell speaks HTTP/3, nginx
// without Caddy for HTTP/1.1 and HTTP/2, Unbound always (every real cell
// looks its name up there); and the paths the real cells run over are
// what the DNS64 Unbound's start reads (nat64 among them or not). Each is
// named as the result's header names it: caddy (h3), unbound (dns64)
// (trial12: the dry run left the DNS64 Unbound out, and called Caddy http).
func TestRealServersStartedAreThoseTheCellsUse(t *testing.T) {
	for _, tc := range []struct{ file, started string }{
		{"name: r\nwhere: lab\nservers: real\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: http, http_version: 3, conns: [1]}\n",
			"real caddy (h3), unbound (dns)"},
		{"name: r\nwhere: lab\nservers: real\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: http, http_version: [1.1, 2], tls: true, conns: [1]}\n",
			"real nginx (http), unbound (dns)"},
		{"name: r\nwhere: lab\nservers: real\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: http, http_version: [2, 3], conns: [1]}\n",
			"real nginx (http), caddy (h3), unbound (dns)"},
		{"name: r\nwhere: lab\nservers: real\npaths: [ipv4, nat64]\ncells:\n  - {protocol: dns, conns: [1]}\n",
			"real unbound (dns), unbound (dns64)"},
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
