package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"v6lab/internal/result"
)

// CellLoss is what a loss a cell ran at did over its counted runs: the
// loss as its runs' records name it ("loss 1%", "IPv6 loss 20%") and how
// many packets it dropped in all, from each run record's links ("loss 1%
// (tc BPF): 188 packets dropped in the run").
type CellLoss struct {
	Condition string `json:"condition"`
	Dropped   int64  `json:"dropped"`
	Runs      int    `json:"runs"`
}

// lossAcc sums each cell's counted runs' drops.
type lossAcc map[cellKey]*lossSum

type lossSum struct {
	conds   map[string]bool
	dropped int64
	runs    int
}

// Run adds a counted run's drops, where its links record a loss.
func (a lossAcc) Run(r *result.Run) {
	if r.Warmup || r.Err != "" {
		return
	}
	for _, v := range r.Links {
		cond, counts, ok := strings.Cut(v, ": ")
		if !ok || !strings.Contains(counts, "dropped in the run") {
			continue
		}
		n, err := strconv.ParseInt(strings.Fields(counts)[0], 10, 64)
		if err != nil {
			continue
		}
		k := cellKey{r.Protocol, r.Path, r.Conns}
		s := a[k]
		if s == nil {
			s = &lossSum{conds: map[string]bool{}}
			a[k] = s
		}
		cond, _, _ = strings.Cut(cond, " (")
		s.conds[cond] = true
		s.dropped += n
		s.runs++
	}
}

// set gives each cell its loss, if it ran at one.
func (a lossAcc) set(cells []Cell) {
	for i := range cells {
		c := &cells[i]
		if s := a[cellKey{c.Protocol, c.Path, c.Conns}]; s != nil {
			c.Loss = &CellLoss{Condition: strings.Join(slices.Sorted(maps.Keys(s.conds)), ", "), Dropped: s.dropped, Runs: s.runs}
		}
	}
}

// lossAt is the loss a group's cells over path ran at ("loss 3%"), "" for
// none.
func lossAt(s *Summary, group, path string) string {
	for _, c := range s.Cells {
		if c.Protocol == group && c.Path == path && c.Loss != nil {
			return c.Loss.Condition
		}
	}
	return ""
}

// atLoss is " (loss 3%)" for a group's cells over path that ran at a
// loss, "" otherwise: what "In short" and the tables add to their name.
func atLoss(s *Summary, group, path string) string {
	if l := lossAt(s, group, path); l != "" {
		return " (" + l + ")"
	}
	return ""
}

// lossRow is a path's row of the packets its loss dropped per connection
// count, over the counted runs.
func lossRow(p string, cells []Cell, conns []int) []string {
	row := []string{"", "dropped by loss"}
	for _, n := range conns {
		v := "-"
		for _, c := range cells {
			if c.Path == p && c.Conns == n && c.Loss != nil {
				v = fmt.Sprintf("%d in %s", c.Loss.Dropped, countRuns(c.Loss.Runs))
			}
		}
		row = append(row, v)
	}
	return row
}

func countRuns(n int) string {
	if n == 1 {
		return "1 run"
	}
	return strconv.Itoa(n) + " runs"
}
