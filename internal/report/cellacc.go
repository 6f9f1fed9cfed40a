package report

import (
	"slices"
	"time"

	"v6lab/internal/report/stats"
	"v6lab/internal/report/whatif"
	"v6lab/internal/result"
)

// cellAdds are what a cell takes from the samples of its counted runs:
// completions and failures, the pooled histogram of response times, the
// first error, a transport trial's intervals and, in a merged result, what
// each segment ran. A run whose record has not come yet keeps its own
// (Summarizer): only its record says whether it counts.
type cellAdds struct {
	completed, failed int
	failures          map[string]int
	// negotiated counts completions by the protocol they spoke (h2, h3…).
	negotiated map[string]int
	// conn counts completions by what their connection did.
	conn *ConnFacts
	// winners counts the dual path's completions by who won the race
	// (Winner).
	winners map[string]int
	// whatif replays the dual path's races at other attempt delays
	// (whatifs.go; nil until a race's sample comes).
	whatif      *whatif.Sweep
	firstErr    string
	firstErrSeq int64
	hist        *stats.Latency
	// intervals are completed trials' intervals, in the order they came.
	intervals [][]result.Interval
	// segs are the samples as a merged result's segments ran them, in
	// the order they came (nil unless the result is merged).
	segs []segSample
}

// segSample is what a segment's figures take of one sample.
type segSample struct {
	seg   int32
	ok    bool
	total int64
}

func newCellAdds() *cellAdds { return &cellAdds{hist: stats.NewLatency()} }

// add takes one sample (seq: its place in the file, for the first error;
// seg: the segment that ran it, or -1).
func (a *cellAdds) add(smp *result.Sample, seq int64, seg int) {
	if seg >= 0 {
		a.segs = append(a.segs, segSample{seg: int32(seg), ok: smp.OK(), total: smp.TotalNS})
	}
	a.addWhatIf(smp.Metrics)
	if smp.OK() {
		a.completed++
		if smp.Negotiated != "" {
			if a.negotiated == nil {
				a.negotiated = map[string]int{}
			}
			a.negotiated[smp.Negotiated]++
		}
		addConn(&a.conn, smp)
		if w := Winner(smp.Metrics); w != "" && !smp.Kept {
			count(&a.winners, w, 1)
		}
		a.hist.Record(smp.Total())
		if len(smp.Intervals) > 0 {
			a.intervals = append(a.intervals, smp.Intervals)
		}
		return
	}
	a.failed++
	a.failure(string(smp.ErrKind), smp.Err, seq, 1)
}

// failure counts n failures of kind, err being the first one's message.
func (a *cellAdds) failure(kind, err string, seq int64, n int) {
	if a.failures == nil {
		a.failures = map[string]int{}
	}
	if kind == "" {
		kind = "other"
	}
	a.failures[kind] += n
	if a.firstErr == "" || seq < a.firstErrSeq {
		a.firstErr, a.firstErrSeq = err, seq
	}
}

// cellAcc accumulates one cell (protocol × path × connection count):
// Add takes a counted sample, merge a counted run's adds; Finish turns
// them and the cell's run means into its figures.
type cellAcc struct {
	key  cellKey
	adds *cellAdds
	bg   *CellBackground
	ivs  intervalAcc
	// leftOut is why the cell's first counted run left out was (its
	// record's error: interrupted, ...), "" when none was.
	leftOut string
}

// leftOutRun notes a counted run of the cell left out of its figures, and why.
func (c *cellAcc) leftOutRun(why string) {
	if c.leftOut == "" {
		c.leftOut = why
	}
}

func newCellAcc(k cellKey) *cellAcc { return &cellAcc{key: k, adds: newCellAdds()} }

// Add takes one sample of a counted run.
func (c *cellAcc) Add(smp *result.Sample, seq int64, seg int, segs *segmentAcc) {
	c.adds.add(smp, seq, seg)
	c.flushOrdered(segs)
}

