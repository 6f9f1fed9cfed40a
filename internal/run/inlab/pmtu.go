package inlab

import (
	"fmt"
	"maps"
	"strconv"

	"v6lab/internal/lab"
	"v6lab/internal/lab/bpf"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
)

// PMTUJob is what a lab run does about path MTU: its lab's own settings,
// and that every run starts with no path MTU learnt.
type PMTUJob struct {
	// Lab is the lab's own settings (lab.Config.PMTU), which cell
	// groups' settings lie over.
	Lab lab.PMTU `json:"lab"`
}

// pmtuJob says whether a lab run is about path MTU: its lab's r1-r2 link
// is smaller than the hosts' links, or the lab or a cell group sets
// path MTU conditions; nil when it is not.
func pmtuJob(cfg lab.Config, exp *experiment.Experiment) *PMTUJob {
	smaller := cfg.Link("r1-r2").MTU < min(cfg.Link("client-r1").MTU, cfg.Link("r2-server").MTU)
	if !smaller && cfg.PMTU.IsZero() && !exp.PMTU() {
		return nil
	}
	return &PMTUJob{Lab: cfg.PMTU}
}

// describePMTU says in the header what the run does about path MTU.
func describePMTU(j *PMTUJob, cfg lab.Config, hdr map[string]string) {
	what := "every run starts with no path MTU learnt (the route caches of client, r1, r2 and server flushed before it); every sample carries its TCP connection's MSS, path MTU and retransmissions; impairments are " + lab.PMTUWhere()
	if s := j.Lab.String(); s != "" {
		what = "the lab's own: " + s + "; " + what
	}
	hdr["pmtu"] = what
	hdr["r1_r2_mtu"] = strconv.Itoa(cfg.Link("r1-r2").MTU)
}

// pmtuRuns puts each cell group's path MTU settings in place for its
// runs, flushes what the hosts learnt before each run, and records what
// the impairments dropped in the run's record.
type pmtuRuns struct {
	lab    string
	own    lab.PMTU
	st     *lab.PMTUState // the group's settings in force (nil: the lab's own)
	before []uint64
}

func (p *pmtuRuns) begin(s *experiment.CellGroup) error {
	if p == nil {
		return nil
	}
	if cur := p.st; cur == nil && !s.PMTU.IsZero() || cur != nil && cur.Set.String() != s.PMTU.String() {
		if cur != nil {
			if err := cur.Close(); err != nil {
				return err
			}
			p.st = nil
		}
		if !s.PMTU.IsZero() {
			st, err := lab.ApplyPMTU(p.lab, s.PMTU, p.own)
			if err != nil {
				return err
			}
			p.st = st
		}
	}
	if err := lab.FlushPMTU(p.lab); err != nil {
		return err
	}
	var err error
	p.before, err = lab.PMTUCounters(p.lab)
	return err
}

// end records in the run's links what the run had in force and what the
// impairments dropped and passed during it.
func (p *pmtuRuns) end(s *experiment.CellGroup, rec *result.Run) {
	if p == nil {
		return
	}
	rec.Links = maps.Clone(rec.Links)
	if rec.Links == nil {
		rec.Links = map[string]string{}
	}
	set := s.PMTU.Over(p.own).String()
	if set == "" {
		set = "none"
	}
	rec.Links["pmtu_settings"] = set
	after, err := lab.PMTUCounters(p.lab)
	switch {
	case err != nil:
		rec.Links["pmtu"] = "counters unreadable: " + err.Error()
	case after != nil:
		rec.Links["pmtu"] = PMTUCounts(lab.PMTUDelta(p.before, after))
	}
}

// PMTUCounts writes an impairment's counters as a run record holds them:
// "ptb6 dropped N passed N, ptb4 …, frag6 …, frag4 …" (report.PMTU reads
// it back).
func PMTUCounts(c []uint64) string {
	return fmt.Sprintf("ptb6 dropped %d passed %d, ptb4 dropped %d passed %d, frag6 dropped %d passed %d, frag4 dropped %d passed %d",
		c[bpf.PTB6Dropped], c[bpf.PTB6Passed], c[bpf.PTB4Dropped], c[bpf.PTB4Passed], c[bpf.Frag6Dropped], c[bpf.Frag6Passed], c[bpf.Frag4Dropped], c[bpf.Frag4Passed])
}

func (p *pmtuRuns) finish() {
	if p != nil && p.st != nil {
		p.st.Close()
		p.st = nil
	}
}
