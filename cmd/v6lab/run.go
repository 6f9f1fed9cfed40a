package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"v6lab/experiments"
	"v6lab/internal/congestion"
	"v6lab/internal/experiment"
	"v6lab/internal/host"
	"v6lab/internal/lab"
	"v6lab/internal/labrun"
	"v6lab/internal/measure"
	"v6lab/internal/path"
	"v6lab/internal/servers"
	"v6lab/internal/transport"
	"v6lab/internal/units"
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
		return listBuiltins(out)
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
		printPlan(out, exp, where, note, bottleneck)
		return nil
	}
	if where == "rootless" {
		err := reexecRootless()
		if !errors.Is(err, errNoUserNS) {
			return err
		}
		// No user namespace either: loopback, unless the lab was a must.
		if exp.Where == "lab" || topology != "" || o.pcap || labOnly(exp) != "" {
			return fmt.Errorf("this needs a lab, but %v, and %v", labrun.CanLab(), err)
		}
		where, note = "loopback", fmt.Sprintf("no lab (%v, and %v): measuring ipv4 and ipv6 on loopback", labrun.CanLab(), err)
		dropTunnel(exp)
	}
	if where == "lab" {
		if err := lab.CanTunnel(); err != nil {
			if cmd.Flags().Changed("paths") && slices.Contains(exp.Paths(), path.SixIn4) {
				return fmt.Errorf("--paths: %w", err)
			}
			labCfg.NoTunnel = true
			dropTunnel(exp)
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
	if ch("name") {
		exp.Name = o.lf.name
	}
	if ch("server") {
		switch o.server {
		case "embedded":
		case "real":
			for i := range exp.Cells {
				if err := experiment.RealServersFit(&exp.Cells[i]); err != nil {
					return fmt.Errorf("--server real: cell group %s: %w", exp.Cells[i].CellName(), err)
				}
			}
		default:
			return fmt.Errorf("--server: %q is not embedded or real", o.server)
		}
		exp.Servers = o.server
		for i := range exp.Cells {
			exp.Cells[i].Server = map[bool]string{true: "real"}[o.server == "real"]
		}
	}
	for i := range exp.Cells {
		c := &exp.Cells[i]
		if ch("paths") {
			ps, err := path.ParseList(o.lf.paths)
			if err != nil {
				return fmt.Errorf("--paths: %w", err)
			}
			c.Paths = ps
		}
		if ch("conns") {
			ns, err := parseInts(o.lf.conns)
			if err != nil {
				return fmt.Errorf("--conns: %w", err)
			}
			c.Conns = ns
		}
		if ch("runs") {
			c.Runs = o.lf.runs
		}
		if ch("warmup") {
			c.Warmup = o.lf.warmup
		}
		if ch("timeout") {
			c.Timeout = experiment.Duration(o.lf.timeout)
		}
		if ch("pause") {
			c.Pause = experiment.Duration(o.lf.pause)
		}
		if ch("duration") {
			if o.lf.duration < 0 {
				return fmt.Errorf("--duration must not be negative")
			}
			c.Duration = experiment.Duration(o.lf.duration)
		}
		if ch("objects") && c.Protocol == "http" {
			if o.objects < 0 {
				return fmt.Errorf("--objects must not be negative")
			}
			n := o.objects
			c.Objects = &n
		}
	}
	if ch("paths") && !slices.Contains(exp.Paths(), exp.Baseline) {
		exp.Baseline = exp.Paths()[0]
	}
	if o.shuffle {
		exp.Order = experiment.OrderShuffled
	}
	if exp.Order == experiment.OrderShuffled {
		if ch("seed") {
			exp.Seed = o.seed
		} else if exp.Seed == 0 {
			exp.Seed = time.Now().UnixNano() % 1e9
		}
	}
	if ch("scale") {
		if err := exp.Scale(o.scale); err != nil {
			return fmt.Errorf("--scale: %w", err)
		}
	}
	return nil
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
	if need := labOnly(exp); need != "" && (where == "loopback" || where == "hosts" || (where == "auto" && why != nil)) {
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
			dropTunnel(exp)
			return where, fmt.Sprintf("no lab (%v): measuring ipv4 and ipv6 on loopback", why), nil
		}
		return "lab", "", nil
	case "lab":
		if why != nil {
			return "", "", fmt.Errorf("experiment %s runs in the lab, but %v", exp.Name, why)
		}
	case "loopback":
		dropTunnel(exp)
		fallthrough
	case "hosts":
		if topology != "" || o.pcap {
			return "", "", fmt.Errorf("a topology and --pcap need the lab, but this experiment runs on %s", where)
		}
	}
	return where, "", nil
}

// labOnly says what in exp needs the lab, if anything.
func labOnly(exp *experiment.Experiment) string {
	switch {
	case exp.Real():
		return "real servers run in the lab's server host"
	case exp.Background():
		return "background traffic runs between the lab's generator hosts"
	case exp.ServerCapture():
		return "server-side figures come from a capture in the lab's server host"
	}
	return ""
}

