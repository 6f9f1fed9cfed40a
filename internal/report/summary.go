// Package report turns raw samples into the figures v6lab publishes: the
// per-cell summary (run means, confidence interval, percentiles, completion)
// and the comparison of every path with the baseline, rendered as
// summary.json, text tables in the study's shapes, and CSV. Everything is
// computed from samples.jsonl alone, so a result directory can always be
// re-rendered.
//
// It imports only result, stats and path: it never measures.
package report

import (
	"slices"
	"v6lab/internal/sock/path"

	"cmp"
	"fmt"
	"maps"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// SummaryVersion is written in summary.json.
// Version 2: nearest-rank percentiles, paired differences and Holm
// adjustment, Wilson completion intervals, intervals bounded at zero.
// Version 3: a split run's segment, and a merge's per-segment figures.
const SummaryVersion = 3

// Summary is the content of summary.json.
type Summary struct {
	Version     int          `json:"summary_version"`
	Name        string       `json:"name"`
	Created     time.Time    `json:"created"`
	Target      string       `json:"target"`
	Baseline    string       `json:"baseline"`
	Cells       []Cell       `json:"cells"`
	Comparisons []Comparison `json:"comparisons"`
	Notes       []string     `json:"notes,omitempty"`
	// Partial is set when the result holds fewer finished runs than its
	// experiment planned (it was stopped: Ctrl-C, a kill), saying how
	// many and how to go on.
	Partial *Partial `json:"partial,omitempty"`
	// LeftOutRuns counts the counted runs (not warm-up) left out of the
	// figures: their wire did not carry what the path claims, they could
	// not be done, or were interrupted (Notes says which and why).
	LeftOutRuns int `json:"left_out_runs,omitempty"`
	// Adjustment says how p_paired_holm was adjusted: over how many
	// comparisons (time and throughput together).
	Adjustment string `json:"p_adjustment,omitempty"`
	// SampleEvery, above 1, is how few of the samples have a row in the
	// samples file (one of every SampleEvery per run); every figure is
	// still of every sample, from the runs' totals.
	SampleEvery int `json:"sample_every,omitempty"`
	// Scale is the --scale factor the experiment ran at (absent: 1).
	Scale float64 `json:"scale,omitempty"`
	// Seed is the seed of a shuffled order of paths (absent: interleaved).
	Seed int64 `json:"seed,omitempty"`
	// Engines says, per cell group that records one (its params), which
	// connection engine its probes ran on: http's evloop, go-dial or go.
	Engines map[string]string `json:"engines,omitempty"`
	// Dialers says, per cell group that names one (dialer: go), who raced
	// the families on its dual path.
	Dialers map[string]string `json:"dialers,omitempty"`
	// HTTPVersions says, per cell group that names one (http_version),
	// the HTTP version it spoke (versions.go).
	HTTPVersions map[string]string `json:"http_versions,omitempty"`
	// HTTPCleartext names the cell groups of HTTP/1.1 that ran without TLS
	// (their handshake is TCP's alone).
	HTTPCleartext []string `json:"http_cleartext,omitempty"`
	// HTTPH2C names the cell groups of HTTP/2 that spoke it in the clear
	// (h2c, by prior knowledge): their titles say "(h2c)".
	HTTPH2C []string `json:"http_h2c,omitempty"`
	// IPLiteral names the cell groups whose URL's host is an IP literal:
	// nothing was looked up, their wire time starts at the connection's
	// first packet.
	IPLiteral []string `json:"ip_literal,omitempty"`
	// Machine says what it ran on: tool version, host, kernel, CPUs.
	Machine map[string]string `json:"machine,omitempty"`
	// Lab and Servers are the header's, for the reader of the report.
	Lab     map[string]string `json:"lab,omitempty"`
	Servers map[string]string `json:"servers,omitempty"`
	// ServerRoles are the header's (result.Header.ServerRoles): what
	// compare pairs servers by.
	ServerRoles map[string][]string `json:"server_roles,omitempty"`
	// Segment is the share of users this result holds (a segment of a
	// split run); Segments, in a merged result, each segment's own
	// figures beside the pooled ones.
	Segment  *result.Segment  `json:"segment,omitempty"`
	Segments []SegmentFigures `json:"segments,omitempty"`
	// PMTU is a path MTU run's table (pmtu.go), nil for other runs.
	PMTU *PMTU `json:"pmtu,omitempty"`
	// Conditions are each cell group's own conditions, as its runs'
	// records give them (loss, IPv6 loss, delay, path MTU settings, the
	// background's level), without the runs' counts (conditions.go).
	Conditions map[string][]string `json:"conditions,omitempty"`
	// labelled names the cell groups named otherwise than their protocol
	// (a label, https): In short names them (namedInShort).
	labelled []string
	// groupProto is each cell group's protocol as its spec names it, and
	// plainSpec the groups whose spec asks for no TLS (no tls, no https
	// url): compare's words for a group that names no http_version.
	groupProto map[string]string
	// groupDuration is each cell group's sustained duration as its spec
	// names it ("" or absent: one transaction a user a run), for compare.
	groupDuration map[string]string
	plainSpec     []string
}

// Partial says how much of a stopped experiment's plan a result holds:
// its finished runs (an interrupted one is not) of the runs planned, and
// the command that does the rest. Of a result a running v6lab still
// writes (Writing: its samples file's lock is held), it says how far
// that process is, and there is nothing to resume.
type Partial struct {
	RunsDone    int    `json:"runs_done"`
	RunsPlanned int    `json:"runs_planned"`
	Resume      string `json:"resume,omitempty"`
	Writing     bool   `json:"writing,omitempty"`
	WriterPID   int    `json:"writer_pid,omitempty"`
}

// State names it in a few words, as report.html's collapsed heading
// does: "partial", or "still being written" for a result a running
// v6lab writes (Line says who).
func (p *Partial) State() string {
	if p.Writing {
		return "still being written"
	}
	return "partial"
}

// Line is how the reports say it.
func (p *Partial) Line() string {
	if p.Writing {
		return fmt.Sprintf("still being written by %s: figures so far, %s", result.WriterName(p.WriterPID), stats.CountOf(p.RunsDone, p.RunsPlanned, "run"))
	}
	line := fmt.Sprintf("partial: %s; resume with `%s`", stats.CountOf(p.RunsDone, p.RunsPlanned, "run"), p.Resume)
	if p.Resume == mergedResume {
		line += " on each segment that did not finish, then `v6lab merge` again"
	}
	return line
}

// mergedResume is how a merged result that misses runs is completed.
const mergedResume = "v6lab run --resume SEGMENT_DIR"

// resumeHint is the command that resumes the result in dir ("DIR" when
// it is not known); a merge is completed by resuming its segments.
func resumeHint(dir string, merged bool) string {
	if merged {
		return mergedResume
	}
	return "v6lab run --resume " + cmpOr(dir, "DIR")
}

// Cell summarizes one protocol × path × connection count over its counted runs.
type Cell struct {
	Protocol string `json:"protocol"`
	Path     string `json:"path"`
	Conns    int    `json:"conns"`
	// Streams, above 1, is how many transactions each user ran at once on
	// its connection (its group's streams, as h2load's -m): each
	// transaction's time is under that load (absent: one at a time).
	Streams int `json:"streams,omitempty"`
	// Runs are the per-run mean response times (ms) of counted runs, in
	// run order; RunIndex gives each one's run number.
	Runs       []float64   `json:"runs"`
	RunIndex   []int       `json:"run_index"`
	WarmupRuns []float64   `json:"warmup_runs,omitempty"`
	MeanMS     *float64    `json:"mean_ms"`
	CI95MS     *[2]float64 `json:"ci95_ms"`
	P50MS      *float64    `json:"p50_ms"`
	P90MS      *float64    `json:"p90_ms"`
	P99MS      *float64    `json:"p99_ms"`
	P999MS     *float64    `json:"p999_ms"`
	// CDFMS are the response times (ms) at 0, 1, …, 100 percent of the
	// pooled counted transactions: the latency distribution to plot.
	CDFMS []float64 `json:"cdf_ms,omitempty"`
	// Completed and Failed count transactions of counted runs.
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// CompletionRate is Completed / (Completed + Failed);
	// CompletionCI95 its Wilson score interval.
	CompletionRate *float64    `json:"completion_rate"`
	CompletionCI95 *[2]float64 `json:"completion_ci95,omitempty"`
	// PercentileN is how many transactions the pooled percentiles rest
	// on; ThinPercentiles lists those it is too few for (p99 needs 100,
	// p99.9 needs 1000: stats.MinSamples).
	PercentileN     int      `json:"percentile_n"`
	ThinPercentiles []string `json:"thin_percentiles,omitempty"`
	// FewRuns: fewer than MinRuns counted runs, so the interval of the
	// mean says little.
	FewRuns bool `json:"few_runs,omitempty"`
	// MedianMS is the median of the run means (nearest rank): beside the
	// mean, it shows when one run pulls the mean.
	MedianMS *float64 `json:"median_ms"`
	// OutlierRuns are the run numbers whose mean lies beyond Tukey's far
	// fences of the others (stats.Outliers): the runs disagree wildly.
	OutlierRuns []int `json:"outlier_runs,omitempty"`
	// Failures counts failed transactions by kind.
	Failures map[string]int `json:"failures,omitempty"`
	// FirstError is one failure message, as an example for the reader.
	FirstError string `json:"first_error,omitempty"`
	// RatePerS is completed transactions per second of run time.
	RatePerS *float64 `json:"rate_per_s"`
	// Metrics summarize a transport test's figures (throughput_mbps,
	// loss_pct, …): the mean over counted runs of each run's mean, with
	// its 95% CI.
	Metrics map[string]*MetricStat `json:"metrics,omitempty"`
	// IntervalMbps is a transport test's throughput in each reporting
	// interval, averaged over the counted trials that had it; IntervalEndS
	// is when each interval ended (mean seconds from the trial's start).
	IntervalMbps []float64 `json:"interval_mbps,omitempty"`
	IntervalEndS []float64 `json:"interval_end_s,omitempty"`
	// Background is the background traffic during the counted runs, when
	// the cell had some.
	Background *CellBackground `json:"background,omitempty"`
	// Loss is what the loss the cell ran at dropped over its counted
	// runs (loss.go); nil for a cell that ran at none.
	Loss *CellLoss `json:"loss,omitempty"`
	// SelfCheck is the client's and the host's load during the counted
	// runs, and whether either was saturated (selfcheck.go).
	SelfCheck *SelfCheck `json:"self_check,omitempty"`
	// Negotiated counts the completed transactions of counted runs by the
	// protocol they spoke (http/1.1, h2, h2c, h3), for cell groups that
	// name their HTTP version.
	Negotiated map[string]int `json:"negotiated,omitempty"`
	// Conn counts the completed transactions of counted runs by what
	// their connection did: TLS, kept, resumed, 0-RTT (connmodel.go).
	Conn *ConnFacts `json:"connection,omitempty"`
	// Winners counts the dual path's completed transactions of counted
	// runs by the family and transport that won its race (Winner:
	// ipv6/quic, ipv6/tcp, ipv4/quic, ipv4/tcp).
	Winners map[string]int `json:"winners,omitempty"`
	// WhatIf is a dual cell's timer what-if: its races replayed at
	// attempt delays of 0 to 500 ms (whatifs.go).
	WhatIf *WhatIf `json:"what_if,omitempty"`
	// NA gives the reason for every null figure above.
	NA map[string]string `json:"na,omitempty"`
}

// CellBackground is a cell's background traffic: its congestion level and
// the mean over counted runs of the rates (Mbit/s) its flows offered, sent
// and got delivered, in total and per family and protocol ("ipv4 tcp").
type CellBackground struct {
	Level  string                      `json:"level"`
	Runs   int                         `json:"runs"`
	Total  BackgroundRates             `json:"total"`
	Groups map[string]*BackgroundRates `json:"groups"`
}

// BackgroundRates are mean rates in Mbit/s.
type BackgroundRates struct {
	OfferedMbps   float64 `json:"offered_mbps"`
	SentMbps      float64 `json:"sent_mbps"`
	DeliveredMbps float64 `json:"delivered_mbps"`
}

func (r *BackgroundRates) add(o, s, d float64) {
	r.OfferedMbps += o
	r.SentMbps += s
	r.DeliveredMbps += d
}

func (r *BackgroundRates) scale(f float64) {
	r.OfferedMbps *= f
	r.SentMbps *= f
	r.DeliveredMbps *= f
}

// addBackground adds one counted run's background to its cell.
func addBackground(c *Cell, bg *result.Background) {
	if c.Background == nil {
		c.Background = &CellBackground{Level: bg.Level, Groups: map[string]*BackgroundRates{}}
	}
	b := c.Background
	b.Runs++
	for _, f := range bg.Flows {
		g := b.Groups[f.Path+" "+f.Proto]
		if g == nil {
			g = &BackgroundRates{}
			b.Groups[f.Path+" "+f.Proto] = g
		}
		g.add(f.OfferedMbps, f.SentMbps, f.DeliveredMbps)
		b.Total.add(f.OfferedMbps, f.SentMbps, f.DeliveredMbps)
	}
}

// finishBackground turns the sums over runs into means.
func finishBackground(b *CellBackground) {
	if b == nil || b.Runs == 0 {
		return
	}
	f := 1 / float64(b.Runs)
	b.Total.scale(f)
	for _, g := range b.Groups {
		g.scale(f)
	}
}

// MetricStat is one transport figure of a cell over its counted runs.
type MetricStat struct {
	N int `json:"n"`
	// Samples is how many completed transactions of counted runs had
	// the figure (a kept connection's have no wire_ms, for instance).
	Samples int         `json:"samples,omitempty"`
	Mean    float64     `json:"mean"`
	CI95    *[2]float64 `json:"ci95,omitempty"`
	// Runs are the per-run means the figure is computed from, in run
	// order; RunIndex gives each one's run number (a run whose samples
	// all failed has none).
	Runs     []float64 `json:"runs,omitempty"`
	RunIndex []int     `json:"run_index,omitempty"`
}

// Comparison sets one path against the baseline at one protocol and
// connection count.
type Comparison struct {
	Protocol     string            `json:"protocol"`
	Conns        int               `json:"conns"`
	Path         string            `json:"path"`
	Baseline     string            `json:"baseline"`
	DiffMS       *float64          `json:"diff_ms"`
	PctIncrease  *float64          `json:"pct_increase"`
	CI95DiffMS   *[2]float64       `json:"ci95_diff_ms"`
	WelchDF      *float64          `json:"welch_df"`
	PWelch       *float64          `json:"p_welch"`
	Confidence   *float64          `json:"confidence"`
	PPaired      *float64          `json:"p_paired"`
	PMannWhitney *float64          `json:"p_mann_whitney"`
	NA           map[string]string `json:"na,omitempty"`
	// Throughput sets a transport cell's throughput against the
	// baseline's: of a trial bound by time rather than by an amount of
	// data, the transfer time above says nothing.
	Throughput *MetricComparison `json:"throughput,omitempty"`
	// Wire sets the paths' wire times (WireMetric) side by side, when the
	// kernel stamped both.
	Wire *MetricComparison `json:"wire,omitempty"`
	// Pairs is how many runs the paired test matched (run i of both
	// paths); PairedDiffMS is the mean of their differences, with its 95%
	// t interval, and PPairedHolm the paired p-value after Holm's
	// adjustment over every comparison of the summary.
	Pairs            int         `json:"pairs"`
	PairedDiffMS     *float64    `json:"paired_diff_ms"`
	CI95PairedDiffMS *[2]float64 `json:"ci95_paired_diff_ms"`
	PPairedHolm      *float64    `json:"p_paired_holm"`
	// ClientTurnsDiffMS is the path's mean client turns less the
	// baseline's, where both cells have them, and ClientTurnsNetMS is
	// DiffMS net of it; ClientTurnsFlagged says they differ by TurnPart
	// or more of DiffMS, so the difference is not the path's alone
	// (markClientTurns).
	ClientTurnsDiffMS  *float64 `json:"client_turns_diff_ms,omitempty"`
	ClientTurnsNetMS   *float64 `json:"client_turns_net_ms,omitempty"`
	ClientTurnsFlagged bool     `json:"client_turns_flagged,omitempty"`
}

// MetricComparison sets one figure of a path's runs against the
// baseline's: Diff = path - baseline, in the figure's unit; PctChange is
// Diff over the baseline's mean in %.
type MetricComparison struct {
	Metric       string            `json:"metric"`
	Diff         *float64          `json:"diff"`
	PctChange    *float64          `json:"pct_change"`
	CI95Diff     *[2]float64       `json:"ci95_diff"`
	Confidence   *float64          `json:"confidence"`
	PPaired      *float64          `json:"p_paired"`
	PMannWhitney *float64          `json:"p_mann_whitney"`
	NA           map[string]string `json:"na,omitempty"`
	// Pairs, PairedDiff, CI95PairedDiff and PPairedHolm are as in
	// Comparison, in the figure's unit.
	Pairs          int         `json:"pairs"`
	PairedDiff     *float64    `json:"paired_diff"`
	CI95PairedDiff *[2]float64 `json:"ci95_paired_diff"`
	PPairedHolm    *float64    `json:"p_paired_holm"`
}

// MinRuns is the fewest counted runs whose interval of the mean a report
// presents without a warning.
const MinRuns = 5

// Alpha is the significance level of the reports' marks.
const Alpha = 0.05

// Resolution is the finest time difference v6lab's clock resolves (ms):
// a baseline mean below it makes a % increase meaningless.
const Resolution = 0.001

type cellKey struct {
	proto, path string
	conns       int
}

type runKey struct {
	cell cellKey
	run  int
}

// WireMetric is the cells' wire time (ms): each completed sample's
// wire_ns, from its DNS query leaving to its last bytes arriving, by the
// kernel's timestamps; summarized as every metric is (mean of run means).
const WireMetric = "wire_ms"

// ClientTurnMetric is the client's own time inside the wire time (ms):
// each completed sample's client_turn_ns, from a reply's arrival to the
// next request's send, summed over its turns (docs/metrics.md).
const ClientTurnMetric = "client_turn_ms"

func ptr[T any](v T) *T { return &v }

func na(m *map[string]string, field, why string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[field] = why
}

const ms = float64(time.Millisecond)

// ClientShare is the share of a cell's wire time its client's turns may
// take before the summary says so: beyond it the figure is the client's
// own turnaround as much as the network's time.
const ClientShare = 0.2

// clientTurnNote names the cells whose client turns are more than
// ClientShare of their wire time ("" if none). It says the paths'
// differences stand only where no path's turns differ from the
// baseline's by TurnPart or more of their difference (gaps, turnGaps).
func clientTurnNote(cells []Cell, gaps []turnGap, target string, shaped bool) string {
	type share struct {
		cell string
		pct  float64
	}
	var over []share
	for _, c := range cells {
		t, w := c.Metrics[ClientTurnMetric], c.Metrics[WireMetric]
		if t == nil || w == nil || w.Mean <= 0 || t.Mean <= ClientShare*w.Mean || c.Minority(WireMetric) {
			continue
		}
		over = append(over, share{fmt.Sprintf("%s/%s/%d", c.Protocol, c.Path, c.Conns), 100 * t.Mean / w.Mean})
	}
	if len(over) == 0 {
		return ""
	}
	// The largest few say it; a list of every cell would be read by none.
	slices.SortStableFunc(over, func(a, b share) int { return cmp.Compare(b.pct, a.pct) })
	var named []string
	for _, o := range over[:min(len(over), 3)] {
		named = append(named, fmt.Sprintf("%s %.0f%%", o.cell, o.pct))
	}
	more := ""
	if len(over) > 3 {
		more = " and " + stats.Count(len(over)-3, "more cell")
	}
	wait, advice := clientTurnAdvice(target, shaped)
	alike := fmt.Sprintf("paths pay it nearly alike: each path's turns differ from the baseline's by less than %.0f%% of its difference, so each difference stands, net of turns at least %.0f%% of its size", 100*TurnPart, 100*(1-TurnPart))
	if len(gaps) > 0 {
		alike = fmt.Sprintf("paths do not all pay it alike: in %s their turns differ by %.0f%% or more of the difference (the next note)", stats.Count(len(gaps), "comparison"), 100*TurnPart)
	}
	return fmt.Sprintf("client turns are more than %.0f%% of the wire time in %s%s: there the figures are the client's own turnaround (its work, and %s) as much as the network's; %s. To shrink it, %s; docs/metrics.md",
		100*ClientShare, strings.Join(named, ", "), more, wait, alike, advice)
}

// clientTurnAdvice says what the client waits for besides its own work,
// and how to shrink its turns, fitted to where the result ran: only a lab
// has routers and links to give a rate; real target hosts have neither
// (trial6 F5).
func clientTurnAdvice(target string, shaped bool) (wait, advice string) {
	switch result.Where(target) {
	case result.Lab:
		rate := "give the lab's links a rate (--rate 1G) or "
		if shaped {
			rate = "" // they have one
		}
		return "on one host its wait for CPUs the routers and the server share", rate + "run fewer connections per client host (--segment, docs/distributed.md)"
	case result.Loopback:
		return "its wait for CPUs the servers on the same host share", "run fewer connections (--conns), or measure servers on another host (where: hosts, docs/experiments.md)"
	default:
		return "its wait for the client host's CPUs", "run fewer connections per client host (--conns), or from more client hosts (--segment, docs/distributed.md)"
	}
}

// adjust sets every comparison's Holm-adjusted paired p-value, the time
// and throughput comparisons of the summary together as one family, and
// says so.
func adjust(cmps []Comparison) string {
	var ps []float64
	var into []**float64
	for i := range cmps {
		c := &cmps[i]
		if c.PPaired != nil {
			ps, into = append(ps, *c.PPaired), append(into, &c.PPairedHolm)
		}
		if t := c.Throughput; t != nil && t.PPaired != nil {
			ps, into = append(ps, *t.PPaired), append(into, &t.PPairedHolm)
		}
	}
	for i, p := range stats.Holm(ps) {
		*into[i] = ptr(p)
	}
	if len(ps) == 0 {
		return ""
	}
	if len(ps) == 1 {
		return "Holm over the 1 paired comparison of this summary: none to adjust"
	}
	return fmt.Sprintf("Holm over the %d paired comparisons of this summary", len(ps))
}

// pathRank orders paths as the study does: ipv4, ipv6, 6in4, then others.
func pathRank(p string) int { return path.Path(p).Kind().Rank }

// naturalLess orders names with numbers in them by the numbers' values,
// so that ftp-5879824 comes before ftp-14269432.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digits is the length of s's leading run of ASCII digits.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

func sortCells(cs []Cell, order map[string]int) {
	rank := func(p string) int {
		if r, ok := order[p]; ok {
			return r
		}
		return len(order)
	}
	sort.Slice(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Protocol != b.Protocol {
			if ra, rb := rank(a.Protocol), rank(b.Protocol); ra != rb {
				return ra < rb
			}
			return naturalLess(a.Protocol, b.Protocol)
		}
		if pathRank(a.Path) != pathRank(b.Path) {
			return pathRank(a.Path) < pathRank(b.Path)
		}
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Conns < b.Conns
	})
}