// merge takes a run's adds once its record said it counts.
func (c *cellAcc) merge(p *cellAdds, segs *segmentAcc) {
	a := c.adds
	a.completed += p.completed
	a.failed += p.failed
	for k, n := range p.negotiated {
		if a.negotiated == nil {
			a.negotiated = map[string]int{}
		}
		a.negotiated[k] += n
	}
	for k, n := range p.winners {
		count(&a.winners, k, n)
	}
	mergeConn(&a.conn, p.conn)
	a.mergeWhatIf(p)
	for k, n := range p.failures {
		if a.failures == nil {
			a.failures = map[string]int{}
		}
		a.failures[k] += n
	}
	if p.firstErr != "" && (a.firstErr == "" || p.firstErrSeq < a.firstErrSeq) {
		a.firstErr, a.firstErrSeq = p.firstErr, p.firstErrSeq
	}
	a.hist.Merge(p.hist)
	a.intervals = append(a.intervals, p.intervals...)
	a.segs = append(a.segs, p.segs...)
	c.flushOrdered(segs)
}

// flushOrdered sums what depends on the samples' order (the intervals'
// and the segments' figures) as soon as it is known to count, so nothing
// waits in memory.
func (c *cellAcc) flushOrdered(segs *segmentAcc) {
	a := c.adds
	for _, ivs := range a.intervals {
		c.ivs.add(ivs)
	}
	a.intervals = a.intervals[:0]
	if segs != nil {
		for _, s := range a.segs {
			segs.add(c.key, s)
		}
	}
	a.segs = a.segs[:0]
}

// background adds one counted run's background traffic.
func (c *cellAcc) background(bg *result.Background) {
	cell := Cell{Background: c.bg}
	addBackground(&cell, bg)
	c.bg = cell.Background
}

// cellRuns are a cell's per-run figures, in run order: the means of
// response time of counted and warm-up runs, each figure's run means, and
// the seconds its counted runs took.
type cellRuns struct {
	runs, warmup []float64
	index        []int
	metrics      map[string][]float64
	metricIndex  map[string][]int
	// metricN counts, per figure, the counted samples that had it.
	metricN map[string]int
	seconds float64
}

// ShareMetrics are the figures that are shares of a whole (percent): their
// 95% interval is bounded at 100 as every count's is at 0.
var ShareMetrics = map[string]bool{"tcp_efficiency_pct": true, "loss_pct": true}

// Finish makes the cell's figures.
func (c *cellAcc) Finish(r *cellRuns) Cell {
	a := c.adds
	cell := Cell{Protocol: c.key.proto, Path: c.key.path, Conns: c.key.conns, Runs: r.runs, RunIndex: r.index, WarmupRuns: r.warmup,
		Completed: a.completed, Failed: a.failed, Failures: a.failures, FirstError: a.firstErr, Background: c.bg,
		Negotiated: a.negotiated, Conn: a.conn, Winners: a.winners, WhatIf: finishWhatIf(a.whatif)}
	finishCell(&cell, a.hist, r.seconds)
	if cell.MeanMS == nil && c.leftOut != "" && cell.Completed+cell.Failed == 0 {
		// Not a failing path: its counted runs were left out (trial6 F6).
		na(&cell.NA, "mean_ms", "no counted run: "+c.leftOut)
	}
	finishBackground(cell.Background)
	for i := range c.ivs.n {
		cell.IntervalEndS = append(cell.IntervalEndS, c.ivs.end[i]/float64(c.ivs.n[i]))
		cell.IntervalMbps = append(cell.IntervalMbps, c.ivs.mbps[i]/float64(c.ivs.n[i]))
	}
	for name, runs := range r.metrics {
		d := stats.Describe(runs)
		ms := &MetricStat{N: d.N, Samples: r.metricN[name], Mean: d.Mean, Runs: runs, RunIndex: r.metricIndex[name]}
		if d.CINA == "" {
			ci := d.CI95
			if !slices.ContainsFunc(runs, func(v float64) bool { return v < 0 }) {
				ci = stats.ClampBelow(ci) // a count or a rate: never below 0
			}
			if ShareMetrics[name] && !slices.ContainsFunc(runs, func(v float64) bool { return v > 100 }) {
				ci = [2]float64{min(ci[0], 100), min(ci[1], 100)} // a share: never above 100%
			}
			ms.CI95 = &ci
		}
		if cell.Metrics == nil {
			cell.Metrics = map[string]*MetricStat{}
		}
		cell.Metrics[name] = ms
	}
	return cell
}

// intervalAcc sums a cell's trials interval by interval.
type intervalAcc struct {
	n         []int
	end, mbps []float64
}

func (a *intervalAcc) add(ivs []result.Interval) {
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
	percentiles(c, h)
}

// percentiles sets a cell's pooled percentiles and CDF from its histogram.
func percentiles(c *Cell, h *stats.Latency) {
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
