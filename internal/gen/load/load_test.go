package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// rendezvous completes only when all n users are inside Do at once, which
// can happen only if they were released together.
type rendezvous struct {
	n       int32
	inside  atomic.Int32
	allHere chan struct{}
	once    sync.Once
}

func (r *rendezvous) Do(ctx context.Context, user int) result.Sample {
	tr := Begin("test", path.IPv4)
	if r.inside.Add(1) == r.n {
		r.once.Do(func() { close(r.allHere) })
	}
	select {
	case <-r.allHere:
		return tr.Done("ok")
	case <-ctx.Done():
		return tr.Fail(ctx, "wait", ctx.Err())
	}
}

func TestClosedReleasesAllUsersTogether(t *testing.T) {
	const n = 2000
	r := &rendezvous{n: n, allHere: make(chan struct{})}
	var mu sync.Mutex
	users := map[int]bool{}
	Closed(context.Background(), r, All(n), 10*time.Second, func(s result.Sample) {
		mu.Lock()
		defer mu.Unlock()
		if !s.OK() {
			t.Errorf("user %d failed: %s", s.User, s.Err)
		}
		users[s.User] = true
	})
	if len(users) != n {
		t.Fatalf("%d distinct users reported, want %d", len(users), n)
	}
}

type sleeper struct{ d time.Duration }

func (s sleeper) Do(ctx context.Context, _ int) result.Sample {
	tr := Begin("test", path.IPv6)
	select {
	case <-time.After(s.d):
		return tr.Done("ok")
	case <-ctx.Done():
		return tr.Fail(ctx, "wait", ctx.Err())
	}
}

func TestClosedTimeoutIsAFailedSample(t *testing.T) {
	var got []result.Sample
	var mu sync.Mutex
	start := time.Now()
	Closed(context.Background(), sleeper{time.Hour}, All(5), 50*time.Millisecond, func(s result.Sample) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	})
	if time.Since(start) > 5*time.Second {
		t.Fatal("timeout not enforced")
	}
	if len(got) != 5 {
		t.Fatalf("%d samples, want 5: a timed-out user must still be reported", len(got))
	}
	for _, s := range got {
		if s.OK() || s.ErrKind != "timeout" {
			t.Errorf("sample %+v is not a timeout failure", s)
		}
	}
}

func TestSustainedRepeatsUntilTheEnd(t *testing.T) {
	var count atomic.Int64
	started := Sustained(context.Background(), sleeper{5 * time.Millisecond}, All(3), 200*time.Millisecond, time.Second, func(s result.Sample) {
		count.Add(1)
	})
	if started != count.Load() || started < 3*10 {
		t.Fatalf("started %d, emitted %d; want at least 30 back-to-back transactions", started, count.Load())
	}
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		phase string
		err   error
		want  result.ErrKind
	}{
		{"connect", fmt.Errorf("x: %w", path.ErrFamily), "family"},
		{"io", context.DeadlineExceeded, "timeout"},
		{"resolve", errors.New("NXDOMAIN"), "resolve"},
		{"reply", errors.New("status 500"), "protocol"},
		{"io", errors.New("eof"), "io"},
	}
	for _, c := range cases {
		if got := Classify(ctx, c.phase, c.err); got != c.want {
			t.Errorf("%s/%v = %s, want %s", c.phase, c.err, got, c.want)
		}
	}
}

func TestOpenResolvesDialsPinnedAndReleases(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	ctx := context.Background()
	tr := Begin("x", path.IPv4)
	c, release, failed := tr.Open(ctx, &path.Resolver{}, "127.0.0.1", port, path.Dialer{Path: path.IPv4})
	if failed != nil {
		t.Fatal(failed.Err)
	}
	if tr.S.ConnectNS == 0 || tr.S.Remote != ln.Addr().String() {
		t.Errorf("trace %+v", tr.S)
	}
	release()
	if _, err := c.Write([]byte("x")); err == nil {
		t.Error("release left the connection open")
	}
	// The wrong family is refused before any dial, and a refused port is a
	// connect failure.
	if _, _, failed := Begin("x", path.IPv6).Open(ctx, &path.Resolver{}, "127.0.0.1", port, path.Dialer{Path: path.IPv6}); failed == nil || !strings.HasPrefix(failed.Err, "resolve: ") {
		t.Errorf("ipv6 to an IPv4 literal: %+v", failed)
	}
	ln.Close()
	if _, _, failed := Begin("x", path.IPv4).Open(ctx, &path.Resolver{}, "127.0.0.1", port, path.Dialer{Path: path.IPv4}); failed == nil || failed.ErrKind != "refused" {
		t.Errorf("closed port: %+v", failed)
	}
}

// warmProbe records the order of Warm and Do calls.
type warmProbe struct {
	mu     sync.Mutex
	warmed map[int]bool
	late   int // Do calls that found a user not warmed, or Warm after a Do
	dos    int
}

func (w *warmProbe) Warm(user int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dos > 0 {
		w.late++
	}
	w.warmed[user] = true
}

func (w *warmProbe) Do(ctx context.Context, user int) result.Sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dos++
	if !w.warmed[user] {
		w.late++
	}
	return result.Sample{}
}

