package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// SegmentFigures are one segment's share of a merged result: its client
// host, and its own counts and mean response time per cell, so a slow
// client host shows beside the pooled figures.
type SegmentFigures struct {
	Index int    `json:"index"`
	Host  string `json:"host,omitempty"`
	Clock string `json:"clock,omitempty"`
	// LateRuns counted the runs that started after their slot, by at
	// most MaxLateMS.
	LateRuns  int     `json:"late_runs,omitempty"`
	MaxLateMS float64 `json:"max_late_ms,omitempty"`
	// EarlyRuns counted the runs that started before their slot, by at
	// most MaxEarlyMS (trial7 F6).
	EarlyRuns  int     `json:"early_runs,omitempty"`
	MaxEarlyMS float64 `json:"max_early_ms,omitempty"`
	Completed  int     `json:"completed"`
	Failed     int     `json:"failed"`
	// MeanMS is the mean response time of its completed transactions
	// of counted runs (absent: none completed).
	MeanMS *float64      `json:"mean_ms,omitempty"`
	Cells  []SegmentCell `json:"cells"`
}

// SegmentCell is one cell's share done by one segment.
type SegmentCell struct {
	Cell string `json:"cell"`
	// Users is how many of each run's users the segment ran.
	Users     int      `json:"users"`
	Completed int      `json:"completed"`
	Failed    int      `json:"failed"`
	MeanMS    *float64 `json:"mean_ms,omitempty"`
}

// segmentAcc splits a merged result's counted samples by the segment
// that ran each user (result.SegmentOf), in the order they come.
type segmentAcc struct {
	merged []result.Segment
	per    []map[string]*segSums
	all    []segSums
	cells  []string
	conns  map[string]int
}

type segSums struct {
	ok, failed int
	sum        float64
}

// newSegmentAcc is nil unless the result is a merge.
func newSegmentAcc(merged []result.Segment) *segmentAcc {
	if len(merged) == 0 {
		return nil
	}
	g := &segmentAcc{merged: merged, per: make([]map[string]*segSums, len(merged)), all: make([]segSums, len(merged)), conns: map[string]int{}}
	for i := range g.per {
		g.per[i] = map[string]*segSums{}
	}
	return g
}

// segment is the segment that ran user of a run of conns users, or -1.
func (g *segmentAcc) segment(user, conns int) int {
	if g == nil {
		return -1
	}
	return result.SegmentOf(user, conns, len(g.merged))
}

func (g *segmentAcc) add(k cellKey, s segSample) {
	key := result.CellKey(k.proto, k.path, k.conns)
	if _, seen := g.conns[key]; !seen {
		g.cells = append(g.cells, key)
		g.conns[key] = k.conns
	}
	a := g.per[s.seg][key]
	if a == nil {
		a = &segSums{}
		g.per[s.seg][key] = a
	}
	for _, x := range []*segSums{a, &g.all[s.seg]} {
		if s.ok {
			x.ok++
			x.sum += float64(s.total) / ms
		} else {
			x.failed++
		}
	}
}

// finish is each segment's figures (nil unless the result is a merge).
func (g *segmentAcc) finish() []SegmentFigures {
	if g == nil {
		return nil
	}
	mean := func(a segSums) *float64 {
		if a.ok == 0 {
			return nil
		}
		return ptr(a.sum / float64(a.ok))
	}
	n := len(g.merged)
	sort.Strings(g.cells)
	out := make([]SegmentFigures, n)
	for i, m := range g.merged {
		out[i] = SegmentFigures{Index: m.Index, Host: m.Host, Clock: m.Clock, LateRuns: m.LateRuns,
			MaxLateMS: float64(m.MaxLateNS) / ms, EarlyRuns: m.EarlyRuns, MaxEarlyMS: float64(m.MaxEarlyNS) / ms, Completed: g.all[i].ok, Failed: g.all[i].failed, MeanMS: mean(g.all[i])}
		for _, c := range g.cells {
			a := segSums{}
			if p := g.per[i][c]; p != nil {
				a = *p
			}
			_, users := result.Segment{Index: i, Count: n}.Users(g.conns[c])
			out[i].Cells = append(out[i].Cells, SegmentCell{Cell: c, Users: users, Completed: a.ok, Failed: a.failed, MeanMS: mean(a)})
		}
	}
	return out
}

