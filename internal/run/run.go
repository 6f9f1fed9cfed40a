// Package run runs an experiment where it can: it decides the place (a
// lab, a lab in a user namespace of its own, loopback, or the real hosts
// its cells name), says why when it falls back, and runs it there: on
// loopback with the embedded servers in this process, in a lab through
// inlab, against hosts as each cell names them. The CLI hands it the
// experiment and the run's settings; it returns typed errors.
//
// It imports inlab and measure, never the CLI.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"v6lab/internal/lab"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/host"
	"v6lab/internal/run/inlab"
	"v6lab/internal/run/measure"
	"v6lab/internal/sock/path"
)

// Settings are a run's own settings (v6lab run's flags).
type Settings struct {
	// Loopback forces loopback; Pcap and Keep need the lab.
	Loopback, Pcap, Keep bool
	// Topology is the lab's topology, if any; ExplicitPaths says the
	// user chose the paths (6in4 is then never dropped silently).
	Topology      string
	ExplicitPaths bool
	// TopologyIfLab: the topology is an auto experiment's own (the main
	// job's 1 Gbit/s links): it shapes the lab when there is one, and
	// needs none (loopback then measures without it).
	TopologyIfLab bool
	Lab           lab.Config
	// LabFlags are the flags the user gave that set the lab (lab.Flags'
	// Given): refused where no lab is built.
	LabFlags []string
	// Rootless: this process is the re-run inside a user namespace.
	Rootless bool
	// Results is the directory that receives the result directory.
	Results string
	Output  measure.Output
	Command []string
	// Segment and StartAt split the run with other client hosts
	// (where: hosts only).
	Segment *result.Segment
	StartAt time.Time
}

// Places an experiment runs.
const (
	Lab      = result.Lab
	Loopback = result.Loopback
	Hosts    = result.Hosts
	// Rootless: a lab in a user namespace of its own, by re-running the
	// command there (the caller's job: it knows the command line). It is
	// a decision, never a place a result records (the re-run's is lab).
	Rootless result.Where = "rootless"
)

// Decide says where exp runs now and why, if it falls back, dropping 6in4
// (with a note) when an experiment that may run anywhere falls back to
// loopback. It checks what must hold before anything runs.
func Decide(exp *experiment.Experiment, s Settings) (where result.Where, note string, err error) {
	if s.Loopback && s.Pcap {
		return "", "", fmt.Errorf("--pcap needs the lab; --loopback has no wire to capture")
	}
	if where, note, err = decide(exp, s); err != nil {
		return "", "", err
	}
	if (s.Segment != nil || !s.StartAt.IsZero()) && where != Hosts {
		return "", "", fmt.Errorf("--segment and --start-at split one experiment across client hosts that measure the same servers, so they need where: hosts; this experiment runs on %s, where each host would measure servers of its own (a lab and loopback are per host). docs/distributed.md shows a split run against one lab's servers", where)
	}
	if err := exp.Validate(); err != nil {
		return "", "", err
	}
	if where == Lab || where == Rootless {
		if _, err := inlab.PlanConditions(exp, s.Lab); err != nil {
			return "", "", err // what the lab run would refuse (a link_rate over a lossy link)
		}
	}
	serverFDs := 0 // the lab's and real hosts' servers are not this process's
	if where == Loopback {
		serverFDs = 1
	}
	if err := exp.CheckOpenFiles(host.NoFileHard(), serverFDs); err != nil {
		return "", "", err
	}
	return where, note, nil
}

func decide(exp *experiment.Experiment, s Settings) (result.Where, string, error) {
	where := exp.Where
	why := inlab.CanLab()
	if s.Loopback {
		why = errors.New("--loopback")
	} else if why != nil && os.Geteuid() != 0 && !s.Rootless && (where == result.Auto || where == Lab) {
		return Rootless, "", nil // not root: a lab of our own in a user namespace
	}
	if why != nil && s.ExplicitPaths {
		for _, p := range exp.Paths() {
			if err := p.OffLab("loopback"); err != nil {
				return "", "", fmt.Errorf("--paths: %w (no lab: %v)", err, why)
			}
		}
	}
	if s.Loopback {
		if where == Lab || where == Hosts {
			return "", "", fmt.Errorf("--loopback: the experiment runs on %s", where)
		}
		where = Loopback
	}
	if where == Loopback || where == Hosts || (where == result.Auto && why != nil) {
		if err := s.refuseLabSettings(exp, where, why); err != nil {
			return "", "", err
		}
	}
	switch where {
	case result.Auto:
		if why == nil {
			return Lab, "", nil
		}
		if s.needsLab() {
			return "", "", fmt.Errorf("a topology and --pcap need a lab, but %v", why)
		}
		exp.DropLabOnly()
		return Loopback, fmt.Sprintf("no lab (%v): measuring ipv4 and ipv6 on loopback", why), nil
	case Lab:
		if why != nil {
			return "", "", fmt.Errorf("experiment %s runs in the lab, but %v", exp.Name, why)
		}
	case Loopback:
		exp.DropLabOnly()
		fallthrough
	case Hosts:
		if s.needsLab() {
			return "", "", fmt.Errorf("a topology and --pcap need the lab, but this experiment runs on %s", where)
		}
	}
	return where, "", nil
}

