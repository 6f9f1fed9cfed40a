package inlab

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"v6lab/internal/lab"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
)

// WritePlan says, for a dry run, what a lab run of exp would be built
// with: the lab's links and TCP congestion control as the result's header
// will say them (with the 6in4 tunnel's implementation and MTU where a
// cell runs over it, auto's choice on this kernel beside it, and a bare
// server host), and each cell group's conditions as its run records will
// key them (report.txt's "conditions (as its runs recorded them)" line;
// the ports an ipv6_udp_loss spares are the lab's DNS servers', said when
// they start):
// the lab's loss and where it is, a group's own loss, IPv6 loss or delay,
// link_rate, path MTU settings and background level. It returns what the
// run would refuse of them, as the run does.
func WritePlan(w io.Writer, exp *experiment.Experiment, cfg lab.Config) error {
	groups, err := PlanConditions(exp, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "lab links: %s\n", cfg.LinkSummary())
	if slices.Contains(exp.Paths(), path.SixIn4) {
		fmt.Fprintf(w, "6in4 tunnel: %s, MTU %d\n", tunnelPlan(cfg.Tunnel), cmp.Or(cfg.TunnelMTU, lab.DefaultTunnelMTU))
	}
	fmt.Fprintf(w, "TCP congestion control in the lab: %s\n", cmp.Or(cfg.Congestion, lab.DefaultCongestion))
	if cfg.BareServer {
		fmt.Fprintln(w, "server host: bare (SACK, timestamps and window scaling off)")
	}
	for i := range exp.Groups {
		if cs := groups[exp.Groups[i].CellName()]; len(cs) > 0 {
			fmt.Fprintf(w, "%s conditions (as its runs will record them): %s\n", exp.Groups[i].Title(), strings.Join(cs, "; "))
		}
	}
	return nil
}

// tunnelPlan is the 6in4 implementation asked, and for auto the one it
// will choose on this kernel ("auto (bpf on this kernel)"), as the
// result's header will name it.
func tunnelPlan(asked string) string {
	if asked != "" && asked != "auto" {
		return asked
	}
	if impl := lab.AutoTunnel(); impl != "" {
		return "auto (" + impl + " on this kernel)"
	}
	return "auto"
}

// PlanConditions are each cell group's conditions in a lab of cfg, by
// its name, "where: what" in the order of where, as the report says
// them from its run records (no counts).
func PlanConditions(exp *experiment.Experiment, cfg lab.Config) (map[string][]string, error) {
	var rates map[string]lab.Shaping
	if exp.LinkRates() {
		var err error
		if rates, err = ownShaping(exp, cfg); err != nil {
			return nil, err
		}
	}
	wide := planWide(cfg)
	pmtu := pmtuJob(cfg, exp)
	out := map[string][]string{}
	for i := range exp.Groups {
		s := &exp.Groups[i]
		entries := map[string]string{}
		for _, e := range wide {
			entries[e.where] = e.what
		}
		groupConditions(s, rates, pmtu, entries)
		for _, k := range slices.Sorted(maps.Keys(entries)) {
			out[s.CellName()] = append(out[s.CellName()], cmp.Or(planLabels[k], k)+": "+entries[k])
		}
		if s.Background != "" && s.Background != "none" {
			out[s.CellName()] = append(out[s.CellName()], "background: "+s.Background)
		}
	}
	return out, nil
}

// planLabels name the record's entries the report calls otherwise.
var planLabels = map[string]string{"pmtu_settings": "path MTU"}

// planWide are the record's entries of the lab's own loss in a lab of
// cfg: the links its topology or --loss gives a loss, in tc BPF where the
// kernel has no netem (with netem the loss is the links' own, said in
// the header's links alone).
func planWide(cfg lab.Config) []wideEntry {
	if lab.HasNetem() == nil {
		return nil
	}
	var losses []lab.LabLoss
	for _, name := range lab.LinkNames {
		if p := cfg.Link(name).Shaping.Loss; p > 0 {
			losses = append(losses, lab.LabLoss{Link: name, Percent: p})
		}
	}
	if len(losses) == 0 {
		return nil
	}
	return wideEntries(losses)
}

// groupConditions adds a cell group's own conditions to entries, as
// conditions.End records them.
func groupConditions(s *experiment.CellGroup, rates map[string]lab.Shaping, pmtu *PMTUJob, entries map[string]string) {
	if rates != nil {
		want := rates
		if s.LinkRate > 0 {
			want = map[string]lab.Shaping{}
			for _, name := range lab.LinkNames {
				want[name] = lab.Shaping{Rate: s.LinkRate}
			}
		}
		for _, name := range lab.LinkNames {
			if r := want[name].Rate; r > 0 {
				for _, role := range strings.Split(name, "-") { // the link's two ends, as Qdiscs keys them
					entries[name+" "+role] = fmt.Sprintf("tbf %.1f Mbit/s", float64(r/8)*8/1e6)
				}
			}
		}
	}
	if s.IPv6UDPLoss > 0 {
		// The lab's DNS servers' own ports are known when they start.
		entries[ipv6LossWhere] = ipv6LossWhat(s.IPv6UDPLoss, true, "UDP port 53 and the lab's DNS servers' ports, as they start")
	} else if s.IPv6Loss > 0 {
		entries[ipv6LossWhere] = ipv6LossWhat(s.IPv6Loss, false, "")
	}
	if d := time.Duration(s.IPv6Delay); d > 0 {
		entries[ipv6DelayWhere] = ipv6DelayWhat(d)
	}
	if s.Loss > 0 {
		entries[cellLossWhere] = lossWhat(s.Loss)
	}
	if pmtu != nil {
		if set := s.PMTU.Over(pmtu.Lab).String(); set != "" {
			entries["pmtu_settings"] = set
		}
	}
}