func compare(cells []Cell, baseline string) []Comparison {
	base := map[cellKey]*Cell{}
	for i := range cells {
		c := &cells[i]
		if c.Path == baseline {
			base[cellKey{c.Protocol, "", c.Conns}] = c
		}
	}
	var out []Comparison
	for i := range cells {
		c := &cells[i]
		b := base[cellKey{c.Protocol, "", c.Conns}]
		if c.Path == baseline || b == nil {
			continue
		}
		out = append(out, Compare(b, c))
		notYet(&out[len(out)-1], b, c)
	}
	return out
}

// notYet says why a comparison has no values where one of its cells has
// no counted run yet (noCountedRun): a partial result's path that has
// run only its warm-up is not a path with nothing to compare.
func notYet(cmp *Comparison, cells ...*Cell) {
	for _, c := range cells {
		if why := c.NA["mean_ms"]; strings.HasPrefix(why, "no counted run yet") {
			for f, v := range cmp.NA {
				// Every figure the missing runs leave out says so alike,
				// the difference itself too (trial12: two reasons in a column).
				if v == "no values" || v == noRunMeans || v == noPairs {
					cmp.NA[f] = c.Path + " has " + why
				}
			}
			return
		}
	}
}

// Compare sets cell c against baseline cell b.
func Compare(b, c *Cell) Comparison {
	cmp := Comparison{Protocol: c.Protocol, Conns: c.Conns, Path: c.Path, Baseline: b.Path}
	t := testRuns(b.Runs, b.RunIndex, c.Runs, c.RunIndex)
	cmp.DiffMS, cmp.PctIncrease, cmp.CI95DiffMS, cmp.WelchDF, cmp.PWelch, cmp.Confidence, cmp.PPaired, cmp.PMannWhitney =
		t.diff, t.pct, t.ci, t.df, t.p, t.confidence, t.paired, t.mw
	cmp.Pairs, cmp.PairedDiffMS, cmp.CI95PairedDiffMS = t.pairs, t.pairedDiff, t.pairedCI
	// A % of a baseline below the clock's resolution, or not above its
	// own uncertainty, would be a ratio of noise (5e8 % of 2 ns).
	if cmp.PctIncrease != nil && b.MeanMS != nil {
		if why := pctNA(*b.MeanMS, b.CI95MS); why != "" {
			cmp.PctIncrease = nil
			na(&cmp.NA, "pct_increase", why)
		}
	}
	for f, why := range t.na {
		na(&cmp.NA, timeFields[f], why)
	}
	cmp.Throughput = compareMetric("throughput_mbps", b, c)
	cmp.Wire = compareMetric(WireMetric, b, c)
	return cmp
}

