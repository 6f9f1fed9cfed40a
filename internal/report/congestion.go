package report

import (
	"fmt"
	"sort"
	"strings"
)

// congestionRow is one cell group and path of a congestion experiment.
type congestionRow struct {
	group, level string
	cells        []*Cell // one per path, in path order
}

// congestionCells gathers the cells with server-side figures by cell
// group, the uncongested groups first, then by level.
func congestionCells(s *Summary) []congestionRow {
	by := map[string]*congestionRow{}
	var order []string
	for i := range s.Cells {
		c := &s.Cells[i]
		if c.Metrics["server_delay_ms"] == nil {
			continue
		}
		r := by[c.Protocol]
		if r == nil {
			r = &congestionRow{group: c.Protocol, level: "none"}
			by[c.Protocol] = r
			order = append(order, c.Protocol)
		}
		if c.Background != nil {
			r.level = c.Background.Level
		}
		r.cells = append(r.cells, c)
	}
	var out []congestionRow
	for _, g := range order {
		r := by[g]
		sort.SliceStable(r.cells, func(i, j int) bool { return pathRank(r.cells[i].Path) < pathRank(r.cells[j].Path) })
		out = append(out, *r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		li, lj := out[i].level, out[j].level
		if (li == "none") != (lj == "none") {
			return li == "none"
		}
		return li < lj
	})
	return out
}

// CongestionTable is the Towson study's shape: per congestion level and
// path, the throughput and delay from the capture at the server (GET to
// the client's last ACK, retransmissions excluded), beside the client's
// own time and what the background traffic delivered.
func CongestionTable(s *Summary) (section, bool) {
	rows := congestionCells(s)
	if len(rows) == 0 {
		return section{}, false
	}
	sec := section{Title: "Under background traffic: server-side throughput and delay (capture at the server), mean of runs (95% CI)",
		Head: []string{"cells", "level", "path", "throughput (Mbit/s)", "delay (ms)", "retransmissions", "client time (ms)", "background delivered / offered (Mbit/s)"}}
	stat := func(c *Cell, k string) string { return statText(c.Metrics[k]) }
	for _, r := range rows {
		for i, c := range r.cells {
			group, level := r.group, r.level
			if i > 0 {
				group, level = "", ""
			}
			bg := "-"
			if b := c.Background; b != nil {
				bg = fmt.Sprintf("%.1f / %.1f", b.Total.DeliveredMbps, b.Total.OfferedMbps)
			}
			sec.Rows = append(sec.Rows, []string{group, level, c.Path, stat(c, "server_throughput_mbps"), stat(c, "server_delay_ms"),
				stat(c, "server_retransmissions"), optMS(c.MeanMS, c.NA["mean_ms"]), bg})
		}
	}
	sec.Footer = []string{"throughput: the server's sending direction, its IP bytes from the GET to the client's ACK of the last byte, retransmitted segments left out, over that time (docs/metrics.md)"}
	return sec, true
}

// congestionPlots are grouped bars per congestion level: server-side
// throughput and delay, one bar per path, with 95% CI whiskers.
func congestionPlots(s *Summary) []*plot {
	rows := congestionCells(s)
	if len(rows) == 0 {
		return nil
	}
	var names []string
	for _, r := range rows {
		names = append(names, strings.ToUpper(r.level))
	}
	mk := func(id, title, ylabel, metric string) *plot {
		p := &plot{ID: id, Title: title, XLabel: "background traffic level", YLabel: ylabel, Bars: true, XNames: names}
		byPath := map[string]*series{}
		var paths []string
		for x, r := range rows {
			for _, c := range r.cells {
				m := c.Metrics[metric]
				if m == nil {
					continue
				}
				sr := byPath[c.Path]
				if sr == nil {
					sr = &series{Name: c.Path}
					byPath[c.Path] = sr
					paths = append(paths, c.Path)
				}
				pt := point{X: float64(x), Y: m.Mean}
				if m.CI95 != nil {
					pt.Lo, pt.Hi, pt.CI = m.CI95[0], m.CI95[1], true
				}
				sr.Points = append(sr.Points, pt)
			}
		}
		sort.Slice(paths, func(i, j int) bool { return pathRank(paths[i]) < pathRank(paths[j]) })
		for _, path := range paths {
			p.Series = append(p.Series, *byPath[path])
		}
		return p
	}
	return []*plot{
		mk("congestion-throughput", "Server-side throughput per background level, 95% CI", "throughput (Mbit/s)", "server_throughput_mbps"),
		mk("congestion-delay", "Server-side delay (GET to last ACK) per background level, 95% CI", "delay (ms)", "server_delay_ms"),
	}
}
