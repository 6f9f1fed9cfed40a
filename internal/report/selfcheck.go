package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// SelfCheck is a cell's self-check over its counted runs (result.Load;
// docs/metrics.md, "Never the bottleneck it measures"): means of the runs'
// figures, and how many runs had the client or the host saturated.
type SelfCheck struct {
	Runs int `json:"runs"`
	// ClientSaturated and HostSaturated flag a cell with at least one such
	// run; ClientRuns and HostRuns count them.
	ClientSaturated bool `json:"client_saturated,omitempty"`
	HostSaturated   bool `json:"host_saturated,omitempty"`
	ClientRuns      int  `json:"client_runs,omitempty"`
	HostRuns        int  `json:"host_runs,omitempty"`
	// CPUs is what the measuring process could use; ClientCPU, HostBusy,
	// Softirq and Roles are the runs' means (result.Load).
	CPUs      int                `json:"cpus"`
	ClientCPU float64            `json:"client_cpu"`
	HostBusy  float64            `json:"host_busy"`
	Softirq   float64            `json:"softirq,omitempty"`
	Roles     map[string]float64 `json:"roles,omitempty"`
	// LagP50MS is the mean of the runs' median read lag, in ms.
	LagP50MS float64 `json:"lag_p50_ms,omitempty"`
	// RecordWaitMS is the users' total wait to record samples, in ms.
	RecordWaitMS float64 `json:"record_wait_ms,omitempty"`
	// Why is the first saturated run's reasons.
	Why string `json:"why,omitempty"`
	// SlowBusy names the runs counted in HostRuns that were too short to
	// judge alone but slowed by a busy host (slowBusy), and why.
	SlowBusy []string `json:"slow_busy,omitempty"`
	// Busy splits the host's busy share by who used it, over the runs the
	// host was saturated in (all the cell's runs when they were judged
	// together); nil when it was not.
	Busy *BusySplit `json:"busy_split,omitempty"`
	// SenderLate says that v6lab's UDP sender ran late (markLateSenders),
	// which counts as the client saturated: ClientRuns is then at least
	// its late trials (a run late both ways counts once, so at most the
	// sum of the two).
	SenderLate *SenderLate `json:"sender_late,omitempty"`
}

// BusySplit is a share of the CPUs the measuring process may use (1.0:
// all of them, the whole time), split: v6lab's own process (the client,
// and embedded servers, which run in it), the lab's roles with processes
// of their own, softirq (packet forwarding and delivery: the lab's
// routers), and what is left, other processes on the host.
type BusySplit struct {
	Busy    float64 `json:"busy"`
	V6lab   float64 `json:"v6lab"`
	Roles   float64 `json:"roles"`
	Softirq float64 `json:"softirq"`
	Other   float64 `json:"other"`
}

// busySums are the sums a BusySplit is made of.
type busySums struct {
	wall, cpu, roles, busy, softirq, ticks float64
}

func (b *busySums) add(l *result.Load, wall float64) {
	b.wall += wall
	b.cpu += l.ClientCPU * wall
	for _, v := range l.Roles {
		b.roles += v * wall
	}
	b.busy += l.HostBusy * float64(l.HostTicks)
	b.softirq += l.Softirq * float64(l.HostTicks)
	b.ticks += float64(l.HostTicks)
}

// split is the sums' BusySplit over cpus CPUs (nil without figures).
func (b *busySums) split(cpus int) *BusySplit {
	if b.ticks <= 0 || b.wall <= 0 || cpus <= 0 {
		return nil
	}
	s := &BusySplit{Busy: b.busy / b.ticks, Softirq: b.softirq / b.ticks,
		V6lab: b.cpu / b.wall / float64(cpus), Roles: b.roles / b.wall / float64(cpus)}
	s.Other = max(s.Busy-s.V6lab-s.Roles-s.Softirq, 0)
	s.Busy, s.V6lab, s.Roles, s.Softirq, s.Other = round3(s.Busy), round3(s.V6lab), round3(s.Roles), round3(s.Softirq), round3(s.Other)
	return s
}

