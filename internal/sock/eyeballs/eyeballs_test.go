package eyeballs

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var (
	v6a = netip.MustParseAddr("2001:db8::1")
	v6b = netip.MustParseAddr("2001:db8::2")
	v4a = netip.MustParseAddr("192.0.2.1")
	v4b = netip.MustParseAddr("192.0.2.2")
)

// world is a fake network: per address, how long a connection takes, or
// that it never answers (blackhole) or is refused, or that it does not
// heed a cancel (stubborn); per family, how long
// its lookup takes. It counts the connections it made and those closed.
type world struct {
	connect   map[netip.Addr]time.Duration
	blackhole map[netip.Addr]bool
	refused   map[netip.Addr]bool
	stubborn  map[netip.Addr]bool    // connects in its time even when cancelled
	lookup    map[bool]time.Duration // by ipv6
	records   map[bool][]netip.Addr
	open      atomic.Int64
	asking    atomic.Int64 // lookups under way
	mu        sync.Mutex
	dialed    []netip.Addr
}

type conn struct {
	net.Conn
	w    *world
	once sync.Once
}

func (c *conn) Close() error {
	c.once.Do(func() { c.w.open.Add(-1) })
	return nil
}

func (w *world) dialer(delay time.Duration) Dialer {
	return Dialer{AttemptDelay: delay,
		Lookup: func(ctx context.Context, _ string, v6 bool) ([]netip.Addr, error) {
			w.asking.Add(1)
			defer w.asking.Add(-1)
			select {
			case <-time.After(w.lookup[v6]):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if len(w.records[v6]) == 0 {
				return nil, errors.New("no records")
			}
			return w.records[v6], nil
		},
		Dial: func(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
			w.mu.Lock()
			w.dialed = append(w.dialed, to.Addr())
			w.mu.Unlock()
			a := to.Addr()
			if w.refused[a] {
				return nil, errors.New("connection refused")
			}
			wait := w.connect[a]
			if w.blackhole[a] {
				wait = time.Hour
			}
			done := ctx.Done()
			if w.stubborn[a] {
				done = nil
			}
			select {
			case <-time.After(wait):
				w.open.Add(1)
				return &conn{w: w}, nil
			case <-done:
				return nil, ctx.Err()
			}
		}}
}

func newWorld() *world {
	return &world{connect: map[netip.Addr]time.Duration{}, blackhole: map[netip.Addr]bool{}, refused: map[netip.Addr]bool{}, stubborn: map[netip.Addr]bool{},
		lookup: map[bool]time.Duration{}, records: map[bool][]netip.Addr{true: {v6a, v6b}, false: {v4a, v4b}}}
}

// exactly checks a time DialContext recorded, exactly: the tests that time a
// dial run it in a synctest bubble, whose clock moves only when every
// goroutine of the dial waits, so a timer fires when it is due and an
// attempt starts at the instant Race asked for. On the real clock a loaded
// 2-CPU machine woke DialContext's timer up to 92 ms late, which no bound
// on wall time can tell from a dial that waited too long.
func exactly(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if got != want {
		t.Errorf("%s at %v, want %v", what, got, want)
	}
}

// TestHealthyIPv6WinsAtOnce: both families answer; IPv6 connects in 1 ms,
// first and alone.
func TestHealthyIPv6WinsAtOnce(t *testing.T) {
	w := newWorld()
	w.connect[v6a] = time.Millisecond
	r, err := w.dialer(0).DialContext(context.Background(), "h", 80)
	if err != nil {
		t.Fatal(err)
	}
	if !r.IPv6 || len(r.Attempts) != 1 || r.Attempts[0].Addr != v6a || !r.Attempts[0].Won {
		t.Fatalf("result %+v", r)
	}
	r.Conn.Close()
	if w.open.Load() != 0 {
		t.Errorf("%d connections left open", w.open.Load())
	}
}

// TestBlackholedIPv6FallsBackAfterTheDelay: IPv6 never answers; the IPv4
// attempt starts one Connection Attempt Delay after it (250 ms, and 100
// ms when configured), and wins; the IPv6 attempt is cancelled, nothing
// is left open.
func TestBlackholedIPv6FallsBackAfterTheDelay(t *testing.T) {
	for _, delay := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld()
				w.blackhole[v6a], w.blackhole[v6b] = true, true
				r, err := w.dialer(delay).DialContext(context.Background(), "h", 80)
				if err != nil {
					t.Fatal(err)
				}
				want := delay
				if want == 0 {
					want = AttemptDelay
				}
				if r.IPv6 || len(r.Attempts) != 2 || r.Attempts[1].Addr != v4a || !r.Attempts[1].Won || !r.Attempts[0].Aborted {
					t.Fatalf("result %+v", r)
				}
				exactly(t, "the IPv4 attempt", r.Attempts[1].Start, want)
				exactly(t, "the connection", r.Connect, want)
				r.Conn.Close()
				if w.open.Load() != 0 {
					t.Errorf("%d connections left open", w.open.Load())
				}
			})
		})
	}
}

