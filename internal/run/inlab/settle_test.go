package inlab

import (
	"context"
	"testing"
	"time"

	"v6lab/internal/result"
)

// keeper is a probe that keeps what its transactions opened until closed,
// as a keepalive cell's probe keeps its users' connections.
type keeper struct {
	fails  int // transactions that fail before one completes
	did    int
	closed int
}

func (k *keeper) Do(context.Context, int) result.Sample {
	if k.closed > 0 {
		return result.Sample{Err: "used after close"}
	}
	k.did++
	if k.did <= k.fails {
		return result.Sample{Err: "refused"}
	}
	return result.Sample{}
}

func (k *keeper) Close() error { k.closed++; return nil }

// TestSettlingClosesWhatItKept: settling's probe is closed once its path
// settled, or gave up, so the connections it kept (HTTP/3 keepalive's)
// send nothing into the first runs (trial9's settling strays).
func TestSettlingClosesWhatItKept(t *testing.T) {
	k := &keeper{fails: 2}
	ok, last := settlePath(context.Background(), k, 5, time.Second)
	if !ok || last != "" || k.did != 3 || k.closed != 1 {
		t.Errorf("settled: ok %v last %q, %d transactions, closed %d times; want ok after 3, closed once", ok, last, k.did, k.closed)
	}
	k = &keeper{fails: 9}
	ok, last = settlePath(context.Background(), k, 2, time.Second)
	if ok || last != "refused" || k.did != 2 || k.closed != 1 {
		t.Errorf("failed: ok %v last %q, %d transactions, closed %d times; want not ok after 2, closed once", ok, last, k.did, k.closed)
	}
}
