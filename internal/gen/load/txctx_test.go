package load

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"v6lab/internal/result"
)

// A transaction's context ends at its own deadline, not the first
// transaction's: the timer re-arms while the deadline has moved on.
func TestTxContextEndsAtEachTransactionsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tx := newTxContext(context.Background(), time.Second)
		defer tx.close()
		start := time.Now()
		tx.begin(start)
		time.Sleep(600 * time.Millisecond)
		tx.finish()
		tx.begin(time.Now()) // deadline start+1.6 s
		<-tx.Done()
		if got := time.Since(start); got != 1600*time.Millisecond {
			t.Fatalf("ended after %v, want 1.6s (the second transaction's deadline)", got)
		}
		if !errors.Is(tx.Err(), context.DeadlineExceeded) {
			t.Fatalf("Err = %v, want DeadlineExceeded", tx.Err())
		}
		if dl, ok := tx.Deadline(); !ok || !dl.Equal(start.Add(1600*time.Millisecond)) {
			t.Fatalf("Deadline = %v %v", dl, ok)
		}
		// The next transaction has a context of its own, not ended.
		tx.finish()
		tx.begin(time.Now())
		if tx.Err() != nil {
			t.Fatalf("a new transaction's context has ended: %v", tx.Err())
		}
		select {
		case <-tx.Done():
			t.Fatal("a new transaction's Done is closed")
		default:
		}
		<-tx.Done()
		if got := time.Since(start); got != 2600*time.Millisecond {
			t.Fatalf("the third transaction ended after %v, want 2.6s", got)
		}
	})
}

// The parent's end ends the context for good, and runs what was
// registered; a transaction's finish drops what it left registered.
func TestTxContextFollowsItsParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		tx := newTxContext(parent, time.Hour)
		defer tx.close()
		var ran, dropped, stopped atomic.Int32
		tx.begin(time.Now())
		AfterFunc(tx, func() { dropped.Add(1) })
		tx.finish()
		tx.begin(time.Now())
		AfterFunc(tx, func() { ran.Add(1) })
		stop := AfterFunc(tx, func() { stopped.Add(1) })
		if !stop() || stop() {
			t.Fatal("stop did not report stopping once")
		}
		child, ccancel := context.WithTimeout(tx, time.Hour)
		defer ccancel()
		cancel()
		<-tx.Done()
		<-child.Done() // a context derived from it ends with it
		synctest.Wait()
		if ran.Load() != 1 || dropped.Load() != 0 || stopped.Load() != 0 {
			t.Fatalf("ran %d, dropped %d, stopped %d: want 1 0 0", ran.Load(), dropped.Load(), stopped.Load())
		}
		if !errors.Is(tx.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
			t.Fatalf("Err = %v, child's %v: want Canceled", tx.Err(), child.Err())
		}
		tx.begin(time.Now()) // the parent ended: so does every transaction
		if tx.Err() == nil {
			t.Fatal("a transaction after the parent's end has a live context")
		}
		var late atomic.Int32
		AfterFunc(tx, func() { late.Add(1) })
		synctest.Wait()
		if late.Load() != 1 {
			t.Fatal("AfterFunc on an ended context did not run")
		}
	})
}

// Sustained's users end their transactions at the timeout, each with a
// context that is its own.
func TestSustainedTimesOutEachTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var samples []time.Duration
		n := Sustained(context.Background(), waiter{}, All(3), 2500*time.Millisecond, time.Second, func(s result.Sample) {
			mu.Lock()
			samples = append(samples, time.Duration(s.TotalNS))
			mu.Unlock()
		})
		if n != 9 || len(samples) != 9 {
			t.Fatalf("%d transactions, %d samples: want 9 (3 users, 3 each)", n, len(samples))
		}
		for _, d := range samples {
			if d != time.Second {
				t.Fatalf("a transaction lasted %v, want its 1s timeout", d)
			}
		}
	})
}

// waiter's transactions wait for their context's end.
type waiter struct{}

func (waiter) Do(ctx context.Context, _ int) result.Sample {
	start := time.Now()
	<-ctx.Done()
	return result.Sample{TotalNS: int64(time.Since(start))}
}

// The cost of a transaction's context with one AfterFunc (an HTTP/3
// stream's), 50 users a CPU: a WithTimeout per transaction against the
// user's txContext.
func BenchmarkTransactionContext(b *testing.B) {
	f := func() {}
	b.Run("WithTimeout", func(b *testing.B) {
		b.SetParallelism(50)
		b.RunParallel(func(pb *testing.PB) {
			uctx, ucancel := context.WithCancel(context.Background())
			defer ucancel()
			for pb.Next() {
				ctx, cancel := context.WithTimeout(uctx, time.Second)
				stop := context.AfterFunc(ctx, f)
				_ = ctx.Err()
				stop()
				cancel()
			}
		})
	})
	b.Run("txContext", func(b *testing.B) {
		b.SetParallelism(50)
		b.RunParallel(func(pb *testing.PB) {
			tx := newTxContext(context.Background(), time.Second)
			defer tx.close()
			for pb.Next() {
				tx.begin(time.Now())
				stop := AfterFunc(tx, f)
				_ = tx.Err()
				stop()
				tx.finish()
			}
		})
	})
}

// TestDerivedContextsEndWithTheirTransaction (trial11 HIGH 0): a context
// derived from a transaction's (WithCancel, as net/http and crypto/tls
// derive theirs) is cancelled by a function the transaction's end starts;
// the user's next transaction, begun at once, waits for it, so it reads
// the ended transaction's error, not the new one's nil (Go's context
// panicked: "missing cancel error").
func TestDerivedContextsEndWithTheirTransaction(t *testing.T) {
	for range 300 {
		tx := newTxContext(context.Background(), 50*time.Microsecond)
		tx.begin(time.Now())
		child, cancel := context.WithCancel(tx)
		<-tx.Done()
		tx.finish()
		tx.begin(time.Now())
		<-child.Done()
		if !errors.Is(child.Err(), context.DeadlineExceeded) {
			t.Fatalf("the derived context ended with %v", child.Err())
		}
		cancel()
		tx.close()
	}
}
