package report

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// Summarizer computes a summary from a samples file's records, fed one at
// a time in the file's order: its memory grows with the cells and runs,
// never with the samples (a per-run sum and count for the means, a
// histogram per cell for the percentiles). A sample's run counts only when
// its record (which follows its samples in the file) says so: until then
// the run keeps what its cell would take (cellAdds), and hands it over or
// drops it when the record comes. Runs whose record says they were
// interrupted or failed as a whole are left out and noted; runs that never
// got a record are left out as interrupted.
type Summarizer struct {
	h     result.Header
	spec  specFacts
	runs  map[runKey]*runAcc
	cells map[cellKey]*cellAcc
	segs  *segmentAcc
	seq   int64
	// runNotes are the records' errors in their order; unrecorded the
	// runs first seen through a sample, in that order.
	runNotes   []string
	unrecorded []runKey
	leftOut    int
	rewarms    int  // re-warm runs of resumes (result.Run.Rewarm)
	finished   int  // run records of finished runs (not interrupted)
	writer     *int // the writing process's pid (Writing), nil when none
	wire       wireTally
	late       lateTally
	// loads are the records of runs that carry a self-check (few
	// fields, one per run), for selfChecks.
	loads []result.Run
	pmtu  *pmtuAcc
	conds condAcc
	loss  lossAcc
}

// runAcc is one run: its sums over completed samples (the run mean, each
// figure's run mean), and whether it counts.
type runAcc struct {
	metrics  map[string]float64 // sums over the run's completed samples
	metricN  map[string]int     // how many of them had each figure
	sum      float64
	ok       int
	failed   int
	warmup   bool
	skipped  string
	seconds  float64
	recorded bool
	// totalled says its record's totals gave its figures: its rows (some
	// of its samples) add nothing.
	totalled bool
	// cell and first are its cell's name and its first sample's warm-up
	// flag, for the note of a run that never got a record.
	cell  string
	first bool
	// pending is what its samples add to its cell, until the record says
	// whether they count.
	pending *cellAdds
}

// NewSummarizer starts a summary of the file whose header is h.
func NewSummarizer(h *result.Header) *Summarizer {
	return &Summarizer{h: *h, spec: readSpec(h.Spec), runs: map[runKey]*runAcc{}, cells: map[cellKey]*cellAcc{},
		segs: newSegmentAcc(h.Merged), pmtu: newPMTUAcc(h.Spec), conds: condAcc{}, loss: lossAcc{}}
}

// Summarize computes the summary of a samples file read into memory.
func Summarize(f *result.File) *Summary {
	z := NewSummarizer(&f.Header)
	for i := range f.Runs {
		z.Run(&f.Runs[i])
	}
	for i := range f.Samples {
		z.Sample(&f.Samples[i])
	}
	return z.Finish()
}

func (z *Summarizer) cell(k cellKey) *cellAcc {
	c := z.cells[k]
	if c == nil {
		c = newCellAcc(k)
		z.cells[k] = c
	}
	return c
}

// Run takes a run's record.
func (z *Summarizer) Run(r *result.Run) {
	z.wire.add(r.Path, r.Wire)
	z.late.add(r)
	if r.Load != nil {
		z.loads = append(z.loads, result.Run{Protocol: r.Protocol, Path: r.Path, Conns: r.Conns, Run: r.Run, Warmup: r.Warmup, Err: r.Err,
			Start: r.Start, End: r.End, Load: r.Load})
	}
	z.pmtu.Run(r)
	z.conds.Run(r)
	z.loss.Run(r)
	k := runKey{cellKey{r.Protocol, r.Path, r.Conns}, r.Run}
	a := z.runs[k]
	if a == nil || a.recorded {
		a = &runAcc{} // a second record of a run starts it anew
		z.runs[k] = a
	}
	a.recorded, a.warmup, a.skipped, a.seconds = true, r.Warmup, r.Err, r.End.Sub(r.Start).Seconds()
	if r.Err != "interrupted" && !r.Rewarm {
		z.finished++
	}
	c := z.cell(k.cell)
	if r.Background != nil && r.Err == "" && !r.Warmup {
		c.background(r.Background)
	}
	if r.Rewarm {
		z.rewarms++
	}
	if r.Err != "" {
		which := "run " + itoa(r.Run)
		if r.Rewarm {
			which = "a re-warm run"
		}
		z.runNotes = append(z.runNotes, which+" of "+r.Cell+" left out: "+r.Err)
		if !r.Warmup {
			z.leftOut++
			c.leftOutRun(r.Err)
		}
	}
	p := a.pending
	a.pending = nil
	if t := r.Totals; t != nil {
		// The writer kept some rows only: the run's figures are its
		// totals over every sample, never its rows.
		z.seq++
		var sums runAcc
		sums, p = fromTotals(t, z.seq)
		a.sum, a.ok, a.failed, a.metrics, a.metricN = sums.sum, sums.ok, sums.failed, sums.metrics, sums.metricN
		a.totalled = true
	}
	if p != nil && a.counted() {
		c.merge(p, z.segs)
	}
}

