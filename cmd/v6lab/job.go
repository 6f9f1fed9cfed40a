package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"v6lab/internal/capture"
	"v6lab/internal/experiment"
	"v6lab/internal/host"
	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/report"
	"v6lab/internal/result"
)

// loadFlags are the flags every measuring command shares.
type loadFlags struct {
	paths    string
	conns    string
	runs     int
	warmup   int
	timeout  time.Duration
	pause    time.Duration
	duration time.Duration
	results  string
	name     string
}

func (f *loadFlags) register(cmd *cobra.Command, defConns string, defRuns int) {
	fl := cmd.Flags()
	fl.StringVar(&f.paths, "paths", "ipv4,ipv6", "paths to measure, comma-separated: ipv4, ipv6 (6in4 needs the lab)")
	fl.StringVar(&f.conns, "conns", defConns, "simultaneous connections per run, comma-separated")
	fl.IntVar(&f.runs, "runs", defRuns, "runs per cell, the first --warmup of them not counted")
	fl.IntVar(&f.warmup, "warmup", 1, "leading runs per cell kept but not counted")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "per-transaction timeout")
	fl.DurationVar(&f.pause, "pause", 100*time.Millisecond, "pause between runs")
	fl.DurationVar(&f.duration, "duration", 0, "sustained mode: each user repeats transactions for this long per run (0: one transaction per user)")
	fl.StringVar(&f.results, "results", "results", "directory that receives the result directory")
	fl.StringVar(&f.name, "name", "", "name of the result directory (default: the command's)")
}

func (f *loadFlags) spec(name, protocol, target string) (experiment.Spec, error) {
	paths, err := path.ParseList(f.paths)
	if err != nil {
		return experiment.Spec{}, fmt.Errorf("--paths: %w", err)
	}
	conns, err := parseInts(f.conns)
	if err != nil {
		return experiment.Spec{}, fmt.Errorf("--conns: %w", err)
	}
	if f.name != "" {
		name = f.name
	}
	s := experiment.Spec{Name: name, Protocol: protocol, URL: target, Paths: paths, Conns: conns,
		Runs: f.runs, Warmup: f.warmup, Timeout: experiment.Duration(f.timeout), Pause: experiment.Duration(f.pause),
		Duration: experiment.Duration(f.duration), Baseline: paths[0]}
	if f.duration < 0 {
		return s, fmt.Errorf("--duration must not be negative")
	}
	if err := s.Validate(); err != nil {
		return s, err
	}
	return s, nil
}

// job is one measurement ready to run.
type job struct {
	// somaxconn is the server host's net.core.somaxconn when the server is
	// in another namespace (a lab run); 0: read this process's own.
	somaxconn int
	// command is the command line the user typed, when this process is
	// not it (the measuring child of a lab run); empty: os.Args.
	command []string
	exp     *experiment.Experiment
	probe   func(*experiment.Spec, path.Path) (load.Probe, error)
	target  string
	servers map[string]string
	notes   []string
	// serverFDs is how many file descriptors an embedded server in this
	// process needs per client connection (1, or 0 for a remote server).
	serverFDs int
	// results is the directory that receives the result directory.
	results string
	// wire, when set, proves each run's path on the wire (lab runs).
	wire experiment.WireCheck
	// lab describes the lab for the header.
	lab map[string]string
	// pcap, when set, writes its counted frames to capture.pcap in the
	// result directory.
	pcap *capture.Capture
	// conditions, when set, surround each run (lab: background traffic,
	// server-side capture).
	conditions experiment.Conditions
	// resume, when set, continues the experiment in resumeDir.
	resume    *experiment.Resume
	resumeDir string
}

