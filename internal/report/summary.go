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
	"v6lab/internal/sock/path"

	"cmp"
	"fmt"
	"math"
	"slices"
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
	// LeftOutRuns counts the counted runs (not warm-up) left out of the
	// figures: their wire did not carry what the path claims, they could
	// not be done, or were interrupted (Notes says which and why).
	LeftOutRuns int `json:"left_out_runs,omitempty"`
	// Adjustment says how p_paired_holm was adjusted: over how many
	// comparisons (time and throughput together).
	Adjustment string `json:"p_adjustment,omitempty"`
	// Scale is the --scale factor the experiment ran at (absent: 1).
	Scale float64 `json:"scale,omitempty"`
	// Engines says, per cell group that records one (its params), which
	// connection engine its probes ran on: http's evloop, go-dial or go.
	Engines map[string]string `json:"engines,omitempty"`
	// Dialers says, per cell group that names one (dialer: go), who raced
	// the families on its dual path.
	Dialers map[string]string `json:"dialers,omitempty"`
	// Machine says what it ran on: tool version, host, kernel, CPUs.
	Machine map[string]string `json:"machine,omitempty"`
	// Lab and Servers are the header's, for the reader of the report.
	Lab     map[string]string `json:"lab,omitempty"`
	Servers map[string]string `json:"servers,omitempty"`
	// Segment is the share of users this result holds (a segment of a
	// split run); Segments, in a merged result, each segment's own
	// figures beside the pooled ones.
	Segment  *result.Segment  `json:"segment,omitempty"`
	Segments []SegmentFigures `json:"segments,omitempty"`
}

