package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

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
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"`
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

// segmentFigures splits a merged file's counted samples by the segment
// that ran each user (result.SegmentOf); nil unless the file is a merge.
func segmentFigures(f *result.File, counted func(*result.Sample) bool) []SegmentFigures {
	merged := f.Header.Merged
	if len(merged) == 0 {
		return nil
	}
	n := len(merged)
	type acc struct {
		ok, failed int
		sum        float64
	}
	per := make([]map[string]*acc, n)
	all := make([]acc, n)
	var cells []string
	seen := map[string]bool{}
	conns := map[string]int{}
	for i := range per {
		per[i] = map[string]*acc{}
	}
	for i := range f.Samples {
		smp := &f.Samples[i]
		if !counted(smp) {
			continue
		}
		seg := result.SegmentOf(smp.User, smp.Conns, n)
		if seg < 0 {
			continue
		}
		key := result.CellKey(smp.Protocol, smp.Path, smp.Conns)
		if !seen[key] {
			seen[key] = true
			cells = append(cells, key)
			conns[key] = smp.Conns
		}
		a := per[seg][key]
		if a == nil {
			a = &acc{}
			per[seg][key] = a
		}
		for _, x := range []*acc{a, &all[seg]} {
			if smp.OK() {
				x.ok++
				x.sum += float64(smp.TotalNS) / ms
			} else {
				x.failed++
			}
		}
	}
	mean := func(a acc) *float64 {
		if a.ok == 0 {
			return nil
		}
		return ptr(a.sum / float64(a.ok))
	}
	sort.Strings(cells)
	out := make([]SegmentFigures, n)
	for i, m := range merged {
		out[i] = SegmentFigures{Index: m.Index, Host: m.Host, Clock: m.Clock, LateRuns: m.LateRuns,
			MaxLateMS: float64(m.MaxLateNS) / ms, Completed: all[i].ok, Failed: all[i].failed, MeanMS: mean(all[i])}
		for _, c := range cells {
			a := acc{}
			if p := per[i][c]; p != nil {
				a = *p
			}
			_, users := result.Segment{Index: i, Count: n}.Users(conns[c])
			out[i].Cells = append(out[i].Cells, SegmentCell{Cell: c, Users: users, Completed: a.ok, Failed: a.failed, MeanMS: mean(a)})
		}
	}
	return out
}

// lateNote says how many runs started after their slot of a schedule
// (--start-at), and by how much: such runs were not aligned with the other
// segments' runs. Empty when none.
func lateNote(runs []result.Run) string {
	late, worst := 0, time.Duration(0)
	for _, r := range runs {
		if r.LateNS > 0 {
			late++
			worst = max(worst, time.Duration(r.LateNS))
		}
	}
	if late == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d runs started after their slot of the --start-at schedule (at most %s late): those runs did not start together with the other segments' runs", late, len(runs), worst.Round(time.Millisecond))
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
