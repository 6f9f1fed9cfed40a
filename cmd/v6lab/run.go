package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"v6lab/experiments"
	"v6lab/internal/input/units"
	"v6lab/internal/lab"
	"v6lab/internal/proto/all"
	"v6lab/internal/result"
	"v6lab/internal/run"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/inlab"
	"v6lab/internal/run/measure"
	"v6lab/internal/sock/path"
)

// runOpts are run's own flags.
type runOpts struct {
	lf                            loadFlags
	lflags                        labFlags
	objects                       int
	loopback, keep, pcap, dryRun  bool
	list, shuffle                 bool
	labChild, topology, printName string
	server                        string
	resume                        string
	scale                         float64
	seed                          int64
	segment, startAt              string
}

func newRunCmd() *cobra.Command {
	var o runOpts
	cmd := &cobra.Command{
		Use:   "run [EXPERIMENT.yaml | BUILT-IN]",
		Short: "Run an experiment: a file, or a built-in one (default: quick, the main job)",
		Long: `run measures an experiment: cells (protocol x path x connection count), each run
several times with the paths interleaved run by run (or shuffled with a recorded seed),
the first runs of each cell kept as warm-up. It prints the study's tables and writes one
result directory (samples.jsonl.zst, summary.json, report.txt, results.csv, report.html).

With no argument it runs the built-in "quick": HTTP page retrieval, DNS lookup included,
at 1, 10 and 100 connections against embedded servers. The experiment file format is in
docs/experiments.md; --list shows the built-in experiments and --print writes one out to
edit. Flags such as --conns and --runs override every cell of the experiment.

Where "where" is auto: as root v6lab builds a lab (client, two routers, server; see
v6lab lab --help) and measures ipv4, ipv6 and 6in4 across the routers, proving each
run's path on the wire, and removes the lab afterwards unless --keep. Otherwise it
measures ipv4 and ipv6 on loopback (127.0.0.1 and ::1) and says so.

An interrupted run (Ctrl-C, a kill, a crash) keeps every finished run; --resume DIR
continues it without redoing them.

Against real hosts (where: hosts), one experiment can be split across client hosts:
--segment I/N runs users floor(I*c/N) to floor((I+1)*c/N)-1 of every run of c users,
everything else the same on every segment, and --start-at TIME starts run r of every
segment at the same instant (each run has a fixed slot: its timeout, or duration and
timeout, plus 1 s and the pause). v6lab merge joins the segments' directories into one
result (docs/distributed.md).

Exit status: 0 when every cell was measured; 1 on an error, or when every transaction
of a cell failed; 2 on bad input (a flag, an experiment file); 3, with --strict, when
counted runs were left out of the figures (a run whose wire did not prove its path);
130 when interrupted. The result directory is kept in every case it was made.`,
		Example: `  v6lab run
  v6lab run --list
  v6lab run mitre2004 --scale 0.1
  v6lab run --print mitre2004 > my.yaml && v6lab run my.yaml --dry-run
  v6lab run my.yaml --shuffle --seed 7
  v6lab run --resume results/mitre2004-20261122T141949Z
  v6lab run --conns 1,10,100,1000 --runs 21 --topology study.yaml --pcap
  v6lab run --loopback --quiet --results /tmp/v6
  v6lab run my.yaml --strict -q || echo "not every run counted"   # in CI
  v6lab run web.yaml --segment 0/3 --start-at 2026-11-24T10:00:00Z --name web-seg0`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.labChild != "" {
				return runMapped(inlab.Child(cmd.Context(), o.labChild, output(cmd)))
			}
			return o.run(cmd, args)
		},
	}
	o.lf.register(cmd, "1,10,100", 11, true)
	// In run, the experiment decides the paths (the lab adds 6in4): the
	// flag only overrides it, so its help says that rather than a default.
	if f := cmd.Flags().Lookup("paths"); f != nil {
		f.DefValue = "the experiment's"
		f.Usage = "paths to measure, comma-separated: ipv4, ipv6, 6in4, nat64, 464xlat, dslite, dual (6in4, nat64, 464xlat and dslite need the lab; dual races ipv4 and ipv6 by Happy Eyeballs, http only); the studies' presets measure the first three in the lab"
	}
	fl := cmd.Flags()
	fl.IntVar(&o.objects, "objects", 0, "embedded objects on the served page, for every http cell (default: the page's 4)")
	fl.BoolVar(&o.loopback, "loopback", false, "measure on loopback even when a lab could be built")
	fl.BoolVar(&o.keep, "keep", false, "leave the lab up after the run, for debugging")
	fl.BoolVar(&o.pcap, "pcap", false, "also write the measured packets (headers) seen by the lab's wire check to capture.pcap")
	fl.StringVar(&o.server, "server", "", "servers: embedded or real ("+strings.Join(all.Real(), ", ")+", in the lab's server host; scripts/install-deps installs them); default: the experiment's")
	fl.StringVar(&o.topology, "topology", "", "lab topology file (see docs/lab.md); default: the experiment's, else the built-in lab")
	fl.BoolVar(&o.list, "list", false, "list the built-in experiments")
	fl.StringVar(&o.printName, "print", "", "write the built-in experiment `NAME` to standard output (to edit and run)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the plan (cells, runs, estimated time) and stop")
	fl.StringVar(&o.resume, "resume", "", "continue the interrupted experiment in result directory `DIR`")
	fl.Float64Var(&o.scale, "scale", 1, "shrink connection counts and runs by this factor (0 to 1) for a quick look")
	fl.BoolVar(&o.shuffle, "shuffle", false, "shuffle the order of paths in every run (the seed is recorded)")
	fl.Int64Var(&o.seed, "seed", 0, "seed of --shuffle (default: from the clock)")
	fl.StringVar(&o.segment, "segment", "", "run segment `I/N` of every run's users (where: hosts; merge the N segments with v6lab merge)")
	fl.StringVar(&o.startAt, "start-at", "", "start run 0 at `TIME` (RFC 3339) and every run at its fixed slot after it (where: hosts)")
	o.lflags.register(cmd, false)
	fl.StringVar(&o.labChild, "lab-child", "", "")
	_ = fl.MarkHidden("lab-child")
	return cmd
}

