package inlab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"v6lab/internal/gen/congestion"
	"v6lab/internal/gen/load"
	"v6lab/internal/lab"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/measure"
	"v6lab/internal/sock/path"
	"v6lab/internal/wire/capture"
	"v6lab/internal/wire/tcpflow"
)

// Child is the measuring side of a lab run, inside the client namespace:
// it reads the job (once, then removes it), settles every path, and runs
// the job with the captures its parent passed as fds 3 and 4.
func Child(ctx context.Context, jobFile string, out measure.Output) error {
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
	// A lab that drops Packet Too Big or fragments itself may break a
	// path for good: its settling is one try, and a path it breaks is
	// left to its runs (which record why), not an error.
	tries, impaired := 5, j.PMTU != nil && j.PMTU.Lab.Drop().Any()
	if impaired {
		tries = 1
	}
	for i := range j.Exp.Groups {
		if err := Settle(ctx, &j.Exp.Groups[i], probe, tries); err != nil {
			if !impaired || ctx.Err() != nil {
				return err
			}
			j.Notes = append(j.Notes, "settling: "+err.Error()+" (the lab's own "+j.PMTU.Lab.String()+": left to its runs)")
		}
	}
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
	if j.Dir != "" {
		mj.Resume, mj.ResumeDir = &experiment.Resume{Exp: j.Exp, Done: j.Done, Rewarmed: j.Rewarmed}, j.Dir
	}
	_, err = measure.Do(ctx, mj, out)
	return err
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

// Settle does unrecorded transactions on every path until one completes
// (at most tries), so neighbour discovery and every cache on the way are
// warm before the first run, and a path that cannot work fails here with
// its reason.
func Settle(ctx context.Context, c *experiment.CellGroup, probe func(*experiment.CellGroup, path.Path) (load.Probe, error), tries int) error {
	// The cell's own timeout, never a fixed one shorter than it.
	timeout := min(max(time.Duration(c.Timeout), 5*time.Second), 2*time.Minute)
	for _, p := range c.Paths {
		// A lighter transaction of the same protocol and client (a short
		// trial, a small file: never the cell's own file, which may take
		// minutes on a slow link) warms the path and proves the server; a
		// path known to fail is left to its runs, which record why.
		light, settle := c.Opts().Settle(p)
		if !settle {
			continue
		}
		cell := c
		if light != nil {
			short := *c
			short.Options, cell = light, &short
		}
		pr, err := probe(cell, p)
		if err != nil {
			return err
		}
		ok, last := settlePath(ctx, pr, tries, timeout)
		if !ok {
			return fmt.Errorf("%s over path %s does not work in the lab: %s", c.CellName(), p, last)
		}
	}
	return nil
}

// settlePath tries pr's transaction until one completes (at most tries)
// and then closes what pr kept open (a keepalive cell's connections):
// settling's connections would otherwise go on sending (quic-go's path
// MTU probes, ACKs) into the first runs, where the wire check counts them
// as stray.
func settlePath(ctx context.Context, pr load.Probe, tries int, timeout time.Duration) (ok bool, last string) {
	if c, isCloser := pr.(io.Closer); isCloser {
		defer c.Close()
	}
	for try := 0; try < tries && !ok; try++ {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		s := pr.Do(ctx, 0)
		cancel()
		ok, last = s.OK(), s.Err
	}
	return ok, last
}