// lateTally counts the runs that started after their slot of a schedule
// (--start-at), and by how much at most.
type lateTally struct {
	runs, late, early int
	worst, earliest   time.Duration
}

func (t *lateTally) add(r *result.Run) {
	t.runs++
	if r.LateNS > 0 {
		t.late++
		t.worst = max(t.worst, time.Duration(r.LateNS))
	}
	if r.EarlyNS > 0 {
		t.early++
		t.earliest = max(t.earliest, time.Duration(r.EarlyNS))
	}
}

// note says how many runs started late: such runs were not aligned with
// the other segments' runs. Empty when none.
func (t *lateTally) note() string {
	var off []string
	if t.late > 0 {
		off = append(off, fmt.Sprintf("%s started after their slot of the --start-at schedule (at most %s late)", stats.CountOf(t.late, t.runs, "run"), t.worst.Round(time.Millisecond)))
	}
	if t.early > 0 {
		off = append(off, fmt.Sprintf("%s started before their slot (at most %s early: resumed by a v6lab that did not keep the schedule)", stats.CountOf(t.early, t.runs, "run"), t.earliest.Round(time.Millisecond)))
	}
	if len(off) == 0 {
		return ""
	}
	return strings.Join(off, "; ") + ": those runs did not start together with the other segments' runs"
}

// SegmentTable is a merged result's per-segment figures: one row per
// segment (client host) with its counts and mean, then each cell's mean.
func SegmentTable(s *Summary) (section, bool) {
	if len(s.Segments) == 0 {
		return section{}, false
	}
	sec := section{Title: "Segments: each client host's share of the pooled figures above",
		Head: []string{"segment", "host", "completed", "failed", "mean (ms)", "late runs"}}
	for _, g := range s.Segments {
		late := "0"
		if g.LateRuns > 0 {
			late = fmt.Sprintf("%d (≤ %s ms)", g.LateRuns, figure(g.MaxLateMS))
		}
		if g.EarlyRuns > 0 {
			late += fmt.Sprintf(", early %d (≤ %s ms)", g.EarlyRuns, figure(g.MaxEarlyMS))
		}
		sec.Rows = append(sec.Rows, []string{fmt.Sprintf("%d/%d", g.Index, len(s.Segments)), g.Host,
			fmt.Sprint(g.Completed), fmt.Sprint(g.Failed), optMS(g.MeanMS, "none completed"), late})
	}
	for _, g := range s.Segments {
		sec.Footer = append(sec.Footer, fmt.Sprintf("segment %d/%d clock: %s", g.Index, len(s.Segments), cmpOr(g.Clock, "not recorded")))
	}
	return sec, true
}

// SegmentCellTable is each cell's mean per segment, side by side.
func SegmentCellTable(s *Summary) (section, bool) {
	if len(s.Segments) == 0 {
		return section{}, false
	}
	sec := section{Title: "Segments: mean response time (ms) per cell and segment (completed/failed; -: no user of the cell in that segment)", Head: []string{"cell", "users per run"}}
	for _, g := range s.Segments {
		sec.Head = append(sec.Head, fmt.Sprintf("segment %d", g.Index))
	}
	for ci, c := range s.Segments[0].Cells {
		var users []string
		for _, g := range s.Segments {
			users = append(users, fmt.Sprint(g.Cells[ci].Users))
		}
		row := []string{c.Cell, strings.Join(users, " + ")}
		for _, g := range s.Segments {
			sc := g.Cells[ci]
			if sc.Completed+sc.Failed == 0 {
				row = append(row, "-") // fewer users than segments: none here
				continue
			}
			row = append(row, fmt.Sprintf("%s (%d/%d)", optMS(sc.MeanMS, "none completed"), sc.Completed, sc.Failed))
		}
		sec.Rows = append(sec.Rows, row)
	}
	return sec, true
}
