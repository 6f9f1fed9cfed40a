package experiment

import (
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

const (
	// minDecide is the shortest run judged on its own (a cell's shorter
	// runs are judged together in its summary).
	minDecide = 100 * time.Millisecond
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
	// totals are the run's completed response times.
	totals lag.Hist
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
		result.Decide(l)
	}
	return l
}

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
