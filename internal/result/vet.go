package result

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// vetter checks each sample and run record against the plan the header
// records (its spec's cell groups) and each run's record against the
// samples before it: a hand-edited file (a path, connection count or run
// the experiment never had, a line duplicated or removed, a completed
// transaction without its time) is refused with its line, never counted.
type vetter struct {
	groups map[string]*plannedGroup // nil: the header records no plan (older files)
	// counts are the samples seen of each run since its last record; a
	// run's record must agree with them (unless the writer kept only
	// some rows: sampleEvery above 1).
	counts      map[runID]*[2]int
	sampleEvery int
}

type plannedGroup struct {
	// The group's samples name it by its label, or its protocol.
	Label    string   `json:"label"`
	Protocol string   `json:"protocol"`
	Paths    []string `json:"paths"`
	Conns    []int    `json:"conns"`
	Runs     int      `json:"runs"`
	Warmup   int      `json:"warmup"`
}

type runID struct {
	cell string
	run  int
}

func newVetter(h *Header) *vetter {
	v := &vetter{counts: map[runID]*[2]int{}, sampleEvery: h.SampleEvery}
	b, err := json.Marshal(h.Spec)
	if err != nil {
		return v
	}
	var spec struct {
		Cells []*plannedGroup `json:"cells"`
	}
	if json.Unmarshal(b, &spec) != nil || len(spec.Cells) == 0 {
		return v
	}
	v.groups = map[string]*plannedGroup{}
	for _, g := range spec.Cells {
		key := cmp.Or(g.Label, g.Protocol)
		if key == "" || len(g.Paths) == 0 || len(g.Conns) == 0 || g.Runs <= 0 || v.groups[key] != nil {
			v.groups = nil // a plan this check cannot read: none
			return v
		}
		v.groups[key] = g
	}
	return v
}

// planned checks a record's group, path, connection count and run number
// against the plan.
func (v *vetter) planned(group, path string, conns, run int, warmup bool) error {
	if v.groups == nil {
		return nil
	}
	g := v.groups[group]
	switch {
	case g == nil:
		return fmt.Errorf("field proto: %q is no cell group of this experiment", group)
	case !slices.Contains(g.Paths, path):
		return fmt.Errorf("field path: %q is not a path cell group %s measured (%v)", path, group, g.Paths)
	case !slices.Contains(g.Conns, conns):
		return fmt.Errorf("field conns: %d is not a connection count cell group %s measured (%v)", conns, group, g.Conns)
	case run < 0 && warmup && g.Warmup > 0:
		return nil // a re-warm after a resume (Run.Rewarm)
	case run < 0 || run >= g.Runs+g.Warmup:
		return fmt.Errorf("field run: %d is not a run of cell group %s (0 to %d)", run, group, g.Runs+g.Warmup-1)
	}
	return nil
}

func (v *vetter) sample(s *Sample) error {
	if err := v.planned(s.Protocol, s.Path, s.Conns, s.Run, s.Warmup); err != nil {
		return err
	}
	if s.OK() && s.TotalNS <= 0 {
		return fmt.Errorf("field total_ns: a completed transaction takes time (%d)", s.TotalNS)
	}
	id := runID{s.Cell, s.Run}
	c := v.counts[id]
	if c == nil {
		c = new([2]int)
		v.counts[id] = c
	}
	if s.OK() {
		c[0]++
	} else {
		c[1]++
	}
	return nil
}

func (v *vetter) run(r *Run) error {
	if err := v.planned(r.Protocol, r.Path, r.Conns, r.Run, r.Warmup); err != nil {
		return err
	}
	id := runID{r.Cell, r.Run}
	c := v.counts[id]
	delete(v.counts, id)
	if c == nil {
		c = new([2]int)
	}
	if r.Totals != nil || v.sampleEvery > 1 || r.Err != "" {
		return nil // rows kept in part, or a run left out: nothing to agree on
	}
	if c[0] != r.Completed || c[1] != r.Failed {
		return fmt.Errorf("run %d of %s records %d completed and %d failed transactions, its sample lines %d and %d: a line was added or removed",
			r.Run, r.Cell, r.Completed, r.Failed, c[0], c[1])
	}
	return nil
}
