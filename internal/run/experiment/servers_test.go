package experiment

import (
	"encoding/json"
	"slices"
	"testing"
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