// refuseLabSettings is the error for what of the experiment and the
// run's settings sets a lab where none is built (at where, or for why):
// labNeed's, or the file's congestion key (naming its file and line).
func (s Settings) refuseLabSettings(exp *experiment.Experiment, where result.Where, why error) error {
	reason := "this experiment runs on " + string(where)
	if why != nil {
		reason = why.Error()
	}
	if need, tail := s.labNeed(exp); need != "" {
		return fmt.Errorf("%s, but %s%s", need, reason, tail)
	}
	return exp.CongestionOffLab(reason)
}

// labNeed says what of the experiment and the run's settings sets a lab
// ("" if nothing), and what to add after the reason none is built: the
// experiment's own (NeedsLab), a lab flag the user gave (--loss 3: never
// measured as if it had not been given), or the topology's path MTU
// settings.
func (s Settings) labNeed(exp *experiment.Experiment) (need, tail string) {
	switch n := len(s.LabFlags); {
	case exp.NeedsLab() != "":
		return exp.NeedsLab(), ""
	case n == 1:
		return s.LabFlags[0] + " sets the lab", ": no lab is built, and the run would measure as if it had not been given"
	case n > 1:
		return strings.Join(s.LabFlags[:n-1], ", ") + " and " + s.LabFlags[n-1] + " set the lab", ": no lab is built, and the run would measure as if they had not been given"
	case !s.Lab.PMTU.IsZero():
		return "the topology's path MTU settings (pmtu: " + s.Lab.PMTU.String() + ") set the lab's routers and hosts", ""
	}
	return "", ""
}

// labNeeded says whether the experiment or the settings set a lab.
func labNeeded(s Settings, exp *experiment.Experiment) bool {
	need, _ := s.labNeed(exp)
	return need != ""
}

// needsLab says whether the settings need a lab: --pcap, or a topology
// that is more than an auto experiment's own.
func (s Settings) needsLab() bool {
	return s.Pcap || (s.Topology != "" && !s.TopologyIfLab)
}

// NoUserNamespace is where a run goes when neither root nor a user
// namespace can make a lab (err says why the namespace failed): loopback,
// unless the lab was a must.
func NoUserNamespace(exp *experiment.Experiment, s Settings, err error) (result.Where, string, error) {
	if exp.Where == Lab || s.needsLab() || labNeeded(s, exp) {
		return "", "", fmt.Errorf("this needs a lab, but %v, and %v", inlab.CanLab(), err)
	}
	if cerr := exp.CongestionOffLab(fmt.Sprintf("%v, and %v", inlab.CanLab(), err)); cerr != nil {
		return "", "", cerr
	}
	exp.DropLabOnly()
	return Loopback, fmt.Sprintf("no lab (%v, and %v): measuring ipv4 and ipv6 on loopback", inlab.CanLab(), err), nil
}

// CheckServers names every missing real server daemon at once, before a
// lab is built.
func CheckServers(exp *experiment.Experiment) error {
	if !exp.Real() {
		return nil
	}
	return inlab.CheckReal(exp)
}

// WritePlan writes what a dry run shows: the plan (experiment.WritePlan)
// and, where a lab would be built, the lab's links and each cell group's
// conditions as the run will record them (Decide has checked them).
func WritePlan(w io.Writer, exp *experiment.Experiment, where result.Where, note string, s Settings) {
	var settling experiment.Settling
	if where == Lab || where == Rootless {
		settling = inlab.PlanSettling(exp, s.Lab)
	}
	experiment.WritePlan(w, exp, where, note, Bottleneck(where, s.Lab), settling)
	if where == Lab || where == Rootless {
		if err := inlab.WritePlan(w, exp, s.Lab); err != nil {
			fmt.Fprintf(w, "lab: %v\n", err)
		}
	}
}

