package report

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// CellLoss is what the losses a cell ran at did over its counted runs:
// the loss as its runs' records name it ("loss 1%", "IPv6 loss 20%"; two,
// each with its place: "loss 2% on every link, loss 3% on r1-r2"), how
// many packets they dropped in all and how many counted runs recorded a
// loss, from each run record's links ("loss 1% (tc BPF): 188 packets
// dropped in the run"); Each is every loss apart, with where it was and
// what it dropped.
type CellLoss struct {
	Condition string     `json:"condition"`
	Dropped   int64      `json:"dropped"`
	Runs      int        `json:"runs"`
	Each      []LossPart `json:"each,omitempty"`
}

// LossPart is one loss a cell ran at: its condition, where it was (a
// link, "every link", or the record's place: "r1 eth-client ingress") and
// what it dropped over the counted runs.
type LossPart struct {
	Condition string `json:"condition"`
	Where     string `json:"where"`
	Dropped   int64  `json:"dropped"`
}

// Words say the loss with its place: "loss 3% on r1-r2", "loss 3% on every
// link", "IPv6 loss 20% at r1 eth-client ingress".
func (p LossPart) Words() string {
	if p.Where == "every link" || strings.Contains(p.Where, "-") && !strings.Contains(p.Where, " ") {
		return p.Condition + " on " + p.Where
	}
	return p.Condition + " at " + p.Where
}

// lossAcc sums each cell's counted runs' drops.
type lossAcc map[cellKey]*lossSum

type lossSum struct {
	parts map[LossPart]int64 // by condition and place (Dropped 0)
	runs  int
}

// lossWhere is where a run record's links key puts a loss: the link of
// "r1-r2 egress, both ends" (a cell's loss:, a topology's), "every link"
// for the lab's loss on every link end, else the key itself.
func lossWhere(key string) string {
	if strings.HasPrefix(key, "every link end's egress") {
		return "every link"
	}
	if link, _, ok := strings.Cut(key, " egress, both ends"); ok {
		return link
	}
	return key
}

// Run adds a counted run's drops, where its links record a loss.
func (a lossAcc) Run(r *result.Run) {
	if r.Warmup || r.Err != "" {
		return
	}
	k := cellKey{r.Protocol, r.Path, r.Conns}
	counted := false
	for key, v := range r.Links {
		cond, counts, ok := strings.Cut(v, ": ")
		if !ok || !strings.Contains(counts, "dropped in the run") {
			continue
		}
		n, err := strconv.ParseInt(strings.Fields(counts)[0], 10, 64)
		if err != nil {
			continue
		}
		s := a[k]
		if s == nil {
			s = &lossSum{parts: map[LossPart]int64{}}
			a[k] = s
		}
		cond, _, _ = strings.Cut(cond, " (")
		s.parts[LossPart{Condition: cond, Where: lossWhere(key)}] += n
		if !counted {
			s.runs, counted = s.runs+1, true
		}
	}
}

// set gives each cell its loss, if it ran at one.
func (a lossAcc) set(cells []Cell) {
	for i := range cells {
		c := &cells[i]
		s := a[cellKey{c.Protocol, c.Path, c.Conns}]
		if s == nil {
			continue
		}
		l := &CellLoss{Runs: s.runs}
		for _, p := range slices.SortedFunc(maps.Keys(s.parts), cmpPart) {
			p.Dropped = s.parts[p]
			l.Each = append(l.Each, p)
			l.Dropped += p.Dropped
		}
		l.Condition = l.Each[0].Condition
		if len(l.Each) > 1 { // each with its place: two at 3% are not one
			l.Condition = strings.Join(l.placed(), ", ")
		}
		c.Loss = l
	}
}

func cmpPart(a, b LossPart) int {
	return strings.Compare(a.Words(), b.Words())
}

// placed is a cell's losses with their places ("loss 3% on r1-r2"), each
// once, nil for none; a summary without Each gives its condition.
func (l *CellLoss) placed() []string {
	if l == nil {
		return nil
	}
	if len(l.Each) == 0 {
		return []string{l.Condition}
	}
	var out []string
	for _, p := range l.Each {
		out = append(out, p.Words())
	}
	return out
}

// lossAt is the loss a group's cells over path ran at, each with its
// place ("loss 5% on r1-r2", "loss 3% on every link"), "" for none: one
// loss is said where it was as two are (trial10b).
func lossAt(s *Summary, group, path string) string {
	for _, c := range s.Cells {
		if c.Protocol == group && c.Path == path && c.Loss != nil {
			return strings.Join(c.Loss.placed(), ", ")
		}
	}
	return ""
}

// atLoss is " (loss 3% on every link)" for a group's cells over path that
// ran at a loss, "" otherwise: what "In short" and the tables add to
// their name.
func atLoss(s *Summary, group, path string) string {
	if l := lossAt(s, group, path); l != "" {
		return " (" + l + ")"
	}
	return ""
}

// lossRows are a path's rows of the packets its losses dropped per
// connection count, over the counted runs: one "dropped by loss" row, or,
// where the table's cells ran at more than one loss (a cell's loss: and
// the lab's), one row per loss with its place ("dropped by loss 3% on
// r1-r2"), each loss's drops apart.
func lossRows(p string, cells []Cell, conns []int) [][]string {
	var words []string
	for _, c := range cells {
		for _, w := range c.Loss.placed() {
			if !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
	}
	slices.Sort(words)
	if len(words) <= 1 {
		return [][]string{lossRow(p, cells, conns, "dropped by loss", func(l *CellLoss) int64 { return l.Dropped })}
	}
	var rows [][]string
	for _, w := range words {
		rows = append(rows, lossRow(p, cells, conns, "dropped by "+w, func(l *CellLoss) int64 {
			for _, part := range l.Each {
				if part.Words() == w {
					return part.Dropped
				}
			}
			return -1
		}))
	}
	return rows
}

// lossRow is one row of lossRows: what dropped says a cell's loss dropped
// (-1: the cell did not run at it).
func lossRow(p string, cells []Cell, conns []int, label string, dropped func(*CellLoss) int64) []string {
	row := []string{"", label}
	for _, n := range conns {
		v := "-"
		for _, c := range cells {
			if c.Path == p && c.Conns == n && c.Loss != nil {
				if d := dropped(c.Loss); d >= 0 {
					v = fmt.Sprintf("%d in %s", d, stats.Count(c.Loss.Runs, "run"))
				}
			}
		}
		row = append(row, v)
	}
	return row
}