// Cell summarizes one protocol × path × connection count over its counted runs.
type Cell struct {
	Protocol string `json:"protocol"`
	Path     string `json:"path"`
	Conns    int    `json:"conns"`
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

// intervalAcc sums a cell's trials interval by interval.
type intervalAcc struct {
	n         []int
	end, mbps []float64
}

func addIntervals(m map[cellKey]*intervalAcc, ck cellKey, ivs []result.Interval) {
	a := m[ck]
	if a == nil {
		a = &intervalAcc{}
		m[ck] = a
	}
	for i, iv := range ivs {
		secs := float64(iv.EndNS-iv.StartNS) / 1e9
		if secs <= 0 {
			continue
		}
		for len(a.n) <= i {
			a.n, a.end, a.mbps = append(a.n, 0), append(a.end, 0), append(a.mbps, 0)
		}
		a.n[i]++
		a.end[i] += float64(iv.EndNS) / 1e9
		a.mbps[i] += float64(iv.Bytes) * 8 / secs / 1e6
	}
}

// MetricStat is one transport figure of a cell over its counted runs.
type MetricStat struct {
	N    int         `json:"n"`
	Mean float64     `json:"mean"`
	CI95 *[2]float64 `json:"ci95,omitempty"`
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

type runAcc struct {
	metrics map[string]float64 // sums over the run's completed samples
	metricN map[string]int     // how many of them had each figure
	sum     float64
	ok      int
	failed  int
	warmup  bool
	skipped string
	seconds float64
}

func ptr[T any](v T) *T { return &v }

func na(m *map[string]string, field, why string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[field] = why
}

const ms = float64(time.Millisecond)

// Summarize computes the summary of a samples file. Runs whose record says
// they were interrupted or failed as a whole are left out and noted.
func Summarize(f *result.File) *Summary {
	s := &Summary{Version: SummaryVersion, Name: f.Header.Name, Created: f.Header.Created,
		Target: string(f.Header.Target), Baseline: f.Header.Baseline, Notes: append([]string(nil), f.Header.Notes...),
		Lab: f.Header.Lab, Servers: f.Header.Servers}
	h := f.Header
	cpus := ""
	if h.CPUs > 0 {
		cpus = strconv.Itoa(h.CPUs)
	}
	for k, v := range map[string]string{"tool": strings.TrimSpace(h.Tool + " " + h.ToolVersion), "host": h.Host, "kernel": h.Kernel, "go": h.GoVersion,
		"cpus": cpus, "client_spin": h.ClientSpin} {
		if v != "" {
			if s.Machine == nil {
				s.Machine = map[string]string{}
			}
			s.Machine[k] = v
		}
	}
	if s.Baseline == "" {
		s.Baseline = "ipv4"
	}
	runs := map[runKey]*runAcc{}
	cells := map[cellKey]*Cell{}
	var strays, strayRuns, dropped, droppedRuns uint64
	datapaths := map[string]map[string]uint64{}
	dpRuns := map[string]int{}
	for _, r := range f.Runs {
		if r.Wire != nil && len(r.Wire.Datapath) > 0 {
			if datapaths[r.Path] == nil {
				datapaths[r.Path] = map[string]uint64{}
			}
			for k, v := range r.Wire.Datapath {
				datapaths[r.Path][k] += v
			}
			dpRuns[r.Path]++
		}
		if r.Wire != nil {
			n, d := r.Wire.Stray, r.Wire.Dropped
			if r.Wire.ClientSide != nil {
				n += r.Wire.ClientSide.Stray
				d += r.Wire.ClientSide.Dropped
			}
			if n > 0 {
				strays += n
				strayRuns++
			}
			if d > 0 {
				dropped += d
				droppedRuns++
			}
		}
		k := runKey{cellKey{r.Protocol, r.Path, r.Conns}, r.Run}
		a := &runAcc{warmup: r.Warmup, skipped: r.Err, seconds: r.End.Sub(r.Start).Seconds()}
		runs[k] = a
		if r.Background != nil && r.Err == "" && !r.Warmup {
			c := cells[k.cell]
			if c == nil {
				c = &Cell{Protocol: k.cell.proto, Path: k.cell.path, Conns: k.cell.conns}
				cells[k.cell] = c
			}
			addBackground(c, r.Background)
		}
		if r.Err != "" {
			s.Notes = append(s.Notes, "run "+itoa(r.Run)+" of "+r.Cell+" left out: "+r.Err)
			if !r.Warmup {
				s.LeftOutRuns++
			}
		}
	}
	if strays > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("wire check: %d packets of earlier runs' connections (late retransmissions, resets) were seen during %d runs and not counted as theirs (docs/lab.md, \"What proves each path\")", strays, strayRuns))
	}
	s.Notes = append(s.Notes, datapathNotes(datapaths, dpRuns)...)
	if dropped > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("wire check: its capture had no room for %d frames during %d runs (its reader fell behind); those frames were neither counted nor proven", dropped, droppedRuns))
	}
	hist := map[cellKey]*stats.Latency{}
	for ck := range cells {
		hist[ck] = stats.NewLatency()
	}
	ivs := map[cellKey]*intervalAcc{}
	for i := range f.Samples {
		smp := &f.Samples[i]
		ck := cellKey{smp.Protocol, smp.Path, smp.Conns}
		k := runKey{ck, smp.Run}
		a := runs[k]
		if a == nil {
			// Samples of a run cut off before its record: count them as
			// an unfinished run, never as a complete one.
			a = &runAcc{warmup: smp.Warmup, skipped: "interrupted before the run ended"}
			runs[k] = a
			s.Notes = append(s.Notes, "run "+itoa(smp.Run)+" of "+smp.Cell+" left out: interrupted before the run ended")
			if !smp.Warmup {
				s.LeftOutRuns++
			}
		}
		c := cells[ck]
		if c == nil {
			c = &Cell{Protocol: ck.proto, Path: ck.path, Conns: ck.conns}
			cells[ck] = c
			hist[ck] = stats.NewLatency()
		}
		if a.skipped != "" {
			continue
		}
		if smp.OK() {
			a.sum += float64(smp.TotalNS)
			a.ok++
			if a.metrics == nil {
				a.metrics, a.metricN = map[string]float64{}, map[string]int{}
			}
			for k, v := range smp.Metrics {
				a.metrics[k] += v
				a.metricN[k]++
			}
			if smp.WireNS > 0 { // the kernel's stamps: a figure like the others
				a.metrics[WireMetric] += float64(smp.WireNS) / 1e6
				a.metricN[WireMetric]++
			}
			if smp.ClientTurnNS > 0 {
				a.metrics[ClientTurnMetric] += float64(smp.ClientTurnNS) / 1e6
				a.metricN[ClientTurnMetric]++
			}
		} else {
			a.failed++
		}
		if a.warmup {
			continue
		}
		if smp.OK() {
			c.Completed++
			hist[ck].Record(smp.Total())
			if len(smp.Intervals) > 0 {
				addIntervals(ivs, ck, smp.Intervals)
			}
		} else {
			c.Failed++
			if c.Failures == nil {
				c.Failures = map[string]int{}
			}
			kind := string(smp.ErrKind)
			if kind == "" {
				kind = "other"
			}
			c.Failures[kind]++
			if c.FirstError == "" {
				c.FirstError = smp.Err
			}
		}
	}
	s.Segment = f.Header.Segment
	s.Segments = segmentFigures(f, func(smp *result.Sample) bool {
		a := runs[runKey{cellKey{smp.Protocol, smp.Path, smp.Conns}, smp.Run}]
		return a != nil && a.skipped == "" && !a.warmup
	})
	if note := lateNote(f.Runs); note != "" {
		s.Notes = append(s.Notes, note)
	}
	// Per-run means in run order.
	keys := make([]runKey, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].run < keys[j].run })
	seconds := map[cellKey]float64{}
	metricRuns := map[cellKey]map[string][]float64{}
	metricRunIndex := map[cellKey]map[string][]int{}
	for _, k := range keys {
		a := runs[k]
		c := cells[k.cell]
		if c == nil {
			c = &Cell{Protocol: k.cell.proto, Path: k.cell.path, Conns: k.cell.conns}
			cells[k.cell] = c
			hist[k.cell] = stats.NewLatency()
		}
		if a.skipped != "" {
			continue
		}
		if !a.warmup {
			// Every counted run's time, those in which every transaction
			// failed included: rate_per_s is completions per second of
			// all the time measured.
			seconds[k.cell] += a.seconds
		}
		if a.ok == 0 {
			continue
		}
		m := a.sum / float64(a.ok) / ms
		if a.warmup {
			c.WarmupRuns = append(c.WarmupRuns, m)
			continue
		}
		c.Runs = append(c.Runs, m)
		c.RunIndex = append(c.RunIndex, k.run)
		for name, sum := range a.metrics {
			if metricRuns[k.cell] == nil {
				metricRuns[k.cell] = map[string][]float64{}
			}
			metricRuns[k.cell][name] = append(metricRuns[k.cell][name], sum/float64(a.metricN[name]))
			if metricRunIndex[k.cell] == nil {
				metricRunIndex[k.cell] = map[string][]int{}
			}
			metricRunIndex[k.cell][name] = append(metricRunIndex[k.cell][name], k.run)
		}
	}
	for ck, c := range cells {
		finishCell(c, hist[ck], seconds[ck])
		finishBackground(c.Background)
		if a := ivs[ck]; a != nil {
			for i := range a.n {
				c.IntervalEndS = append(c.IntervalEndS, a.end[i]/float64(a.n[i]))
				c.IntervalMbps = append(c.IntervalMbps, a.mbps[i]/float64(a.n[i]))
			}
		}
		for name, runs := range metricRuns[ck] {
			d := stats.Describe(runs)
			ms := &MetricStat{N: d.N, Mean: d.Mean, Runs: runs, RunIndex: metricRunIndex[ck][name]}
			if d.CINA == "" {
				ci := d.CI95
				if !slices.ContainsFunc(runs, func(v float64) bool { return v < 0 }) {
					ci = stats.ClampBelow(ci) // a count or a rate: never below 0
				}
				ms.CI95 = &ci
			}
			if c.Metrics == nil {
				c.Metrics = map[string]*MetricStat{}
			}
			c.Metrics[name] = ms
		}
		s.Cells = append(s.Cells, *c)
	}
	sortCells(s.Cells, specOrder(f.Header.Spec))
	if note := clientTurnNote(s.Cells); note != "" {
		s.Notes = append(s.Notes, note)
	}
	if m, ok := f.Header.Spec.(map[string]any); ok {
		if v, ok := m["scale"].(float64); ok && v > 0 && v < 1 {
			s.Scale = v
		}
		s.Engines = groupValues(m, func(c map[string]any) any { p, _ := c["params"].(map[string]any); return p["engine"] })
		s.Dialers = groupValues(m, func(c map[string]any) any { return c["dialer"] })
	}
	s.Comparisons = compare(s.Cells, s.Baseline)
	s.Adjustment = adjust(s.Comparisons)
	return s
}

