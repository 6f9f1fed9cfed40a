package stats

import (
	"math/bits"
	"sort"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency pools response times into an HDR histogram (1 µs to 1 h, three
// significant digits) so percentiles of millions of samples cost fixed
// memory. It is the library's sparse form: its memory grows with the
// buckets in use (a few KB for a cell of typical response times), not
// the 188 KB of every bucket, so a summary of 10,000 cells fits.
type Latency struct {
	h *hdrhistogram.PackedHistogram
}

// The histogram's range and precision.
const (
	latencyLowest  = 1
	latencyHighest = int64(time.Hour / time.Microsecond)
	latencyDigits  = 3
)

// NewLatency returns an empty histogram.
func NewLatency() *Latency {
	return &Latency{h: hdrhistogram.NewPacked(latencyLowest, latencyHighest, latencyDigits)}
}

// Record adds one response time; values beyond an hour are clamped to it.
func (l *Latency) Record(d time.Duration) {
	l.RecordMicros(d.Microseconds(), 1)
}

// RecordMicros adds n values of us microseconds (clamped to 1 µs … 1 h).
func (l *Latency) RecordMicros(us, n int64) {
	us = min(max(us, 1), latencyHighest)
	_ = l.h.RecordValues(us, n) // cannot fail: the value is within range
}

// Merge adds every value of o.
func (l *Latency) Merge(o *Latency) { l.h.Merge(o.h) }

// Buckets calls fn with each bucket in use, in ascending order: its
// lowest value (µs) and its count. Recording each count at its value
// (RecordMicros) rebuilds the histogram exactly.
func (l *Latency) Buckets(fn func(us, n int64) bool) { l.h.ForEachBucket(fn) }

// Count is the number of recorded values.
func (l *Latency) Count() int64 { return l.h.TotalCount() }

// bucketTop is the highest value in the bucket whose lowest value is
// from: the histogram's value of a rank (HDR's highest equivalent
// value). Below 2048 µs buckets are one µs wide; each power of two above
// halves the precision (three significant digits: 2048 sub-buckets).
func bucketTop(from int64) int64 {
	shift := bits.Len64(uint64(from)|2047) - 11
	return from + int64(1)<<shift - 1
}

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
	l.h.ForEachBucket(func(from, count int64) bool {
		seen += count
		for k < len(order) && want[order[k]] <= seen {
			out[order[k]] = time.Duration(bucketTop(from)) * time.Microsecond
			k++
		}
		return k < len(order)
	})
	for ; k < len(order); k++ {
		out[order[k]] = time.Duration(l.h.Max()) * time.Microsecond // as the dense histogram did
	}
	return out
}