// Bottleneck is the slowest shaped link of a lab run (0: unshaped).
func Bottleneck(where result.Where, cfg lab.Config) uint64 {
	var b uint64
	if where == Lab {
		for _, name := range lab.LinkNames {
			if r := cfg.Link(name).Shaping.Rate; r > 0 && (b == 0 || r < b) {
				b = r
			}
		}
	}
	return b
}

// Do runs exp where it was decided (or resumes it into dir when rs is
// set). In a lab without a tunnel it measures ipv4 and ipv6 and says so,
// unless 6in4 was asked for by name.
func Do(ctx context.Context, exp *experiment.Experiment, where result.Where, note string, s Settings, rs *experiment.Resume, dir string) error {
	if where == Lab {
		if err := lab.CanTunnel(); err != nil {
			if s.ExplicitPaths && slices.Contains(exp.Paths(), path.SixIn4) {
				return fmt.Errorf("--paths: %w", err)
			}
			s.Lab.NoTunnel = true
			exp.DropLabOnly()
			note = fmt.Sprintf("measuring ipv4 and ipv6 in the lab without 6in4: %v", err)
		}
	}
	if note != "" && !s.Output.Quiet {
		fmt.Fprintf(s.Output.Err, "v6lab: %s\n", note)
	}
	switch where {
	case Lab:
		r := &inlab.Session{Exp: exp, Lab: s.Lab, Results: s.Results, Keep: s.Keep, Pcap: s.Pcap, Resume: rs, ResumeDir: dir,
			Command: s.Command, Quiet: s.Output.Quiet, Strict: s.Output.Strict, Rootless: s.Rootless, Out: s.Output.Out, Err: s.Output.Err}
		return r.Do(ctx)
	case Hosts:
		servers := map[string]string{}
		var notes []string
		for _, c := range exp.Groups {
			servers[c.CellName()] = c.Opts().Destination()
			for _, n := range c.Opts().Notes(c.Paths) {
				notes = append(notes, c.NoteName()+": "+n)
			}
		}
		_, err := measure.Do(ctx, measure.Job{Exp: exp, Probe: experiment.Probes(nil), Target: Hosts, Servers: servers, Notes: notes,
			Results: s.Results, Resume: rs, ResumeDir: dir, Segment: s.Segment, StartAt: s.StartAt}, s.Output)
		return err
	}
	at, err := experiment.LoopbackPlace(exp.Paths())
	if err != nil {
		return err
	}
	local, err := experiment.StartEmbedded(ctx, exp, at)
	if err != nil {
		return err
	}
	defer local.Close()
	_, err = measure.Do(ctx, measure.Job{Exp: exp, Probe: experiment.Probes(local.Endpoints(nil)), Target: Loopback,
		Servers: local.Describe(""), Notes: []string{"ran on loopback (no lab): only ipv4 and ipv6 exist there"},
		ServerFDs: 1, Results: s.Results, Resume: rs, ResumeDir: dir}, s.Output)
	return err
}

// Resumable is an interrupted experiment ready to continue: where it ran,
// and its lab's config.
type Resumable struct {
	*experiment.Resume
	Where result.Where
	Lab   lab.Config
	Pcap  bool
}

// ResumeWait bounds how long a resume waits for a process still writing
// the samples file.
const ResumeWait = 30 * time.Second

// PrepareResume reads an interrupted result directory (experiment.
// PrepareResume) and where it ran. experiment.ErrComplete: nothing to do.
// While another process still writes its samples (result.ErrBusy), it
// waits up to ResumeWait, telling waiting why first.
func PrepareResume(ctx context.Context, dir string, waiting func(busy error)) (*Resumable, error) {
	rs, err := experiment.PrepareResume(dir)
	if errors.Is(err, result.ErrBusy) {
		waiting(err)
		for deadline := time.Now().Add(ResumeWait); errors.Is(err, result.ErrBusy) && time.Now().Before(deadline); {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			rs, err = experiment.PrepareResume(dir)
		}
		if errors.Is(err, result.ErrBusy) {
			return nil, fmt.Errorf("%w (after %s; fuser -v %s/samples.jsonl* names it)", err, ResumeWait, dir)
		}
	}
	if err != nil {
		return nil, err
	}
	r := &Resumable{Resume: rs, Where: rs.Header.Target,
		Pcap: rs.Header.Lab["pcap"] == "true"}
	if r.Where == Lab {
		if err := json.Unmarshal([]byte(rs.Header.Lab["config"]), &r.Lab); err != nil {
			return nil, fmt.Errorf("%s: the header does not record the lab's config: %w", dir, err)
		}
	}
	return r, nil
}
