package main

import (
	"time"

	"github.com/spf13/cobra"

	"v6lab/internal/run"
	"v6lab/internal/run/measure"
	"v6lab/internal/sock/evloop"
)

// loadFlags are the flags every measuring command shares.
type loadFlags struct {
	run.Load
	results string
	spin    time.Duration
	strict  bool
	every   int
}

func (f *loadFlags) register(cmd *cobra.Command, defConns string, defRuns int, races bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.Paths, "paths", "ipv4,ipv6", run.PathsUsage(races))
	fl.StringVar(&f.Conns, "conns", defConns, "simultaneous connections per run, comma-separated")
	fl.IntVar(&f.Runs, "runs", defRuns, "runs per cell, the first --warmup of them not counted")
	fl.IntVar(&f.Warmup, "warmup", 1, "leading runs per cell kept but not counted")
	fl.DurationVar(&f.Timeout, "timeout", 30*time.Second, "per-transaction timeout")
	fl.DurationVar(&f.Pause, "pause", 100*time.Millisecond, "pause between runs")
	fl.DurationVar(&f.Duration, "duration", 0, "sustained mode: each user repeats transactions for this long per run (0: one transaction per user)")
	fl.StringVar(&f.results, "results", "results", "directory that receives the result directory (made if missing; its parent must exist)")
	fl.StringVar(&f.Name, "name", "", "name of the result directory (default: the command's)")
	fl.BoolVar(&f.strict, "strict", false, "exit with status 3 when a counted run was left out of the figures (its wire did not prove its path); the result is kept")
	fl.IntVar(&f.every, "sample-every", 1, "keep one sample row of every N of each run in the samples file; every figure is still of every sample (each run's record holds their totals): for load runs of millions of transactions (docs/formats.md)")
	fl.DurationVar(&f.spin, "spin", evloop.SpinDefault(), "with one exchange in flight, the client polls its sockets this long before it sleeps, so the kernel's wake-up is not in the response time (0: never, the default on one CPU and where v6lab's own servers or background traffic share this process, as in run --loopback; a probe of a server on a loopback address spins as against any host; docs/metrics.md)")
}

// registerTrial declares the flags of a command whose cell is one test (a
// transport trial): no --conns or --duration, no warm-up by default, and
// a timeout that follows the trial's length.
func (f *loadFlags) registerTrial(cmd *cobra.Command, races bool) {
	f.register(cmd, "1", 10, races)
	fl := cmd.Flags()
	_ = fl.MarkHidden("conns")
	_ = fl.MarkHidden("duration")
	_ = fl.MarkHidden("sample-every") // a trial's tables need every trial
	fl.Lookup("runs").Usage = "trials per path, the first --warmup of them not counted"
	for name, def := range map[string]string{"warmup": "0", "timeout": "0s"} {
		_ = fl.Set(name, def)
		fl.Lookup(name).DefValue, fl.Lookup(name).Changed = def, false
	}
	fl.Lookup("timeout").Usage = "bound on one trial (default: its length plus 30 s)"
}

// execute runs a job end to end (measure.Do) with this command's output,
// its errors mapped to exit codes.
func execute(cmd *cobra.Command, j measure.Job) (string, error) {
	dir, err := measure.Do(cmd.Context(), j, output(cmd))
	return dir, runMapped(err)
}

// output is where a measurement of cmd reports: a bar on a terminal.
func output(cmd *cobra.Command) measure.Output {
	errOut := cmd.ErrOrStderr()
	strict, _ := cmd.Flags().GetBool("strict") // false where the command has no --strict
	o := measure.Output{Out: cmd.OutOrStdout(), Err: errOut, Quiet: quiet(cmd), ToolVersion: toolVersion(), Strict: strict}
	if isTerminal(errOut) {
		o.Progress = func(total, done int, written measure.Written, pace *measure.Pace) measure.Progress {
			return newBar(errOut, total, done, written, pace)
		}
	}
	return o
}