// ClientShare is the share of a cell's wire time its client's turns may
// take before the summary says so: beyond it the figure is the client's
// own turnaround as much as the network's time.
const ClientShare = 0.2

// clientTurnNote names the cells whose client turns are more than
// ClientShare of their wire time ("" if none).
func clientTurnNote(cells []Cell) string {
	var over []string
	for _, c := range cells {
		t, w := c.Metrics[ClientTurnMetric], c.Metrics[WireMetric]
		if t == nil || w == nil || w.Mean <= 0 || t.Mean <= ClientShare*w.Mean {
			continue
		}
		over = append(over, fmt.Sprintf("%s/%s/%d %.0f%%", c.Protocol, c.Path, c.Conns, 100*t.Mean/w.Mean))
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("client turns are more than %.0f%% of the wire time in %s: those figures are the client's own turnaround (its work, such as a TLS handshake's, and on one host its wait for CPUs the routers and the server share) as much as the network's time; paths still pay it alike (docs/metrics.md)",
		100*ClientShare, strings.Join(over, ", "))
}

// engines reads each cell group's params.engine from the spec, keyed by
// the group's name as samples carry it (its label, or its protocol).
// groupValues reads one value of each cell group of a recorded spec (a
// string that value picks from its cell), by the group's name; nil when
// no group has one.
func groupValues(spec map[string]any, value func(cell map[string]any) any) map[string]string {
	cells, _ := spec["cells"].([]any)
	var out map[string]string
	for _, c := range cells {
		m, _ := c.(map[string]any)
		e, _ := value(m).(string)
		if e == "" {
			continue
		}
		name, _ := m["label"].(string)
		if name == "" {
			name, _ = m["protocol"].(string)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = e
	}
	return out
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

func finishCell(c *Cell, h *stats.Latency, seconds float64) {
	if n := c.Completed + c.Failed; n > 0 {
		c.CompletionRate = ptr(float64(c.Completed) / float64(n))
		if ci, ok := stats.Wilson(c.Completed, n); ok {
			c.CompletionCI95 = &ci
		}
	} else {
		na(&c.NA, "completion_rate", "no counted transactions")
	}
	if seconds > 0 {
		c.RatePerS = ptr(float64(c.Completed) / seconds)
	} else {
		na(&c.NA, "rate_per_s", "no timed runs")
	}
	d := stats.Describe(c.Runs)
	switch {
	case d.N == 0:
		na(&c.NA, "mean_ms", "no run completed a transaction")
	default:
		c.MeanMS = ptr(d.Mean)
	}
	if d.CINA != "" {
		na(&c.NA, "ci95_ms", d.CINA)
	} else {
		ci := stats.ClampBelow(d.CI95) // a time is never negative
		c.CI95MS = &ci
	}
	c.FewRuns = d.N > 0 && d.N < MinRuns
	if m, ok := stats.NearestRank(c.Runs, 0.5); ok {
		c.MedianMS = ptr(m)
	}
	for _, i := range stats.Outliers(c.Runs) {
		c.OutlierRuns = append(c.OutlierRuns, c.RunIndex[i])
	}
	c.PercentileN = int(h.Count())
	if h.Count() == 0 {
		for _, f := range []string{"p50_ms", "p90_ms", "p99_ms", "p999_ms"} {
			na(&c.NA, f, "no completed transactions")
		}
		return
	}
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p99.9", 0.999}} {
		if c.PercentileN < stats.MinSamples(p.q) {
			c.ThinPercentiles = append(c.ThinPercentiles, p.name)
		}
	}
	qs := make([]float64, 0, 105)
	for i := range 101 {
		qs = append(qs, float64(i)/100)
	}
	qs = append(qs, 0.5, 0.9, 0.99, 0.999)
	v := h.Quantiles(qs...)
	msOf := func(d time.Duration) float64 { return float64(d) / ms }
	c.CDFMS = make([]float64, 101)
	for i := range c.CDFMS {
		c.CDFMS[i] = msOf(v[i])
	}
	c.P50MS, c.P90MS, c.P99MS, c.P999MS = ptr(msOf(v[101])), ptr(msOf(v[102])), ptr(msOf(v[103])), ptr(msOf(v[104]))
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

// specOrder ranks cell groups as the experiment lists them (the study's
// order: MITRE's tables are HTTP, FTP, SMTP, IMAP), from the header's
// spec; names it does not list rank after, in natural order.
func specOrder(spec any) map[string]int {
	m, _ := spec.(map[string]any)
	cells, _ := m["cells"].([]any)
	order := map[string]int{}
	for _, c := range cells {
		cm, _ := c.(map[string]any)
		name, _ := cm["label"].(string)
		if name == "" {
			name, _ = cm["protocol"].(string)
		}
		if _, seen := order[name]; name != "" && !seen {
			order[name] = len(order)
		}
	}
	return order
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
	}
	return out
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
		half := math.Inf(1)
		if b.CI95MS != nil {
			half = (b.CI95MS[1] - b.CI95MS[0]) / 2
		}
		if m := math.Abs(*b.MeanMS); m < Resolution || (b.CI95MS != nil && m <= half) {
			cmp.PctIncrease = nil
			na(&cmp.NA, "pct_increase", "baseline below resolution")
		}
	}
	for f, why := range t.na {
		na(&cmp.NA, timeFields[f], why)
	}
	cmp.Throughput = compareMetric("throughput_mbps", b, c)
	cmp.Wire = compareMetric(WireMetric, b, c)
	return cmp
}

// compareMetric sets figure k of c's runs against b's (nil: one lacks it).
func compareMetric(k string, b, c *Cell) *MetricComparison {
	bm, cm := b.Metrics[k], c.Metrics[k]
	if bm == nil || cm == nil {
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

func testRuns(bRuns []float64, bIdx []int, cRuns []float64, cIdx []int) runTest {
	var t runTest
	w := stats.Welch(bRuns, cRuns)
	if len(bRuns) > 0 && len(cRuns) > 0 {
		t.diff = ptr(w.Diff)
	} else {
		na(&t.na, "diff", "a path has no run means")
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
		na(&t.na, "paired_diff", cmp.Or(p.NA, "no runs of both paths to pair"))
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
				parts = append(parts, fmt.Sprintf("%s %d encapsulated, %d decapsulated, %d dropped", d.what, c[d.name+"_encap"], c[d.name+"_decap"], c[d.name+"_dropped"]))
			} else {
				parts = append(parts, fmt.Sprintf("%s %d IPv4 to IPv6, %d IPv6 to IPv4, %d dropped", d.what, c[d.name+"_4to6"], c[d.name+"_6to4"], c[d.name+"_dropped"]))
			}
		}
		if n, ok := c["nat_no_port"]; ok {
			parts = append(parts, fmt.Sprintf("its NAT dropped %d packets of new connections for want of a free port", n))
		}
		out = append(out, fmt.Sprintf("datapaths of %s over its %d runs: %s", k.Path, runs[string(k.Path)], strings.Join(parts, "; ")))
	}
	return out
}