// pctNAResolution is pctNA's reason for a time below the clock's resolution.
const pctNAResolution = "baseline mean below the clock's resolution (1 µs)"

// pctNA says why a % of a baseline with this mean and 95% CI would be
// noise, saying the rule it breaks; "" when it is not.
func pctNA(mean float64, ci *[2]float64) string {
	m := math.Abs(mean)
	switch {
	case m < Resolution:
		return pctNAResolution
	case ci != nil && m <= (ci[1]-ci[0])/2:
		return "baseline mean not above its 95% CI half-width"
	}
	return ""
}

// compareMetric sets figure k of c's runs against b's (nil: one lacks it).
func compareMetric(k string, b, c *Cell) *MetricComparison {
	bm, cm := b.Metrics[k], c.Metrics[k]
	if bm == nil || cm == nil || b.Minority(k) || c.Minority(k) {
		return nil
	}
	t := testRuns(bm.Runs, bm.RunIndex, cm.Runs, cm.RunIndex)
	mc := &MetricComparison{Metric: k, Diff: t.diff, PctChange: t.pct, CI95Diff: t.ci, Confidence: t.confidence, PPaired: t.paired, PMannWhitney: t.mw,
		Pairs: t.pairs, PairedDiff: t.pairedDiff, CI95PairedDiff: t.pairedCI}
	for f, why := range t.na {
		if name, ok := metricFields[f]; ok {
			na(&mc.NA, name, why)
		}
	}
	// Every figure's % obeys the response time's rule: not of a baseline
	// whose mean is not above its 95% CI half-width (a ratio of noise);
	// the wire time, a time, nor of one below the clock's resolution.
	if mc.PctChange != nil {
		why := pctNA(bm.Mean, bm.CI95)
		if k != WireMetric && why == pctNAResolution {
			why = ""
		}
		if why != "" {
			mc.PctChange = nil
			na(&mc.NA, "pct_change", why)
		}
	}
	return mc
}

