package experiment

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"v6lab/internal/gen/congestion"
	"v6lab/internal/proto"
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// NeedsLab says what in the experiment needs the lab, if anything.
func (exp *Experiment) NeedsLab() string {
	switch {
	case exp.Real():
		return "real servers run in the lab's server host"
	case exp.Background():
		return "background traffic runs between the lab's generator hosts"
	case exp.ServerCapture():
		return "server-side figures come from a capture in the lab's server host"
	case exp.LinkRates():
		return "link_rate reshapes the lab's links"
	case exp.anyCell(func(c *CellGroup) bool { return c.IPv6Loss > 0 }):
		return "ipv6_loss drops IPv6 at the lab's router"
	case exp.anyCell(func(c *CellGroup) bool { return c.IPv6UDPLoss > 0 }):
		return "ipv6_udp_loss drops IPv6 UDP at the lab's router"
	case exp.anyCell(func(c *CellGroup) bool { return c.Loss > 0 }):
		return "loss drops packets between the lab's routers"
	case exp.anyCell(func(c *CellGroup) bool { return c.IPv6Delay > 0 }):
		return "ipv6_delay delays IPv6 at the lab's router"
	case exp.PMTU():
		return "ptb_blackhole, fragments, tcp_mtu_probing and mss_clamp set the lab's routers and hosts"
	}
	return ""
}

// DropLabOnly removes the paths only the lab has (6in4) from every cell
// group, for a run that falls back to loopback.
func (exp *Experiment) DropLabOnly() {
	for i := range exp.Groups {
		var keep []path.Path // a new slice: cells may share one
		for _, p := range exp.Groups[i].Paths {
			if !p.Kind().LabOnly {
				keep = append(keep, p)
			}
		}
		exp.Groups[i].Paths = keep
	}
}

