package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"v6lab/experiments"
	"v6lab/internal/experiment"
	"v6lab/internal/host"
	"v6lab/internal/lab"
	"v6lab/internal/labrun"
	"v6lab/internal/measure"
	"v6lab/internal/path"
	"v6lab/internal/servers"
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
}

func newRunCmd() *cobra.Command {
	var o runOpts
	cmd := &cobra.Command{
		Use:   "run [EXPERIMENT.yaml | BUILT-IN]",
		Short: "Run an experiment: a file, or a built-in one (default: quick, the main job)",
		Long: `run measures an experiment: cells (protocol x path x connection count), each run
several times with the paths interleaved run by run (or shuffled with a recorded seed),
the first runs of each cell kept as warm-up. It prints the study's tables and writes one
result directory (samples.jsonl, summary.json, report.txt, results.csv, report.html).

With no argument it runs the built-in "quick": HTTP page retrieval, DNS lookup included,
at 1, 10 and 100 connections against embedded servers. The experiment file format is in
docs/experiments.md; --list shows the built-in experiments and --print writes one out to
edit. Flags such as --conns and --runs override every cell of the experiment.

Where "where" is auto: as root v6lab builds a lab (client, two routers, server; see
v6lab lab --help) and measures ipv4, ipv6 and 6in4 across the routers, proving each
run's path on the wire, and removes the lab afterwards unless --keep. Otherwise it
measures ipv4 and ipv6 on loopback (127.0.0.1 and ::1) and says so.

An interrupted run (Ctrl-C, a kill, a crash) keeps every finished run; --resume DIR
continues it without redoing them.`,
		Example: `  v6lab run
  v6lab run --list
  v6lab run mitre2004 --scale 0.1
  v6lab run --print mitre2004 > my.yaml && v6lab run my.yaml --dry-run
  v6lab run my.yaml --shuffle --seed 7
  v6lab run --resume results/mitre2004-20261122T141949Z
  v6lab run --conns 1,10,100,1000 --runs 21 --topology study.yaml --pcap
  v6lab run --loopback --quiet --results /tmp/v6`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.labChild != "" {
				err := labrun.Child(cmd.Context(), o.labChild, output(cmd))
				var ie *measure.InterruptedError
				if errors.As(err, &ie) {
					return &exitError{code: 130, err: err}
				}
				return err
			}
			return o.run(cmd, args)
		},
	}
	o.lf.register(cmd, "1,10,100", 11)
	// In run, the experiment decides the paths (the lab adds 6in4): the
	// flag only overrides it, so its help says that rather than a default.
	if f := cmd.Flags().Lookup("paths"); f != nil {
		f.DefValue = "the experiment's"
		f.Usage = "paths to measure, comma-separated: ipv4, ipv6, 6in4 (6in4 needs the lab); the built-in experiments measure all three in the lab"
	}
	fl := cmd.Flags()
	fl.IntVar(&o.objects, "objects", 0, "embedded objects on the served page, for every http cell (default: the page's 4)")
	fl.BoolVar(&o.loopback, "loopback", false, "measure on loopback even when a lab could be built")
	fl.BoolVar(&o.keep, "keep", false, "leave the lab up after the run, for debugging")
	fl.BoolVar(&o.pcap, "pcap", false, "also write the measured packets (headers) seen by the lab's wire check to capture.pcap")
	fl.StringVar(&o.server, "server", "", "servers: embedded or real (nginx for http, Unbound for dns, ProFTPD for ftp, Postfix for smtp, Dovecot for imap, in the lab's server host; scripts/install-deps installs them); default: the experiment's")
	fl.StringVar(&o.topology, "topology", "", "lab topology file (see docs/lab.md); default: the experiment's, else the built-in lab")
	fl.BoolVar(&o.list, "list", false, "list the built-in experiments")
	fl.StringVar(&o.printName, "print", "", "write the built-in experiment `NAME` to standard output (to edit and run)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the plan (cells, runs, estimated time) and stop")
	fl.StringVar(&o.resume, "resume", "", "continue the interrupted experiment in result directory `DIR`")
	fl.Float64Var(&o.scale, "scale", 1, "shrink connection counts and runs by this factor (0 to 1) for a quick look")
	fl.BoolVar(&o.shuffle, "shuffle", false, "shuffle the order of paths in every run (the seed is recorded)")
	fl.Int64Var(&o.seed, "seed", 0, "seed of --shuffle (default: from the clock)")
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
		b, err := experiments.Get(o.printName)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		_, err = out.Write(b)
		return err
	case o.resume != "":
		if len(args) > 0 {
			return &exitError{code: 2, err: errors.New("--resume takes the experiment from its result directory; give no experiment")}
		}
		return o.resumeRun(cmd)
	}
	if o.loopback && o.pcap {
		return &exitError{code: 2, err: fmt.Errorf("--pcap needs the lab; --loopback has no wire to capture")}
	}
	exp, err := loadExperiment(args)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := o.override(cmd, exp); err != nil {
		return &exitError{code: 2, err: err}
	}
	topology := o.topology
	if topology == "" {
		topology = exp.Topology
		if exp.Topology != "" && builtin(args) {
			topology = builtinLab + exp.Topology
		}
	}
	// The lab's settings are checked first, even when no lab will be
	// built, so a bad file or flag is never silently ignored.
	labCfg, err := o.lflags.config(cmd, topology, "run")
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if exp.Congestion != "" && !cmd.Flags().Changed("congestion") {
		labCfg.Congestion = exp.Congestion // the experiment's, over its topology's
	}
	// A run's lab is its own: a kept lab of the file's name is never touched.
	labCfg.Name = runLabName()
	where, note, err := o.where(exp, topology, cmd.Flags().Changed("paths"))
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := exp.Validate(); err != nil {
		return &exitError{code: 2, err: err}
	}
	serverFDs := 0 // the lab's and real hosts' servers are not this process's
	if where == "loopback" {
		serverFDs = 1
	}
	if err := exp.CheckOpenFiles(host.NoFileHard(), serverFDs); err != nil {
		return &exitError{code: 2, err: err}
	}
	if exp.Real() && !o.dryRun {
		// Every missing daemon named at once, before a lab is built.
		if err := servers.CheckInstalled(append([]string{"http", "dns"}, exp.RealProtocols()...)); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	if o.dryRun {
		var bottleneck uint64 // the lab's slowest shaped link
		if where == "lab" {
			for _, name := range lab.LinkNames {
				if r := labCfg.Link(name).Shaping.Rate; r > 0 && (bottleneck == 0 || r < bottleneck) {
					bottleneck = r
				}
			}
		}
		experiment.WritePlan(out, exp, where, note, bottleneck)
		return nil
	}
	if where == "rootless" {
		err := reexecRootless()
		if !errors.Is(err, errNoUserNS) {
			return err
		}
		// No user namespace either: loopback, unless the lab was a must.
		if exp.Where == "lab" || topology != "" || o.pcap || exp.NeedsLab() != "" {
			return fmt.Errorf("this needs a lab, but %v, and %v", labrun.CanLab(), err)
		}
		where, note = "loopback", fmt.Sprintf("no lab (%v, and %v): measuring ipv4 and ipv6 on loopback", labrun.CanLab(), err)
		exp.DropLabOnly()
	}
	if where == "lab" {
		if err := lab.CanTunnel(); err != nil {
			if cmd.Flags().Changed("paths") && slices.Contains(exp.Paths(), path.SixIn4) {
				return fmt.Errorf("--paths: %w", err)
			}
			labCfg.NoTunnel = true
			exp.DropLabOnly()
			note = fmt.Sprintf("measuring ipv4 and ipv6 in the lab without 6in4: %v", err)
		}
	}
	if note != "" && !quiet(cmd) {
		fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: %s\n", note)
	}
	return runExperiment(cmd, exp, where, labCfg, o, nil, "")
}