// counted says whether a recorded run's samples go into its cell.
func (a *runAcc) counted() bool { return a.skipped == "" && !a.warmup }

// Sample takes one sample.
func (z *Summarizer) Sample(smp *result.Sample) {
	z.seq++
	z.pmtu.Sample(smp)
	ck := cellKey{smp.Protocol, smp.Path, smp.Conns}
	k := runKey{ck, smp.Run}
	c := z.cell(ck)
	a := z.runs[k]
	if a == nil {
		a = &runAcc{cell: smp.Cell, first: smp.Warmup}
		z.runs[k] = a
		z.unrecorded = append(z.unrecorded, k)
	}
	if a.skipped != "" || a.totalled {
		return
	}
	a.add(smp)
	seg := z.segs.segment(smp.User, smp.Conns)
	switch {
	case !a.recorded:
		if a.pending == nil {
			a.pending = newCellAdds()
		}
		a.pending.add(smp, z.seq, seg)
	case a.counted():
		c.Add(smp, z.seq, seg, z.segs)
	}
}

// add sums a sample into its run.
func (a *runAcc) add(smp *result.Sample) {
	if !smp.OK() {
		a.failed++
		return
	}
	a.sum += float64(smp.TotalNS)
	a.ok++
	if a.metrics == nil {
		a.metrics, a.metricN = map[string]float64{}, map[string]int{}
	}
	for k, v := range smp.Metrics {
		if kept := raceMetrics[k]; smp.Kept && kept != "" {
			k = kept // the family it kept, not a race it won
		}
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
}

// Writing says the samples file is still being written by a running
// v6lab (pid, 0 when not known): its last run is running, not cut off,
// and the summary's figures are so far (Partial.Writing).
func (z *Summarizer) Writing(pid int) { z.writer = &pid }

// unfinished leaves out the runs that have samples but no record: cut off
// (interrupted), or, while the file is still written, running.
func (z *Summarizer) unfinished(s *Summary) {
	for _, k := range z.unrecorded {
		a := z.runs[k]
		switch {
		case a.recorded:
		case z.writer != nil:
			a.skipped, a.pending = "still running", nil
			s.Notes = append(s.Notes, "run "+itoa(k.run)+" of "+a.cell+" not counted yet: still running")
		default:
			// Samples of a run cut off before its record: an unfinished
			// run, never a complete one.
			a.skipped, a.pending = "interrupted before the run ended", nil
			s.Notes = append(s.Notes, "run "+itoa(k.run)+" of "+a.cell+" left out: interrupted before the run ended")
			if !a.first {
				s.LeftOutRuns++
				z.cell(k.cell).leftOutRun("interrupted")
			}
		}
	}
}

// Finish computes the summary of everything fed so far.
func (z *Summarizer) Finish() *Summary {
	h := &z.h
	s := &Summary{Version: SummaryVersion, Name: h.Name, Created: h.Created, Target: string(h.Target), Baseline: cmpOr(h.Baseline, "ipv4"),
		Notes: append(append([]string(nil), h.Notes...), z.runNotes...), Lab: h.Lab, Servers: h.Servers, ServerRoles: h.ServerRoles, Machine: machine(h),
		LeftOutRuns: z.leftOut, Segment: h.Segment, Scale: z.spec.scale, Seed: z.spec.seed, Engines: z.spec.engines, Dialers: z.spec.dialers,
		HTTPVersions: z.spec.versions, HTTPCleartext: z.spec.cleartext, HTTPH2C: z.spec.h2c, IPLiteral: z.spec.literal, labelled: z.spec.labelled,
		SampleEvery: h.SampleEvery, groupProto: z.spec.protos, groupDuration: z.spec.durations, plainSpec: z.spec.plain}
	s.Notes = append(s.Notes, z.wire.notes(z.spec.speaksQUIC())...)
	if z.rewarms > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("resumed: %s (not counted) warmed each cell again before its first counted run in the resuming process (its connections, sessions and caches were cold)", stats.Count(z.rewarms, "re-warm run")))
	}
	switch {
	case z.writer != nil:
		s.Partial = &Partial{RunsDone: z.finished, RunsPlanned: z.spec.planned, Writing: true, WriterPID: *z.writer}
	case z.spec.planned > 0 && z.finished < z.spec.planned:
		s.Partial = &Partial{RunsDone: z.finished, RunsPlanned: z.spec.planned, Resume: resumeHint("", len(h.Merged) > 0)}
	}
	z.unfinished(s)
	s.Segments = z.segs.finish()
	if note := z.late.note(); note != "" {
		s.Notes = append(s.Notes, note)
	}
	for ck, r := range z.cellRuns() {
		s.Cells = append(s.Cells, z.cells[ck].Finish(r))
		noCountedRun(&s.Cells[len(s.Cells)-1], s.Partial, r.seconds > 0)
	}
	if why := unscheduledMerge(h.Merged); why != "" {
		for i := range s.Cells {
			s.Cells[i].RatePerS = nil
			na(&s.Cells[i].NA, "rate_per_s", why)
		}
	}
	checks := selfChecks(z.loads)
	for i := range s.Cells {
		c := &s.Cells[i]
		c.SelfCheck = checks[cellKey{c.Protocol, c.Path, c.Conns}]
		c.Streams = z.spec.streams[c.Protocol]
		if why := c.MinorityNA(WireMetric); why != "" {
			na(&c.NA, "metrics."+WireMetric, why)
		}
	}
	markLateSenders(s.Cells)
	z.loss.set(s.Cells)
	sortCells(s.Cells, z.spec.order)
	s.Conditions = z.conds.finish(s.Cells)
	s.Notes = append(s.Notes, selfCheckNotes(s.Cells, s.Target)...)
	if note := sendLateNote(s.Cells); note != "" {
		s.Notes = append(s.Notes, note)
	}
	if note := fragmentNote(s); note != "" {
		s.Notes = append(s.Notes, note)
	}
	s.PMTU = z.pmtu.Finish()
	if note := s.PMTU.note(); note != "" {
		s.Notes = append(s.Notes, note)
	}
	connModel(s, z.spec.keepalive)
	s.Comparisons = compare(s.Cells, s.Baseline)
	s.Adjustment = adjust(s.Comparisons)
	// After the comparisons: whether the paths' differences stand
	// depends on how much of them the client's turns are.
	markClientTurns(s.Cells, s.Comparisons)
	gaps := turnGaps(s.Comparisons, func(g string) string { return groupCalled(s, g) })
	for _, note := range []string{clientTurnNote(s.Cells, gaps, s.Target, s.Lab["shaping"] != ""), turnGapNote(gaps)} {
		if note != "" {
			s.Notes = append(s.Notes, note)
		}
	}
	return s
}