// execute runs a job end to end: checks, result directory, progress,
// summary and report. It returns the result directory.
func execute(cmd *cobra.Command, j job) (string, error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	// Collecting less often leaves more CPU to the transactions being
	// timed; a soft memory limit keeps that from holding garbage without
	// bound (10,000 users per path peaked at 1.68 GiB with GOGC 400 alone,
	// 583 MiB with the limit, the same figures). GOMEMLIMIT, when set, wins.
	debug.SetGCPercent(400)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(DefaultMemoryLimit)
	}
	gcNote := fmt.Sprintf("v6lab's Go runtime ran with GOGC 400 and a soft memory limit of %d MiB", debug.SetMemoryLimit(-1)>>20)
	limit, err := host.RaiseNoFile()
	if err != nil {
		return "", err
	}
	maxConns := 0
	for _, c := range j.exp.Cells {
		for _, n := range c.Conns {
			maxConns = max(maxConns, n)
		}
	}
	if err := j.exp.CheckOpenFiles(limit, j.serverFDs); err != nil {
		return "", err
	}
	sysctls := host.ReadSysctls(host.Sysctls)
	notes := append([]string(nil), j.notes...)
	notes = append(notes, gcNote)
	sm := j.somaxconn
	if v, err := host.ReadSysctl("net.core.somaxconn"); err == nil && sm == 0 && j.serverFDs > 0 {
		fmt.Sscan(v, &sm)
	}
	if sm > 0 && maxConns > sm {
		notes = append(notes, fmt.Sprintf("%d simultaneous connections exceed the server host's net.core.somaxconn (%d): the server's accept queue can overflow, and SYN retries then add about 1 s to some transactions", maxConns, sm))
	}
	changed := "no sysctl was changed"
	if j.lab["sysctl_changed"] != "" {
		changed = "the one sysctl changed is in the lab's notes"
	}
	notes = append(notes, "client connections are closed with SO_LINGER 0 after the completion marker, so no TIME_WAIT accumulates on the client; "+changed)
	var dir string
	var done map[int]bool
	if j.resume != nil {
		dir, done = j.resumeDir, j.resume.Done
	} else if dir, err = experiment.NewDir(j.results, j.exp.Name, time.Now()); err != nil {
		return "", err
	}
	hdr := result.Header{
		FormatVersion: result.FormatVersion, Tool: "v6lab", ToolVersion: toolVersion(), Created: time.Now().UTC(),
		Command: cmpOrArgs(j.command), Host: host.Name(), Kernel: host.Kernel(), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		Sysctls: sysctls, Limits: map[string]string{"nofile": fmt.Sprint(limit)}, Target: j.target,
		Servers: j.servers, Notes: notes, Lab: j.lab,
	}
	files := "samples.jsonl, summary.json, report.txt, results.csv, report.html"
	if j.pcap != nil {
		name := "capture.pcap"
		if j.resume != nil {
			name = fmt.Sprintf("capture.resumed-%d.pcap", len(done))
		}
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return dir, err
		}
		w := bufio.NewWriterSize(f, 1<<20)
		if err := j.pcap.Record(w); err != nil {
			f.Close()
			return dir, err
		}
		// The capture is closed first so nothing writes while this flushes.
		defer func() {
			j.pcap.Close()
			if err := errors.Join(j.pcap.RecordErr(), w.Flush(), f.Close()); err != nil {
				fmt.Fprintf(errOut, "v6lab: capture.pcap is incomplete: %v\n", err)
			}
		}()
		files += ", " + name
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	plan := j.exp.Plan()
	prog := newProgress(errOut, quiet(cmd), len(plan), len(done))
	r := &experiment.Runner{Exp: j.exp, Probe: j.probe, Header: hdr, OnStep: prog.step, Wire: j.wire, Done: done, Conditions: j.conditions}
	if !quiet(cmd) {
		verb := "measuring"
		if done != nil {
			verb = fmt.Sprintf("resuming after %d of", len(done))
		}
		fmt.Fprintf(errOut, "v6lab: %s: %s %d runs (%s over %v) -> %s\n",
			j.exp.Name, verb, len(plan), strings.Join(j.exp.Protocols(), ", "), j.exp.Paths(), dir)
	}
	runErr := r.Run(ctx, dir)
	prog.done()
	if runErr != nil && !errors.Is(runErr, experiment.ErrInterrupted) {
		return dir, runErr
	}
	s, err := report.WriteAll(dir)
	if err != nil {
		return dir, err
	}
	if !quiet(cmd) {
		if err := report.Text(out, s); err != nil {
			return dir, err
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "results: %s (%s)\n", dir, files)
	if runErr != nil {
		return dir, &exitError{code: 130, err: fmt.Errorf("interrupted: every finished run is kept in %s", dir)}
	}
	return dir, allFailed(s)
}

// allFailed is an error when some cell completed no transaction at all: the
// results are kept, but the command did not measure what was asked.
func allFailed(s *report.Summary) error {
	for _, c := range s.Cells {
		if c.Completed == 0 && c.Failed > 0 {
			return fmt.Errorf("every counted transaction of %s/%s/%d failed (first: %s)", c.Protocol, c.Path, c.Conns, c.FirstError)
		}
	}
	return nil
}

// progress shows a bar on a terminal and nothing elsewhere.
type progress interface {
	step(done, total int, r result.Run)
	done()
}

func newProgress(w io.Writer, quiet bool, total, done int) progress {
	switch {
	case quiet:
		return noProgress{}
	case !isTerminal(w):
		return &lines{w: w, every: 10 * time.Second, start: time.Now(), last: time.Now(), from: done}
	}
	return newBar(w, total, done)
}

// lines is the progress of a run whose output is not a terminal (a log):
// one line every so often, with an estimate of the time left.
type lines struct {
	w           io.Writer
	every       time.Duration
	start, last time.Time
	from        int
}

func (l *lines) step(done, total int, r result.Run) {
	now := time.Now()
	if now.Sub(l.last) < l.every || done == total {
		return
	}
	l.last = now
	eta := "?"
	if n := done - l.from; n > 0 {
		eta = (time.Duration(float64(now.Sub(l.start)) / float64(n) * float64(total-done))).Round(time.Second).String()
	}
	fmt.Fprintf(l.w, "v6lab: run %d/%d (%d%%), %s, about %s left\n", done, total, 100*done/total, r.Cell, eta)
}

func (l *lines) done() {}

type noProgress struct{}

func (noProgress) step(int, int, result.Run) {}
func (noProgress) done()                     {}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitComma(s) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || fmt.Sprint(n) != f {
			return nil, fmt.Errorf("%q is not a whole number", f)
		}
		if n < 1 {
			return nil, fmt.Errorf("%d: must be at least 1", n)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// cmpOrArgs is the user's command line: given, or this process's own.
func cmpOrArgs(c []string) []string {
	if len(c) > 0 {
		return c
	}
	return os.Args
}

// DefaultMemoryLimit is the measuring process's soft memory limit.
const DefaultMemoryLimit = 768 << 20