// TestARefusedAttemptStartsTheNextAtOnce: a refusal does not wait out the
// delay (§5): the next address is tried at once.
func TestARefusedAttemptStartsTheNextAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.records[true] = []netip.Addr{v6a} // the next is IPv4's, whenever A comes
		w.refused[v6a] = true
		r, err := w.dialer(0).DialContext(context.Background(), "h", 80)
		if err != nil {
			t.Fatal(err)
		}
		if r.IPv6 || len(r.Attempts) != 2 || r.Attempts[0].Err == "" || r.Attempts[1].Addr != v4a {
			t.Fatalf("result %+v", r)
		}
		exactly(t, "the second attempt", r.Attempts[1].Start, 0)
		r.Conn.Close()
	})
}

// TestLateAAAAWaitsTheResolutionDelayThenUsesIPv4: A comes at once, AAAA
// after 300 ms: attempts start 50 ms after the A answer, over IPv4.
func TestLateAAAAWaitsTheResolutionDelayThenUsesIPv4(t *testing.T) {
	t.Run("late", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld()
			w.lookup[true] = 300 * time.Millisecond
			r, err := w.dialer(0).DialContext(context.Background(), "h", 80)
			if err != nil {
				t.Fatal(err)
			}
			if r.IPv6 || r.Attempts[0].Addr != v4a {
				t.Fatalf("result %+v", r)
			}
			exactly(t, "the first attempt", r.Attempts[0].Start, ResolutionDelay)
			r.Conn.Close()
			if n := w.asking.Load(); n != 0 {
				t.Errorf("%d lookups outlived the dial", n)
			}
		})
	})
	// AAAA within the resolution delay: IPv6 first after all.
	t.Run("within", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWorld()
			w.lookup[true] = 20 * time.Millisecond
			r, err := w.dialer(0).DialContext(context.Background(), "h", 80)
			if err != nil || !r.IPv6 {
				t.Fatalf("AAAA within 50 ms: %+v, %v", r, err)
			}
			exactly(t, "the first attempt", r.Attempts[0].Start, 20*time.Millisecond)
			r.Conn.Close()
		})
	})
}

// TestFamiliesInterleave: with every attempt slow, attempts go IPv6,
// IPv4, IPv6, IPv4, one delay apart.
func TestFamiliesInterleave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		for _, a := range []netip.Addr{v6a, v4a, v6b} {
			w.blackhole[a] = true
		}
		w.connect[v4b] = 5 * time.Millisecond
		r, err := w.dialer(60*time.Millisecond).DialContext(context.Background(), "h", 80)
		if err != nil {
			t.Fatal(err)
		}
		var order []netip.Addr
		for i, a := range r.Attempts {
			order = append(order, a.Addr)
			exactly(t, "attempt", a.Start, time.Duration(i)*60*time.Millisecond)
		}
		if len(order) != 4 || order[0] != v6a || order[1] != v4a || order[2] != v6b || order[3] != v4b || !r.Attempts[3].Won {
			t.Fatalf("order %v", order)
		}
		exactly(t, "the connection", r.Connect, 185*time.Millisecond)
		r.Conn.Close()
		if w.open.Load() != 0 {
			t.Errorf("%d connections left open", w.open.Load())
		}
	})
}

