package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"v6lab/internal/report/stats"

	"v6lab/internal/sock/path"
)

// EyeballsLoadNote warns that a dual cell's cost at load is partly v6lab's
// own client, when it raced on goroutines (engine go-dial or go).
const EyeballsLoadNote = "at 10 connections and more, part of vs is v6lab's own: this dual path raced on goroutines (engine go-dial or go: the two lookups and each attempt on goroutines of their own, which wake more often than a pinned path's and wait for the CPUs under load); the evloop engine races in the event loop (docs/transition.md)"

// EyeballsGoDialerNote says what a dual cell raced by Go's dialer carries
// that the pinned paths do not: Go's resolver's own work.
const EyeballsGoDialerNote = "dialer go: the dual path's lookups are Go's resolver's (its own sockets and goroutines), whose own time is in this cell's response time and not in the pinned paths', which v6lab looks up itself: part of vs is Go's client, as a Go program's users get it (docs/metrics.md)"

// EyeballsSection sets a dual-stack client's cells (the dual path) beside
// the pinned ipv4 and ipv6 cells of the same group: the share of
// transactions each family won, the attempts and the time to a
// connection, and what racing cost against each pinned family (mean
// against mean). engine is the group's record of its engines (Summary.
// Engines), dialer who raced (Summary.Dialers). False when the group has no
// dual cell.
func EyeballsSection(title string, cells []Cell, engine, dialer string) (section, bool) {
	byPath := map[path.Path]map[int]*Cell{}
	for i := range cells {
		p := path.Path(cells[i].Path)
		if byPath[p] == nil {
			byPath[p] = map[int]*Cell{}
		}
		byPath[p][cells[i].Conns] = &cells[i]
	}
	var duals []*Cell
	for _, c := range cells {
		if path.Path(c.Path).Kind().Dual && c.Metrics["ipv6_won"] != nil {
			duals = append(duals, byPath[path.Path(c.Path)][c.Conns])
		}
	}
	if len(duals) == 0 {
		return section{}, false
	}
	who := "Happy Eyeballs"
	if dialer != "" {
		who += ", dialer " + dialer
	}
	sec := section{Title: title + ": a dual-stack client (" + who + ") against the pinned paths",
		Head: []string{"path", "conns", "IPv6 won", "IPv4 won", "attempts", "winner started (ms)", "connected (ms)", "mean (ms)", "vs ipv4 (ms)", "vs ipv6 (ms)", "winners (95% Wilson CI)"}}
	busy := false
	against := func(c *Cell, p path.Path) string {
		o := byPath[p][c.Conns]
		if o == nil || o.MeanMS == nil || c.MeanMS == nil {
			return "-"
		}
		mark := BusyMark(c, o)
		busy = busy || mark != ""
		return fmt.Sprintf("%+.3g", *c.MeanMS-*o.MeanMS) + mark
	}
	loaded := false
	for _, c := range duals {
		loaded = loaded || c.Conns >= 10
		won := c.Metrics["ipv6_won"].Mean
		row := []string{c.Path, fmt.Sprint(c.Conns), fmt.Sprintf("%.0f%%", 100*won), fmt.Sprintf("%.0f%%", 100*(1-won)),
			metricMean(c, "he_attempts"), metricMean(c, "he_winner_start_ms"), metricMean(c, "he_connect_ms"), optMS(c.MeanMS, c.NA["mean_ms"]),
			against(c, path.IPv4), against(c, path.IPv6), winnersText(c)}
		sec.Rows = append(sec.Rows, row)
	}
	sec.Footer = []string{"won: share of transactions each family won, mean of run means; winner started: when the winning attempt started, from the first query (dialer v3: what a fallback cost); winners: share of the counted runs' completed transactions each family and transport won (quic with dialer v3), with its 95% Wilson interval; vs: the dual cell's mean response time minus the pinned path's, same group and connections (docs/metrics.md)"}
	if busy {
		sec.Footer = append(sec.Footer, BusyNote)
	}
	if loaded && dualEngine(engine) != "evloop" {
		sec.Footer = append(sec.Footer, EyeballsLoadNote)
	}
	if dialer == "go" {
		sec.Footer = append(sec.Footer, EyeballsGoDialerNote)
	}
	return sec, true
}

// dualEngine is the engine a group's dual path ran on, from the group's
// record: "evloop", or per path where they differ ("ipv4=evloop
// dual=go-dial"); "" when none was recorded (results from before
// engines were, whose dual path raced on goroutines).
func dualEngine(record string) string {
	if !strings.Contains(record, "=") {
		return record
	}
	for _, f := range strings.Fields(record) {
		if e, ok := strings.CutPrefix(f, string(path.Dual)+"="); ok {
			return e
		}
	}
	return ""
}

// Winner is who won a dual-stack transaction's race by its sample's
// metrics: "ipv6/quic", "ipv6/tcp", "ipv4/quic" or "ipv4/tcp" (tcp when
// the race offered no QUIC: quic_won absent); "" for a sample that is no
// race's.
func Winner(m map[string]float64) string {
	v6, ok := m["ipv6_won"]
	if !ok {
		return ""
	}
	fam, tr := "ipv4", "tcp"
	if v6 == 1 {
		fam = "ipv6"
	}
	if m["quic_won"] == 1 {
		tr = "quic"
	}
	return fam + "/" + tr
}

// raceMetrics are a race's outcome, each with the figure it is of a
// transaction on a kept connection (keepalive): that one records the
// family (and transport) of the connection it kept, but ran no race, so it
// counts in neither the share each family won nor the winners, but in the
// share of kept transactions on IPv6 (QUIC): what each user's first race
// chose, of which its figures are.
var raceMetrics = map[string]string{"ipv6_won": "kept_ipv6", "quic_won": "kept_quic"}

// count adds n to m[k], making m.
func count(m *map[string]int, k string, n int) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k] += n
}

// winnersText is a cell's share of each winner with its 95% Wilson
// interval: "ipv6/quic 98% (93–99%), ipv4/quic 2% (0.6–7%)", most
// frequent first; "-" without counts.
func winnersText(c *Cell) string {
	n := 0
	var ws []string
	for w, k := range c.Winners {
		n += k
		ws = append(ws, w)
	}
	if n == 0 {
		return "-"
	}
	slices.SortFunc(ws, func(a, b string) int { return cmp.Or(c.Winners[b]-c.Winners[a], strings.Compare(a, b)) })
	var out []string
	for _, w := range ws {
		ci, _ := stats.Wilson(c.Winners[w], n)
		out = append(out, fmt.Sprintf("%s %s%% (%s–%s%%)", w, figure(100*float64(c.Winners[w])/float64(n)), figure(100*ci[0]), figure(100*ci[1])))
	}
	return strings.Join(out, ", ")
}
