// Package experiment expands an experiment into cells × runs, runs them in
// an interleaved order, and streams every sample to a result directory.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/result"
)

// Spec is one experiment: a protocol measured over paths at connection
// counts, R runs per cell.
type Spec struct {
	Name     string      `json:"name"`
	Protocol string      `json:"protocol"`
	Target   string      `json:"target"`
	Paths    []path.Path `json:"paths"`
	Conns    []int       `json:"conns"`
	Runs     int         `json:"runs"`
	// Warmup is how many leading runs per cell are marked warm-up (kept,
	// not counted).
	Warmup   int       `json:"warmup"`
	Timeout  Duration  `json:"timeout"`
	Pause    Duration  `json:"pause"`
	Duration Duration  `json:"duration,omitempty"`
	Baseline path.Path `json:"baseline"`
	// Params are protocol options, recorded for the reader.
	Params map[string]string `json:"params,omitempty"`
}

// Duration is a time.Duration that reads and writes as "1.5s".
type Duration time.Duration

// MarshalText writes the duration as Go prints it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads "1.5s", "200ms", …
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Validate checks a spec before anything runs.
func (s *Spec) Validate() error {
	switch {
	case s.Name == "":
		return errors.New("experiment: name is empty")
	case len(s.Paths) == 0:
		return errors.New("experiment: no paths")
	case len(s.Conns) == 0:
		return errors.New("experiment: no connection counts")
	case s.Runs < 1:
		return fmt.Errorf("experiment: runs must be at least 1, got %d", s.Runs)
	case s.Warmup < 0 || s.Warmup >= s.Runs:
		return fmt.Errorf("experiment: warm-up runs (%d) must be fewer than runs (%d)", s.Warmup, s.Runs)
	case s.Timeout <= 0:
		return fmt.Errorf("experiment: timeout must be positive, got %v", time.Duration(s.Timeout))
	}
	for _, n := range s.Conns {
		if n < 1 {
			return fmt.Errorf("experiment: connection count must be at least 1, got %d", n)
		}
	}
	return nil
}

// Step is one run of one cell in the order they are done.
type Step struct {
	Seq    int
	Path   path.Path
	Conns  int
	Run    int
	Warmup bool
}

// Plan orders the runs: for each connection count, run r of every path
// before run r+1 of any (v4, v6, v4, v6, …), so slow drift of the machine
// hits every path alike and run r of two paths can be paired.
func (s *Spec) Plan() []Step {
	var out []Step
	for _, n := range s.Conns {
		for r := 0; r < s.Runs; r++ {
			for _, p := range s.Paths {
				out = append(out, Step{Seq: len(out), Path: p, Conns: n, Run: r, Warmup: r < s.Warmup})
			}
		}
	}
	return out
}

// Runner runs a spec and writes its result directory.
type Runner struct {
	Spec Spec
	// Probe makes the probe for one path.
	Probe func(p path.Path) (load.Probe, error)
	// Header is completed with the spec and written first.
	Header result.Header
	// OnStep, when set, is called after each step with its run record.
	OnStep func(done, total int, r result.Run)
	// Wire, when set, checks each run's traffic on the wire.
	Wire WireCheck
}

// WireCheck proves on the wire what a run's path claims.
type WireCheck interface {
	// Start begins counting for a run over p.
	Start(p path.Path)
	// Stop returns the counts, and an error when they do not prove p.
	Stop(p path.Path) (result.Wire, error)
}

// ErrInterrupted is returned when ctx ended before the plan did; every
// finished run is on disk.
var ErrInterrupted = errors.New("experiment: interrupted")

// Run executes the plan into dir (which must exist and hold nothing), and
// returns after the samples file is flushed and closed.
func (r *Runner) Run(ctx context.Context, dir string) error {
	if err := r.Spec.Validate(); err != nil {
		return err
	}
	probes := map[path.Path]load.Probe{}
	for _, p := range r.Spec.Paths {
		pr, err := r.Probe(p)
		if err != nil {
			return fmt.Errorf("experiment: path %s: %w", p, err)
		}
		probes[p] = pr
	}
	f, err := os.OpenFile(filepath.Join(dir, "samples.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	w := result.NewWriter(f)
	h := r.Header
	h.Name = r.Spec.Name
	h.Baseline = string(r.Spec.Baseline)
	h.Spec = r.Spec
	w.Header(h)
	runErr := r.runPlan(ctx, w, probes)
	werr := w.Close()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if runErr != nil {
		return runErr
	}
	return werr
}

func (r *Runner) runPlan(ctx context.Context, w *result.Writer, probes map[path.Path]load.Probe) error {
	plan := r.Spec.Plan()
	timeout := time.Duration(r.Spec.Timeout)
	for i, st := range plan {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		cell := result.CellKey(r.Spec.Protocol, string(st.Path), st.Conns)
		rec := result.Run{Cell: cell, Protocol: r.Spec.Protocol, Path: string(st.Path), Conns: st.Conns,
			Run: st.Run, Warmup: st.Warmup, Seq: st.Seq, Start: time.Now().UTC()}
		emit := func(s result.Sample) {
			s.Cell, s.Conns, s.Run, s.Warmup = cell, st.Conns, st.Run, st.Warmup
			w.Sample(s)
		}
		var ok, failed counter
		counting := func(s result.Sample) {
			if s.OK() {
				ok.add()
			} else {
				failed.add()
			}
			emit(s)
		}
		if r.Wire != nil {
			r.Wire.Start(st.Path)
		}
		if r.Spec.Duration > 0 {
			load.Sustained(ctx, probes[st.Path], st.Conns, time.Duration(r.Spec.Duration), timeout, counting)
		} else {
			load.Closed(ctx, probes[st.Path], st.Conns, timeout, counting)
		}
		rec.End = time.Now().UTC()
		rec.Completed, rec.Failed = ok.get(), failed.get()
		if r.Wire != nil {
			counts, err := r.Wire.Stop(st.Path)
			rec.Wire = &counts
			if err != nil {
				rec.Err = "wire: " + err.Error()
			}
		}
		interrupted := ctx.Err() != nil
		if interrupted {
			rec.Err = "interrupted"
		}
		w.Run(rec)
		if err := w.Sync(); err != nil {
			return err
		}
		if r.OnStep != nil {
			r.OnStep(i+1, len(plan), rec)
		}
		if interrupted {
			return ErrInterrupted
		}
		if pause := time.Duration(r.Spec.Pause); pause > 0 && i+1 < len(plan) {
			select {
			case <-ctx.Done():
				return ErrInterrupted
			case <-time.After(pause):
			}
		}
	}
	return nil
}

// NewDir makes a fresh result directory root/<name>-<UTC time>, adding a
// suffix rather than ever reusing an existing directory.
func NewDir(root, name string, now time.Time) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("experiment: %w", err)
	}
	base := filepath.Join(root, name+"-"+now.UTC().Format("20060102T150405Z"))
	dir := base
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return "", fmt.Errorf("experiment: %w", err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}