// cellRuns gathers every cell's per-run figures in run order.
func (z *Summarizer) cellRuns() map[cellKey]*cellRuns {
	keys := make([]runKey, 0, len(z.runs))
	for k := range z.runs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].run < keys[j].run })
	out := map[cellKey]*cellRuns{}
	for ck := range z.cells {
		out[ck] = &cellRuns{}
	}
	for _, k := range keys {
		a, r := z.runs[k], out[k.cell]
		if a.skipped != "" {
			continue
		}
		if !a.warmup {
			// Every counted run's time, those in which every transaction
			// failed included: rate_per_s is completions per second of
			// all the time measured.
			r.seconds += a.seconds
		}
		if a.ok == 0 {
			continue
		}
		m := a.sum / float64(a.ok) / ms
		if a.warmup {
			r.warmup = append(r.warmup, m)
			continue
		}
		r.runs = append(r.runs, m)
		r.index = append(r.index, k.run)
		for name, sum := range a.metrics {
			if r.metrics == nil {
				r.metrics, r.metricIndex, r.metricN = map[string][]float64{}, map[string][]int{}, map[string]int{}
			}
			r.metrics[name] = append(r.metrics[name], sum/float64(a.metricN[name]))
			r.metricIndex[name] = append(r.metricIndex[name], k.run)
			r.metricN[name] += a.metricN[name]
		}
	}
	return out
}