// dropTunnel removes the paths only the lab has (6in4) from every cell group.
func dropTunnel(exp *experiment.Experiment) {
	for i := range exp.Cells {
		var keep []path.Path // a new slice: cells may share one
		for _, p := range exp.Cells[i].Paths {
			if !p.Kind().LabOnly {
				keep = append(keep, p)
			}
		}
		exp.Cells[i].Paths = keep
	}
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

func listBuiltins(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tCELLS\tDESCRIPTION")
	for _, n := range experiments.Names() {
		b, _ := experiments.Get(n)
		e, err := experiment.Parse(n, b)
		if err != nil {
			return err
		}
		var cells []string
		for _, c := range e.Cells {
			cells = append(cells, fmt.Sprintf("%s%v", c.CellName(), c.Conns))
		}
		if len(cells) > 3 {
			count := map[string]int{}
			for _, c := range e.Cells {
				count[c.Protocol]++
			}
			cells = cells[:0]
			for _, p := range e.Protocols() {
				cells = append(cells, fmt.Sprintf("%s×%d", p, count[p]))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n, strings.Join(cells, " "), e.Description)
	}
	fmt.Fprintln(tw, "\nrun one: v6lab run NAME; edit one: v6lab run --print NAME > my.yaml")
	return tw.Flush()
}

// trialTime guesses how long a transport trial runs: its length, or its
// amount at the bottleneck rate (1 Gbit/s when none is given).
func trialTime(o *transport.Options) time.Duration {
	switch {
	case o == nil:
		return 0
	case o.Bytes == 0:
		return o.Omit + o.Duration
	}
	rate := float64(max(o.Bottleneck, 1e9)) * 0.9
	if o.Bottleneck > 0 {
		rate = float64(o.Bottleneck) * 0.9
	}
	return min(o.Duration, time.Duration(float64(o.Bytes)*8/rate*float64(time.Second)))
}

// fileTime guesses how long n simultaneous transfers of a file take
// through a bottleneck of rate bits/s (0: unshaped, taken as 1 Gbit/s): a
// shaped link carries 1448/1538 of its rate as TCP payload.
func fileTime(file string, n int, rate uint64) time.Duration {
	size, err := units.ParseSize(strings.TrimPrefix(file, "/"))
	if file == "" || err != nil {
		return 0
	}
	goodput := 1e9
	if rate > 0 {
		goodput = float64(rate) * 1448 / 1538
	}
	return time.Duration(float64(size*int64(n)) * 8 / goodput * float64(time.Second))
}

// printPlan shows what a run would do and a rough idea of how long.
func printPlan(w io.Writer, exp *experiment.Experiment, where, note string, bottleneck uint64) {
	plan := exp.Plan()
	fmt.Fprintf(w, "experiment %s: %d runs on %s, baseline %s, order %s", exp.Name, len(plan), where, exp.Baseline, exp.Order)
	if exp.Order == experiment.OrderShuffled {
		fmt.Fprintf(w, " (seed %d)", exp.Seed)
	}
	fmt.Fprintln(w)
	if note != "" {
		fmt.Fprintf(w, "note: %s\n", note)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CELLS\tPROTOCOL\tPATHS\tCONNS\tRUNS\tWARM-UP\tTIMEOUT\tTRANSACTIONS")
	var est, worst time.Duration
	total := 0
	for _, c := range exp.Cells {
		tx := 0
		for _, n := range c.Conns {
			tx += n * c.Runs * len(c.Paths)
			per := time.Duration(c.Pause) + 50*time.Millisecond + time.Duration(n)*300*time.Microsecond + time.Duration(c.Duration) + trialTime(c.Test) + fileTime(c.File, n, bottleneck)
			est += per * time.Duration(c.Runs*len(c.Paths))
			worst += (time.Duration(c.Pause) + time.Duration(c.Timeout) + time.Duration(c.Duration)) * time.Duration(c.Runs*len(c.Paths))
		}
		total += tx
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%d\t%d\t%v\t%d\n", c.CellName(), c.Protocol, c.Paths, c.Conns, c.Runs, c.Warmup, time.Duration(c.Timeout), tx)
	}
	tw.Flush()
	// Each change of background level waits for the traffic to ramp up.
	level := ""
	for _, st := range plan {
		if bg := exp.Cells[st.Cell].Background; bg != level {
			if bg != "" {
				est += congestion.Ramp
				worst += congestion.Ramp
			}
			level = bg
		}
	}
	fmt.Fprintf(w, "%d transactions; estimated time about %s (at most %s if every run waits out its timeout)\n",
		total, est.Round(time.Second), worst.Round(time.Second))
	first := plan[:min(len(plan), 6)]
	var order []string
	for _, st := range first {
		order = append(order, fmt.Sprintf("%s/%s/%d#%d", exp.Cells[st.Cell].CellName(), st.Path, st.Conns, st.Run))
	}
	fmt.Fprintf(w, "order: %s …\n", strings.Join(order, ", "))
}

// runLabName names a run's own lab with a random suffix: a pid would
// collide across PID namespaces (two containers both run pid 1).
func runLabName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "run" + hex.EncodeToString(b[:])
}
