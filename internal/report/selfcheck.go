package report

import (
	"fmt"
	"sort"
	"strings"

	"v6lab/internal/result"
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
}

// selfChecks sums each cell's counted runs' self-checks.
func selfChecks(runs []result.Run) map[cellKey]*SelfCheck {
	out := map[cellKey]*SelfCheck{}
	for _, r := range runs {
		l := r.Load
		if l == nil || r.Warmup || r.Err != "" {
			continue
		}
		k := cellKey{r.Protocol, r.Path, r.Conns}
		c := out[k]
		if c == nil {
			c = &SelfCheck{}
			out[k] = c
		}
		c.Runs++
		c.CPUs = max(c.CPUs, l.CPUs)
		c.ClientCPU += l.ClientCPU
		c.HostBusy += l.HostBusy
		c.Softirq += l.Softirq
		c.LagP50MS += float64(l.LagP50NS) / 1e6
		c.RecordWaitMS += float64(l.RecordWaitNS) / 1e6
		for role, v := range l.Roles {
			if c.Roles == nil {
				c.Roles = map[string]float64{}
			}
			c.Roles[role] += v
		}
		if l.Client {
			c.ClientRuns++
		}
		if l.Host {
			c.HostRuns++
		}
		if (l.Client || l.Host) && c.Why == "" {
			c.Why = l.Why
		}
	}
	for _, c := range out {
		n := float64(c.Runs)
		c.ClientCPU, c.HostBusy, c.Softirq, c.LagP50MS = round3(c.ClientCPU/n), round3(c.HostBusy/n), round3(c.Softirq/n), round3(c.LagP50MS/n)
		c.RecordWaitMS = round3(c.RecordWaitMS)
		for role, v := range c.Roles {
			c.Roles[role] = round3(v / n)
		}
		c.ClientSaturated, c.HostSaturated = c.ClientRuns > 0, c.HostRuns > 0
	}
	return out
}

// saturated says whether the client or the host was saturated in a run
// of the cell (false for none: no self-check).
func (c *SelfCheck) saturated() bool { return c != nil && (c.ClientSaturated || c.HostSaturated) }

func round3(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }

// selfCheckNotes name the cells whose client or host was saturated, and
// what that means for their figures (none when no run was).
func selfCheckNotes(cells []Cell, target string) []string {
	var client, host []string
	for _, c := range cells {
		sc := c.SelfCheck
		if sc == nil {
			continue
		}
		name := fmt.Sprintf("%s/%s/%d", c.Protocol, c.Path, c.Conns)
		if sc.ClientSaturated {
			client = append(client, fmt.Sprintf("%s (%d of %d runs: %s)", name, sc.ClientRuns, sc.Runs, sc.Why))
		}
		if sc.HostSaturated {
			host = append(host, fmt.Sprintf("%s (%d of %d runs)", name, sc.HostRuns, sc.Runs))
		}
	}
	sort.Strings(client)
	sort.Strings(host)
	var notes []string
	if len(client) > 0 {
		notes = append(notes, "self-check: the client was saturated in "+strings.Join(client, ", ")+
			": those figures are partly v6lab's own limit, not the server's or the network's (dotted in the plots); "+
			"run fewer users per process, or split the users across client hosts (--segment, docs/distributed.md)")
	}
	if len(host) > 0 {
		what := "response times there include waits for a CPU"
		if target == "lab" {
			what = "the lab's client, routers and servers share those CPUs, so the differences between paths there are partly the lab's CPU cost " +
				"(forwarding, 6in4's encapsulation and decapsulation, which real routers do on CPUs of their own), not the network's; " +
				"shape the links (--rate 1G) or use fewer users for the network's figures"
		}
		notes = append(notes, "self-check: the host's CPUs had no idle time in "+strings.Join(host, ", ")+": "+what)
	}
	return notes
}
