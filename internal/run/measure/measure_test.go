package measure

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
)

type okProbe struct{}

func (okProbe) Do(ctx context.Context, user int) result.Sample {
	return load.Begin("fake", path.IPv4).Done("ok")
}

// refuseIPv6 is a wire check that proves ipv4's runs and not ipv6's, as
// the lab's does when a path's packets crossed as the wrong family.
type refuseIPv6 struct{}

func (refuseIPv6) Start(string, path.Path) {}
func (refuseIPv6) Stop(p path.Path) (result.Wire, error) {
	if p == path.IPv6 {
		return result.Wire{IPv4: 10}, errors.New("path ipv6, but the wire carried 10 IPv4")
	}
	return result.Wire{IPv4: 10}, nil
}

// TestStrictFailsWhenCountedRunsAreLeftOut: a result whose runs failed
// their wire check is kept either way; with Output.Strict the job ends
// with a LeftOutError counting the counted runs left out (warm-up runs
// are not counted), as summary.json's left_out_runs does.
func TestStrictFailsWhenCountedRunsAreLeftOut(t *testing.T) {
	spec := experiment.CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv4, path.IPv6}, Conns: []int{1, 2}, Runs: 3, Warmup: 1,
		Timeout: experiment.Duration(time.Second), Baseline: path.IPv4}
	for _, strict := range []bool{false, true} {
		j := Job{Exp: experiment.Single(spec, result.Loopback), Target: result.Loopback, Results: t.TempDir(), Wire: refuseIPv6{},
			Probe: func(*experiment.CellGroup, path.Path) (load.Probe, error) { return okProbe{}, nil }}
		dir, err := Do(context.Background(), j, Output{Out: io.Discard, Err: io.Discard, Quiet: true, Strict: strict})
		var le *LeftOutError
		switch {
		case !strict && err != nil:
			t.Fatalf("not strict: %v", err)
		case strict && (!errors.As(err, &le) || le.Runs != 4 || le.Dir != dir):
			t.Fatalf("strict: %v, want 4 counted ipv6 runs left out of %s", err, dir)
		}
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			LeftOut int `json:"left_out_runs"`
			Cells   []struct {
				Path      string `json:"path"`
				Completed int    `json:"completed"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if s.LeftOut != 4 {
			t.Errorf("strict %v: left_out_runs %d, want 4", strict, s.LeftOut)
		}
		for _, c := range s.Cells {
			if (c.Path == "ipv4") != (c.Completed > 0) {
				t.Errorf("strict %v: cell %+v: only ipv4's runs count", strict, c)
			}
		}
	}
}

// TestOffLabJobsRefuseLabOnlyPaths is the last door of the path-label rule:
// a job on loopback or against a named host that lists 6in4 or nat64
// measures nothing (its probe would reach plain ipv6) and leaves no
// result directory behind.
func TestOffLabJobsRefuseLabOnlyPaths(t *testing.T) {
	for _, target := range []result.Where{result.Loopback, result.Hosts} {
		for _, p := range path.LabOnly() {
			spec := experiment.CellGroup{Name: "t", Protocol: "fake", Paths: []path.Path{path.IPv6, p}, Conns: []int{1}, Runs: 2, Warmup: 1,
				Timeout: experiment.Duration(time.Second), Baseline: path.IPv6}
			results := t.TempDir()
			probed := false
			j := Job{Exp: &experiment.Experiment{Name: "t", Where: "auto", Baseline: path.IPv6, Groups: []experiment.CellGroup{spec}},
				Target: target, Results: results,
				Probe: func(*experiment.CellGroup, path.Path) (load.Probe, error) { probed = true; return okProbe{}, nil }}
			_, err := Do(context.Background(), j, Output{Out: io.Discard, Err: io.Discard, Quiet: true})
			if err == nil || !strings.Contains(err.Error(), string(p)+" needs the lab") || probed {
				t.Errorf("%s over %s: err %v, probed %v", target, p, err, probed)
			}
			if ents, _ := os.ReadDir(results); len(ents) != 0 {
				t.Errorf("%s over %s left %d entries in the results directory", target, p, len(ents))
			}
		}
	}
}