// runExperiment runs exp where it was decided to run (or resumes it).
func runExperiment(cmd *cobra.Command, exp *experiment.Experiment, where string, labCfg lab.Config, o *runOpts, rs *experiment.Resume, dir string) error {
	switch where {
	case "lab":
		r := &labrun.Run{Exp: exp, Lab: labCfg, Results: o.lf.results, Keep: o.keep, Pcap: o.pcap, Resume: rs, ResumeDir: dir,
			Command: os.Args, Quiet: quiet(cmd), Rootless: rootless(), Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr()}
		err := r.Do(cmd.Context())
		var ce *labrun.ChildExitError
		if errors.As(err, &ce) {
			return &exitError{code: ce.Code, err: errSilent}
		}
		return err
	case "hosts":
		servers := map[string]string{}
		for _, c := range exp.Cells {
			servers[c.CellName()] = orDefault(c.URL, strings.Join(append(c.DNSServers, c.Servers...), " "))
		}
		_, err := execute(cmd, measure.Job{Exp: exp, Probe: experiment.Probes(nil), Target: "remote", Servers: servers,
			Results: o.lf.results, Resume: rs, ResumeDir: dir})
		return err
	}
	at, err := experiment.LoopbackPlace(exp.Paths())
	if err != nil {
		return err
	}
	local, err := experiment.StartEmbedded(cmd.Context(), exp, at)
	if err != nil {
		return err
	}
	defer local.Close()
	_, err = execute(cmd, measure.Job{
		Exp:       exp,
		Probe:     experiment.Probes(local.Endpoints(nil)),
		Target:    "loopback",
		Servers:   local.Describe(""),
		Notes:     []string{"ran on loopback (no lab): only ipv4 and ipv6 exist there"},
		ServerFDs: 1,
		Results:   o.lf.results,
		Resume:    rs, ResumeDir: dir,
	})
	return err
}

