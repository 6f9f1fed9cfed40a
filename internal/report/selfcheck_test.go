package report

import (
	"strings"
	"testing"

	"v6lab/internal/result"
)

func TestSelfCheckPerCell(t *testing.T) {
	run := func(path string, n int, l *result.Load, warm bool) result.Run {
		return result.Run{Protocol: "http", Path: path, Conns: 100, Run: n, Warmup: warm, Load: l}
	}
	hot := &result.Load{CPUs: 2, ClientCPU: 1.9, HostBusy: 1, Client: true, Host: true, Why: "the client used 1.90 of the 2 CPUs it may use", Roles: map[string]float64{"server": 0.2}}
	warm := &result.Load{CPUs: 2, ClientCPU: 0.5, HostBusy: 0.97, Host: true, LagP50NS: 2e6, Roles: map[string]float64{"server": 0.4}}
	cool := &result.Load{CPUs: 2, ClientCPU: 0.3, HostBusy: 0.5}
	runs := []result.Run{
		run("ipv4", 0, hot, true), // a warm-up: not counted
		run("ipv4", 1, warm, false), run("ipv4", 2, warm, false),
		run("ipv6", 1, hot, false), run("ipv6", 2, cool, false),
		run("6in4", 1, cool, false), run("6in4", 2, nil, false),
	}
	sc := selfChecks(runs)
	v4, v6, t4 := sc[cellKey{"http", "ipv4", 100}], sc[cellKey{"http", "ipv6", 100}], sc[cellKey{"http", "6in4", 100}]
	if v4.Runs != 2 || v4.ClientSaturated || !v4.HostSaturated || v4.HostRuns != 2 || v4.ClientCPU != 0.5 || v4.LagP50MS != 2 || v4.Roles["server"] != 0.4 {
		t.Errorf("ipv4: %+v", v4)
	}
	if v6.Runs != 2 || !v6.ClientSaturated || v6.ClientRuns != 1 || v6.ClientCPU != 1.1 || v6.Why != hot.Why {
		t.Errorf("ipv6: %+v", v6)
	}
	if t4.Runs != 1 || t4.saturated() {
		t.Errorf("6in4: %+v", t4)
	}
	cells := []Cell{{Protocol: "http", Path: "ipv4", Conns: 100, SelfCheck: v4}, {Protocol: "http", Path: "ipv6", Conns: 100, SelfCheck: v6}, {Protocol: "http", Path: "6in4", Conns: 100, SelfCheck: t4}}
	notes := strings.Join(selfCheckNotes(cells, "lab"), "\n")
	for _, want := range []string{"client was saturated in http/ipv6/100 (1 of 2 runs: the client used 1.90", "--segment",
		"host's CPUs had no idle time in http/ipv4/100 (2 of 2 runs), http/ipv6/100 (1 of 2 runs)", "the lab's CPU cost"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "http/6in4") {
		t.Errorf("an unsaturated cell is named:\n%s", notes)
	}
	if n := selfCheckNotes(cells[2:], "loopback"); len(n) != 0 {
		t.Errorf("notes for an unsaturated run: %q", n)
	}
	if n := selfCheckNotes(cells[:1], "loopback"); len(n) != 1 || !strings.Contains(n[0], "waits for a CPU") {
		t.Errorf("off the lab: %q", n)
	}
}
