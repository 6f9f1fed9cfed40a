package report

import (
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// runTotaler sums a run's samples as the Summarizer does (a runAcc for
// its means, a cellAdds for its cell), for a writer that keeps only some
// rows (result.Writer.KeepEvery): the run's record then carries them.
type runTotaler struct {
	run  runAcc
	adds *cellAdds
	seq  int64
}

// NewTotaler makes a result.Totaler that sums samples exactly as a
// summary does.
func NewTotaler() result.Totaler { return &runTotaler{adds: newCellAdds()} }

func (t *runTotaler) Add(s *result.Sample) {
	t.seq++
	t.run.add(s)
	t.adds.add(s, t.seq, -1)
}

func (t *runTotaler) Totals() *result.RunTotals {
	out := &result.RunTotals{Completed: t.run.ok, Failed: t.run.failed, SumNS: t.run.sum, Sums: t.run.metrics, Counts: t.run.metricN,
		Failures: t.adds.failures, FirstError: t.adds.firstErr, Negotiated: t.adds.negotiated, Winners: t.adds.winners}
	out.Conn = t.adds.conn.counts()
	out.WhatIf = saveWhatIf(t.adds.whatif)
	t.adds.hist.Buckets(func(us, n int64) bool {
		out.Histogram = append(out.Histogram, [2]int64{us, n})
		return true
	})
	return out
}

// fromTotals is a run's sums and its cell's adds as a record's totals
// give them (seq: the record's place, for the first error).
func fromTotals(t *result.RunTotals, seq int64) (runAcc, *cellAdds) {
	r := runAcc{sum: t.SumNS, ok: t.Completed, failed: t.Failed, metrics: t.Sums, metricN: t.Counts}
	a := &cellAdds{completed: t.Completed, failed: t.Failed, failures: t.Failures, firstErr: t.FirstError, firstErrSeq: seq, hist: stats.NewLatency(),
		negotiated: t.Negotiated, winners: t.Winners, conn: connOfCounts(t.Conn)}
	for _, b := range t.Histogram {
		a.hist.RecordMicros(b[0], b[1])
	}
	a.whatif = restoreWhatIf(t.WhatIf)
	return r, a
}