// builtin reports whether the experiment named on the command line is a
// built-in one rather than a file.
func builtin(args []string) bool {
	if len(args) == 0 {
		return true
	}
	st, err := os.Stat(args[0])
	return err != nil || st.IsDir()
}

// loadExperiment reads the experiment named on the command line: a file,
// or a built-in one (quick when none is named).
func loadExperiment(args []string) (*experiment.Experiment, error) {
	name := "quick"
	if len(args) == 1 {
		name = args[0]
	}
	if st, err := os.Stat(name); err == nil && !st.IsDir() {
		return experiment.Load(name)
	}
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.ContainsRune(name, os.PathSeparator) {
		return experiment.Load(name) // names the missing file
	}
	b, err := experiments.Get(name)
	if err != nil {
		return nil, err
	}
	return experiment.Parse("built-in "+name, b)
}

// override lays the flags the user gave over every cell group.
func (o *runOpts) override(cmd *cobra.Command, exp *experiment.Experiment) error {
	ch := cmd.Flags().Changed
	var ov experiment.Override
	var err error
	if ch("paths") {
		if ov.Paths, err = path.ParseList(o.lf.paths); err != nil {
			return fmt.Errorf("--paths: %w", err)
		}
	}
	if ch("conns") {
		if ov.Conns, err = parseInts(o.lf.conns); err != nil {
			return fmt.Errorf("--conns: %w", err)
		}
	}
	if ch("name") {
		ov.Name = &o.lf.name
	}
	if ch("server") {
		ov.Server = &o.server
	}
	if ch("runs") {
		ov.Runs = &o.lf.runs
	}
	if ch("warmup") {
		ov.Warmup = &o.lf.warmup
	}
	if ch("objects") {
		ov.Objects = &o.objects
	}
	if ch("timeout") {
		ov.Timeout = &o.lf.timeout
	}
	if ch("pause") {
		ov.Pause = &o.lf.pause
	}
	if ch("duration") {
		ov.Duration = &o.lf.duration
	}
	if ch("seed") {
		ov.Seed = &o.seed
	}
	if ch("scale") {
		ov.Scale = &o.scale
	}
	ov.Shuffle = o.shuffle
	return exp.Override(ov)
}