// machine is what the header says of the machine it ran on.
func machine(h *result.Header) map[string]string {
	cpus := ""
	if h.CPUs > 0 {
		cpus = strconv.Itoa(h.CPUs)
	}
	var m map[string]string
	for k, v := range map[string]string{"tool": strings.TrimSpace(h.Tool + " " + h.ToolVersion), "host": h.Host, "kernel": h.Kernel, "go": h.GoVersion,
		"cpus": cpus, "client_spin": h.ClientSpin} {
		if v != "" {
			if m == nil {
				m = map[string]string{}
			}
			m[k] = v
		}
	}
	return m
}

// wireTally counts what the wire check saw but did not count: packets of
// connections the runs did not open (stray), and frames its capture had no room for.
type wireTally struct {
	strays, strayRuns, dropped, droppedRuns uint64
	// datapaths sum the runs' datapath counters per path, dpRuns count
	// those runs.
	datapaths map[string]map[string]uint64
	dpRuns    map[string]int
}

func (t *wireTally) add(p string, w *result.Wire) {
	if w == nil {
		return
	}
	if len(w.Datapath) > 0 {
		if t.datapaths == nil {
			t.datapaths, t.dpRuns = map[string]map[string]uint64{}, map[string]int{}
		}
		if t.datapaths[p] == nil {
			t.datapaths[p] = map[string]uint64{}
		}
		for k, v := range w.Datapath {
			t.datapaths[p][k] += v
		}
		t.dpRuns[p]++
	}
	n, d := w.Stray, w.Dropped
	if w.ClientSide != nil {
		n += w.ClientSide.Stray
		d += w.ClientSide.Dropped
	}
	if n > 0 {
		t.strays += n
		t.strayRuns++
	}
	if d > 0 {
		t.dropped += d
		t.droppedRuns++
	}
}

// notes are the tally's notes; quic: a group spoke HTTP/3, whose kept
// QUIC connections of other paths may send into a run (trial11 L12: the
// note named them in a run of HTTP/1.1 alone).
func (t *wireTally) notes(quic bool) []string {
	var out []string
	if t.strays > 0 {
		whose := "earlier runs' late retransmissions and closes"
		if quic {
			whose += ", other paths' kept QUIC connections"
		}
		out = append(out, fmt.Sprintf("wire check: %s of connections the runs did not open (%s), seen during %s, not counted as theirs (docs/lab.md, \"What proves each path\")", stats.Count(t.strays, "packet"), whose, stats.Count(t.strayRuns, "run")))
	}
	out = append(out, datapathNotes(t.datapaths, t.dpRuns)...)
	if t.dropped > 0 {
		out = append(out, fmt.Sprintf("wire check: its capture had no room for %s during %s (its reader fell behind); what it missed was neither counted nor proven", stats.Count(t.dropped, "frame"), stats.Count(t.droppedRuns, "run")))
	}
	return out
}