// TestEveryUserWarmsBeforeTheBarrier: a Warmer is warmed once per user,
// and every warm-up is over before the first transaction starts.
func TestEveryUserWarmsBeforeTheBarrier(t *testing.T) {
	w := &warmProbe{warmed: map[int]bool{}}
	Closed(context.Background(), w, All(50), time.Second, func(result.Sample) {})
	if len(w.warmed) != 50 || w.dos != 50 || w.late != 0 {
		t.Fatalf("warmed %d users, %d transactions, %d out of order", len(w.warmed), w.dos, w.late)
	}
}

// muxProbe has 3 workers a user (Multiplexer) and notes what each Do got.
type muxProbe struct {
	mu   sync.Mutex
	seen map[int]int // Do's argument: its calls
}

func (*muxProbe) Streams() int { return 3 }

func (m *muxProbe) Do(ctx context.Context, w int) result.Sample {
	m.mu.Lock()
	m.seen[w]++
	m.mu.Unlock()
	time.Sleep(time.Millisecond)
	return Begin("test", path.IPv4).Done("ok")
}

// TestMultiplexerRunsWorkersPerUser: a Multiplexer's users each run its
// Streams() workers, worker k of user u doing Do(u*3+k), in both models,
// and every sample is the user's (a segment's users keep their numbers).
func TestMultiplexerRunsWorkersPerUser(t *testing.T) {
	for _, sustained := range []bool{false, true} {
		m := &muxProbe{seen: map[int]int{}}
		users := map[int]int{}
		var mu sync.Mutex
		emit := func(s result.Sample) {
			mu.Lock()
			users[s.User]++
			mu.Unlock()
		}
		us := Users{First: 2, N: 2}
		if sustained {
			Sustained(context.Background(), m, us, 30*time.Millisecond, time.Second, emit)
		} else {
			Closed(context.Background(), m, us, time.Second, emit)
		}
		if len(m.seen) != 6 || len(users) != 2 || users[2] == 0 || users[3] == 0 {
			t.Fatalf("sustained %v: workers %v, samples by user %v", sustained, m.seen, users)
		}
		for w := 6; w < 12; w++ {
			if m.seen[w] == 0 || (!sustained && m.seen[w] != 1) {
				t.Errorf("sustained %v: worker %d ran %d transactions", sustained, w, m.seen[w])
			}
		}
	}
}

// TestDoneEndsAtTheLastRead: the end mark is the read that brought the
// last bytes, not the (later) call to Done; Restart moves the start.
func TestDoneEndsAtTheLastRead(t *testing.T) {
	tr := Begin("x", "ipv4")
	time.Sleep(2 * time.Millisecond)
	tr.Restart()
	if since := time.Since(tr.S.Start); since > time.Millisecond {
		t.Fatalf("Restart left the start %v ago", since)
	}
	tr.Read(10)
	tr.Read(0) // a read that brought nothing does not move the end
	read := tr.Since()
	time.Sleep(5 * time.Millisecond)
	s := tr.Done("ok")
	if s.TotalNS > read+int64(time.Millisecond) || s.TotalNS <= 0 {
		t.Errorf("total %v, the last read at %v", time.Duration(s.TotalNS), time.Duration(read))
	}
	tr2 := Begin("x", "ipv4")
	time.Sleep(time.Millisecond)
	if s := tr2.Done("ok"); s.TotalNS < int64(time.Millisecond) {
		t.Errorf("without reads the end is Done's: %v", time.Duration(s.TotalNS))
	}
}

// TestWireStartsAtTheSYNWithoutLookup: a transaction to an IP literal has
// no query to start its wire time; its connection's SYN, stamped in the
// kernel (synstamp), does: wire_ns is set and within the total.
func TestWireStartsAtTheSYNWithoutLookup(t *testing.T) {
	testutil.RequireRoot(t, "needs root: the SYN stamp is a BPF program")
	if !path.SYNReady() {
		t.Skip("no SYN stamps on this host (cgroup v2, sockops)")
	}
	ln := serveEach(t, func(c net.Conn) { io.Copy(c, c) })
	port := ln.Addr().(*net.TCPAddr).Port
	// kstamp.Hold waits a bounded time for the kernel's receive stamps to
	// come on; on a loaded machine the first replies may still lack one.
	for try := 0; try < 5; try++ {
		tr := Begin("x", path.IPv4)
		c, release, failed := tr.Open(context.Background(), &path.Resolver{}, "127.0.0.1", port, path.Dialer{Path: path.IPv4})
		if failed != nil {
			t.Fatal(failed.Err)
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, make([]byte, 4)); err != nil {
			t.Fatal(err)
		}
		s := tr.Done("ok")
		release()
		syn := path.SYNSent(tr.synCookie)
		if syn.IsZero() || syn.Before(s.Start.Add(-time.Millisecond)) || syn.After(s.Start.Add(time.Duration(s.TotalNS))) {
			t.Fatalf("SYN stamp %v, transaction from %v for %v", syn, s.Start, time.Duration(s.TotalNS))
		}
		if tr.conns[0].LastRx.IsZero() {
			continue
		}
		if s.WireNS <= 0 || s.WireNS > s.TotalNS {
			t.Errorf("wire %d total %d: want a wire time from the SYN, within the total", s.WireNS, s.TotalNS)
		}
		if s.WireFirstByteNS <= 0 || s.WireFirstByteNS > s.WireNS {
			t.Errorf("wire first byte %d of wire %d", s.WireFirstByteNS, s.WireNS)
		}
		return
	}
	t.Error("no reply had a receive stamp")
}
