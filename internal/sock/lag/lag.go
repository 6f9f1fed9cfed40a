// Package lag counts, for the whole process, how long received bytes
// waited for the client: from the kernel's receive stamp of a read's bytes
// to the moment the read returned them (the event loops' and the DNS load
// engine's reads, and Go-engine reads of stamped connections). A client
// that keeps up reads within microseconds; one that is the bottleneck
// leaves replies queued in its sockets, and this delay grows with the
// load: the self-check's figure of the client's own lag (docs/metrics.md).
//
// It imports nothing of v6lab.
package lag

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// sub is the number of buckets per power of two (a bucket's width is at
// most 1/sub of its value: quantiles within about 20%).
const (
	subBits = 2
	sub     = 1 << subBits
	buckets = 64 * sub
)

// Hist counts delays by bucket; safe for concurrent use. The zero Hist
// is empty.
type Hist struct{ counts [buckets]atomic.Uint64 }

// Add counts one delay (nothing for d < 0: clocks that disagree).
func (h *Hist) Add(d time.Duration) {
	if d < 0 {
		return
	}
	h.counts[bucket(uint64(d))].Add(1)
}

// Read returns the counts so far.
func (h *Hist) Read() Counts {
	var c Counts
	for i := range h.counts {
		c[i] = h.counts[i].Load()
	}
	return c
}

// process is the process's reads' lag.
var process Hist

// bucket is d's bucket: exact below sub ns, then sub per power of two.
func bucket(ns uint64) int {
	if ns < sub {
		return int(ns)
	}
	e := bits.Len64(ns) - 1 // ns in [2^e, 2^(e+1))
	m := (ns >> (e - subBits)) & (sub - 1)
	return (e-subBits+1)*sub + int(m)
}

// lower is the smallest delay in bucket b.
func lower(b int) uint64 {
	if b < sub {
		return uint64(b)
	}
	e := b/sub + subBits - 1
	m := uint64(b % sub)
	return (1 << e) | m<<(e-subBits)
}

// Add counts one read whose bytes waited d (nothing for d < 0: clocks
// that disagree).
func Add(d time.Duration) { process.Add(d) }

// Counts are the reads counted by delay bucket.
type Counts [buckets]uint64

// Read returns the process's counts so far (Sub of two readings: the
// reads between).
func Read() Counts { return process.Read() }

// Sub is the reads counted in c and not in prev.
func (c Counts) Sub(prev Counts) Counts {
	for i := range c {
		c[i] -= prev[i]
	}
	return c
}

// N is the number of reads counted.
func (c Counts) N() uint64 {
	var n uint64
	for _, v := range c {
		n += v
	}
	return n
}

// Quantile is the q quantile of the delays (0 when none was counted): the
// midpoint of the bucket that holds it.
func (c Counts) Quantile(q float64) time.Duration {
	n := c.N()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n-1)) + 1
	var seen uint64
	for b, v := range c {
		seen += v
		if seen >= rank {
			lo := lower(b)
			hi := lo
			if b+1 < buckets {
				hi = lower(b + 1)
			}
			return time.Duration((lo + hi) / 2)
		}
	}
	return 0
}
