// Package measure runs one measurement end to end: the checks that come
// first (open files, accept queue), the result directory and its header,
// the runs with progress, then the summary and the reports. Every command
// that measures (run, probe, tcp, udp, a lab run's measuring process)
// hands it a Job. It prints through the writers it is given and returns
// typed errors; the CLI turns them into exit codes.
//
// It imports experiment and what reports, never inlab, run or the CLI.
package measure

import (
	"bufio"
	"cmp"
	"context"
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
	"v6lab/internal/proto/all"

	"v6lab/internal/gen/load"
	"v6lab/internal/report"
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/host"
	"v6lab/internal/sock/evloop"
	"v6lab/internal/sock/path"
	"v6lab/internal/wire/capture"
)

// Job is one measurement ready to run.
type Job struct {
	Exp *experiment.Experiment
	// Probe makes a cell's probe over a path (experiment.Probes).
	Probe func(*experiment.CellGroup, path.Path) (load.Probe, error)
	// Target says where it runs: lab, loopback or hosts.
	Target result.Where
	// Servers name the servers measured, Notes what a reader must know.
	Servers map[string]string
	// ServerRoles name the embedded servers' keys a server of Servers
	// stands for beside its own (result.Header.ServerRoles).
	ServerRoles map[string][]string
	Notes       []string
	// Somaxconn is the server host's net.core.somaxconn when the server
	// is in another namespace (a lab run); 0: read this process's own.
	Somaxconn int
	// Command is the command line the user typed, when this process is
	// not it (the measuring child of a lab run); empty: os.Args.
	Command []string
	// ServerFDs is how many file descriptors an embedded server in this
	// process needs per client connection (1, or 0 for a remote server).
	ServerFDs int
	// Results is the directory that receives the result directory.
	Results string
	// Wire, when set, proves each run's path on the wire (lab runs).
	Wire experiment.WireCheck
	// Lab describes the lab for the header.
	Lab map[string]string
	// Pcap, when set, writes its counted frames to capture.pcap in the
	// result directory.
	Pcap *capture.Capture
	// Conditions, when set, surround each run (lab: background traffic,
	// server-side capture).
	Conditions experiment.Conditions
	// Dir, when set, is the new result directory, made by the caller (a
	// lab run's parent, which reports it if this process is killed);
	// empty: Do makes one in Results.
	Dir string
	// Resume, when set, continues the experiment in ResumeDir.
	Resume    *experiment.Resume
	ResumeDir string
	// Segment, when set, runs this process's share of every run's users
	// (a resumed segment keeps its own); StartAt, when set, starts each
	// run at its slot of the schedule that begins then.
	Segment *result.Segment
	StartAt time.Time
	// Roles are the lab's network namespaces by role, whose processes'
	// CPU each run's self-check reads (lab runs).
	Roles map[string]string
	// TCPInfo makes every sample carry its TCP connection's figures
	// (experiment.Executor.TCPInfo).
	TCPInfo bool
	// Impaired: the lab breaks paths on purpose for every cell group (its
	// own ptb_blackhole or fragments), so a cell may fail whole.
	Impaired bool
}

// Output is where a job reports.
type Output struct {
	Out, Err io.Writer
	// Quiet prints only the result directory's name.
	Quiet bool
	// Progress makes the progress display of total runs, done of them
	// already, and what the samples' writer has written so far (nil:
	// Lines on Err unless Quiet).
	Progress func(total, done int, written Written, pace *Pace) Progress
	// ToolVersion is recorded in the header.
	ToolVersion string
	// Strict makes a result with counted runs left out an error
	// (LeftOutError), for scripts that must not take partial figures.
	Strict bool
}

// LeftOutError is a job, run with Output.Strict, whose result left counted
// runs out of its figures (summary.json's left_out_runs; its notes say
// why). The result is kept.
type LeftOutError struct {
	Runs int
	Dir  string
}

func (e *LeftOutError) Error() string {
	were := "were"
	if e.Runs == 1 {
		were = "was"
	}
	return fmt.Sprintf("--strict: %s %s left out of the figures (their reasons are in the report's notes): %s", stats.Count(e.Runs, "counted run"), were, e.Dir)
}

// Written says how many samples and bytes (as stored: compressed) a
// job's samples file has received so far.
type Written func() (samples, bytes int64)

