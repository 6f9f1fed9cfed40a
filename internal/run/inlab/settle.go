package inlab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/lab"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
)

// ProbeFunc makes a cell group's probe on a path (experiment.Probes).
type ProbeFunc = func(*experiment.CellGroup, path.Path) (load.Probe, error)

const (
	// settleTries is how many transactions settling tries on a path of a
	// lab that means every path to work; lossyTries the same in a lab the
	// user gave a loss, where a path may be too lossy to settle and each
	// failed try costs a whole timeout.
	settleTries, lossyTries = 5, 3
	// SettleFloor is the least time settling gives a transaction, over a
	// shorter cell timeout (--timeout 3s): a path is never called broken
	// for a timeout tighter than its first packets' neighbour discovery.
	SettleFloor = 5 * time.Second
)

// settle settles every cell group's paths before the first run. A lab
// that drops Packet Too Big or fragments itself may break a path for
// good: its settling is one try. A lab the user gave a loss (--loss 30,
// a topology's loss:) may leave a path too lossy to settle in a few
// tries. In both a path that does not settle is left to its runs, which
// record their failures, with a note naming the lab's condition, and the
// other paths are still settled; in any other lab it ends the run.
func (j *Job) settle(ctx context.Context, probe ProbeFunc) error {
	tries, why := settleTriesIn(j.PMTU, LabLoss(j.Lab["config"]))
	for i := range j.Exp.Groups {
		failed, err := Settle(ctx, &j.Exp.Groups[i], probe, tries, why != "")
		if err != nil {
			return err
		}
		for _, f := range failed {
			if why == "" || ctx.Err() != nil {
				return f
			}
			f.Cond = why
			j.Notes = append(j.Notes, "settling: "+f.Error()+"; left to its runs, which record their failures")
		}
	}
	return nil
}

// settleTriesIn is how many tries settling gives a path in a lab of
// pmtu (nil: none) and loss (LabLoss; "": none), and why fewer than in a
// lab that means every path to work, where a path that does not settle
// ends the run ("": such a lab): elsewhere it is left to its runs.
func settleTriesIn(pmtu *PMTUJob, loss string) (tries int, why string) {
	switch {
	case pmtu != nil && pmtu.Lab.Drop().Any():
		return 1, "the lab's own " + pmtu.Lab.String()
	case loss != "":
		return lossyTries, "the lab's " + loss
	}
	return settleTries, ""
}

// settleTimeout is what settling gives each try of c: the cell's own
// timeout, never a fixed one shorter than it, at least SettleFloor.
func settleTimeout(c *experiment.CellGroup) time.Duration {
	return min(max(time.Duration(c.Timeout), SettleFloor), 2*time.Minute)
}

// PlanSettling is what settling may add to a dry run's worst case (every
// try waiting out its timeout) in a lab of cfg where a path that does not
// settle is left to its runs (a lab loss, a lab that drops Packet Too
// Big): each group's settled paths' tries. In a lab that means every path
// to work such a path ends the run, so it adds nothing.
func PlanSettling(exp *experiment.Experiment, cfg lab.Config) experiment.Settling {
	tries, why := settleTriesIn(pmtuJob(cfg, exp), labLoss(cfg))
	if why == "" {
		return experiment.Settling{}
	}
	var out experiment.Settling
	var each []string
	for i := range exp.Groups {
		c := &exp.Groups[i]
		n := 0
		for _, p := range c.Paths {
			if _, settle := c.Opts().Settle(p); settle {
				n++
			}
		}
		out.Worst += time.Duration(n*tries) * settleTimeout(c)
		if t := fmt.Sprint(settleTimeout(c)); !slices.Contains(each, t) {
			each = append(each, t)
		}
	}
	out.Tries = fmt.Sprintf("%d %s of %s at %s", tries, plural(tries, "try", "tries"), strings.Join(each, " or "), why)
	return out
}

// LabLoss says the loss a lab's config (its JSON, as the job's lab
// header keeps it) puts on its links: "loss 30% on every link", "loss 5%
// on r1-r2", or "" for none.
func LabLoss(configJSON string) string {
	var cfg lab.Config
	if json.Unmarshal([]byte(configJSON), &cfg) != nil {
		return ""
	}
	return labLoss(cfg)
}

// labLoss is LabLoss of a lab's config.
func labLoss(cfg lab.Config) string {
	var parts []string
	every := true
	for _, name := range lab.LinkNames {
		l := cfg.Link(name).Shaping.Loss
		every = every && l == cfg.Link(lab.LinkNames[0]).Shaping.Loss
		if l > 0 {
			parts = append(parts, fmt.Sprintf("loss %g%% on %s", l, name))
		}
	}
	if every && len(parts) > 0 {
		return fmt.Sprintf("loss %g%% on every link", cfg.Link(lab.LinkNames[0]).Shaping.Loss)
	}
	return strings.Join(parts, ", ")
}

// SettleError is a path that settling could not get one transaction
// through.
type SettleError struct {
	Cell  string
	Path  path.Path
	Tries int
	// Timeout is what each try was given; CellTimeout the cell's own
	// (less when settling's floor raised it).
	Timeout, CellTimeout time.Duration
	// Cond is the lab's condition that may break the path ("the lab's
	// loss 30% on every link"), when it has one.
	Cond string
	Last string
}

func (e *SettleError) Error() string {
	var s string
	if e.Cond == "" {
		s = fmt.Sprintf("%s over path %s does not work in the lab: %s", e.Cell, e.Path, e.Last)
	} else {
		s = fmt.Sprintf("%s over path %s completed no transaction in %d %s at %s: %s", e.Cell, e.Path, e.Tries, plural(e.Tries, "try", "tries"), e.Cond, e.Last)
	}
	if e.CellTimeout > 0 && e.Timeout > e.CellTimeout {
		s += fmt.Sprintf(" (settling gives a try at least %s, over the cell's timeout %s)", SettleFloor, e.CellTimeout)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Settle does unrecorded transactions on every path until one completes
// (at most tries), so neighbour discovery and every cache on the way are
// warm before the first run, and a path that cannot work fails here with
// its reason: the first such path, or with keepOn every one, each
// settled or tried in turn. err is a probe that could not be made.
func Settle(ctx context.Context, c *experiment.CellGroup, probe ProbeFunc, tries int, keepOn bool) (failed []*SettleError, err error) {
	timeout := settleTimeout(c)
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
			return failed, err
		}
		if ok, last := settlePath(ctx, pr, tries, timeout); !ok {
			failed = append(failed, &SettleError{Cell: c.CellName(), Path: p, Tries: tries, Timeout: timeout, CellTimeout: time.Duration(c.Timeout), Last: last})
			if !keepOn || ctx.Err() != nil {
				return failed, nil
			}
		}
	}
	return failed, nil
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
