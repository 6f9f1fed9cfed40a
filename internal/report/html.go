package report

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
)

// HTMLFile is the report's name inside a result directory.
const HTMLFile = "report.html"

// HTML writes report.html: one self-contained page (inline CSS and SVG, no
// script, nothing fetched) with the run's context, the study's tables and
// the plots. Every number on it comes from the summary.
func HTML(w io.Writer, s *Summary) error {
	page := htmlPage{S: s, Legend: Legend, Tunnel: TunnelLine(s), Short: ShortOf(s), Named: namedInShort(s)}
	if s.Scale > 0 && s.Scale != 1 {
		page.Context = append(page.Context, kv{"scale", fmt.Sprintf("%g (connection counts and runs shrunk by --scale)", s.Scale)})
	}
	if s.Seed != 0 {
		page.Context = append(page.Context, kv{"order", fmt.Sprintf("shuffled, seed %d", s.Seed)})
	}
	if s.Partial != nil {
		page.Context = append(page.Context, kv{s.Partial.State(), s.Partial.Line()})
	}
	for _, k := range sortedKeys(s.Machine) {
		page.Context = append(page.Context, kv{"machine: " + k, s.Machine[k]})
	}
	for _, k := range sortedKeys(s.Lab) {
		if k == "config" {
			continue // the raw JSON is for --resume, not for readers
		}
		page.Context = append(page.Context, kv{"lab: " + k, s.Lab[k]})
	}
	for _, k := range sortedKeys(s.Servers) {
		page.Context = append(page.Context, kv{"server: " + k, s.Servers[k]})
	}
	for _, k := range sortedKeys(s.Engines) {
		page.Context = append(page.Context, kv{"engine: " + k, s.Engines[k]})
	}
	if sizes := rateBySize(s); len(sizes) > 0 {
		g := htmlGroup{Name: "file transfers", Tables: FileTables(s)}
		for _, p := range sizes {
			g.Plots = append(g.Plots, template.HTML(p.SVG()))
		}
		page.Groups = append(page.Groups, g)
	}
	if sec, ok := CongestionTable(s); ok {
		g := htmlGroup{Name: "background traffic", Tables: []section{sec}}
		for _, p := range congestionPlots(s) {
			g.Plots = append(g.Plots, template.HTML(p.SVG()))
		}
		page.Groups = append(page.Groups, g)
	}
	for _, proto := range protocols(s) {
		g := htmlGroup{Name: proto, Heading: groupCalled(s, proto), Tables: sections(s, proto), Conditions: ConditionsLine(s, proto)}
		for _, p := range plots(s, proto) {
			g.Plots = append(g.Plots, template.HTML(p.SVG()))
		}
		page.Groups = append(page.Groups, g)
	}
	if secs := TransportTables(s); len(secs) > 0 {
		g := htmlGroup{Name: "transport tables", Tables: secs}
		for _, p := range TransportPlots(s) {
			g.Plots = append(g.Plots, template.HTML(p.SVG()))
		}
		page.Groups = append(page.Groups, g)
	}
	if secs := PMTUTables(s); len(secs) > 0 {
		page.Groups = append(page.Groups, htmlGroup{Name: "path MTU", Tables: secs})
	}
	if sec, ok := SegmentTable(s); ok {
		g := htmlGroup{Name: "segments", Tables: []section{sec}}
		if cells, ok := SegmentCellTable(s); ok {
			g.Tables = append(g.Tables, cells)
		}
		page.Groups = append(page.Groups, g)
	}
	if vp := versionPlot(s); vp != nil {
		g := htmlGroup{Name: "HTTP versions", Plots: []template.HTML(nil)}
		for _, f := range []func(*Summary) (section, bool){VersionsTable, VersionDiffs} {
			if sec, ok := f(s); ok {
				g.Tables = append(g.Tables, sec)
			}
		}
		g.Plots = append(g.Plots, template.HTML(vp.SVG()))
		page.Groups = append(page.Groups, g)
	}
	if sec, ok := DifferenceCIs(s); ok {
		page.Groups = append(page.Groups, htmlGroup{Name: "all protocols", Tables: []section{sec}})
	}
	return htmlTmpl.Execute(w, page)
}

type kv struct{ K, V string }

type htmlGroup struct {
	Name string
	// Heading is what the page calls a cell group (groupCalled: HTTP/2
	// for a probe's http group of that version); "" for Name.
	Heading string
	Tables  []section
	Plots   []template.HTML
	// Conditions are the group's own (ConditionsLine), "" if none.
	Conditions string
}