// selfPool is a cell's counted runs' self-checks summed, weighted for
// pooling (selfChecks).
type selfPool struct {
	sc                       *SelfCheck
	wall, cpu, busy, softirq float64 // seconds, CPU-seconds, ticks
	ticks, reads             int64
	lagNS, medianNS, medians float64
	roles                    map[string]float64 // CPU-seconds
	// all and hot are the busy sums of all the runs and of the runs the
	// host was saturated in.
	all, hot busySums
}

// selfChecks sums each cell's counted runs' self-checks, and judges the
// cell on them pooled (result.Decide): runs too short to judge alone (the
// lab's runs of a few ms) are judged together, and one of them whose host
// was busy and which took many times its cell's other runs is flagged
// alone (slowBusy).
func selfChecks(runs []result.Run) map[cellKey]*SelfCheck {
	byCell := map[cellKey][]result.Run{}
	var order []cellKey
	for _, r := range runs {
		if r.Load == nil || r.Warmup || r.Err != "" {
			continue
		}
		k := cellKey{r.Protocol, r.Path, r.Conns}
		if byCell[k] == nil {
			order = append(order, k)
		}
		byCell[k] = append(byCell[k], r)
	}
	out := map[cellKey]*SelfCheck{}
	for _, k := range order {
		p := &selfPool{sc: &SelfCheck{}, roles: map[string]float64{}}
		slow := slowBusy(byCell[k])
		for i, r := range byCell[k] {
			p.add(r.Load, r.End.Sub(r.Start).Seconds(), r.Load.Host || slow[i] != "")
			if slow[i] != "" {
				p.sc.SlowBusy = append(p.sc.SlowBusy, fmt.Sprintf("run %d: %s", r.Run, slow[i]))
			}
		}
		out[k] = p.judge()
	}
	return out
}

// A run too short for its host to be judged (under result.MinHostTicks)
// is still flagged when its host was result.SaturatedHost busy over at
// least SlowBusyTicks and its median response time was SlowBusyFactor
// times the median of its cell's other runs' or more: other work held the
// CPUs while it ran, and it shows in the run's time (trial8 F1).
const (
	SlowBusyTicks  = 10
	SlowBusyFactor = 5
)

// slowBusy says, per run of a cell, why it is flagged as slowed by a busy
// host although too short to judge alone ("" for the others).
func slowBusy(rs []result.Run) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		l := r.Load
		if l.Host || l.HostTicks < SlowBusyTicks || l.HostTicks >= result.MinHostTicks || l.HostBusy < result.SaturatedHost || l.MedianNS <= 0 {
			continue
		}
		var others []float64
		for j, o := range rs {
			if j != i && o.Load.MedianNS > 0 {
				others = append(others, float64(o.Load.MedianNS))
			}
		}
		if len(others) == 0 {
			continue
		}
		slices.Sort(others)
		med := others[(len(others)-1)/2]
		if f := float64(l.MedianNS) / med; f >= SlowBusyFactor {
			out[i] = fmt.Sprintf("%.0f%% busy over %s, its median response time %.0f× the other runs'", 100*l.HostBusy, stats.Count(l.HostTicks, "tick"), f)
		}
	}
	return out
}