// TestNoAddressAndEveryFailureAreErrors: a name without records, and one
// whose every address refuses, fail with the reason; nothing leaks.
func TestNoAddressAndEveryFailureAreErrors(t *testing.T) {
	w := newWorld()
	w.records = map[bool][]netip.Addr{}
	if _, err := w.dialer(0).DialContext(context.Background(), "h", 80); err == nil {
		t.Error("a name without addresses connected")
	}
	w = newWorld()
	for _, a := range []netip.Addr{v6a, v6b, v4a, v4b} {
		w.refused[a] = true
	}
	r, err := w.dialer(0).DialContext(context.Background(), "h", 80)
	if err == nil || len(r.Attempts) != 4 {
		t.Errorf("every address refused: %+v, %v", r, err)
	}
	// A deadline ends a dial whose every address is blackholed: the four
	// attempts at 0, 20, 40 and 60 ms, all ended at the deadline.
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		for _, a := range []netip.Addr{v6a, v6b, v4a, v4b} {
			w.blackhole[a] = true
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		r, err := w.dialer(20*time.Millisecond).DialContext(ctx, "h", 80)
		if !errors.Is(err, context.DeadlineExceeded) || len(r.Attempts) != 4 {
			t.Errorf("blackholed: %d attempts, %v", len(r.Attempts), err)
		}
		for _, a := range r.Attempts {
			if !a.Aborted || a.End != 100*time.Millisecond {
				t.Errorf("attempt %+v not ended at the deadline", a)
			}
		}
		if w.open.Load() != 0 {
			t.Errorf("%d connections left open", w.open.Load())
		}
	})
}

// TestALateWinnerIsClosed: IPv6 connects just after IPv4 won, its dial
// deaf to the cancel: its connection is closed, not leaked, and only the
// winner is left open.
func TestALateWinnerIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newWorld()
		w.connect[v6a] = 40 * time.Millisecond
		w.stubborn[v6a] = true
		w.connect[v4a] = 5 * time.Millisecond
		r, err := w.dialer(10*time.Millisecond).DialContext(context.Background(), "h", 80)
		if err != nil {
			t.Fatal(err)
		}
		if r.IPv6 || r.Connect != 15*time.Millisecond {
			t.Fatalf("IPv6 %v at %v, want IPv4 at 15ms", r.IPv6, r.Connect)
		}
		if n := w.open.Load(); n != 1 {
			t.Errorf("%d connections open beside the winner's, want none", n-1)
		}
		r.Conn.Close()
		if w.open.Load() != 0 {
			t.Errorf("%d connections left open", w.open.Load())
		}
	})
}

// TestRaceDecidesByTheClock: Race alone, on a clock of the test's: what
// Step asks for, and when, as answers and outcomes come.
func TestRaceDecidesByTheClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	step := func(r *Race, ms int, want netip.Addr, wantWake int) {
		t.Helper()
		to, wake, err := r.Step(at(ms))
		if err != nil || to != want || (wantWake < 0) != wake.IsZero() || (wantWake >= 0 && !wake.Equal(at(wantWake))) {
			t.Fatalf("at %d ms: %v, wake %v, %v; want %v, wake at %d ms", ms, to, wake.Sub(t0), err, want, wantWake)
		}
	}
	none := netip.Addr{}
	r := Dialer{AttemptDelay: 100 * time.Millisecond}.Race("h", t0)
	step(r, 0, none, -1) // nothing answered: wait
	r.Answer(false, []netip.Addr{v4a}, nil, at(5))
	step(r, 5, none, 55) // A first: wait ResolutionDelay for AAAA
	r.Answer(true, []netip.Addr{v6a}, nil, at(20))
	step(r, 20, v6a, -1) // AAAA within it: IPv6 first
	step(r, 20, none, 120)
	step(r, 120, v4a, -1) // one delay later: IPv4
	r.Failed(0, errors.New("refused"), at(130))
	step(r, 130, none, -1) // nothing left to try while IPv4 runs
	r.Won(1, at(140))
	res := r.Result()
	if res.IPv6 || res.Connect != 140*time.Millisecond || res.AAAA != 20*time.Millisecond || res.A != 5*time.Millisecond ||
		res.Attempts[0].Err != "refused" || !res.Attempts[1].Won {
		t.Errorf("result %+v", res)
	}

	// No address at all: the race is lost once both have answered.
	r = Dialer{}.Race("h", t0)
	r.Answer(true, nil, errors.New("no AAAA"), at(1))
	step(r, 1, none, -1)
	r.Answer(false, nil, errors.New("no A"), at(2))
	if _, _, err := r.Step(at(2)); err == nil || err.Error() != "eyeballs: h has no address (AAAA: no AAAA; A: no A)" {
		t.Errorf("no address: %v", err)
	}
}
