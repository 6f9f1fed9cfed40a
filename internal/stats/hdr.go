package stats

import (
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

// Quantile returns the value at q (0 < q <= 1), e.g. 0.999 for p99.9.
// It is zero when nothing was recorded.
func (l *Latency) Quantile(q float64) time.Duration {
	if l.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(l.h.ValueAtPercentile(q*100)) * time.Microsecond
}
