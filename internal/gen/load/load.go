// Package load drives transactions: the closed model of the study (N
// simulated users released together at one barrier, one transaction each)
// and a sustained mode (N users back to back for a duration) for comparing
// request rates with other tools. Every transaction becomes a Sample, failed
// or not.
//
// It imports only path and result; protocols plug in as Probes.
package load

import (
	"context"
	"sync"
	"time"

	"v6lab/internal/result"
)

// Probe performs one transaction of one protocol over one path.
type Probe interface {
	// Do runs one transaction for simulated user `user` and describes it.
	// It must return soon after ctx is done; a transaction cut short by
	// ctx is a failed sample, not a missing one.
	Do(ctx context.Context, user int) result.Sample
}

// Warmer is a Probe that can warm, before the barrier, what its first
// transaction will use (the kernel's socket code, the resolver), so the
// first user of a run pays no more than the others (docs/metrics.md).
type Warmer interface {
	Warm(user int)
}

// Sustainer is a Probe that can run a sustained load itself, without a
// goroutine per user: its engine keeps each user's transaction in flight
// and starts the next one where it reads the reply (the DNS load engine),
// as C load generators do. Its samples are those Do would give. ok false:
// it does not for this probe, and Sustained runs a goroutine per user.
type Sustainer interface {
	Sustain(ctx context.Context, us Users, duration, timeout time.Duration, emit func(result.Sample)) (started int64, ok bool)
}

func warm(p Probe, user int) {
	if w, ok := p.(Warmer); ok {
		w.Warm(user)
	}
}

// Users are the users a process runs of a run: First to First+N-1 (all
// of them, or one segment's share: result.Segment.Users).
type Users struct{ First, N int }

// All is every user of a run of n.
func All(n int) Users { return Users{0, n} }

// Multiplexer is a probe whose users each keep several transactions at
// once on their one connection (HTTP/2's streams, as h2load's -m): the
// engines run Streams() workers a user, worker k of user u doing its
// transactions as Do(ctx, u*Streams()+k); every sample is user u's.
type Multiplexer interface{ Streams() int }

// workers is how many workers run a user of p, and the user and the Do
// argument of worker i of us.
func workers(p Probe, us Users) (m int, of func(i int) (user, w int)) {
	m = 1
	if x, ok := p.(Multiplexer); ok {
		m = max(x.Streams(), 1)
	}
	return m, func(i int) (int, int) {
		user := us.First + i/m
		return user, user*m + i%m
	}
}

// Closed releases the users at once, each doing one transaction bounded by
// timeout (a Multiplexer's users one a worker), and calls emit for every
// sample as it completes (emit must be safe for concurrent use). It
// returns once every user has reported.
func Closed(ctx context.Context, p Probe, us Users, timeout time.Duration, emit func(result.Sample)) {
	m, of := workers(p, us)
	n := us.N * m
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		user, w := of(i)
		go func() {
			defer done.Done()
			warm(p, w)
			ready.Done()
			<-release
			tctx, cancel := context.WithTimeout(ctx, timeout)
			s := p.Do(tctx, w)
			cancel()
			s.User = user
			emit(s)
		}()
	}
	ready.Wait() // every user is parked at the barrier before any starts
	close(release)
	done.Wait()
}

// Sustained runs the users, each repeating transactions back to back until
// duration has passed (or ctx ends); a transaction started before the end
// is allowed to finish within its timeout. It returns the number of
// transactions started.
//
// A Sustainer probe runs the users itself.
func Sustained(ctx context.Context, p Probe, us Users, duration, timeout time.Duration, emit func(result.Sample)) int64 {
	if d, ok := p.(Sustainer); ok {
		if n, ok := d.Sustain(ctx, us, duration, timeout, emit); ok {
			return n
		}
	}
	m, of := workers(p, us)
	n := us.N * m
	var (
		done    sync.WaitGroup
		ready   sync.WaitGroup
		mu      sync.Mutex
		started int64
	)
	release := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	var end time.Time
	for i := 0; i < n; i++ {
		user, w := of(i)
		go func() {
			defer done.Done()
			warm(p, w)
			ready.Done()
			<-release
			// One context for the user's transactions, each bounded by
			// timeout (txContext: a WithTimeout per transaction cost a
			// tenth of the client's own time at 100 HTTP/3 users).
			tx := newTxContext(ctx, timeout)
			defer tx.close()
			var count int64
			for ctx.Err() == nil {
				now := time.Now()
				if !now.Before(end) {
					break
				}
				tx.begin(now)
				s := p.Do(tx, w)
				tx.finish()
				s.User = user
				emit(s)
				count++
			}
			mu.Lock()
			started += count
			mu.Unlock()
		}()
	}
	ready.Wait()
	end = time.Now().Add(duration)
	close(release)
	done.Wait()
	return started
}