// add sums one run's self-check (wall seconds long) into the pool; host
// says the host was saturated in it (its own judgement, or slowBusy's).
func (p *selfPool) add(l *result.Load, wall float64, host bool) {
	c := p.sc
	c.Runs++
	c.CPUs = max(c.CPUs, l.CPUs)
	p.wall += wall
	p.cpu += l.ClientCPU * wall
	p.busy += l.HostBusy * float64(l.HostTicks)
	p.softirq += l.Softirq * float64(l.HostTicks)
	p.ticks += l.HostTicks
	p.reads += l.LagReads
	p.lagNS += float64(l.LagP50NS) * float64(l.LagReads)
	if l.MedianNS > 0 {
		p.medianNS += float64(l.MedianNS)
		p.medians++
	}
	for role, v := range l.Roles {
		p.roles[role] += v * wall
	}
	c.RecordWaitMS += float64(l.RecordWaitNS) / 1e6
	p.all.add(l, wall)
	if host {
		p.hot.add(l, wall)
		c.HostRuns++
	}
	if l.Client {
		c.ClientRuns++
	}
	if (l.Client || l.Host) && c.Why == "" {
		c.Why = l.Why
	}
}

// judge is the cell's self-check: its runs' means, judged together.
func (p *selfPool) judge() *SelfCheck {
	c := p.sc
	pooled := result.Load{CPUs: c.CPUs, HostTicks: p.ticks, LagReads: p.reads}
	if p.wall > 0 {
		pooled.ClientCPU = p.cpu / p.wall
		for role, v := range p.roles {
			if c.Roles == nil {
				c.Roles = map[string]float64{}
			}
			c.Roles[role] = round3(v / p.wall)
		}
	}
	if p.ticks > 0 {
		pooled.HostBusy, pooled.Softirq = p.busy/float64(p.ticks), p.softirq/float64(p.ticks)
	}
	if p.reads > 0 {
		pooled.LagP50NS = int64(p.lagNS / float64(p.reads))
	}
	if p.medians > 0 {
		pooled.MedianNS = int64(p.medianNS / p.medians)
	}
	result.Decide(&pooled)
	c.ClientCPU, c.HostBusy, c.Softirq = round3(pooled.ClientCPU), round3(pooled.HostBusy), round3(pooled.Softirq)
	c.LagP50MS = round3(float64(pooled.LagP50NS) / 1e6)
	c.RecordWaitMS = round3(c.RecordWaitMS)
	c.ClientSaturated = c.ClientRuns > 0 || pooled.Client
	c.HostSaturated = c.HostRuns > 0 || pooled.Host
	if c.Why == "" && (pooled.Client || pooled.Host) {
		c.Why = pooled.Why + " (its runs together)"
	}
	switch {
	case c.HostRuns > 0:
		c.Busy = p.hot.split(c.CPUs)
	case c.HostSaturated:
		c.Busy = p.all.split(c.CPUs)
	}
	return c
}

// runsOf says how many of a cell's runs were saturated: k of n, or its
// runs together when none alone was long enough to judge.
func runsOf(k, n int) string {
	if k == 0 {
		return "its " + stats.Count(n, "run") + " together"
	}
	return stats.CountOf(k, n, "run")
}

// saturated says whether the client or the host was saturated in a run
// of the cell (false for none: no self-check).
func (c *SelfCheck) saturated() bool { return c != nil && (c.ClientSaturated || c.HostSaturated) }

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// selfCheckNotes name the cells whose client or host was saturated, and
// what that means for their figures (none when no run was).
func selfCheckNotes(cells []Cell, target string) []string {
	var client, others, own []string
	for _, c := range cells {
		sc := c.SelfCheck
		if sc == nil {
			continue
		}
		name := fmt.Sprintf("%s/%s/%d", c.Protocol, c.Path, c.Conns)
		if sc.ClientSaturated && !sc.onlySenderLate() { // sendLateNote says that
			client = append(client, fmt.Sprintf("%s (%s: %s)", name, runsOf(sc.ClientRuns, sc.Runs), sc.Why))
		}
		if sc.HostSaturated {
			what := name + " (" + runsOf(sc.HostRuns, sc.Runs) + ", " + sc.busyText()
			if len(sc.SlowBusy) > 0 {
				what += "; too short to judge alone, but " + strings.Join(sc.SlowBusy, ", ")
			}
			if sc.othersBusy() {
				others = append(others, what+")")
			} else {
				own = append(own, what+")")
			}
		}
	}
	sort.Strings(client)
	var notes []string
	if len(client) > 0 {
		notes = append(notes, "self-check: the client was saturated in "+strings.Join(client, ", ")+
			": those figures are partly v6lab's own limit, not the server's or the network's (dotted in the plots); "+
			"run fewer users per process, or split the users across client hosts (--segment, docs/distributed.md)")
	}
	if len(others) > 0 {
		sort.Strings(others)
		notes = append(notes, "self-check: other processes on the host took most of the CPUs in "+strings.Join(others, ", ")+
			": response times there include waits for CPUs other work held, not v6lab's nor the paths' cost; rerun those cells on a quiet machine")
	}
	if len(own) > 0 {
		sort.Strings(own)
		what := "response times there include waits for a CPU"
		if target == "lab" {
			what = "the lab's client, routers and servers share those CPUs, so the differences between paths there are partly the lab's CPU cost " +
				"(" + labWork(cells) + ", which real routers do on CPUs of their own), not the network's; " +
				"shape the links (--rate 1G) or use fewer users for the network's figures"
		}
		notes = append(notes, "self-check: the host's CPUs were saturated in "+strings.Join(own, ", ")+": "+what)
	}
	return notes
}

