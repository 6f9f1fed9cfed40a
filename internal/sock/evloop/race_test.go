package evloop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/eyeballs"
	"v6lab/internal/sock/resend"
)

// dualDNS answers the query "AAAA" with "6:::1" and "A" with
// "4:127.0.0.1", each after its delay (negative: never), and drops the
// first drop datagrams it gets.
func dualDNS(t *testing.T, delay6, delay4 time.Duration, drop int) (netip.AddrPort, func() int) {
	t.Helper()
	return udpServer(t, "udp4", "127.0.0.1:0", drop, func(q string, reply func(string)) {
		answer, delay := "4:127.0.0.1", delay4
		if q == "AAAA" {
			answer, delay = "6:::1", delay6
		}
		if delay >= 0 {
			time.AfterFunc(delay, func() { reply(answer) }) // after the server closed: an error, unseen
		}
	})
}

// raceAnswer reads dualDNS's replies; "6:" and "4:" with no address are
// that family's error.
func raceAnswer(b []byte) (bool, netip.Addr, bool, error) {
	s := string(b)
	if len(s) < 2 || (s[:2] != "6:" && s[:2] != "4:") {
		return false, netip.Addr{}, false, nil
	}
	if s[2:] == "T" {
		return s[0] == '6', netip.Addr{}, true, fmt.Errorf("truncated answer: %w", ErrAgain)
	}
	a, err := netip.ParseAddr(s[2:])
	return s[0] == '6', a, true, err
}

// dualServer listens on 127.0.0.1 and ::1 at one port and replies with
// the family a connection came over. ipv6 says what the IPv6 side does:
// "serve", "refuse" (nothing listens) or "blackhole" (a listener whose
// accept queue is full, so SYNs are dropped).
func dualServer(t *testing.T, ipv6 string) uint16 {
	t.Helper()
	srv := server(t, "tcp4", "127.0.0.1:0", func(string) string { return "v4" })
	at := netip.AddrPortFrom(netip.IPv6Loopback(), srv.Port())
	switch ipv6 {
	case "serve":
		if got := server(t, "tcp6", at.String(), func(string) string { return "v6" }); got.Port() != srv.Port() {
			t.Fatalf("port %d taken on ::1", srv.Port())
		}
	case "blackhole":
		fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Skip(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1)
		if err := unix.Bind(fd, &unix.SockaddrInet6{Port: int(at.Port()), Addr: at.Addr().As16()}); err != nil {
			t.Skipf("port %d taken on ::1: %v", srv.Port(), err)
		}
		if err := unix.Listen(fd, 0); err != nil {
			t.Fatal(err)
		}
		fill, err := net.DialTimeout("tcp6", at.String(), time.Second) // the queue's one place
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fill.Close() })
	}
	return srv.Port()
}

// runRace runs one exchange by Race with d's delays and returns its
// result, the racer's and the reply.
func runRace(t *testing.T, e *Engine, dns netip.AddrPort, port uint16, d eyeballs.Dialer, timeout time.Duration) (Result, eyeballs.Result, string) {
	t.Helper()
	racer := d.Race("h", time.Now())
	reply := &untilEOF{}
	x := &Exchange{Remote: netip.AddrPortFrom(netip.Addr{}, port), Request: []byte("GET\n"), Reply: reply,
		Race: &Race{Server: dns, AAAA: []byte("AAAA"), A: []byte("A"), Answer: raceAnswer, Stub: resend.Stub{Timeout: 20 * time.Millisecond}, Racer: racer}}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r := e.Do(ctx, x)
	return r, racer.Result(), reply.got.String()
}

// near checks a delay's timer: never early (at want or after), and
// before the moment a wrong choice would have started it (before). A
// timer's lateness has no bound on a loaded machine: under -race with six
// busy loops beside, these fired 44 to 285 ms late (a window of 10 ms
// failed one run in 60, of 40 ms four in 80), so the tests set their
// delays and events far apart (a delay unlike the default, an answer
// seconds late) and the window reaches up to what the race must be told
// apart from, not a guess at the lateness.
func near(t *testing.T, what string, got, want, before time.Duration) {
	t.Helper()
	if got < want || got >= before {
		t.Errorf("%s at %v, want %v (before %v)", what, got, want, before)
	}
}

