package report

import (
	"fmt"
	"slices"
	"strings"
)

// HTTP versions side by side: a file's cell with http_version [1.1, 2, 3]
// is a cell group per version (http, http/2, http/3); these tables and the
// plot put them together, per path, so the versions read as one family.

// versionGroups are the cell groups that name an HTTP version, in the
// report's order: none unless there are two to compare.
func versionGroups(s *Summary) []string {
	var out []string
	for _, g := range protocols(s) {
		if s.HTTPVersions[g] != "" {
			out = append(out, g)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// VersionsTable is the versions side by side per path: for each path and
// version, the mean response time, the handshake (TCP and TLS, or QUIC),
// the first byte (from the transaction's start, its lookup included), the
// completion, and the protocol the transactions spoke, per connection
// count.
func VersionsTable(s *Summary) (section, bool) {
	groups := versionGroups(s)
	if groups == nil {
		return section{}, false
	}
	var cells []Cell
	for _, g := range groups {
		cells = append(cells, cellsOf(s, g)...)
	}
	conns := connsOf(cells)
	sec := section{Title: "HTTP versions side by side (ms, mean of run means; handshake: TCP+TLS, TCP alone in cleartext, or QUIC; first byte: from the start, lookup included)",
		Head: append([]string{"path", "version", ""}, intHeads(conns)...)}
	for _, p := range versionPaths(s, groups) {
		label := p
		for _, g := range groups {
			byConns := map[int]*Cell{}
			for _, c := range cellsOf(s, g) {
				if c.Path == p {
					byConns[c.Conns] = &c
				}
			}
			if len(byConns) == 0 {
				continue
			}
			rows := [][]string{{label, groupCalled(s, g) + atOnce(s, g) + atLoss(s, g, p), "mean"}, {"", "", "handshake"}, {"", "", "first byte"}, {"", "", "completed"}, {"", "", "spoke"}}
			for _, n := range conns {
				c := byConns[n]
				if c == nil {
					for i := range rows {
						rows[i] = append(rows[i], "-")
					}
					continue
				}
				rows[0] = append(rows[0], optMS(c.MeanMS, c.NA["mean_ms"]))
				rows[1] = append(rows[1], metricMeanMS(c, "handshake_ms"))
				rows[2] = append(rows[2], metricMeanMS(c, "ttfb_ms"))
				rows[3] = append(rows[3], completion(c))
				rows[4] = append(rows[4], spoke(c, slices.Contains(s.HTTPCleartext, g)))
			}
			sec.Rows = append(sec.Rows, rows...)
			label = ""
		}
	}
	if clear := clearGroups(s, groups); len(clear) > 0 && len(clear) < len(groups) {
		its := map[bool]string{false: "its", true: "their"}[len(clear) > 1]
		sec.Footer = append(sec.Footer, fmt.Sprintf("%s ran in cleartext, the other versions over TLS: %s handshake and first byte lack TLS's round trips (give tls: true, or an https url, to compare like with like)", strings.Join(calledAll(s, clear), ", "), its))
	}
	return sec, true
}

// metricMeanMS is a cell's mean of metric k, in ms, at the precision the
// mean row above it is printed in (FormatMS: 106.3 beside 104.0, not 104),
// "-" when absent.
func metricMeanMS(c *Cell, k string) string {
	v, ok := mean(c, k)
	if !ok {
		return "-"
	}
	return FormatMS(v)
}

// clearGroups are those of groups that ran without TLS: HTTP/1.1 in
// cleartext and HTTP/2 in the clear (h2c).
func clearGroups(s *Summary, groups []string) []string {
	return filter(groups, func(g string) bool { return slices.Contains(s.HTTPCleartext, g) || slices.Contains(s.HTTPH2C, g) })
}

// calledAll is each group as notes call it (groupCalled).
func calledAll(s *Summary, groups []string) []string {
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = groupCalled(s, g)
	}
	return out
}

// VersionDiffs is each version's difference from the baseline path, with
// its 95% CI, per path and connection count: whether a family slows one
// version more than another.
func VersionDiffs(s *Summary) (section, bool) {
	groups := versionGroups(s)
	if groups == nil {
		return section{}, false
	}
	var cmps []Comparison
	for _, g := range groups {
		cmps = append(cmps, comparisonsOf(s, g)...)
	}
	if len(cmps) == 0 {
		return section{}, false
	}
	conns := connsOf(s.Cells)
	sec := section{Title: fmt.Sprintf("HTTP versions: difference from %s per version (ms, 95%% CI; positive = slower than %s)", s.Baseline, s.Baseline),
		Head: append([]string{"path", "version"}, intHeads(conns)...)}
	for _, p := range pathsOfCmp(cmps) {
		first := p
		for _, g := range groups {
			row := []string{first, groupCalled(s, g) + atOnce(s, g)}
			any := false
			for _, n := range conns {
				v := "-"
				for _, c := range comparisonsOf(s, g) {
					if c.Path == p && c.Conns == n {
						v = optSigned(c.DiffMS, c.NA["diff_ms"]) + " (" + optRange(c.CI95DiffMS, c.NA["ci95_diff_ms"], " to ") + ")"
						any = true
					}
				}
				row = append(row, v)
			}
			if any {
				sec.Rows = append(sec.Rows, row)
				first = ""
			}
		}
	}
	return sec, len(sec.Rows) > 0
}

// spoke names the protocols a cell's transactions spoke, the most first.
func spoke(c *Cell, cleartext bool) string {
	var ps []string
	for p := range c.Negotiated {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b string) int { return c.Negotiated[b] - c.Negotiated[a] })
	if len(ps) == 0 {
		return "-"
	}
	if cleartext {
		return strings.Join(ps, "+") + " cleartext"
	}
	return strings.Join(ps, "+")
}

// versionPlot is the response time against connections, one line per
// version per path: the path's colour, the version's line weight.
func versionPlot(s *Summary) *plot {
	groups := versionGroups(s)
	if groups == nil {
		return nil
	}
	var cells []Cell
	for _, g := range groups {
		cells = append(cells, cellsOf(s, g)...)
	}
	conns := connsOf(cells)
	logX := len(conns) > 1 && conns[len(conns)-1] >= 100*conns[0]
	per := "per connection"
	if slices.ContainsFunc(groups, func(g string) bool { return groupStreams(s, g) > 1 }) {
		per = "per transaction" // some ran several at once on a connection (their lines say how many)
	}
	pl := &plot{ID: "rt-http-versions", Title: "HTTP versions: mean response time " + per + ", 95% CI, one line per version per path",
		XLabel: "simultaneous connections per path", YLabel: "response time (ms)", LogX: logX}
	for _, p := range versionPaths(s, groups) {
		for _, g := range groups {
			ser := series{Name: p + " " + groupCalled(s, g) + atOnce(s, g), Class: pathClass(p) + " v-" + strings.ReplaceAll(s.HTTPVersions[g], ".", "")}
			for _, c := range cellsOf(s, g) {
				if c.Path != p || c.MeanMS == nil {
					continue
				}
				pt := point{X: float64(c.Conns), Y: *c.MeanMS}
				if c.CI95MS != nil {
					pt.Lo, pt.Hi, pt.CI, pt.Few = c.CI95MS[0], c.CI95MS[1], true, c.FewRuns
				}
				ser.Points = append(ser.Points, pt)
			}
			if len(ser.Points) > 0 {
				pl.Series = append(pl.Series, ser)
			}
		}
	}
	return pl
}

// versionPaths are the paths of the version groups, each once, in report
// order.
func versionPaths(s *Summary, groups []string) []string {
	var out []string
	for _, g := range groups {
		for _, p := range pathsOf(cellsOf(s, g)) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return pathRank(a) - pathRank(b) })
	return out
}
