package stats

import (
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency pools response times into an HDR histogram (1 µs to 1 h, three
// significant digits) so percentiles of millions of samples cost fixed memory.
type Latency struct {
	h *hdrhistogram.Histogram
}

// NewLatency returns an empty histogram.
func NewLatency() *Latency {
	return &Latency{h: hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)}
}

// Record adds one response time; values beyond an hour are clamped to it.
func (l *Latency) Record(d time.Duration) {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	if max := l.h.HighestTrackableValue(); us > max {
		us = max
	}
	_ = l.h.RecordValue(us) // cannot fail: the value is within range
}

// Count is the number of recorded values.
func (l *Latency) Count() int64 { return l.h.TotalCount() }

// Quantile returns the value at q (0 <= q <= 1), e.g. 0.999 for p99.9, by
// the nearest-rank definition (NearestRank): the recorded value of rank
// ceil(q·n), at the histogram's precision (exact below 2048 µs, three
// significant digits above). q = 0 is the smallest value. It is zero when
// nothing was recorded. (The library's ValueAtPercentile rounds q·n to the
// nearest rank instead, which understates tails at small n.)
func (l *Latency) Quantile(q float64) time.Duration { return l.Quantiles(q)[0] }

// Quantiles is Quantile for several qs at once, in one pass over the
// histogram.
func (l *Latency) Quantiles(qs ...float64) []time.Duration {
	out := make([]time.Duration, len(qs))
	n := l.h.TotalCount()
	if n == 0 {
		return out
	}
	order := make([]int, len(qs))
	want := make([]int64, len(qs))
	for i, q := range qs {
		order[i] = i
		want[i] = 1
		if q > 0 {
			want[i] = int64(rank(min(q, 1), int(n)))
		}
	}
	sort.Slice(order, func(a, b int) bool { return want[order[a]] < want[order[b]] })
	var seen int64
	k := 0
	for _, b := range l.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		seen += b.Count
		for k < len(order) && want[order[k]] <= seen {
			out[order[k]] = time.Duration(b.To) * time.Microsecond
			k++
		}
		if k == len(order) {
			break
		}
	}
	for ; k < len(order); k++ {
		out[order[k]] = time.Duration(l.h.Max()) * time.Microsecond
	}
	return out
}