// timeFields and metricFields name a runTest's figures in a Comparison's
// and a MetricComparison's na (a MetricComparison has no df or p).
var (
	timeFields = map[string]string{"diff": "diff_ms", "pct": "pct_increase", "ci": "ci95_diff_ms", "df": "welch_df",
		"p": "p_welch", "confidence": "confidence", "paired": "p_paired", "mw": "p_mann_whitney",
		"paired_diff": "paired_diff_ms", "paired_ci": "ci95_paired_diff_ms"}
	metricFields = map[string]string{"diff": "diff", "pct": "pct_change", "ci": "ci95_diff", "confidence": "confidence",
		"paired": "p_paired", "mw": "p_mann_whitney", "paired_diff": "paired_diff", "paired_ci": "ci95_paired_diff"}
)

// runTest is two paths' per-run values set side by side: Welch's t, the
// paired t over the runs both have, and Mann-Whitney; na says why a
// figure (by its short name) is missing.
type runTest struct {
	diff, pct, df, p, confidence, paired, mw *float64
	ci                                       *[2]float64
	pairs                                    int
	pairedDiff                               *float64
	pairedCI                                 *[2]float64
	na                                       map[string]string
}

// The generic reasons a comparison's figures are missing when a path has
// no runs (notYet says which path, and why, where it knows).
const (
	noRunMeans = "a path has no run means"
	noPairs    = "no runs of both paths to pair"
)

