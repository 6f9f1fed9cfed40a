package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// PMTU summarizes a path MTU run (a lab run whose run records say what
// each run had of ptb_blackhole, fragments, tcp_mtu_probing and
// mss_clamp: docs/transition.md): per cell group and path, how many
// transactions completed and stalled, the time lost against the same
// application's healthy group, what the kernel settled on, and what the
// impairments dropped.
type PMTU struct {
	Groups []PMTUGroup `json:"groups"`
}

// PMTUGroup is one cell group of a path MTU run.
type PMTUGroup struct {
	Name string `json:"name"`
	// Settings are what its runs had in force ("none": a healthy group),
	// as the run records say.
	Settings string `json:"settings"`
	// Healthy is the group its time lost is measured against: the first
	// healthy group of the same application (PMTUApplication), when there
	// is one and it is not this one.
	Healthy string     `json:"healthy,omitempty"`
	Paths   []PMTUPath `json:"paths"`
}

// PMTUPath is a group's figures over one path at one connection count,
// of its counted runs.
type PMTUPath struct {
	Path  string `json:"path"`
	Conns int    `json:"conns"`
	// N transactions, of which Completed completed and Stalled stalled
	// (err_kind stall).
	N         int `json:"n"`
	Completed int `json:"completed"`
	Stalled   int `json:"stalled"`
	// MeanMS is the mean time of every transaction, a failed one's to its
	// failure (a stall's: its timeout); LostMS is MeanMS less the healthy
	// group's over the same path (nil without one).
	MeanMS float64  `json:"mean_ms"`
	LostMS *float64 `json:"lost_ms,omitempty"`
	// StallMS is the mean time from a stalled transaction's start to the
	// last thing that moved on its connection.
	StallMS *float64 `json:"stall_ms,omitempty"`
	// The means over completed transactions of the segment size the
	// client sent with and the largest it received (the server's MSS),
	// the client's path MTU and its retransmissions; and over DNS
	// transactions, the share answered over TCP and in IP fragments.
	MSS        *float64 `json:"mss,omitempty"`
	RcvMSS     *float64 `json:"rcv_mss,omitempty"`
	PathMTU    *float64 `json:"path_mtu,omitempty"`
	Retrans    *float64 `json:"retrans,omitempty"`
	OverTCP    *float64 `json:"over_tcp,omitempty"`
	Fragmented *float64 `json:"fragmented,omitempty"`
	// Dropped and Passed are the impairments' counts over the counted
	// runs: ICMPv6 Packet Too Big (ptb6), ICMPv4 fragmentation needed
	// (ptb4), IPv6 and IPv4 fragments (frag6, frag4).
	Dropped map[string]uint64 `json:"dropped,omitempty"`
	Passed  map[string]uint64 `json:"passed,omitempty"`
}

// note says what the impairments dropped over the counted runs, in all
// ("" when they dropped nothing, or p is nil).
func (p *PMTU) note() string {
	if p == nil {
		return ""
	}
	sum := map[string]uint64{}
	for _, g := range p.Groups {
		for _, pp := range g.Paths {
			for k, v := range pp.Dropped {
				sum[k] += v
			}
		}
	}
	if sum["ptb6"]+sum["ptb4"]+sum["frag6"]+sum["frag4"] == 0 {
		return ""
	}
	return fmt.Sprintf("path MTU impairments dropped %d ICMPv6 Packet Too Big, %d ICMPv4 fragmentation needed, %s and %s in the counted runs (each group's and path's in the PMTU tables; each run's in its record's links.pmtu)",
		sum["ptb6"], sum["ptb4"], stats.Count(sum["frag6"], "IPv6 fragment"), stats.Count(sum["frag4"], "IPv4 fragment"))
}

// pmtuKinds are the impairments' packet kinds, as run records name them.
var pmtuKinds = []string{"ptb6", "ptb4", "frag6", "frag4"}

// The sample figures the table reads (load's and dns's names).
const (
	pmtuMSS     = "tcp_mss"
	pmtuRcvMSS  = "tcp_rcv_mss"
	pmtuPathMTU = "path_mtu"
	pmtuRetrans = "tcp_retrans"
	pmtuStall   = "stall_ms"
	pmtuDNSTCP  = "dns_tcp"
	pmtuFrags   = "ip_fragments"
)