// TestRace: Happy Eyeballs in the loop. Healthy, IPv6 wins alone; IPv6
// blackholed, IPv4 starts one Connection Attempt Delay later and wins;
// IPv6 refused, IPv4 starts at once; AAAA late, IPv4 starts the
// Resolution Delay (50 ms) after A; a lost query is sent again. Stamps are ordered, the turns counted,
// and nothing is left open.
func TestRace(t *testing.T) {
	e := engine(t)
	leavesNothingOpen(t, "races", func(t *testing.T) { races(t, e) })
}

func races(t *testing.T, e *Engine) {
	t.Run("healthy", func(t *testing.T) {
		// Both answers are sent at once; a 1 s Resolution Delay lets a
		// loaded machine read the AAAA one late (the lost query's case).
		dns, _ := dualDNS(t, 0, 0, 0)
		r, hr, got := runRace(t, e, dns, dualServer(t, "serve"), eyeballs.Dialer{ResolutionDelay: time.Second}, 2*time.Second)
		if r.Err != nil || got != "v6" || !hr.IPv6 || len(hr.Attempts) != 1 || !hr.Attempts[0].Won {
			t.Fatalf("%s: %v; reply %q, race %+v", r.Phase, r.Err, got, hr)
		}
		if r.FirstTx.IsZero() || r.AnswerRx.IsZero() || r.LastRx.IsZero() {
			t.Fatalf("stamps missing: query %v, answer %v, reply %v", r.FirstTx, r.AnswerRx, r.LastRx)
		}
		if !r.AnswerRx.After(r.FirstTx) || r.Resolved.Before(r.AnswerRx) || r.Connected.Before(r.Resolved) || r.LastRx.Before(r.Connected) {
			t.Errorf("out of order: query %v, answer %v, resolved %v, connected %v, reply %v", r.FirstTx, r.AnswerRx, r.Resolved, r.Connected, r.LastRx)
		}
		if r.ClientTurns <= 0 || r.ClientTurns > r.Connected.Sub(r.AnswerRx) {
			t.Errorf("client turns %v, answer to connected %v", r.ClientTurns, r.Connected.Sub(r.AnswerRx))
		}
		if !r.Local.Addr().Is6() || !r.LookupLocal.Addr().Is4() {
			t.Errorf("connected from %v, asked from %v", r.Local, r.LookupLocal)
		}
	})
	t.Run("blackholed", func(t *testing.T) {
		// A delay longer than the default (250 ms), so that keeping the
		// default, or none, starts IPv4 too early; the race's 2 s end
		// bounds it from above.
		dns, _ := dualDNS(t, 0, 0, 0)
		r, hr, got := runRace(t, e, dns, dualServer(t, "blackhole"), eyeballs.Dialer{AttemptDelay: 600 * time.Millisecond}, 2*time.Second)
		if r.Err != nil || got != "v4" || hr.IPv6 || len(hr.Attempts) != 2 || !hr.Attempts[0].Aborted || !hr.Attempts[1].Won {
			t.Fatalf("%s: %v; reply %q, race %+v", r.Phase, r.Err, got, hr)
		}
		near(t, "the IPv4 attempt", hr.Attempts[1].Start-hr.Attempts[0].Start, 600*time.Millisecond, 2*time.Second)
	})
	t.Run("refused", func(t *testing.T) {
		// At once: long before the 1.5 s delay would have ended.
		dns, _ := dualDNS(t, 0, 0, 0)
		r, hr, got := runRace(t, e, dns, dualServer(t, "refuse"), eyeballs.Dialer{AttemptDelay: 1500 * time.Millisecond}, 2*time.Second)
		if r.Err != nil || got != "v4" || len(hr.Attempts) != 2 || hr.Attempts[0].Err == "" {
			t.Fatalf("%s: %v; reply %q, race %+v", r.Phase, r.Err, got, hr)
		}
		near(t, "the IPv4 attempt", hr.Attempts[1].Start-hr.Attempts[0].End, 0, 1500*time.Millisecond)
	})
	t.Run("late AAAA", func(t *testing.T) {
		// IPv4 begins the Resolution Delay after A, long before the AAAA
		// answer (1.5 s).
		dns, _ := dualDNS(t, 1500*time.Millisecond, 0, 0)
		r, hr, got := runRace(t, e, dns, dualServer(t, "serve"), eyeballs.Dialer{}, 2*time.Second)
		if r.Err != nil || got != "v4" || hr.Attempts[0].Addr.Is6() {
			t.Fatalf("%s: %v; reply %q, race %+v", r.Phase, r.Err, got, hr)
		}
		near(t, "the first attempt", hr.Attempts[0].Start-hr.A, eyeballs.ResolutionDelay, 1500*time.Millisecond)
	})
	t.Run("lost query", func(t *testing.T) {
		// The AAAA query is sent again 20 ms after; its answer must come
		// within the Resolution Delay for IPv6 to win, and at a load of 6
		// under -race it came after 50 ms: the delay is 1 s here (the
		// resending is tested, not the delay).
		dns, queries := dualDNS(t, 0, 0, 1)
		r, hr, got := runRace(t, e, dns, dualServer(t, "serve"), eyeballs.Dialer{ResolutionDelay: time.Second}, 2*time.Second)
		if r.Err != nil || got != "v6" || queries() != 3 || hr.AAAA < 20*time.Millisecond {
			t.Fatalf("%s: %v; reply %q, %d queries, race %+v", r.Phase, r.Err, got, queries(), hr)
		}
	})
	t.Run("truncated AAAA", func(t *testing.T) {
		// The AAAA answer is truncated ("6:T"): Again asks once more and
		// answers after the A answer was read, within its Resolution
		// Delay, so IPv6 still wins. Without Again the family has no
		// address and IPv4 wins; an Again that never answers is
		// cancelled when the race is won.
		dns, _ := udpServer(t, "udp4", "127.0.0.1:0", 0, func(q string, reply func(string)) {
			if q == "AAAA" {
				reply("6:T")
			} else {
				reply("4:127.0.0.1")
			}
		})
		port := dualServer(t, "serve")
		var returned atomic.Int32
		aRead := make(chan struct{}) // closed when the engine reads the A answer
		var aOnce sync.Once
		answer := func(b []byte) (bool, netip.Addr, bool, error) {
			if strings.HasPrefix(string(b), "4:") {
				aOnce.Do(func() { close(aRead) })
			}
			return raceAnswer(b)
		}
		try := func(d eyeballs.Dialer, again func(ctx context.Context, ipv6 bool) (netip.Addr, error)) (Result, eyeballs.Result, string) {
			racer := d.Race("h", time.Now())
			reply := &untilEOF{}
			x := &Exchange{Remote: netip.AddrPortFrom(netip.Addr{}, port), Request: []byte("GET\n"), Reply: reply,
				Race: &Race{Server: dns, AAAA: []byte("AAAA"), A: []byte("A"), Answer: answer, Racer: racer, Again: again}}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			r := e.Do(ctx, x)
			return r, racer.Result(), reply.got.String()
		}
		// Again answers once the A answer is read, not after a sleep
		// meant to fall within the 50 ms delay (it overran it at a load
		// of 8); the delay is 2 s, so the answer falls within it however
		// late a loaded machine runs the goroutine, and IPv4 would have
		// begun at once had the delay not been kept.
		r, hr, got := try(eyeballs.Dialer{ResolutionDelay: 2 * time.Second}, func(ctx context.Context, ipv6 bool) (netip.Addr, error) {
			if !ipv6 {
				return netip.Addr{}, errors.New("asked again for A")
			}
			select {
			case <-aRead:
			case <-ctx.Done():
				return netip.Addr{}, ctx.Err()
			}
			return netip.IPv6Loopback(), nil
		})
		if r.Err != nil || got != "v6" || !hr.IPv6 || len(hr.Attempts) != 1 || hr.AAAA <= hr.A || hr.AAAAErr != "" {
			t.Errorf("asked again: %s: %v; reply %q, race %+v", r.Phase, r.Err, got, hr)
		}
		r, hr, got = try(eyeballs.Dialer{}, nil)
		if r.Err != nil || got != "v4" || hr.IPv6 || !strings.Contains(hr.AAAAErr, "truncated") {
			t.Errorf("not asked again: %s: %v; reply %q, race %+v", r.Phase, r.Err, got, hr)
		}
		r, hr, got = try(eyeballs.Dialer{}, func(ctx context.Context, ipv6 bool) (netip.Addr, error) {
			defer returned.Add(1)
			<-ctx.Done()
			return netip.Addr{}, ctx.Err()
		})
		if r.Err != nil || got != "v4" || hr.IPv6 {
			t.Errorf("never answered again: %s: %v; reply %q, race %+v", r.Phase, r.Err, got, hr)
		}
		// After the Resolution Delay, not waiting for the question asked
		// again, which never answers.
		near(t, "the IPv4 attempt", hr.Attempts[0].Start-hr.A, eyeballs.ResolutionDelay, time.Second)
		for wait := time.Now(); returned.Load() == 0; time.Sleep(time.Millisecond) {
			if time.Since(wait) > time.Second {
				t.Fatal("the question asked again outlived its race")
			}
		}
	})
	t.Run("failures", func(t *testing.T) {
		silent, _ := dualDNS(t, -1, -1, 0)
		r, _, _ := runRace(t, e, silent, dualServer(t, "serve"), eyeballs.Dialer{}, 100*time.Millisecond)
		if r.Phase != "resolve" || !errors.Is(r.Err, ErrTimeout) {
			t.Errorf("silent DNS: %s: %v", r.Phase, r.Err)
		}
		dead, _ := net.ListenPacket("udp4", "127.0.0.1:0")
		closed := netip.MustParseAddrPort(dead.LocalAddr().String())
		dead.Close()
		r, _, _ = runRace(t, e, closed, dualServer(t, "serve"), eyeballs.Dialer{}, 2*time.Second)
		if r.Phase != "resolve" || !errors.Is(r.Err, syscall.ECONNREFUSED) {
			t.Errorf("closed DNS port: %s: %v", r.Phase, r.Err)
		}
		// A race makes its own connection: with a source, a UDP exchange
		// or a Lookup it is refused before anything is sent.
		for name, x := range map[string]*Exchange{
			"source": {Source: netip.IPv4Unspecified()},
			"udp":    {UDP: true},
			"lookup": {Lookup: &Lookup{}},
		} {
			x.Reply, x.Race = &untilEOF{}, &Race{Server: closed}
			if r := e.Do(context.Background(), x); r.Phase != "resolve" || r.Err == nil || !strings.Contains(r.Err.Error(), "a Race makes its own connection") {
				t.Errorf("a race with a %s: %s: %v", name, r.Phase, r.Err)
			}
		}
		// Nothing listens on either family: both attempts fail.
		ln, _ := net.Listen("tcp4", "127.0.0.1:0")
		port := uint16(ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
		dns, _ := dualDNS(t, 0, 0, 0)
		r, hr, _ := runRace(t, e, dns, port, eyeballs.Dialer{}, 2*time.Second)
		if r.Phase != "connect" || !errors.Is(r.Err, syscall.ECONNREFUSED) || len(hr.Attempts) != 2 || !r.Connected.IsZero() {
			t.Errorf("nothing listens: %s: %v, race %+v", r.Phase, r.Err, hr)
		}
	})
}