func testRuns(bRuns []float64, bIdx []int, cRuns []float64, cIdx []int) runTest {
	var t runTest
	w := stats.Welch(bRuns, cRuns)
	if len(bRuns) > 0 && len(cRuns) > 0 {
		t.diff = ptr(w.Diff)
	} else {
		na(&t.na, "diff", noRunMeans)
	}
	if w.PctNA == "" {
		t.pct = ptr(w.PctIncrease)
	} else {
		na(&t.na, "pct", w.PctNA)
	}
	if w.NA == "" {
		t.ci = &w.CI95Diff
		t.df, t.p, t.confidence = ptr(w.DF), ptr(w.P), ptr(w.Confidence)
	} else {
		for _, f := range []string{"ci", "df", "p", "confidence"} {
			na(&t.na, f, w.NA)
		}
	}
	bp, cp := pairRuns(bRuns, bIdx, cRuns, cIdx)
	t.pairs = len(bp)
	p := stats.Paired(bp, cp)
	if len(bp) > 0 && p.PctNA != stats.NotFinite && p.NA != "values too large to compare" {
		t.pairedDiff = ptr(p.Diff)
	} else {
		na(&t.na, "paired_diff", cmp.Or(p.NA, noPairs))
	}
	if p.NA == "" {
		t.paired = ptr(p.P)
		t.pairedCI = &p.CI95Diff
	} else {
		na(&t.na, "paired", p.NA)
		na(&t.na, "paired_ci", p.NA)
	}
	if m := stats.MannWhitney(bRuns, cRuns); m.NA == "" {
		t.mw = ptr(m.P)
	} else {
		na(&t.na, "mw", m.NA)
	}
	return t
}