// pmtuAcc gathers the table's figures run by run, in whatever order runs
// and samples come (a run's samples before its record, or after).
type pmtuAcc struct {
	spec  map[string]map[string]any // each cell group's recorded spec, by name
	order []string                  // the groups in the spec's order
	runs  map[runKey]*pmtuRun
}

// pmtuRun is one run's share.
type pmtuRun struct {
	recorded, counted bool
	settings          string
	dropped, passed   map[string]uint64
	n, ok, stalled    int
	totalMS           float64
	sums, counts      map[string]float64 // the sample figures, completed (and DNS: all)
}

func newPMTUAcc(spec any) *pmtuAcc {
	a := &pmtuAcc{spec: map[string]map[string]any{}, runs: map[runKey]*pmtuRun{}}
	m, _ := spec.(map[string]any)
	cells, _ := m["cells"].([]any)
	for _, c := range cells {
		g, _ := c.(map[string]any)
		name, _ := g["label"].(string)
		if name == "" {
			name, _ = g["protocol"].(string)
		}
		if name != "" {
			a.spec[name] = g
			a.order = append(a.order, name)
		}
	}
	return a
}

func (a *pmtuAcc) run(k runKey) *pmtuRun {
	r := a.runs[k]
	if r == nil {
		r = &pmtuRun{sums: map[string]float64{}, counts: map[string]float64{}}
		a.runs[k] = r
	}
	return r
}

// Run takes a run record: whether it counts, its settings and counts.
func (a *pmtuAcc) Run(rec *result.Run) {
	settings, ok := rec.Links["pmtu_settings"]
	if !ok {
		return
	}
	r := a.run(runKey{cellKey{rec.Protocol, rec.Path, rec.Conns}, rec.Run})
	r.recorded, r.counted, r.settings = true, !rec.Warmup && rec.Err == "", settings
	r.dropped, r.passed = parsePMTUCounts(rec.Links["pmtu"])
}

// parsePMTUCounts reads a run record's "ptb6 dropped N passed N, …".
func parsePMTUCounts(s string) (dropped, passed map[string]uint64) {
	for _, part := range strings.Split(s, ", ") {
		var kind string
		var d, p uint64
		if n, _ := fmt.Sscanf(part, "%s dropped %d passed %d", &kind, &d, &p); n == 3 && slices.Contains(pmtuKinds, kind) {
			if dropped == nil {
				dropped, passed = map[string]uint64{}, map[string]uint64{}
			}
			dropped[kind], passed[kind] = d, p
		}
	}
	return dropped, passed
}

// Sample takes one transaction.
func (a *pmtuAcc) Sample(s *result.Sample) {
	r := a.run(runKey{cellKey{s.Protocol, s.Path, s.Conns}, s.Run})
	r.n++
	r.totalMS += float64(s.TotalNS) / 1e6
	add := func(k string) {
		if v, ok := s.Metrics[k]; ok {
			r.sums[k] += v
			r.counts[k]++
		}
	}
	if s.OK() {
		r.ok++
		for _, k := range []string{pmtuMSS, pmtuRcvMSS, pmtuPathMTU, pmtuRetrans} {
			add(k)
		}
	}
	if s.ErrKind == result.ErrStall {
		r.stalled++
		add(pmtuStall)
	}
	if v, ok := s.Metrics[pmtuDNSTCP]; ok {
		r.sums[pmtuDNSTCP] += v
		r.counts[pmtuDNSTCP]++
		if f := s.Metrics[pmtuFrags]; f > 1 {
			r.sums[pmtuFrags]++
		}
		r.counts[pmtuFrags]++
	}
}

// PMTUApplication is what makes two cell groups the same application for
// the time lost: their recorded spec, but for their names, their run
// settings, their path MTU settings and dns's ways of asking (edns,
// transport, resend), which are mitigations.
func PMTUApplication(g map[string]any) string {
	out := map[string]any{}
	for k, v := range g {
		switch k {
		case "name", "label", "pmtu", "params", "runs", "warmup", "timeout", "pause", "paths", "conns", "duration", "baseline", "edns", "transport", "resend":
		default:
			out[k] = v
		}
	}
	b, _ := json.Marshal(out) // map keys sorted
	return string(b)
}

