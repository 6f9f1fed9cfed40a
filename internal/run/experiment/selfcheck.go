package experiment

import (
	"fmt"
	"strings"
	"time"

	"v6lab/internal/result"
	"v6lab/internal/run/host"
	"v6lab/internal/sock/lag"
)

// The self-check of every run ("never the bottleneck it measures",
// docs/metrics.md): the measuring process reads its own CPU time, the
// host's CPU times, the lab roles' CPU and the client's read lag at a
// run's start and end, and marks the run when the client or the host was
// saturated.

// Saturation thresholds.
const (
	// SaturatedCPU is the share of the CPUs it may use above which the
	// measuring process had no CPU to spare.
	SaturatedCPU = 0.9
	// SaturatedHost is the share of the host's CPU time (of the CPUs the
	// measuring process may use) above which no CPU was idle.
	SaturatedHost = 0.95
	// SaturatedLag is the share of the run's median response time the
	// median read lag may reach on a host without an idle CPU before the
	// client counts as saturated: replies then waited for the client,
	// which could not be given a CPU sooner.
	SaturatedLag = 0.1
	// minLagReads is how many reads the lag must rest on to decide.
	minLagReads = 100
	// minDecide is the shortest run decided on, and minTicks the fewest
	// clock ticks of the host's CPU times (/proc/stat counts in ticks of
	// 10 ms): a shorter run's shares are a tick or two, too coarse to
	// call a CPU saturated.
	minDecide = 100 * time.Millisecond
	minTicks  = 50
	// recordWaitMin is the shortest hand-over of a sample to the writer
	// counted as a wait (a send to its queue takes well under a µs).
	recordWaitMin = 20 * time.Microsecond
)

// selfCheck is one run's readings at its start.
type selfCheck struct {
	wall    time.Time
	self    time.Duration
	cpus    int
	mine    []int // the CPUs the process may use
	host    host.CPUTimes
	hostOK  bool
	lag     lag.Counts
	roles   *host.Roles
	roleCPU map[string]time.Duration
	// totals are the run's completed response times; wait the time users
	// waited to record their samples.
	totals lag.Hist
	wait   time.Duration
}

// prepareCheck finds what a run's self-check reads (the CPUs this process
// may use; roles, the lab's namespaces by role, nil off the lab: their
// processes), before the run and its slot.
func prepareCheck(roles map[string]string) *selfCheck {
	c := &selfCheck{cpus: host.CPUs(), mine: host.Affinity()}
	if len(roles) > 0 {
		c.roles = host.NewRoles(roles)
		c.roles.Scan()
	}
	return c
}

// begin reads the start of the run.
func (c *selfCheck) begin() {
	if c.roles != nil {
		c.roleCPU = c.roles.CPU()
	}
	c.host, c.hostOK = host.ReadCPUTimes()
	c.lag = lag.Read()
	c.self = host.SelfCPU()
	c.wall = time.Now()
}

// record counts a sample of the run (safe for concurrent use).
func (c *selfCheck) record(s *result.Sample) {
	if s.OK() {
		c.totals.Add(time.Duration(s.TotalNS))
	}
}

// end reads the end of the run and decides.
func (c *selfCheck) end(wait time.Duration) *result.Load {
	wall := time.Since(c.wall)
	self := host.SelfCPU() - c.self
	lags := lag.Read().Sub(c.lag)
	hostNow, ok := host.ReadCPUTimes()
	l := &result.Load{CPUs: c.cpus, HostCPUs: len(hostNow.ByCPU), RecordWaitNS: int64(wait)}
	if wall <= 0 {
		return l
	}
	l.ClientCPU = round3(self.Seconds() / wall.Seconds())
	if ok && c.hostOK {
		mine := hostNow.Of(c.mine).Sub(c.host.Of(c.mine))
		l.HostBusy, l.Softirq = round3(mine.BusyShare()), round3(mine.SoftirqShare())
		l.HostTicks = int64(mine.Busy + mine.Idle)
	}
	if c.roles != nil {
		now := c.roles.CPU()
		l.Roles = map[string]float64{}
		for role, t := range now {
			l.Roles[role] = round3(max(t-c.roleCPU[role], 0).Seconds() / wall.Seconds())
		}
	}
	if n := lags.N(); n > 0 {
		l.LagReads = int64(n)
		l.LagP50NS, l.LagP90NS = int64(lags.Quantile(0.5)), int64(lags.Quantile(0.9))
	}
	l.MedianNS = int64(c.totals.Read().Quantile(0.5))
	if wall >= minDecide {
		decide(l)
	}
	return l
}

// decide marks a run whose client or host was saturated, and says why
// (runs shorter than minDecide are not decided on).
func decide(l *result.Load) {
	var why []string
	if l.CPUs > 0 && l.ClientCPU >= SaturatedCPU*float64(l.CPUs) {
		l.Client = true
		why = append(why, fmt.Sprintf("the client used %.2f of the %d CPUs it may use", l.ClientCPU, l.CPUs))
	}
	if l.HostTicks >= minTicks && l.HostBusy >= SaturatedHost {
		l.Host = true
		why = append(why, fmt.Sprintf("the host's CPUs were %.0f%% busy", 100*l.HostBusy))
		if l.LagReads >= minLagReads && l.MedianNS > 0 && float64(l.LagP50NS) >= SaturatedLag*float64(l.MedianNS) {
			l.Client = true
			why = append(why, fmt.Sprintf("replies waited %v (median) for the client, %.0f%% of the median response time",
				time.Duration(l.LagP50NS).Round(time.Microsecond), 100*float64(l.LagP50NS)/float64(l.MedianNS)))
		}
	}
	l.Why = strings.Join(why, "; ")
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