// trialTime guesses how long a transport trial runs: its length, or its
// WritePlan shows what a run would do and a rough idea of how long.
// settle is what a lab run's settling may add to its worst case.
func WritePlan(w io.Writer, exp *Experiment, where result.Where, note string, bottleneck uint64, settle Settling) {
	plan := exp.Plan()
	fmt.Fprintf(w, "experiment %s: %s on %s, baseline %s, order %s", exp.Name, stats.Count(len(plan), "run"), where, exp.Baseline, exp.Order)
	if exp.Order == OrderShuffled {
		fmt.Fprintf(w, " (seed %d)", exp.Seed)
	}
	fmt.Fprintln(w)
	if note != "" {
		fmt.Fprintf(w, "note: %s\n", note)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	// Where the cells name their servers, the plan says which: the one
	// thing a dry run against real hosts must show.
	targets := where == result.Hosts
	head := "CELLS\tPROTOCOL\tPATHS\tCONNS\tRUNS\tWARM-UP\tTIMEOUT\tTRANSACTIONS"
	if targets {
		head += "\tTARGET"
	}
	fmt.Fprintln(tw, head)
	var est, worst time.Duration
	if where == result.Lab {
		// Building the lab, starting its servers and removing it again
		// (measured: about 2 s on a 2-vCPU VM), and settling each cell
		// group's paths.
		est += labSetup + time.Duration(len(exp.Groups))*settlePerGroup
		worst += labSetup
	}
	total, sustained := 0, []string(nil)
	for _, c := range exp.Groups {
		for _, n := range c.Conns {
			n *= c.Opts().PerUser() // workers: HTTP/2's streams run as many transactions a user at once
			est += c.runEstimate(n, bottleneck) * time.Duration(c.Runs*len(c.Paths))
			for _, p := range c.Paths {
				est += c.pmtuWait(p) * time.Duration(c.Runs) // a path MTU black hole waits
			}
			if c.IPv6Loss+c.IPv6UDPLoss > 0 && slices.ContainsFunc(c.Paths, func(p path.Path) bool { return p.Kind().Dual }) {
				// A dual-stack client waits out its attempt delay for IPv4.
				est += c.Opts().AttemptDelay() * time.Duration(c.Runs)
			}
			worst += (time.Duration(c.Pause) + time.Duration(c.Timeout) + time.Duration(c.Duration)) * time.Duration(c.Runs*len(c.Paths))
		}
		count, tx := c.transactions()
		if c.Duration > 0 {
			sustained = append(sustained, c.CellName())
		}
		total += tx
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%d\t%d\t%v\t%s", c.CellName(), c.Protocol, c.Paths, c.Conns, c.Runs, c.Warmup, time.Duration(c.Timeout), count)
		if targets {
			fmt.Fprintf(tw, "\t%s", proto.Or(c.Opts().Destination(), "-"))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	ramp := ramps(exp, plan)
	est, worst = est+ramp, worst+ramp+settle.Worst
	bound := "every run waits out its timeout"
	if settle.Worst > 0 {
		bound += " and settling gives each path " + settle.Tries
	}
	count := stats.Count(total, "transaction")
	switch {
	case len(sustained) > 0 && total == 0: // sustained cells alone: no count known in advance
		count = fmt.Sprintf("as many transactions as the users of %s fit in their duration", strings.Join(sustained, ", "))
	case len(sustained) > 0:
		count += fmt.Sprintf(" (and as many as the users of %s fit in their duration)", strings.Join(sustained, ", "))
	}
	fmt.Fprintf(w, "%s; estimated time about %s (at most %s if %s)\n", count, est.Round(time.Second), worst.Round(time.Second), bound)
	first := plan[:min(len(plan), 6)]
	var order []string
	for _, st := range first {
		order = append(order, fmt.Sprintf("%s/%s/%d#%d", exp.Groups[st.Group].CellName(), st.Path, st.Conns, st.Run))
	}
	fmt.Fprintf(w, "order: %s …\n", strings.Join(order, ", "))
	if where != result.Hosts {
		fmt.Fprintf(w, "servers the run starts: %s\n", exp.ServersStarted())
	}
}

// transactions is a dry run's TRANSACTIONS column for c, and the count
// it adds to the plan's: each user's transactions, one a run (HTTP/2's
// streams: as many at once); for a sustained cell (duration) how many fit
// is what the run measures, not known in advance, and adds none.
func (c *CellGroup) transactions() (string, int) {
	tx := 0
	for _, n := range c.Conns {
		tx += n * c.Opts().PerUser() * c.Runs * len(c.Paths)
	}
	if c.Duration > 0 {
		return fmt.Sprintf("not known (%d user runs of %s)", tx, time.Duration(c.Duration)), 0
	}
	return fmt.Sprint(tx), tx
}

// runEstimate is the dry run's estimate of one run of c by n users (each
// user's transactions at once counted: PerUser), bottleneck the lab's
// link rate: its pause, a fixed cost, each user's start, its duration (a
// sustained cell lasts it whatever its transactions) and its transfers.
func (c *CellGroup) runEstimate(n int, bottleneck uint64) time.Duration {
	return time.Duration(c.Pause) + 50*time.Millisecond + time.Duration(n)*300*time.Microsecond + time.Duration(c.Duration) + c.Opts().Estimate(n, cmpRate(c.LinkRate, bottleneck))
}

// StepEstimates is the dry run's estimate of each step of plan (Plan),
// bottleneck the lab's link rate (0: none or not known), in its order:
// what a progress display weighs the runs left by, so that a sustained
// cell's runs count for their duration, not as one quick run each.
func (e *Experiment) StepEstimates(plan []Step, bottleneck uint64) []time.Duration {
	out := make([]time.Duration, len(plan))
	for i, st := range plan {
		c := &e.Groups[st.Group]
		out[i] = c.runEstimate(st.Conns*c.Opts().PerUser(), bottleneck) + c.pmtuWait(st.Path)
	}
	return out
}

// ramps is the time plan's changes of background level wait for the
// traffic to ramp up.
func ramps(exp *Experiment, plan []Step) time.Duration {
	var d time.Duration
	level := ""
	for _, st := range plan {
		if bg := exp.Groups[st.Group].Background; bg != level {
			if bg != "" {
				d += congestion.Ramp
			}
			level = bg
		}
	}
	return d
}

// Settling is what a lab run's settling of its paths may add to a dry
// run's worst case where a path that does not settle is left to its runs
// (a lab loss; a lab that drops Packet Too Big): Worst, every try waiting
// out its timeout, and Tries, what each path gets ("3 tries of 5s at
// the lab's loss 20% on every link").
type Settling struct {
	Worst time.Duration
	Tries string
}

// cmpRate is a cell group's own link rate, else the lab's.
func cmpRate(own, lab uint64) uint64 {
	if own > 0 {
		return own
	}
	return lab
}

// labSetup and settlePerGroup are a lab run's fixed costs in estimates.
const (
	labSetup       = 2 * time.Second
	settlePerGroup = 30 * time.Millisecond
)

// WriteSplit adds a split run to a dry run's plan: each cell's users of
// segment seg (nil: unsplit), and the schedule's slots from startAt (zero:
// none).
func (e *Experiment) WriteSplit(w io.Writer, seg *result.Segment, startAt time.Time) {
	if seg != nil {
		var parts []string
		for _, c := range e.Groups {
			for _, n := range c.Conns {
				first, k := seg.Users(n)
				users := "none"
				if k > 0 {
					users = fmt.Sprintf("users %d-%d", first, first+k-1)
				}
				parts = append(parts, fmt.Sprintf("%s/%d: %s", c.CellName(), n, users))
			}
		}
		fmt.Fprintf(w, "segment %s of every run: %s\n", seg, strings.Join(parts, ", "))
	}
	if !startAt.IsZero() {
		end := e.ScheduleEnd(startAt)
		fmt.Fprintf(w, "schedule: run 0 at %s, the last slot ends at %s (%s; each run's slot is its timeout, or duration and timeout, plus %s and its pause)\n",
			startAt.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), end.Sub(startAt).Round(time.Second), SlotMargin)
	}
}

// PMTU reports whether any cell group sets path MTU conditions.
func (exp *Experiment) PMTU() bool {
	return exp.anyCell(func(c *CellGroup) bool { return !c.PMTU.IsZero() })
}