// speaksQUIC says whether a group of the spec may speak HTTP/3
// (http_version 3, or dialer v3's race).
func (f *specFacts) speaksQUIC() bool {
	for _, v := range f.versions {
		if v == "3" {
			return true
		}
	}
	for _, d := range f.dialers {
		if d == "v3" {
			return true
		}
	}
	return false
}

// noCountedRun says why a cell of a result that is not whole (partial)
// has no mean when it has no counted run (counted: a run not warm-up was
// recorded, and not left out): its counted runs had not begun (only its warm-up had run, whose transactions completed),
// not that no run completed a transaction (trial10b). A cell whose
// counted runs were left out keeps its own reason.
func noCountedRun(c *Cell, p *Partial, counted bool) {
	if p == nil || counted || c.MeanMS != nil || c.Completed+c.Failed > 0 || strings.HasPrefix(c.NA["mean_ms"], "no counted run: ") {
		return
	}
	if p.Writing {
		na(&c.NA, "mean_ms", "no counted run yet: the result is still being written")
		return
	}
	na(&c.NA, "mean_ms", "no counted run yet: the result is partial")
}

// specFacts are what a summary reads of the experiment in the header: the
// order of its cell groups, each group's engine and dialer by the group's
// name, the scale it was shrunk by, and how many runs its plan has (each
// group's paths × connection counts × runs).
type specFacts struct {
	// seed is a shuffled order's seed (0: interleaved).
	seed             int64
	order            map[string]int
	engines, dialers map[string]string
	// versions are the groups' HTTP versions (http_version), by name;
	// cleartext names those of HTTP/1.1 without TLS, h2c those of
	// HTTP/2 without it.
	versions       map[string]string
	cleartext, h2c []string
	// literal names the groups whose URL's host is an IP literal,
	// labelled those named otherwise than their protocol (a label,
	// https, a dialer's name).
	literal, labelled []string
	// keepalive names the groups that asked to keep connections.
	keepalive []string
	// durations are the groups' sustained durations (duration), by name.
	durations map[string]string
	// streams are, by name, the groups whose users ran more than one
	// transaction at once on each connection (streams: N), and N.
	streams map[string]int
	// protos are the groups' protocols, plain those whose spec asks for
	// no TLS (Summary.groupProto, plainSpec).
	protos  map[string]string
	plain   []string
	scale   float64
	planned int
}

// specGroup is what a summary reads of one cell group of the spec.
type specGroup struct {
	Label    string `json:"label"`
	Protocol string `json:"protocol"`
	Dialer   string `json:"dialer"`
	HTTP     string `json:"http_version"`
	TLS      bool   `json:"tls"`
	URL      string `json:"url"`
	// Keepalive: the group asked to keep connections (keepalive).
	Keepalive bool `json:"keepalive"`
	// Streams is how many transactions at once each user ran on its
	// connection (streams; 0: not named, one at a time).
	Streams int `json:"streams"`
	// Duration is the sustained mode's time a run ("" or "0s": none).
	Duration string            `json:"duration"`
	Params   map[string]string `json:"params"`
	Paths    []string          `json:"paths"`
	Conns    []int             `json:"conns"`
	Runs     int               `json:"runs"`
}