// Finish makes the summary's PMTU figures (nil: not a path MTU run).
func (a *pmtuAcc) Finish() *PMTU {
	settings := map[string]string{}
	sum := map[cellKey]*pmtuRun{}
	var cells []cellKey
	for k, r := range a.runs {
		if !r.recorded || !r.counted {
			continue
		}
		settings[k.cell.proto] = r.settings
		c := sum[k.cell]
		if c == nil {
			c = &pmtuRun{sums: map[string]float64{}, counts: map[string]float64{}, dropped: map[string]uint64{}, passed: map[string]uint64{}}
			sum[k.cell] = c
			cells = append(cells, k.cell)
		}
		c.n, c.ok, c.stalled, c.totalMS = c.n+r.n, c.ok+r.ok, c.stalled+r.stalled, c.totalMS+r.totalMS
		for m, v := range r.sums {
			c.sums[m] += v
		}
		for m, v := range r.counts {
			c.counts[m] += v
		}
		for kind, v := range r.dropped {
			c.dropped[kind] += v
		}
		for kind, v := range r.passed {
			c.passed[kind] += v
		}
	}
	if len(cells) == 0 {
		return nil
	}
	// Groups in the spec's order (then any other), paths by their rank.
	rank := map[string]int{}
	for i, g := range a.order {
		rank[g] = i
	}
	slices.SortFunc(cells, func(x, y cellKey) int {
		rx, okx := rank[x.proto]
		ry, oky := rank[y.proto]
		switch {
		case okx != oky && okx:
			return -1
		case okx != oky:
			return 1
		case rx != ry:
			return rx - ry
		case x.proto != y.proto:
			return strings.Compare(x.proto, y.proto)
		case pathRank(x.path) != pathRank(y.path):
			return pathRank(x.path) - pathRank(y.path)
		}
		return x.conns - y.conns
	})
	healthy := a.healthy(settings)
	out := &PMTU{}
	byName := map[string]int{}
	for _, ck := range cells {
		i, ok := byName[ck.proto]
		if !ok {
			i = len(out.Groups)
			byName[ck.proto] = i
			out.Groups = append(out.Groups, PMTUGroup{Name: ck.proto, Settings: settings[ck.proto], Healthy: healthy[ck.proto]})
		}
		out.Groups[i].Paths = append(out.Groups[i].Paths, sum[ck].path(ck))
	}
	for gi := range out.Groups {
		g := &out.Groups[gi]
		if g.Healthy == "" {
			continue
		}
		for pi := range g.Paths {
			p := &g.Paths[pi]
			if h := out.find(g.Healthy, p.Path, p.Conns); h != nil && h.N > 0 {
				p.LostMS = ptr(p.MeanMS - h.MeanMS)
			}
		}
	}
	return out
}

// healthy names, for each group, the first healthy group of the same
// application in the spec's order ("" for a healthy group itself, or
// none).
func (a *pmtuAcc) healthy(settings map[string]string) map[string]string {
	first := map[string]string{}
	for _, name := range a.order {
		app := PMTUApplication(a.spec[name])
		if _, seen := first[app]; !seen && settings[name] == "none" {
			first[app] = name
		}
	}
	out := map[string]string{}
	for name := range settings {
		if h := first[PMTUApplication(a.spec[name])]; h != name {
			out[name] = h
		}
	}
	return out
}

func (s *PMTU) find(group, p string, conns int) *PMTUPath {
	for _, g := range s.Groups {
		if g.Name != group {
			continue
		}
		for i := range g.Paths {
			if g.Paths[i].Path == p && g.Paths[i].Conns == conns {
				return &g.Paths[i]
			}
		}
	}
	return nil
}

// path makes one path's figures of a cell's summed runs.
func (c *pmtuRun) path(ck cellKey) PMTUPath {
	p := PMTUPath{Path: ck.path, Conns: ck.conns, N: c.n, Completed: c.ok, Stalled: c.stalled}
	if c.n > 0 {
		p.MeanMS = c.totalMS / float64(c.n)
	}
	mean := func(k string) *float64 {
		if c.counts[k] == 0 {
			return nil
		}
		return ptr(c.sums[k] / c.counts[k])
	}
	p.StallMS, p.MSS, p.RcvMSS, p.PathMTU, p.Retrans = mean(pmtuStall), mean(pmtuMSS), mean(pmtuRcvMSS), mean(pmtuPathMTU), mean(pmtuRetrans)
	p.OverTCP, p.Fragmented = mean(pmtuDNSTCP), mean(pmtuFrags)
	if len(c.dropped)+len(c.passed) > 0 {
		p.Dropped, p.Passed = c.dropped, c.passed
	}
	return p
}