// ID is the group's anchor: its name with each space a hyphen (an id
// holds no space, or no link can name it).
func (g htmlGroup) ID() string { return strings.Join(strings.Fields(g.Name), "-") }

type htmlPage struct {
	S     *Summary
	Short InShort
	// Named: the verdicts name their cell group (there is more than one).
	Named   bool
	Context []kv
	Groups  []htmlGroup
	Legend  string
	// Tunnel says which 6in4 tunnel carried the 6in4 path (TunnelLine).
	Tunnel string
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// plots are the figures of one protocol: response time against
// connections with CI bars, the % increase over the baseline with its CI,
// the completion rate, and a latency CDF per connection count.
func plots(s *Summary, proto string) []*plot {
	cells := cellsOf(s, proto)
	conns := connsOf(cells)
	logX := len(conns) > 1 && conns[len(conns)-1] >= 100*conns[0]
	xlabel := "simultaneous connections per path"
	if s.Engines[proto] == LoadEngine {
		xlabel = "queries in flight per path"
	}
	if logX {
		xlabel += " (log scale)"
	}
	rt, done := meanPlots(proto, cells, xlabel, logX)
	rt.Title = strings.Replace(rt.Title, "per connection", perWhat(s, proto), 1)
	out := []*plot{rt}
	if cmps := comparisonsOf(s, proto); len(cmps) > 0 {
		out = append(out, pctPlot(s, proto, cells, cmps, xlabel, logX))
	}
	// Ticks at the connection counts measured, nowhere else.
	var ticks []float64
	for _, n := range conns {
		ticks = append(ticks, float64(n))
	}
	for _, p := range out {
		p.XTicks = ticks
	}
	out = append(out, done)
	if over := throughputOverTime(proto, cells); over != nil {
		out = append(out, over)
	}
	for _, n := range conns {
		out = append(out, cdfPlot(proto, cells, n))
	}
	out = append(out, whatIfPlots(proto, cells)...)
	// Named as the tables are: "HTTP/2 (h2c): …", not "HTTP/H2C: …", and
	// "HTTP/2 (kept connections): …", as what the connections did.
	if name := groupTitle(s, proto); name != strings.ToUpper(proto) {
		for _, p := range out {
			p.Title = strings.Replace(p.Title, strings.ToUpper(proto), name, 1)
		}
	}
	return out
}

// meanPlots are the mean response time per path against connections,
// with CI bars, and the completion rate.
func meanPlots(proto string, cells []Cell, xlabel string, logX bool) (rt, done *plot) {
	id := strings.ToLower(proto)
	rt = &plot{ID: "rt-" + id, Title: strings.ToUpper(proto) + ": mean response time per connection, 95% CI",
		XLabel: xlabel, YLabel: "response time (ms)", LogX: logX}
	done = &plot{ID: "completion-" + id, Title: strings.ToUpper(proto) + ": transactions completed",
		XLabel: "simultaneous connections per path", YLabel: "completed (%)", Bars: true, YMin: 0, YMax: 100}
	for _, p := range pathsOf(cells) {
		line, bars := series{Name: p}, series{Name: p}
		for _, c := range cells {
			if c.Path != p {
				continue
			}
			if c.MeanMS != nil {
				pt := point{X: float64(c.Conns), Y: *c.MeanMS, Saturated: c.SelfCheck.saturated()}
				if c.CI95MS != nil {
					pt.Lo, pt.Hi, pt.CI, pt.Few = c.CI95MS[0], c.CI95MS[1], true, c.FewRuns
				}
				line.Points = append(line.Points, pt)
			}
			if c.CompletionRate != nil {
				bars.Points = append(bars.Points, point{X: float64(c.Conns), Y: *c.CompletionRate * 100})
			}
			if c.MeanMS == nil && c.Failed > 0 && c.Completed == 0 {
				rt.Marks = append(rt.Marks, mark{X: float64(c.Conns), Text: fmt.Sprintf("%s at %d: all %d failed (%s)", p, c.Conns, c.Failed, shorten(c.FirstError, 48))})
			}
		}
		rt.Series = append(rt.Series, line)
		done.Series = append(done.Series, bars)
	}
	return rt, done
}

// pctPlot is each path's % increase over the baseline with its CI; for
// trials bound by time, their throughput's change (their transfer time is
// the time asked for).
func pctPlot(s *Summary, proto string, cells []Cell, cmps []Comparison, xlabel string, logX bool) *plot {
	bound := timeBound(cells)
	title, ylabel := fmt.Sprintf("%s: increase over %s, 95%% CI", strings.ToUpper(proto), s.Baseline), "increase (%)"
	if bound {
		title, ylabel = fmt.Sprintf("%s: throughput against %s, 95%% CI", strings.ToUpper(proto), s.Baseline), "throughput change (%)"
	}
	pct := &plot{ID: "pct-" + strings.ToLower(proto), Title: title, XLabel: xlabel, YLabel: ylabel, LogX: logX, ZeroLine: true}
	base := map[int]*float64{}
	type at struct {
		path  string
		conns int
	}
	saturated := map[at]bool{}
	for _, c := range cells {
		saturated[at{c.Path, c.Conns}] = c.SelfCheck.saturated()
		if c.Path == s.Baseline {
			base[c.Conns] = c.MeanMS
			if m := c.Metrics["throughput_mbps"]; bound && m != nil {
				base[c.Conns] = &m.Mean
			}
		}
	}
	var missing pctMissing
	for _, p := range pathsOfCmp(cmps) {
		ser := series{Name: p}
		for _, c := range cmps {
			if c.Path != p {
				continue
			}
			v, ci, why := c.PctIncrease, c.CI95DiffMS, c.NA["pct_increase"]
			if bound {
				if c.Throughput == nil {
					missing.add(c.Conns, p, "no throughput")
					continue
				}
				v, ci, why = c.Throughput.PctChange, c.Throughput.CI95Diff, c.Throughput.NA["pct_change"]
			}
			if v == nil {
				missing.add(c.Conns, p, why)
				continue
			}
			pt := point{X: float64(c.Conns), Y: *v, Saturated: saturated[at{c.Path, c.Conns}] || saturated[at{s.Baseline, c.Conns}]}
			if b := base[c.Conns]; ci != nil && b != nil && *b > 0 {
				pt.Lo, pt.Hi, pt.CI = ci[0] / *b * 100, ci[1] / *b * 100, true
			}
			ser.Points = append(ser.Points, pt)
		}
		pct.Series = append(pct.Series, ser)
	}
	pct.Marks = missing.marks(len(pathsOfCmp(cmps)))
	return pct
}

// pctMissing gathers the comparisons a % plot has no point for: by
// connection count, the paths for each reason (the comparison's n/a).
type pctMissing struct {
	conns []int
	why   map[int][]pathsWhy
}

type pathsWhy struct {
	why   string
	paths []string
}

func (m *pctMissing) add(conns int, path, why string) {
	if why == "" {
		why = "n/a"
	}
	if m.why == nil {
		m.why = map[int][]pathsWhy{}
	}
	if _, ok := m.why[conns]; !ok {
		m.conns = append(m.conns, conns)
	}
	for i := range m.why[conns] {
		if pw := &m.why[conns][i]; pw.why == why {
			pw.paths = append(pw.paths, path)
			return
		}
	}
	m.why[conns] = append(m.why[conns], pathsWhy{why, []string{path}})
}

// marks says under the plot, at each connection count, which paths have
// no point there and why (all of them: no path named), so that a load
// is never left out unsaid (trial12 M9).
func (m *pctMissing) marks(paths int) []mark {
	var out []mark
	for _, n := range m.conns {
		for _, pw := range m.why[n] {
			who := ""
			if len(pw.paths) < paths {
				who = " for " + strings.Join(pw.paths, ", ")
			}
			out = append(out, mark{X: float64(n), Text: fmt.Sprintf("%d: no %%%s, %s", n, who, shorten(pw.why, 56))})
		}
	}
	return out
}

// cdfPlot is the response times' CDF of each path at n connections.
func cdfPlot(proto string, cells []Cell, n int) *plot {
	cdf := &plot{ID: fmt.Sprintf("cdf-%s-%d", strings.ToLower(proto), n), Title: fmt.Sprintf("%s, %d conn.: response time CDF", strings.ToUpper(proto), n),
		XLabel: "response time (ms)", YLabel: "transactions (%)", YMin: 0, YMax: 100, W: 420, H: 280}
	for _, c := range cells {
		if c.Conns != n || len(c.CDFMS) == 0 {
			continue
		}
		ser := series{Name: c.Path}
		for i, v := range c.CDFMS {
			ser.Points = append(ser.Points, point{X: v, Y: float64(i)})
		}
		cdf.Series = append(cdf.Series, ser)
	}
	return cdf
}

// rateBySize plots file transfer rate against file size, one plot per
// series (fileSeries: ftp-5879824 is ftp), one line per path — the
// Regensburg studies' figure.
func rateBySize(s *Summary) []*plot {
	byProto := map[string]map[string][]point{}
	var protos []string
	for _, c := range s.Cells {
		size, rate := c.Metrics["file_bytes"], c.Metrics["mbytes_per_s"]
		if size == nil || rate == nil {
			continue
		}
		proto := fileSeries(c.Protocol, size.Mean)
		if byProto[proto] == nil {
			byProto[proto] = map[string][]point{}
			protos = append(protos, proto)
		}
		pt := point{X: size.Mean, Y: rate.Mean}
		if rate.CI95 != nil {
			pt.Lo, pt.Hi, pt.CI = rate.CI95[0], rate.CI95[1], true
		}
		byProto[proto][c.Path] = append(byProto[proto][c.Path], pt)
	}
	var out []*plot
	for _, proto := range protos {
		sizes := map[float64]bool{}
		for _, pts := range byProto[proto] {
			for _, pt := range pts {
				sizes[pt.X] = true
			}
		}
		if len(sizes) < 2 { // one size is no sweep
			continue
		}
		p := &plot{ID: "rate-by-size-" + proto, Title: strings.ToUpper(proto) + ": transfer rate by file size, 95% CI",
			XLabel: "file size (bytes, log scale)", YLabel: "MB/s", LogX: true}
		var paths []string
		for path := range byProto[proto] {
			paths = append(paths, path)
		}
		sort.Slice(paths, func(i, j int) bool { return pathRank(paths[i]) < pathRank(paths[j]) })
		for _, path := range paths {
			pts := byProto[proto][path]
			sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
			p.Series = append(p.Series, series{Name: path, Points: pts})
		}
		out = append(out, p)
	}
	return out
}

// throughputOverTime plots a transport test's throughput per interval, one
// line per path (at the cell group's first connection count), or nil.
func throughputOverTime(proto string, cells []Cell) *plot {
	p := &plot{ID: "throughput-" + strings.ToLower(proto), Title: strings.ToUpper(proto) + ": throughput over time, mean of trials",
		XLabel: "time since the trial's start (s)", YLabel: "throughput (Mbit/s)"}
	for _, c := range cells {
		if len(c.IntervalMbps) == 0 || c.Conns != cells[0].Conns {
			continue
		}
		ser := series{Name: c.Path}
		for i, v := range c.IntervalMbps {
			ser.Points = append(ser.Points, point{X: c.IntervalEndS[i], Y: v})
		}
		p.Series = append(p.Series, ser)
	}
	if len(p.Series) == 0 {
		return nil
	}
	return p
}

var htmlTmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>v6lab: {{.S.Name}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1b1b1b; margin: 2em auto; max-width: 1180px; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 2px solid #ddd; } h3 { font-size: 1em; }
.sub { color: #555; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 0.2em 0.7em; text-align: right; white-space: nowrap; }
th:first-child, td:first-child, td:nth-child(2) { text-align: left; }
thead th { border-bottom: 2px solid #999; }
table.context td { text-align: left; white-space: normal; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
svg.plot { background: #fff; border: 1px solid #e3e3e3; }
svg .title { font-weight: 600; font-size: 13px; } svg .tick, svg .label, svg .legend text, svg .empty { font-size: 11px; fill: #333; }
svg .grid { stroke: #eee; } svg .axis, svg .tickmark { stroke: #555; } svg .zero { stroke: #888; stroke-dasharray: 3 3; }
svg .line { fill: none; stroke-width: 2; } svg .ci { fill: none; stroke-width: 1.4; } svg .ci.few { stroke-dasharray: 1 2; } svg .dot.saturated { fill: #fff; stroke: #000; stroke-width: 1.5; stroke-dasharray: 1.5 1.5; } svg .dot.late { fill: #fff; stroke: #000; stroke-width: 1.5; } svg .note { font-size: 10px; fill: #666; }
.s-ipv4 .line, .s-ipv4 .ci { stroke: #1f5fa8; } .s-ipv4 .dot, .s-ipv4 rect { fill: #1f5fa8; }
.s-ipv6 .line, .s-ipv6 .ci { stroke: #c0392b; } .s-ipv6 .dot, .s-ipv6 rect { fill: #c0392b; } .s-ipv6 .line { stroke-dasharray: 7 3; }
.s-sixin4 .line, .s-sixin4 .ci { stroke: #2e8b57; } .s-sixin4 .dot, .s-sixin4 rect { fill: #2e8b57; } .s-sixin4 .line { stroke-dasharray: 2 3; }
.s-nat64 .line, .s-nat64 .ci { stroke: #b9770e; } .s-nat64 .dot, .s-nat64 rect { fill: #b9770e; } .s-nat64 .line { stroke-dasharray: 10 3 2 3; }
.s-dual .line, .s-dual .ci { stroke: #16a085; } .s-dual .dot, .s-dual rect { fill: #16a085; } .s-dual .line { stroke-dasharray: 1 2 6 2; }
.s-xlat .line, .s-xlat .ci { stroke: #7d3c98; } .s-xlat .dot, .s-xlat rect { fill: #7d3c98; } .s-xlat .line { stroke-dasharray: 6 2 1 2; }
.s-dslite .line, .s-dslite .ci { stroke: #a04000; } .s-dslite .dot, .s-dslite rect { fill: #a04000; } .s-dslite .line { stroke-dasharray: 2 2; }
.v-2 .line { stroke-width: 3.5; } .v-3 .line { stroke-width: 1.2; }
.s-other .line, .s-other .ci { stroke: #7d3c98; } .s-other .dot, .s-other rect { fill: #7d3c98; }
.s-k0 .line, .s-k0 .ci { stroke: #1f5fa8; } .s-k0 .dot, .s-k0 rect { fill: #1f5fa8; }
.s-k1 .line, .s-k1 .ci { stroke: #d35400; } .s-k1 .dot, .s-k1 rect { fill: #d35400; } .s-k1 .line { stroke-dasharray: 7 3; }
.s-k2 .line, .s-k2 .ci { stroke: #2e8b57; } .s-k2 .dot, .s-k2 rect { fill: #2e8b57; } .s-k2 .line { stroke-dasharray: 2 3; }
.s-k3 .line, .s-k3 .ci { stroke: #7d3c98; } .s-k3 .dot, .s-k3 rect { fill: #7d3c98; } .s-k3 .line { stroke-dasharray: 10 3 2 3; }
ul.notes li { margin: 0.2em 0; }
section.verdicts ul { list-style: none; padding-left: 0; font-size: 1.08em; } section.verdicts li { margin: 0.35em 0; padding-left: 0.6em; border-left: 4px solid #bbb; }
li.v-same { border-color: #2e8b57; } li.v-slower, li.v-failing { border-color: #c0392b; } li.v-faster { border-color: #1f5fa8; } li.v-mixed { border-color: #b9770e; } li.v-unclear { border-color: #999; } li.v-uncorrected { border-color: #b9770e; } li.v-na, li.v-grouped { border-color: #ccc; }
details.context summary { cursor: pointer; color: #555; margin: 0.8em 0; }
@media print { body { margin: 0; max-width: none; font-size: 11px; } h2 { break-before: page; } svg.plot { break-inside: avoid; } }
</style>
</head>
<body>
<h1>v6lab: {{.S.Name}}</h1>
<p class="sub">Created {{.S.Created.UTC.Format "2006-01-02 15:04:05 UTC"}} · target {{.S.Target}} · baseline {{.S.Baseline}} · every figure below comes from summary.json in this directory.</p>
{{with .S.Partial}}<p style="color: #a04000"><strong>{{.Line}}</strong></p>
{{end}}{{if .Tunnel}}<p class="sub"><strong>{{.Tunnel}}</strong></p>{{end}}
{{if or .Short.Note .Short.Full .Short.Grouped}}<section class="verdicts"><h2 id="in-short">In short, against {{.S.Baseline}}</h2>
{{with .Short.Note}}<p><strong>{{.}}</strong></p>
{{end}}<ul>{{range .Short.Full}}<li class="v-{{.Kind}}"><strong>{{if $.Named}}{{or .Called .Group}} over {{end}}{{.Path}}{{.At}}</strong>: {{.Text}}</li>
{{end}}{{range .Short.Grouped}}<li class="v-grouped">{{.}}</li>
{{end}}</ul></section>
{{end}}<details class="context"><summary>How it was measured: machine, lab, servers{{if .S.Scale}}, scale {{.S.Scale}}{{end}}{{if .S.Seed}}, shuffle seed {{.S.Seed}}{{end}}{{with .S.Partial}}, {{.State}}{{end}}</summary>
<table class="context"><tbody>
{{range .Context}}<tr><td>{{.K}}</td><td>{{.V}}</td></tr>
{{end}}</tbody></table></details>
{{range .Groups}}
<h2 id="{{.ID}}">{{or .Heading .Name}}</h2>
{{if .Conditions}}<p class="conditions"><strong>{{.Conditions}}</strong></p>
{{end}}<div class="plots">
{{range .Plots}}{{.}}{{end}}</div>
{{range .Tables}}<h3>{{.Title}}</h3>
<table><thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{range .Footer}}<p class="sub">{{.}}</p>
{{end}}{{end}}{{end}}
{{if .S.Notes}}<h2>Notes</h2>
<ul class="notes">{{range .S.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p class="sub">{{.Legend}}</p>
</body>
</html>
`))

// shorten cuts s to n characters, marking the cut.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