// WrittenText is how the progress says it: "1,234,567 samples, 45.6 MB".
func WrittenText(w Written) string {
	n, b := w()
	return fmt.Sprintf("%s samples, %s", thousands(n), megabytes(b))
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func megabytes(b int64) string {
	if b < 1e6 {
		return fmt.Sprintf("%.0f kB", float64(b)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(b)/1e6)
}

// Progress follows the runs of a job: each step's run record, and its
// cell named as the reports name it (Experiment.StepTitle).
type Progress interface {
	Step(done, total int, title string, r result.Run)
	Done()
}

// InterruptedError is a job stopped by a signal: every finished run is
// kept in Dir ("": stopped before its first run, nothing measured and no
// result directory left).
type InterruptedError struct{ Dir string }

func (e *InterruptedError) Error() string {
	if e.Dir == "" {
		return "interrupted before the first run: nothing was measured"
	}
	return "interrupted: every finished run is kept in " + e.Dir
}

// TimingNote says where a transaction's time starts and ends, and where
// wire_ns comes from (docs/metrics.md): every result carries it.
const TimingNote = "timing: each user warmed its socket code before the run's barrier (nothing sent on the measured link); a transaction's time runs from its first system call, the request already built, to the read that brought its last bytes; wire_ns, where present, is from the kernel's software timestamps (SO_TIMESTAMPING)"

// LingerNote says how the transactions' connections end; transport
// trials' close as usual (their own timing note says so).
const LingerNote = "client connections are closed with SO_LINGER 0 after the completion marker, so no TIME_WAIT accumulates on the client"

// ResultFiles names the files a run writes in dir, its samples file by
// its own name: a resumed result of an older version may have a plain
// samples.jsonl, which the run appends to.
func ResultFiles(dir string) string {
	samples := result.SamplesName
	if p, err := result.SamplesPath(dir); err == nil {
		samples = filepath.Base(p)
	}
	return samples + ", summary.json, report.txt, results.csv, report.html"
}

// DefaultMemoryLimit is the measuring process's soft memory limit.
const DefaultMemoryLimit = 768 << 20

// Do runs a job end to end and returns its result directory.
func Do(ctx context.Context, j Job, o Output) (string, error) {
	if err := offLab(j); err != nil {
		return "", err
	}
	hdr, err := j.header(o.ToolVersion)
	if err != nil {
		return "", err
	}
	var dir string
	var done, rewarmed map[int]bool
	if j.Resume != nil {
		dir, done, rewarmed = j.ResumeDir, j.Resume.Done, j.Resume.Rewarmed
		if j.Segment == nil {
			j.Segment = j.Resume.Header.Segment
		}
		if j.StartAt.IsZero() { // the first process's schedule, kept (trial7 F6)
			j.StartAt = j.Resume.StartAt
		}
	} else if dir = j.Dir; dir == "" {
		if dir, err = result.NewDir(j.Results, j.dirName(), time.Now()); err != nil {
			return "", err
		}
	}
	if seg := j.Segment; seg != nil {
		seg.Host, seg.Clock, seg.StartAt = host.Name(), host.Clock(), j.StartAt.UTC()
		hdr.Segment = seg
		hdr.Notes = append(hdr.Notes, SegmentNote(*seg))
	}
	files := ResultFiles(dir)
	if j.Pcap != nil {
		name, closePcap, err := j.recordPcap(dir, len(done))
		if err != nil {
			return dir, err
		}
		defer closePcap(o.Err)
		files += ", " + name
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	plan := j.Exp.Plan()
	r := &experiment.Executor{Exp: j.Exp, Probe: j.Probe, Header: hdr, Wire: j.Wire, Done: done, Rewarmed: rewarmed, Conditions: j.Conditions,
		Segment: j.Segment, StartAt: j.StartAt, Totals: report.NewTotaler, TCPInfo: j.TCPInfo, Roles: j.Roles}
	prog := o.progress(len(plan), len(done), r.Written, NewPace(j.Exp, plan, done))
	r.OnStep = func(done, total int, rec result.Run) { prog.Step(done, total, j.Exp.StepTitle(rec), rec) }
	if !o.Quiet {
		verb := "measuring"
		if done != nil {
			verb = fmt.Sprintf("resuming after %d of", len(done))
		}
		fmt.Fprintf(o.Err, "v6lab: %s: %s %s (%s over %v) -> %s\n",
			j.Exp.Name, verb, stats.Count(len(plan), "run"), strings.Join(j.Exp.Protocols(), ", "), j.Exp.Paths(), dir)
		if done != nil && !j.StartAt.IsZero() {
			fmt.Fprintf(o.Err, "v6lab: keeping the schedule of --start-at %s: each run left waits for its slot; one whose slot has passed starts at once and is recorded late\n",
				j.StartAt.UTC().Format(time.RFC3339Nano))
		}
	}
	runErr := r.Execute(ctx, dir)
	prog.Done()
	if runErr != nil && !errors.Is(runErr, experiment.ErrInterrupted) {
		return dir, runErr
	}
	return dir, finish(dir, files, runErr, impaired(j.Exp, j.Impaired), o)
}

// header readies the process for measuring (GC, open files, the client's
// spin) and makes the result's header, its notes saying how.
func (j *Job) header(toolVersion string) (result.Header, error) {
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
		return result.Header{}, err
	}
	if err := j.Exp.CheckOpenFiles(limit, j.ServerFDs); err != nil {
		return result.Header{}, err
	}
	busy := ""
	switch {
	case j.ServerFDs > 0:
		busy = "the embedded servers run in this process here (loopback)"
	case j.Exp.Background():
		busy = "the background traffic is generated in this process"
	}
	spin, err := clientSpin(j.Exp, busy)
	if err != nil {
		return result.Header{}, err
	}
	notes := append(append([]string(nil), j.Notes...), gcNote)
	notes = append(notes, j.queueNote()...)
	changed := "no sysctl was changed"
	if j.Lab["sysctl_changed"] != "" {
		changed = "the one sysctl changed is in the lab's notes"
	}
	for i := range j.Exp.Groups {
		if g := &j.Exp.Groups[i]; g.PMTU.MTUProbing != nil {
			changed += "; cell groups with tcp_mtu_probing set net.ipv4.tcp_mtu_probing in the lab's client and server hosts for their runs"
			break
		}
	}
	notes = append(notes, j.Exp.TimingNotes(TimingNote, LingerNote)...)
	notes = append(notes, changed)
	command := j.Command
	if len(command) == 0 {
		command = os.Args
	}
	command = all.RedactArgs(command) // a password is used, never written
	return result.Header{
		FormatVersion: result.FormatVersion, Tool: "v6lab", ToolVersion: toolVersion, Created: time.Now().UTC(),
		Command: command, Host: host.Name(), Kernel: host.Kernel(), GoVersion: runtime.Version(), CPUs: runtime.NumCPU(),
		Sysctls: host.ReadSysctls(host.Sysctls), Limits: map[string]string{"nofile": fmt.Sprint(limit)}, Target: j.Target,
		Servers: j.Servers, ServerRoles: j.ServerRoles, Notes: notes, Lab: j.Lab, ClientSpin: spin,
	}, nil
}

// finish writes the reports of the result in dir, prints them, and says
// how the job ended: interrupted, with a cell that completed nothing, or
// (strict) with runs left out.
func finish(dir, files string, runErr error, impaired map[string]bool, o Output) error {
	s, err := report.WriteAll(dir)
	if err != nil {
		return err
	}
	if !o.Quiet {
		if err := report.Text(o.Out, s); err != nil {
			return err
		}
		fmt.Fprintln(o.Out)
	}
	fmt.Fprintf(o.Out, "results: %s (%s)\n", dir, files)
	if runErr != nil {
		return &InterruptedError{Dir: dir}
	}
	if err := AllFailed(s, impaired); err != nil {
		return err
	}
	if o.Strict && s.LeftOutRuns > 0 {
		return &LeftOutError{Runs: s.LeftOutRuns, Dir: dir}
	}
	return nil
}

// dirName names the result directory: the experiment's name, and a
// segment's index, so the segments of one run sit side by side; a name
// that ends with it already (--name web-seg0, as run --help shows) is
// not given it twice (trial7 F6: t7seg-seg0-seg0-…).
func (j Job) dirName() string {
	if j.Segment != nil {
		if suffix := fmt.Sprintf("-seg%d", j.Segment.Index); !strings.HasSuffix(j.Exp.Name, suffix) {
			return j.Exp.Name + suffix
		}
	}
	return j.Exp.Name
}

// SegmentNote says what a segment's figures are: a share of the users,
// to be merged with the others before they answer the experiment's
// question.
func SegmentNote(seg result.Segment) string {
	return fmt.Sprintf("segment %s: this process ran users floor(%d*c/%d) to floor(%d*c/%d)-1 of every run of c users; its figures are a share of the experiment's: merge every segment's directory with v6lab merge", seg, seg.Index, seg.Count, seg.Index+1, seg.Count)
}

// queueNote warns when more users than the server's accept queue holds
// connect at once.
func (j Job) queueNote() []string {
	maxConns := 0
	for _, c := range j.Exp.Groups {
		for _, n := range c.Conns {
			maxConns = max(maxConns, n)
		}
	}
	sm := j.Somaxconn
	if v, err := host.ReadSysctl("net.core.somaxconn"); err == nil && sm == 0 && j.ServerFDs > 0 {
		fmt.Sscan(v, &sm)
	}
	if sm > 0 && maxConns > sm {
		return []string{fmt.Sprintf("%d simultaneous connections exceed the server host's net.core.somaxconn (%d): the server's accept queue can overflow, and SYN retries then add about 1 s to some transactions", maxConns, sm)}
	}
	return nil
}

// recordPcap writes the wire check's frames to a pcap file in dir (one of
// its own per resumption); the returned function closes it.
func (j Job) recordPcap(dir string, resumed int) (string, func(io.Writer), error) {
	name := "capture.pcap"
	if j.Resume != nil {
		name = fmt.Sprintf("capture.resumed-%d.pcap", resumed)
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return "", nil, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := j.Pcap.Record(w); err != nil {
		f.Close()
		return "", nil, err
	}
	// The capture is closed first so nothing writes while this flushes.
	return name, func(errOut io.Writer) {
		j.Pcap.Close()
		if err := errors.Join(j.Pcap.RecordErr(), w.Flush(), f.Close()); err != nil {
			fmt.Fprintf(errOut, "v6lab: %s is incomplete: %v\n", name, err)
		}
	}, nil
}

// AllFailed is an error when some cell completed no transaction at all: the
// results are kept, but the command did not measure what was asked. A
// cell of a group in impaired (its name: its lab breaks paths on purpose,
// ipv6_loss, ptb_blackhole, fragments) may fail whole: that is what it
// measures.
func AllFailed(s *report.Summary, impaired map[string]bool) error {
	for _, c := range s.Cells {
		if c.Completed == 0 && c.Failed > 0 && !impaired[c.Protocol] {
			return fmt.Errorf("every counted transaction of %s/%s/%d failed (first: %s)", c.Protocol, c.Path, c.Conns, c.FirstError)
		}
	}
	return nil
}

func (o Output) progress(total, done int, written Written, pace *Pace) Progress {
	switch {
	case o.Quiet:
		return none{}
	case o.Progress != nil:
		return o.Progress(total, done, written, pace)
	}
	return Lines(o.Err, written, pace)
}

// Lines is the progress of a run whose output is not a terminal (a log):
// one line every 10 s, with the samples written and an estimate of the
// time left (pace's).
func Lines(w io.Writer, written Written, pace *Pace) Progress {
	return &lines{w: w, every: 10 * time.Second, last: time.Now(), written: written, pace: pace}
}

type lines struct {
	w       io.Writer
	every   time.Duration
	last    time.Time
	written Written
	pace    *Pace
}

func (l *lines) Step(done, total int, title string, r result.Run) {
	now := time.Now()
	if now.Sub(l.last) < l.every || done == total {
		return
	}
	l.last = now
	fmt.Fprintf(l.w, "v6lab: run %d/%d (%d%%), %s, %s, about %s left\n", done, total, 100*done/total, title, WrittenText(l.written), l.pace.Left(done, now))
}

func (l *lines) Done() {}

type none struct{}

func (none) Step(int, int, string, result.Run) {}
func (none) Done()                             {}

// clientSpin sets the event loop engine's spin window to the experiment's
// (the default when unset) and returns it for the header; empty when the
// engine cannot start (its cells then fail with the reason). When busy
// says what else of v6lab works in this process during the runs (the
// servers on loopback, the background traffic), it never spins: the
// spinning loop holds a CPU of the Go runtime that work needs, and on
// loopback that doubled the response time (docs/performance-history.md).
func clientSpin(e *experiment.Experiment, busy string) (string, error) {
	spin := evloop.SpinDefault()
	switch {
	case e.Spin != nil && busy != "" && *e.Spin > 0:
		return "", fmt.Errorf("spin: %s, where a spinning client takes the CPU it needs (on loopback it doubled the response time); set spin to 0, or measure without it", busy)
	case e.Spin != nil:
		spin = time.Duration(*e.Spin)
	case busy != "":
		spin = 0
	}
	eng, err := evloop.Default()
	if err != nil {
		return "", nil
	}
	eng.SetSpin(spin)
	return spin.String(), nil
}

// offLab refuses a job outside the lab that would measure a path only the
// lab has: over loopback or to a named host such a path is plain ipv6
// under another label. Every entry point checks it first; this is the
// last door.
func offLab(j Job) error {
	if j.Target == result.Lab {
		return nil
	}
	where := map[result.Where]string{result.Hosts: "a named host"}[j.Target]
	for _, c := range j.Exp.Groups {
		for _, p := range c.Paths {
			if err := p.OffLab(cmp.Or(where, string(j.Target))); err != nil {
				return fmt.Errorf("measure: cell group %s: %w", c.CellName(), err)
			}
		}
	}
	return nil
}

// impaired names the cell groups whose lab breaks paths on purpose: a
// share of IPv6 lost, ICMP errors or fragments dropped.
func impaired(e *experiment.Experiment, all bool) map[string]bool {
	out := map[string]bool{}
	for i := range e.Groups {
		if g := &e.Groups[i]; all || g.IPv6Loss > 0 || g.PMTU.Drop().Any() {
			out[g.CellName()] = true
		}
	}
	return out
}
