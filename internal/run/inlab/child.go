package inlab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"v6lab/internal/gen/congestion"
	"v6lab/internal/lab"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/measure"
	"v6lab/internal/wire/capture"
	"v6lab/internal/wire/tcpflow"
)

// Child is the measuring side of a lab run, inside the client namespace:
// it reads the job (once, then removes it), settles every path, and runs
// the job with the captures its parent passed as fds 3 and 4.
func Child(ctx context.Context, jobFile string, out measure.Output) error {
	// Ctrl-C from its start: the default action would kill this process
	// before measure.Do catches it (settling, captures), and the parent
	// would report a killed child rather than an interrupted run.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := os.ReadFile(jobFile)
	if err != nil {
		return err
	}
	// The job is read once: remove it now, so that a parent killed
	// before it could clean up leaves nothing behind.
	if dir := filepath.Dir(jobFile); strings.HasPrefix(filepath.Base(dir), "v6lab-job-") {
		os.RemoveAll(dir)
	}
	var j Job
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("lab job %s: %w", jobFile, err)
	}
	probe := experiment.Probes(j.Endpoints)
	if err := j.settle(ctx, probe); ctx.Err() != nil {
		return &measure.InterruptedError{} // the parent removes the empty result directory
	} else if err != nil {
		return err
	}
	impaired := j.PMTU != nil && j.PMTU.Lab.Drop().Any()
	cp := capture.FromFD(3, capture.Filter{})
	defer cp.Close()
	var clientSide *capture.Capture
	if j.ClientSideFD > 0 {
		clientSide = capture.FromFD(j.ClientSideFD, capture.Filter{})
		defer clientSide.Close()
	}
	var rec *capture.Capture
	if j.Pcap {
		rec = cp
	}
	cond := &conditions{ports: j.Ports, lookups: j.Lookups, lab: j.Lab["name"], rates: j.LinkShaping, wide: j.Lab["loss"] == "bpf"}
	if j.PMTU != nil {
		cond.pmtu = &pmtuRuns{lab: cond.lab, own: j.PMTU.Lab}
	}
	if len(j.Gen) > 0 {
		if cond.bg, err = congestion.Start(ctx, j.Gen); err != nil {
			return err
		}
		defer cond.bg.Close()
	}
	if j.ServerCapture {
		cond.tracker = tcpflow.New(0)
		cond.server = capture.FromFD(4, capture.Filter{})
		cond.server.Tap(cond.tracker.Frame)
		defer cond.server.Close()
	}
	for _, c := range j.Exp.Groups {
		if c.IPv6Delay > 0 {
			if err := lab.CheckNetem(cond.lab); err != nil {
				return fmt.Errorf("cell %s: %w", c.CellName(), err)
			}
			break
		}
	}
	mj := measure.Job{
		Exp: j.Exp, Probe: probe, Target: "lab", Servers: j.Servers, ServerRoles: j.ServerRoles, Notes: j.Notes,
		ServerFDs: 0, Somaxconn: j.Somaxconn, Command: j.Command, Results: j.Results,
		Wire: j.wireCheck(cp, clientSide), Lab: j.Lab, Pcap: rec, Conditions: cond,
		TCPInfo: j.PMTU != nil, Impaired: impaired, Dir: j.Made,
	}
	mj.Roles = roles(j.Lab["name"])
	mj.Resume, mj.ResumeDir = j.resume(), j.Dir
	if ctx.Err() != nil {
		return &measure.InterruptedError{}
	}
	_, err = measure.Do(ctx, mj, out)
	return err
}

// resume is what the job resumes (nil: a new experiment). Its Done is
// never nil: a resume of a result with no finished run has none, and
// job.json drops the empty map (omitempty), which would have the child
// create the samples file that is there ("file exists").
func (j *Job) resume() *experiment.Resume {
	if j.Dir == "" {
		return nil
	}
	done := j.Done
	if done == nil {
		done = map[int]bool{}
	}
	return &experiment.Resume{Exp: j.Exp, Done: done, Rewarmed: j.Rewarmed}
}

// wireCheck proves each run's path from the captures on r1's link to r2
// (cp) and to the client (clientSide, for the IPv6-only access paths),
// and, where the lab has NATs or datapaths with counters, names a run's
// failures for an exhausted pool and records the counters.
func (j *Job) wireCheck(cp, clientSide *capture.Capture) experiment.WireCheck {
	check := capture.Check{C: cp, Ports: j.Ports, UDP: wireUDP(j.Ports), Lookups: j.Lookups, Nat64: j.Nat64, ClientSide: clientSide}
	if len(j.NATs) > 0 || len(j.Datapaths) > 0 {
		return &natCheck{Check: check, nats: j.NATs, datapaths: j.Datapaths}
	}
	return check
}

// roles are every role's namespace of the lab, for the self-check's CPU
// per role (those the lab does not have are left out).
func roles(name string) map[string]string {
	out := map[string]string{}
	for _, role := range append(append([]string{}, lab.Hosts...), lab.GenHosts...) {
		out[role] = lab.NS(name, role)
	}
	return out
}