// PMTUTables are report.txt's path MTU tables: per group, each path's
// share completed and time lost; then how each path's transactions ended
// and what the kernel and the impairments did.
func PMTUTables(s *Summary) []section {
	if s.PMTU == nil {
		return nil
	}
	var paths []string
	for _, g := range s.PMTU.Groups {
		for _, p := range g.Paths {
			if !slices.Contains(paths, p.Path) {
				paths = append(paths, p.Path)
			}
		}
	}
	slices.SortFunc(paths, func(a, b string) int { return pathRank(a) - pathRank(b) })
	share := section{Title: "PMTU: per path, the share of transactions completed and the time lost per transaction (s) against the application's healthy group; a stall lasts until the timeout",
		Head: append([]string{"group", "pmtu", "against"}, paths...)}
	detail := section{Title: "PMTU: how each path's transactions ended: stalls and when they began, what the client's kernel settled on, DNS answers over TCP and in fragments, and what the impairments dropped (dropped/passed, ICMPv6 Packet Too Big · ICMPv4 fragmentation needed · IPv6 · IPv4 fragments)",
		Head: []string{"group", "path", "conns", "n", "completed", "stalled", "stall after ms", "mean ms", "lost ms", "MSS out", "MSS in", "path MTU", "retrans", "DNS TCP", "DNS frags", "PTB v6", "PTB v4", "frag v6", "frag v4"}}
	opt := func(v *float64, format string) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf(format, *v)
	}
	for _, g := range s.PMTU.Groups {
		row := []string{g.Name, g.Settings, cmpOr(g.Healthy, "-")}
		for _, p := range paths {
			cell := "-"
			for _, gp := range g.Paths {
				if gp.Path != p {
					continue
				}
				cell = fmt.Sprintf("%.0f%%", 100*float64(gp.Completed)/float64(max(gp.N, 1)))
				if gp.LostMS != nil {
					cell += " " + signed(ptr(*gp.LostMS/1000), 2)
				}
				if gp.Stalled > 0 {
					cell += fmt.Sprintf(" (%d stalled)", gp.Stalled)
				}
			}
			row = append(row, cell)
		}
		share.Rows = append(share.Rows, row)
		for _, p := range g.Paths {
			counts := func(kind string) string {
				if p.Dropped == nil {
					return "-"
				}
				return fmt.Sprintf("%d/%d", p.Dropped[kind], p.Passed[kind])
			}
			detail.Rows = append(detail.Rows, []string{g.Name, p.Path, fmt.Sprint(p.Conns), fmt.Sprint(p.N), fmt.Sprint(p.Completed), fmt.Sprint(p.Stalled),
				opt(p.StallMS, "%.0f"), fmt.Sprintf("%.1f", p.MeanMS), signed(p.LostMS, 1), opt(p.MSS, "%.0f"), rcvMSS(p), opt(p.PathMTU, "%.0f"), opt(p.Retrans, "%.1f"),
				opt(pctOf(p.OverTCP), "%.0f%%"), opt(pctOf(p.Fragmented), "%.0f%%"), counts("ptb6"), counts("ptb4"), counts("frag6"), counts("frag4")})
		}
	}
	if m := s.Lab["r1_r2_mtu"]; m != "" {
		share.Footer = append(share.Footer, "the link between the routers carries "+m+" bytes; "+s.Lab["pmtu"])
	}
	share.Footer = append(share.Footer, "pmtu: what the group's runs had in force (the lab's own settings too; none: healthy); against: the first healthy group of the same application (the same protocol and options but for dns's edns, transport and resend), whose mean per transaction the time lost is measured from",
		"a failed transaction counts with the time it took to fail; docs/transition.md explains each row and what an operator should fix")
	return []section{share, detail}
}

func pctOf(v *float64) *float64 {
	if v == nil {
		return nil
	}
	return ptr(100 * *v)
}

// signed prints v with its sign and prec decimals, a value that rounds
// to zero as +0 ("-" for nil).
func signed(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	s := strconv.FormatFloat(*v, 'f', prec, 64)
	if strings.Trim(s, "-0.") == "" {
		return "+" + strings.TrimPrefix(s, "-")
	}
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

// rcvMSS is a path's MSS in: its mean, or "none" where the connections
// were measured (an MSS out) and none received a segment of data.
func rcvMSS(p PMTUPath) string {
	switch {
	case p.RcvMSS != nil:
		return fmt.Sprintf("%.0f", *p.RcvMSS)
	case p.MSS != nil:
		return "none"
	}
	return "-"
}