func (o *runOpts) run(cmd *cobra.Command, args []string) error {
	out := cmd.OutOrStdout()
	switch {
	case o.list:
		return experiments.List(out)
	case o.printName != "":
		b, err := experiments.Print(o.printName)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		_, err = out.Write(b)
		return err
	case o.resume != "":
		return o.resumeRun(cmd, args)
	}
	exp, s, sp, err := o.prepare(cmd, args)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	where, note, err := run.Decide(exp, s)
	if err == nil && where == run.Lab {
		err = lab.CheckKernel(s.Lab) // what building it would refuse, a dry run refuses
	}
	if err == nil && !o.dryRun {
		err = run.CheckServers(exp)
	}
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if o.dryRun {
		run.WritePlan(out, exp, where, note, s)
		exp.WriteSplit(out, sp.Segment, sp.StartAt)
		return nil
	}
	if late := -time.Until(sp.StartAt); !sp.StartAt.IsZero() && late > 0 && !quiet(cmd) {
		fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: --start-at was %s ago: runs start late until this segment catches up with the schedule, and each late run says so\n", late.Round(time.Millisecond))
	}
	if where == run.Rootless {
		err := reexecRootless()
		if !errors.Is(err, errNoUserNS) {
			return err
		}
		if where, note, err = run.NoUserNamespace(exp, s, err); err != nil {
			return err
		}
	}
	return runMapped(run.Do(cmd.Context(), exp, where, note, s, nil, ""))
}

// prepare loads the experiment and lays the flags over it; its errors
// are bad input.
func (o *runOpts) prepare(cmd *cobra.Command, args []string) (*experiment.Experiment, run.Settings, experiment.Split, error) {
	var s run.Settings
	var paths []path.Path // --paths: every cell group's, before the file's rules of paths
	if cmd.Flags().Changed("paths") {
		var err error
		if paths, err = path.ParseList(o.lf.Paths); err != nil {
			return nil, s, experiment.Split{}, fmt.Errorf("--paths: %w", err)
		}
	}
	exp, builtin, err := experiments.Load(args, paths)
	if err != nil {
		return nil, s, experiment.Split{}, err
	}
	sp, err := exp.ParseSplit(o.segment, o.startAt, o.shuffle, cmd.Flags().Changed("seed"))
	if err == nil {
		err = o.override(cmd, exp)
	}
	if err == nil {
		if err = exp.CheckSampleEvery(sp.Segment != nil); err != nil {
			err = fmt.Errorf("sample_every: %w", err)
		}
	}
	if err == nil {
		s, err = o.settings(cmd, exp, builtin)
	}
	s.Segment, s.StartAt = sp.Segment, sp.StartAt
	return exp, s, sp, err
}

// settings are the run's settings from its flags: the lab's from the
// topology (the flag's, or the experiment's) with the flags laid over it.
func (o *runOpts) settings(cmd *cobra.Command, exp *experiment.Experiment, builtin bool) (run.Settings, error) {
	topology := o.topology
	if topology == "" {
		topology = exp.Topology
		if exp.Topology != "" && builtin && !strings.HasPrefix(exp.Topology, experiments.BuiltinLab) {
			topology = experiments.BuiltinLab + exp.Topology
		}
	}
	// The lab's settings are checked first, even when no lab will be
	// built, so a bad file or flag is never silently ignored.
	labCfg, err := o.lflags.config(topology, "run")
	if err = cmp.Or(err, result.CheckRoot(o.lf.results)); err != nil {
		return run.Settings{}, err
	}
	if exp.Congestion != "" && !cmd.Flags().Changed("congestion") {
		labCfg.Congestion = exp.Congestion // the experiment's, over its topology's
	}
	// A run's lab is its own: a kept lab of the file's name is never touched.
	labCfg.Name = lab.RunName()
	return run.Settings{Loopback: o.loopback, Pcap: o.pcap, Keep: o.keep, Topology: topology,
		TopologyIfLab: o.topology == "" && exp.Topology != "" && exp.Where == result.Auto,
		ExplicitPaths: cmd.Flags().Changed("paths"), Lab: labCfg, LabFlags: o.lflags.Given(), Rootless: rootless(), Results: o.lf.results,
		Output: output(cmd), Command: all.RedactArgs(os.Args)}, nil
}