// pairRuns keeps the runs both paths have, matched by run number: run i
// of one path ran right beside run i of the other.
func pairRuns(bRuns []float64, bIdx []int, cRuns []float64, cIdx []int) ([]float64, []float64) {
	idx := map[int]float64{}
	for i, r := range bIdx {
		idx[r] = bRuns[i]
	}
	var bp, cp []float64
	for i, r := range cIdx {
		if v, ok := idx[r]; ok {
			bp = append(bp, v)
			cp = append(cp, cRuns[i])
		}
	}
	return bp, cp
}

func itoa(n int) string { return strconv.Itoa(n) }

// datapathNotes say, per path, what its datapaths did over its runs
// (result.Wire.Datapath): packets translated each way or tunnelled,
// dropped, and the NAT's drops for want of a port.
func datapathNotes(byPath map[string]map[string]uint64, runs map[string]int) []string {
	var out []string
	for _, k := range path.Kinds {
		c, ok := byPath[string(k.Path)]
		if !ok {
			continue
		}
		var parts []string
		for _, d := range []struct{ name, what string }{{"clat", "CLAT"}, {"plat", "NAT64 (PLAT)"}, {"b4", "B4"}, {"aftr", "AFTR"}} {
			if _, ok := c[d.name+"_dropped"]; !ok {
				continue
			}
			if _, tun := c[d.name+"_encap"]; tun {
				parts = append(parts, fmt.Sprintf("%s %d encapsulated, %d decapsulated, %d dropped%s", d.what, c[d.name+"_encap"], c[d.name+"_decap"], c[d.name+"_dropped"], dropKinds(c, d.name)))
			} else {
				parts = append(parts, fmt.Sprintf("%s %d IPv4 to IPv6, %d IPv6 to IPv4, %d dropped%s", d.what, c[d.name+"_4to6"], c[d.name+"_6to4"], c[d.name+"_dropped"], dropKinds(c, d.name)))
			}
		}
		if n, ok := c["nat_no_port"]; ok {
			parts = append(parts, fmt.Sprintf("its NAT dropped %s of new connections for want of a free port", stats.Count(n, "packet")))
		}
		out = append(out, fmt.Sprintf("datapaths of %s over its %s: %s", k.Path, stats.Count(runs[string(k.Path)], "run"), strings.Join(parts, "; ")))
	}
	return out
}