// readSpec reads the header's spec, whatever version wrote it: a field of
// another type than today's is left out, never an error.
func readSpec(spec any) specFacts {
	f := specFacts{order: map[string]int{}}
	var top struct {
		Scale json.RawMessage   `json:"scale"`
		Order string            `json:"order"`
		Seed  json.RawMessage   `json:"seed"`
		Cells []json.RawMessage `json:"cells"`
	}
	b, err := json.Marshal(spec)
	if err != nil || json.Unmarshal(b, &top) != nil {
		return f
	}
	if json.Unmarshal(top.Scale, &f.scale) != nil || f.scale <= 0 || f.scale >= 1 {
		f.scale = 0
	}
	if top.Order == "shuffled" && json.Unmarshal(top.Seed, &f.seed) != nil {
		f.seed = 0
	}
	for _, raw := range top.Cells {
		g := specGroupOf(raw)
		name := cmpOr(g.Label, g.Protocol)
		if _, seen := f.order[name]; name != "" && !seen {
			f.order[name] = len(f.order)
		}
		set := func(m *map[string]string, v string) {
			if v != "" {
				if *m == nil {
					*m = map[string]string{}
				}
				(*m)[name] = v
			}
		}
		set(&f.engines, cmpOr(g.Params["engine"], map[string]string{"load": LoadEngine}[g.Params["mode"]]))
		set(&f.dialers, g.Dialer)
		set(&f.versions, g.HTTP)
		set(&f.protos, g.Protocol)
		if g.Duration != "0s" {
			set(&f.durations, g.Duration)
		}
		clear := !g.TLS && !strings.HasPrefix(g.URL, "https:")
		if clear && !slices.Contains(f.plain, name) {
			f.plain = append(f.plain, name)
		}
		if clear && g.HTTP == "1.1" {
			f.cleartext = append(f.cleartext, name)
		} else if clear && g.HTTP == "2" && !slices.Contains(f.h2c, name) {
			f.h2c = append(f.h2c, name)
		}
		if u, err := url.Parse(g.URL); err == nil && g.URL != "" && net.ParseIP(u.Hostname()) != nil && !slices.Contains(f.literal, name) {
			f.literal = append(f.literal, name)
		}
		if name != g.Protocol && !slices.Contains(f.labelled, name) {
			f.labelled = append(f.labelled, name)
		}
		if (g.Keepalive || g.Params["keepalive"] == "true") && !slices.Contains(f.keepalive, name) {
			f.keepalive = append(f.keepalive, name)
		}
		if g.Streams > 1 {
			if f.streams == nil {
				f.streams = map[string]int{}
			}
			f.streams[name] = g.Streams
		}
		f.planned += len(g.Paths) * len(g.Conns) * g.Runs
	}
	return f
}

// specGroupOf decodes a cell group field by field, so that one field of
// an unexpected type loses only itself.
func specGroupOf(raw json.RawMessage) specGroup {
	var fields map[string]json.RawMessage
	var g specGroup
	if json.Unmarshal(raw, &fields) != nil {
		return g
	}
	json.Unmarshal(fields["label"], &g.Label)
	json.Unmarshal(fields["protocol"], &g.Protocol)
	json.Unmarshal(fields["dialer"], &g.Dialer)
	json.Unmarshal(fields["http_version"], &g.HTTP)
	json.Unmarshal(fields["paths"], &g.Paths)
	json.Unmarshal(fields["conns"], &g.Conns)
	json.Unmarshal(fields["runs"], &g.Runs)
	json.Unmarshal(fields["tls"], &g.TLS)
	json.Unmarshal(fields["url"], &g.URL)
	json.Unmarshal(fields["keepalive"], &g.Keepalive)
	json.Unmarshal(fields["duration"], &g.Duration)
	var params map[string]json.RawMessage
	json.Unmarshal(fields["params"], &params)
	for k, v := range params {
		var s string
		if json.Unmarshal(v, &s) == nil {
			if g.Params == nil {
				g.Params = map[string]string{}
			}
			g.Params[k] = s
		}
	}
	// A probe's header keeps its options in params, as strings.
	g.TLS = g.TLS || g.Params["tls"] == "true"
	g.URL = cmpOr(g.URL, g.Params["url"])
	json.Unmarshal(fields["streams"], &g.Streams)
	if n, err := strconv.Atoi(g.Params["streams"]); err == nil && g.Streams == 0 {
		g.Streams = n
	}
	return g
}

// UnscheduledRate is why a merge of segments that ran without a schedule
// has no rate/s: each merged run's window spans the segments' runs, which
// did not run together, so completions over it are no rate of the servers
// (nor of all users at once). Every other figure stands: a transaction's
// times are its own.
const UnscheduledRate = "merged from segments that ran without a schedule (--start-at): their runs did not run together, so no rate of all users at once"

// unscheduledMerge is UnscheduledRate for a merged result whose segments
// had no schedule, "" otherwise.
func unscheduledMerge(merged []result.Segment) string {
	if len(merged) == 0 || !merged[0].StartAt.IsZero() {
		return ""
	}
	return UnscheduledRate
}