// where decides where exp runs now, dropping 6in4 (with a note) when an
// experiment that may run anywhere falls back to loopback.
func (o *runOpts) where(exp *experiment.Experiment, topology string, explicitPaths bool) (string, string, error) {
	where := exp.Where
	why := labrun.CanLab()
	if o.loopback {
		why = errors.New("--loopback")
	} else if why != nil && os.Geteuid() != 0 && !rootless() && (where == "auto" || where == "lab") {
		// Not root: try a lab of our own in a user namespace.
		return "rootless", "", nil
	}
	if why != nil && explicitPaths && slices.Contains(exp.Paths(), path.SixIn4) {
		return "", "", fmt.Errorf("--paths: 6in4 needs the lab (%v); on loopback only ipv4 and ipv6 exist", why)
	}
	if o.loopback {
		if where == "lab" || where == "hosts" {
			return "", "", fmt.Errorf("--loopback: the experiment runs on %s", where)
		}
		where = "loopback"
	}
	if need := exp.NeedsLab(); need != "" && (where == "loopback" || where == "hosts" || (where == "auto" && why != nil)) {
		reason := "this experiment runs on " + where
		if why != nil {
			reason = why.Error()
		}
		return "", "", fmt.Errorf("%s, but %s", need, reason)
	}
	switch where {
	case "auto":
		if why != nil {
			if topology != "" || o.pcap {
				return "", "", fmt.Errorf("a topology and --pcap need a lab, but %v", why)
			}
			where = "loopback"
			exp.DropLabOnly()
			return where, fmt.Sprintf("no lab (%v): measuring ipv4 and ipv6 on loopback", why), nil
		}
		return "lab", "", nil
	case "lab":
		if why != nil {
			return "", "", fmt.Errorf("experiment %s runs in the lab, but %v", exp.Name, why)
		}
	case "loopback":
		exp.DropLabOnly()
		fallthrough
	case "hosts":
		if topology != "" || o.pcap {
			return "", "", fmt.Errorf("a topology and --pcap need the lab, but this experiment runs on %s", where)
		}
	}
	return where, "", nil
}

// resumeRun continues an interrupted experiment where it stopped.
func (o *runOpts) resumeRun(cmd *cobra.Command) error {
	rs, err := experiment.PrepareResume(o.resume)
	if errors.Is(err, experiment.ErrComplete) {
		fmt.Fprintf(cmd.OutOrStdout(), "%s is complete: nothing to resume (v6lab report %s shows it)\n", o.resume, o.resume)
		return nil
	}
	if err != nil {
		return err
	}
	if rs.Moved != "" && !quiet(cmd) {
		fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: the unfinished run's lines were moved to %s\n", rs.Moved)
	}
	where := map[string]string{"lab": "lab", "loopback": "loopback", "remote": "hosts"}[rs.Header.Target]
	var labCfg lab.Config
	if where == "lab" {
		if why := labrun.CanLab(); why != nil && os.Geteuid() != 0 && !rootless() {
			if err := reexecRootless(); !errors.Is(err, errNoUserNS) {
				return err
			}
		}
		if why := labrun.CanLab(); why != nil {
			return fmt.Errorf("%s ran in the lab, but %v", o.resume, why)
		}
		if err := json.Unmarshal([]byte(rs.Header.Lab["config"]), &labCfg); err != nil {
			return fmt.Errorf("%s: the header does not record the lab's config: %w", o.resume, err)
		}
		labCfg.Name = runLabName()
	}
	o.pcap = o.pcap || rs.Header.Lab["pcap"] == "true"
	return runExperiment(cmd, rs.Exp, where, labCfg, o, rs, o.resume)
}

// runLabName names a run's own lab with a random suffix: a pid would
// collide across PID namespaces (two containers both run pid 1).
func runLabName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "run" + hex.EncodeToString(b[:])
}