// othersBusy says whether other processes on the host took most of the
// busy share of the runs it was saturated in: the cell's figures, and any
// comparison made with them, then carry waits for CPUs that other work
// held.
func (c *SelfCheck) othersBusy() bool {
	return c != nil && c.HostSaturated && c.Busy != nil && c.Busy.Other > c.Busy.Busy/2
}

// BusyNote explains BusyMark.
const BusyNote = "(host busy): a difference with a cell in whose runs other processes on the host took most of the CPUs (the self-check note names the cell and its runs): it carries waits for CPUs that other work held, not the paths' cost; rerun on a quiet machine"

// BusyMark marks a difference of cells (a path's and its baseline's, a
// dual cell's and a pinned one's) one of which ran while other processes
// held the host's CPUs.
func BusyMark(cells ...*Cell) string {
	for _, c := range cells {
		if c != nil && c.SelfCheck.othersBusy() {
			return " (host busy)"
		}
	}
	return ""
}

// onlySenderLate says whether the client counts as saturated only for
// its late UDP sender.
func (c *SelfCheck) onlySenderLate() bool {
	return c.SenderLate != nil && c.Why == c.SenderLate.String()
}

// busyText is the host's busy share, split when the figures allow.
func (c *SelfCheck) busyText() string {
	if c.Busy != nil {
		return c.Busy.String()
	}
	return fmt.Sprintf("%.0f%% busy", 100*c.HostBusy)
}

// String says the busy share and who used it, in percent of the CPUs.
func (b *BusySplit) String() string {
	s := fmt.Sprintf("%.0f%% busy: v6lab %.0f%%", 100*b.Busy, 100*b.V6lab)
	if b.Roles > 0 {
		s += fmt.Sprintf(", the lab's roles %.0f%%", 100*b.Roles)
	}
	return s + fmt.Sprintf(", softirq %.0f%%, other processes on the host %.0f%%", 100*b.Softirq, 100*b.Other)
}

// labWork names what the lab's CPUs do for the paths the cells measure:
// forwarding, and each measured path's own encapsulation or translation.
func labWork(cells []Cell) string {
	work := map[path.Path]string{
		path.SixIn4:  "6in4's encapsulation and decapsulation",
		path.NAT64:   "nat64's translation",
		path.XLAT464: "464xlat's two translations",
		path.DSLite:  "DS-Lite's encapsulation, decapsulation and NAT",
	}
	out := []string{"forwarding"}
	for _, p := range []path.Path{path.SixIn4, path.NAT64, path.XLAT464, path.DSLite} {
		if slices.ContainsFunc(cells, func(c Cell) bool { return c.Path == string(p) }) {
			out = append(out, work[p])
		}
	}
	return strings.Join(out, ", ")
}
