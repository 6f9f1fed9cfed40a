// Package eyeballs connects to a dual-stack name as a real client does,
// by Happy Eyeballs version 2 (RFC 8305): AAAA and A asked in parallel,
// IPv6 preferred, the families interleaved, a new attempt started every
// Connection Attempt Delay (or as soon as one fails) while earlier ones
// continue, the first connection to complete kept and every other
// cancelled and closed, and no lookup outlives the dial. It records what happened: the family that won,
// when, and every attempt, so a measurement can say what a dual-stack
// user of the path actually got.
//
// Lookups and connection attempts are functions it is given, so it runs
// over v6lab's pinned resolver and dialer, or any other.
//
// It imports nothing of v6lab.
package eyeballs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// RFC 8305's recommended defaults.
const (
	// AttemptDelay is the Connection Attempt Delay (§5: 250 ms).
	AttemptDelay = 250 * time.Millisecond
	// ResolutionDelay is how long an A answer waits for the AAAA one
	// before attempts start (§3: 50 ms).
	ResolutionDelay = 50 * time.Millisecond
)

// Dialer races a name's addresses.
type Dialer struct {
	// AttemptDelay (default AttemptDelay) and ResolutionDelay (default
	// ResolutionDelay).
	AttemptDelay, ResolutionDelay time.Duration
	// Lookup asks for the name's AAAA (ipv6) or A records.
	Lookup func(ctx context.Context, host string, ipv6 bool) ([]netip.Addr, error)
	// Dial makes one connection attempt.
	Dial func(ctx context.Context, to netip.AddrPort) (net.Conn, error)
}

// Attempt is one connection attempt, its times from the dial's start.
type Attempt struct {
	Addr    netip.Addr    `json:"addr"`
	Start   time.Duration `json:"start_ns"`
	End     time.Duration `json:"end_ns"`
	Won     bool          `json:"won,omitempty"`
	Err     string        `json:"err,omitempty"`
	Aborted bool          `json:"aborted,omitempty"` // cancelled when another won
}

// Result is what a dial did.
type Result struct {
	Conn net.Conn
	// IPv6 says which family won; Connect is when its connection
	// completed, from the dial's start.
	IPv6    bool
	Connect time.Duration
	// AAAA and A are when each answer came (0: none came), with its
	// error, if any.
	AAAA, A       time.Duration
	AAAAErr, AErr string
	Attempts      []Attempt
}

type answer struct {
	ipv6  bool
	addrs []netip.Addr
	err   error
	at    time.Duration
}

type outcome struct {
	i    int
	conn net.Conn
	err  error
	at   time.Duration
}

// DialContext connects to host:port. Every attempt that does not win is
// cancelled; a connection that completes after another won is closed.
func (d Dialer) DialContext(ctx context.Context, host string, port uint16) (Result, error) {
	attemptDelay, resolutionDelay := d.AttemptDelay, d.ResolutionDelay
	if attemptDelay <= 0 {
		attemptDelay = AttemptDelay
	}
	if resolutionDelay <= 0 {
		resolutionDelay = ResolutionDelay
	}
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }
	// Lookups still running when the dial ends are cancelled and waited
	// for (the deferred calls run in reverse order): none outlives it.
	var lookups sync.WaitGroup
	defer lookups.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var res Result

	answers := make(chan answer, 2)
	for _, v6 := range []bool{true, false} {
		lookups.Add(1)
		go func() {
			defer lookups.Done()
			addrs, err := d.Lookup(ctx, host, v6)
			answers <- answer{ipv6: v6, addrs: addrs, err: err, at: since()}
		}()
	}
	var v6, v4 []netip.Addr
	pending := 2
	record := func(a answer) {
		pending--
		if a.ipv6 {
			v6, res.AAAA = a.addrs, a.at
			if a.err != nil {
				res.AAAAErr = a.err.Error()
			}
		} else {
			v4, res.A = a.addrs, a.at
			if a.err != nil {
				res.AErr = a.err.Error()
			}
		}
	}
	// §3: start on AAAA at once; on A, wait ResolutionDelay for AAAA.
	wait := time.NewTimer(time.Hour)
	defer wait.Stop()