// runMapped maps a run's typed errors to exit codes: the measuring
// process's own (it already said why), 130 when interrupted.
func runMapped(err error) error {
	var ce *inlab.ChildExitError
	var ie *measure.InterruptedError
	var le *measure.LeftOutError
	switch {
	case errors.As(err, &ce):
		return &exitError{code: ce.Code, err: errSilent}
	case errors.As(err, &ie):
		return &exitError{code: 130, err: err}
	case errors.As(err, &le):
		return &exitError{code: 3, err: err}
	}
	return err
}

// override lays the flags the user gave over every cell group.
func (o *runOpts) override(cmd *cobra.Command, exp *experiment.Experiment) error {
	ch := cmd.Flags().Changed
	var ov experiment.Override
	var err error
	if ch("paths") {
		if ov.Paths, err = path.ParseList(o.lf.Paths); err != nil {
			return fmt.Errorf("--paths: %w", err)
		}
	}
	if ch("conns") {
		if ov.Conns, err = units.ParseCounts(o.lf.Conns); err != nil {
			return fmt.Errorf("--conns: %w", err)
		}
	}
	ov.Name, ov.Server = given(cmd, "name", &o.lf.Name), given(cmd, "server", &o.server)
	ov.Runs, ov.Warmup, ov.Objects = given(cmd, "runs", &o.lf.Runs), given(cmd, "warmup", &o.lf.Warmup), given(cmd, "objects", &o.objects)
	ov.Timeout, ov.Pause = given(cmd, "timeout", &o.lf.Timeout), given(cmd, "pause", &o.lf.Pause)
	ov.Duration, ov.Seed, ov.Scale = given(cmd, "duration", &o.lf.Duration), given(cmd, "seed", &o.seed), given(cmd, "scale", &o.scale)
	ov.Shuffle = o.shuffle
	ov.Spin = given(cmd, "spin", &o.lf.spin)
	ov.SampleEvery = given(cmd, "sample-every", &o.lf.every)
	return exp.Override(ov)
}

// resumeFlags refuses flags that would change a resumed experiment: it
// continues as its directory recorded it, or its runs would not be one
// experiment's.
func resumeFlags(cmd *cobra.Command) error {
	var changed []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !slices.Contains([]string{"resume", "results", "pcap", "keep", "strict", "quiet"}, f.Name) {
			changed = append(changed, "--"+f.Name)
		}
	})
	if len(changed) > 0 {
		return fmt.Errorf("--resume continues the experiment as its directory recorded it: %s would change it (give only --results, --pcap, --keep, --strict or -q)", strings.Join(changed, ", "))
	}
	return nil
}

// resumeRun continues an interrupted experiment where it stopped.
func (o *runOpts) resumeRun(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &exitError{code: 2, err: errors.New("--resume takes the experiment from its result directory; give no experiment")}
	}
	if o.segment != "" || o.startAt != "" {
		return &exitError{code: 2, err: errors.New("--resume keeps the segment its directory ran, and a schedule cannot be resumed: give neither --segment nor --start-at")}
	}
	if err := resumeFlags(cmd); err != nil {
		return &exitError{code: 2, err: err}
	}
	// A killed lab run's measuring process ends its last run on its own,
	// in a moment: a resume waits for it rather than refuse.
	r, err := run.PrepareResume(cmd.Context(), o.resume, func(busy error) {
		fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: %v; waiting up to %s for it to finish\n", busy, run.ResumeWait)
	})
	if errors.Is(err, experiment.ErrComplete) {
		fmt.Fprintf(cmd.OutOrStdout(), "%s is complete: nothing to resume (v6lab report %s shows it)\n", o.resume, o.resume)
		return nil
	}
	if err != nil {
		return err
	}
	if r.Moved != "" && !quiet(cmd) {
		fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: the unfinished run's lines were moved to %s\n", r.Moved)
	}
	if r.StaleExport != "" && !quiet(cmd) {
		fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: %s\n", result.StaleExportNote(r.StaleExport, o.resume))
	}
	if r.Where == run.Lab {
		if why := inlab.CanLab(); why != nil && os.Geteuid() != 0 && !rootless() {
			if err := reexecRootless(); !errors.Is(err, errNoUserNS) {
				return err
			}
		}
		if why := inlab.CanLab(); why != nil {
			return fmt.Errorf("%s ran in the lab, but %v", o.resume, why)
		}
		r.Lab.Name = lab.RunName()
	}
	s := run.Settings{Pcap: o.pcap || r.Pcap, Keep: o.keep, Lab: r.Lab, Rootless: rootless(), Results: o.lf.results,
		Output: output(cmd), Command: all.RedactArgs(os.Args)}
	return runMapped(run.Do(cmd.Context(), r.Exp, r.Where, "", s, r.Resume, o.resume))
}
