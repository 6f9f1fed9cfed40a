package result

import (
	"fmt"
	"strings"
	"time"
)

// Load is the self-check of one run (docs/metrics.md, "Never the
// bottleneck it measures"): what the run cost the host it was measured on,
// read by the measuring process at the run's start and end, and whether
// the client or the host's CPUs were saturated, in which case the run's
// figures are partly the client's or the host's limits, not the network's
// or the server's.
type Load struct {
	// CPUs is how many CPUs the measuring process may use (its affinity
	// and GOMAXPROCS, the smaller); HostCPUs how many the host has.
	CPUs     int `json:"cpus"`
	HostCPUs int `json:"host_cpus"`
	// ClientCPU is the measuring process's CPU time over the run's wall
	// time, in CPUs (1.0: one CPU busy the whole run). On loopback it
	// includes the embedded servers, which run in the same process.
	ClientCPU float64 `json:"client_cpu"`
	// HostBusy is the share of the CPU time of the CPUs the measuring
	// process may use that was not idle (1.0: none idle), whoever used
	// it; Softirq the share spent in softirq (packet forwarding and
	// delivery, the lab's routers among them), counted by ticks.
	HostBusy float64 `json:"host_busy"`
	Softirq  float64 `json:"softirq,omitempty"`
	// HostTicks is how many clock ticks of those CPUs' time the shares
	// rest on (10 ms each): the host is judged on 50 or more.
	HostTicks int64 `json:"host_ticks,omitempty"`
	// Roles is, in a lab, the CPU each role's processes took over the
	// run, in CPUs, by the namespace they run in (server, gen4c, …; the
	// measuring process is ClientCPU): softirq work is charged to the
	// process it ran in, so the routers, which have no process, show in
	// Softirq and in the other roles' time. A role with no process of its
	// own (the routers; embedded servers, in the measuring process) is
	// absent: not measured, never a 0.
	Roles map[string]float64 `json:"roles,omitempty"`
	// LagP50NS and LagP90NS are how long received bytes waited for the
	// client: from the kernel's receive stamp to the read that took them,
	// over LagReads reads (the event loops', the DNS load engine's and
	// stamped Go-engine reads).
	LagP50NS int64 `json:"lag_p50_ns,omitempty"`
	LagP90NS int64 `json:"lag_p90_ns,omitempty"`
	LagReads int64 `json:"lag_reads,omitempty"`
	// MedianNS is the run's median response time of completed
	// transactions, the yardstick of the lag.
	MedianNS int64 `json:"median_ns,omitempty"`
	// RecordWaitNS is how long users waited, in all, to hand their
	// samples to the writer (its queue full: samples late, none dropped).
	RecordWaitNS int64 `json:"record_wait_ns,omitempty"`
	// Client and Host say the client, or the host's CPUs, were saturated
	// during the run; Why says by which figures. Runs shorter than 100 ms
	// are not judged.
	Client bool   `json:"client_saturated,omitempty"`
	Host   bool   `json:"host_saturated,omitempty"`
	Why    string `json:"why,omitempty"`
}

// Saturation thresholds (docs/metrics.md).
const (
	// SaturatedCPU is the share of the CPUs it may use above which the
	// measuring process had no CPU to spare.
	SaturatedCPU = 0.9
	// SaturatedHost is the share of the CPU time (of the CPUs the
	// measuring process may use) above which no CPU was idle.
	SaturatedHost = 0.95
	// SaturatedLag is the share of the median response time the median
	// read lag may reach, on a host without an idle CPU or with the client
	// using BusyClientCPU of the CPUs it may use, before the client counts
	// as saturated: replies then queued for the client, which could not
	// be given a CPU sooner.
	SaturatedLag  = 0.1
	BusyClientCPU = 0.75
	// MinLagReads is how many reads the lag must rest on to decide, and
	// MinHostTicks how many clock ticks the host's shares (/proc/stat
	// counts 10 ms ticks: fewer are a tick or two, too coarse).
	MinLagReads  = 100
	MinHostTicks = 50
)

// Decide sets Client, Host and Why from the figures. Load figures of a
// run too short to judge (the caller's call) are pooled over a cell's
// runs first.
func Decide(l *Load) {
	var why []string
	l.Client, l.Host = false, false
	if l.CPUs > 0 && l.ClientCPU >= SaturatedCPU*float64(l.CPUs) {
		l.Client = true
		why = append(why, fmt.Sprintf("the client used %.2f of the %d CPUs it may use", l.ClientCPU, l.CPUs))
	}
	busy := l.HostTicks >= MinHostTicks && l.HostBusy >= SaturatedHost
	if busy {
		l.Host = true
		why = append(why, fmt.Sprintf("the host's CPUs were %.0f%% busy", 100*l.HostBusy))
	}
	// Replies queued for the client, which could not be given a CPU
	// sooner: none was idle, or it used most of those it may use.
	short := busy || (l.CPUs > 0 && l.ClientCPU >= BusyClientCPU*float64(l.CPUs))
	if short && l.LagReads >= MinLagReads && l.MedianNS > 0 && float64(l.LagP50NS) >= SaturatedLag*float64(l.MedianNS) {
		if !l.Client && !busy {
			why = append(why, fmt.Sprintf("the client used %.2f of the %d CPUs it may use", l.ClientCPU, l.CPUs))
		}
		l.Client = true
		why = append(why, fmt.Sprintf("replies waited %v (median) for the client, %.0f%% of the median response time",
			time.Duration(l.LagP50NS).Round(time.Microsecond), 100*float64(l.LagP50NS)/float64(l.MedianNS)))
	}
	l.Why = strings.Join(why, "; ")
}
