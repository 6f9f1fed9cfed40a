package lag

import (
	"testing"
	"time"
)

func TestBucketsCoverEveryDelayInOrder(t *testing.T) {
	prev := -1
	for _, ns := range []uint64{0, 1, 3, 4, 5, 7, 8, 100, 1000, 12345, 1 << 20, 1<<40 + 7, 1<<63 + 1} {
		b := bucket(ns)
		if b < prev || b >= buckets {
			t.Fatalf("bucket(%d) = %d after %d", ns, b, prev)
		}
		if lo := lower(b); lo > ns || (b+1 < buckets && lower(b+1) <= ns) {
			t.Fatalf("%d ns in bucket %d of [%d, %d)", ns, b, lo, lower(b+1))
		}
		prev = b
	}
}

func TestQuantilesOfAReading(t *testing.T) {
	before := Read()
	for i := 0; i < 90; i++ {
		Add(10 * time.Microsecond)
	}
	for i := 0; i < 10; i++ {
		Add(5 * time.Millisecond)
	}
	Add(-time.Second) // ignored
	c := Read().Sub(before)
	if c.N() != 100 {
		t.Fatalf("%d counted, want 100", c.N())
	}
	if p50 := c.Quantile(0.5); p50 < 8*time.Microsecond || p50 > 12*time.Microsecond {
		t.Errorf("p50 %v, want about 10µs", p50)
	}
	if p99 := c.Quantile(0.99); p99 < 4*time.Millisecond || p99 > 6*time.Millisecond {
		t.Errorf("p99 %v, want about 5ms", p99)
	}
	var none Counts
	if none.Quantile(0.5) != 0 {
		t.Error("a quantile of nothing")
	}
}