// DropKinds say what each kind of a datapath's drops (a run record's
// NAME_dropped_KIND) is.
var DropKinds = map[string]string{
	"unmapped":    "from a source the translator has no mapping for",
	"unsupported": "what it does not translate by design: ICMP other than echo (errors such as the port unreachable a QUIC datagram gets once its socket is closed), IPv6 extension headers, IPv4 options, fragments of ICMP",
	"hoplimit":    "hop limit or TTL run out",
	"zerocsum":    "IPv4 UDP without a checksum",
	"fail":        "the kernel refused the translation",
	"spoofed":     "from a source other than the tunnel's peer",
	"bad":         "IPv4 options, fragments or a malformed inner packet",
	"encap_fail":  "no room to encapsulate (beyond the link's MTU)",
	"decap_fail":  "the kernel refused to decapsulate",
}

// dropKinds says a datapath's drops by kind, " (4 unsupported: …)", ""
// when the runs recorded none by kind (before 2026-11-27, or none).
func dropKinds(c map[string]uint64, name string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(DropKinds)) {
		if n := c[name+"_dropped_"+k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s: %s", n, k, DropKinds[k]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// Minority says whether figure k rests on a minority of the cell's
// completed transactions (a wire time of the new connections among kept
// ones): no figure of the cell's, nor a comparison, is made of it.
func (c *Cell) Minority(k string) bool {
	m := c.Metrics[k]
	return m != nil && m.Samples > 0 && 2*m.Samples < c.Completed
}

// MinorityNA says why figure k of c is n/a when it rests on a minority
// of the cell's completed transactions (Minority), "" when it does not:
// the words every report gives in its place (report.txt's wire mean,
// results.csv's wire_na, summary.json's na).
func (c *Cell) MinorityNA(k string) string {
	if !c.Minority(k) {
		return ""
	}
	what := k
	if k == WireMetric {
		what = "wire time"
	}
	return fmt.Sprintf("%d of %d samples have %s", c.Metrics[k].Samples, c.Completed, what)
}