resolving:
	for pending > 0 && len(v6) == 0 {
		if len(v4) > 0 {
			wait.Reset(resolutionDelay - (since() - res.A))
		}
		select {
		case a := <-answers:
			record(a)
		case <-wait.C:
			break resolving
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	order := interleave(v6, v4)
	if len(order) == 0 && pending == 0 {
		return res, fmt.Errorf("eyeballs: %s has no address (AAAA: %s; A: %s)", host, or(res.AAAAErr, "none"), or(res.AErr, "none"))
	}

	outcomes := make(chan outcome, 16)
	var wg sync.WaitGroup
	defer func() {
		// Losers: cancel them, and close any that connects anyway.
		cancel()
		go func() {
			wg.Wait()
			close(outcomes)
		}()
		for o := range outcomes {
			if o.conn != nil && o.conn != res.Conn {
				o.conn.Close()
			}
			if o.i < len(res.Attempts) && res.Attempts[o.i].End == 0 {
				res.Attempts[o.i].End, res.Attempts[o.i].Aborted = o.at, true
				res.Attempts[o.i].Err = errText(o.err)
			}
		}
	}()
	next := 0
	launch := func() {
		to := order[next]
		next++
		i := len(res.Attempts)
		res.Attempts = append(res.Attempts, Attempt{Addr: to, Start: since()})
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := d.Dial(ctx, netip.AddrPortFrom(to, port))
			outcomes <- outcome{i: i, conn: c, err: err, at: since()}
		}()
	}
	running := 0
	var lastErr error
	tick := time.NewTimer(time.Hour)
	defer tick.Stop()
	for {
		if next < len(order) && running == 0 {
			launch()
			running++
		}
		if running == 0 && next >= len(order) && pending == 0 {
			if lastErr == nil {
				lastErr = errors.New("no address to try")
			}
			return res, fmt.Errorf("eyeballs: every attempt to %s failed (last: %w)", host, lastErr)
		}
		var timer <-chan time.Time
		if next < len(order) {
			tick.Reset(attemptDelay - (since() - res.Attempts[len(res.Attempts)-1].Start))
			timer = tick.C
		}
		select {
		case o := <-outcomes:
			running--
			a := &res.Attempts[o.i]
			a.End = o.at
			if o.err != nil {
				a.Err, lastErr = errText(o.err), o.err
				continue // §5: the next attempt starts now
			}
			a.Won = true
			res.Conn, res.IPv6, res.Connect = o.conn, a.Addr.Is6(), o.at
			return res, nil
		case a := <-answers:
			// An answer after attempts began: its addresses join the
			// order (§3), interleaved with those not yet tried.
			record(a)
			order = dedupe(append(order[:next:next], interleave(v6, v4)...), res.Attempts)
		case <-timer:
			launch()
			running++
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
}

// interleave orders addresses as §4 says: IPv6 first, then the families
// alternating.
func interleave(v6, v4 []netip.Addr) []netip.Addr {
	var out []netip.Addr
	for i := 0; i < max(len(v6), len(v4)); i++ {
		if i < len(v6) {
			out = append(out, v6[i])
		}
		if i < len(v4) {
			out = append(out, v4[i])
		}
	}
	return out
}

// dedupe drops from order the addresses already attempted, and repeats.
func dedupe(order []netip.Addr, done []Attempt) []netip.Addr {
	var out []netip.Addr
	for i, a := range order {
		tried := slices.ContainsFunc(done, func(d Attempt) bool { return d.Addr == a })
		if (i >= len(done) && tried) || slices.Contains(out, a) {
			continue
		}
		out = append(out, a)
	}
	return out
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
