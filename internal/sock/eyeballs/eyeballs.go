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
// Race3 (v3race.go) is version 3 (draft-ietf-happy-happyeyeballs-v3): the
// HTTPS record asked first, QUIC and TCP endpoints grouped and sorted,
// the attempt delay from the RTT history, success after TLS; its tests
// are named after the draft's sections.
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
	at    time.Time
}

type outcome struct {
	i    int
	conn net.Conn
	err  error
	at   time.Time
}

// DialContext connects to host:port, a goroutine for each lookup and each
// attempt (Race decides). Every attempt that does not win is cancelled; a
// connection that completes after another won is closed.
func (d Dialer) DialContext(ctx context.Context, host string, port uint16) (Result, error) {
	race := d.Race(host, time.Now())
	// Lookups still running when the dial ends are cancelled and waited
	// for (the deferred calls run in reverse order): none outlives it.
	var lookups sync.WaitGroup
	defer lookups.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan answer, 2)
	for _, v6 := range []bool{true, false} {
		lookups.Add(1)
		go func() {
			defer lookups.Done()
			addrs, err := d.Lookup(ctx, host, v6)
			answers <- answer{ipv6: v6, addrs: addrs, err: err, at: time.Now()}
		}()
	}
	outcomes := make(chan outcome, 16)
	var attempts sync.WaitGroup
	var won net.Conn
	defer func() {
		// Losers: cancel them, and close any that connects anyway.
		cancel()
		go func() {
			attempts.Wait()
			close(outcomes)
		}()
		for o := range outcomes {
			if o.conn != nil && o.conn != won {
				o.conn.Close()
			}
		}
	}()
	tick := time.NewTimer(time.Hour)
	defer tick.Stop()
	for n := 0; ; {
		to, wake, err := race.Step(time.Now())
		if err != nil {
			return race.Result(), err
		}
		if to.IsValid() {
			i := n
			n++
			attempts.Add(1)
			go func() {
				defer attempts.Done()
				c, err := d.Dial(ctx, netip.AddrPortFrom(to, port))
				outcomes <- outcome{i: i, conn: c, err: err, at: time.Now()}
			}()
			continue
		}
		var timer <-chan time.Time
		if !wake.IsZero() {
			tick.Reset(time.Until(wake))
			timer = tick.C
		}
		select {
		case a := <-answers:
			race.Answer(a.ipv6, a.addrs, a.err, a.at)
		case o := <-outcomes:
			if o.err != nil {
				race.Failed(o.i, o.err, o.at)
				continue
			}
			race.Won(o.i, o.at)
			won = o.conn
			res := race.Result()
			res.Conn = won
			return res, nil
		case <-timer:
		case <-ctx.Done():
			race.Abort(time.Now())
			return race.Result(), ctx.Err()
		}
	}
}

// Race is Happy Eyeballs' decisions without its waiting, so that any
// driver can run it: DialContext, with a goroutine per lookup and per
// attempt, or an event loop with sockets of its own (evloop.Race). The
// driver reports the answers and the attempts' outcomes as they come,
// with their times, and asks Step what to do next. It is not safe for
// concurrent use: one driver calls it.
type Race struct {
	host                          string
	attemptDelay, resolutionDelay time.Duration
	start                         time.Time
	v6, v4                        []netip.Addr
	pending                       int  // lookups not yet answered
	started                       bool // §3's wait is over: attempts may start
	order                         []netip.Addr
	next                          int // order's next address to try
	running                       int // attempts under way
	lastErr                       error
	res                           Result
	over                          []bool // by attempt: failed, won or aborted
}

// Race starts deciding a dial to host, its two lookups sent at start.
func (d Dialer) Race(host string, start time.Time) *Race {
	r := &Race{host: host, attemptDelay: d.AttemptDelay, resolutionDelay: d.ResolutionDelay, start: start, pending: 2}
	if r.attemptDelay <= 0 {
		r.attemptDelay = AttemptDelay
	}
	if r.resolutionDelay <= 0 {
		r.resolutionDelay = ResolutionDelay
	}
	return r
}

// Begin sets the race's start: when its first query left (a driver that
// sends the queries itself calls it then).
func (r *Race) Begin(at time.Time) { r.start = at }

// Answer records a lookup's answer (AAAA when ipv6), received at at.
func (r *Race) Answer(ipv6 bool, addrs []netip.Addr, err error, at time.Time) {
	r.pending--
	since := at.Sub(r.start)
	if ipv6 {
		r.v6, r.res.AAAA = addrs, since
		if err != nil {
			r.res.AAAAErr = err.Error()
		}
	} else {
		r.v4, r.res.A = addrs, since
		if err != nil {
			r.res.AErr = err.Error()
		}
	}
	if r.started {
		// An answer after attempts began: its addresses join the order
		// (§3), interleaved with those not yet tried.
		r.order = dedupe(append(r.order[:r.next:r.next], interleave(r.v6, r.v4)...), r.res.Attempts)
	}
}

// Step says what to do at now: start an attempt to the address it
// returns (the attempt's index is the number started before it; then call
// Step again), or wait for the next answer or outcome, or until wake
// when it is not zero; or give up: err says why the race is lost.
func (r *Race) Step(now time.Time) (to netip.Addr, wake time.Time, err error) {
	if !r.started {
		// §3: start on AAAA at once; on A, wait ResolutionDelay for AAAA.
		if r.pending > 0 && len(r.v6) == 0 {
			if len(r.v4) == 0 {
				return netip.Addr{}, time.Time{}, nil
			}
			if due := r.start.Add(r.res.A + r.resolutionDelay); now.Before(due) {
				return netip.Addr{}, due, nil
			}
		}
		r.started = true
		r.order = interleave(r.v6, r.v4)
		if len(r.order) == 0 && r.pending == 0 {
			return netip.Addr{}, time.Time{}, fmt.Errorf("eyeballs: %s has no address (AAAA: %s; A: %s)", r.host, or(r.res.AAAAErr, "none"), or(r.res.AErr, "none"))
		}
	}
	if r.next < len(r.order) {
		// §5: one attempt at a time, the next one Connection Attempt Delay
		// after the last, or at once when none is under way.
		if r.running == 0 {
			return r.launch(now), time.Time{}, nil
		}
		due := r.start.Add(r.res.Attempts[len(r.res.Attempts)-1].Start + r.attemptDelay)
		if !now.Before(due) {
			return r.launch(now), time.Time{}, nil
		}
		return netip.Addr{}, due, nil
	}
	if r.running == 0 && r.pending == 0 {
		lastErr := r.lastErr
		if lastErr == nil {
			lastErr = errors.New("no address to try")
		}
		return netip.Addr{}, time.Time{}, fmt.Errorf("eyeballs: every attempt to %s failed (last: %w)", r.host, lastErr)
	}
	return netip.Addr{}, time.Time{}, nil
}

func (r *Race) launch(now time.Time) netip.Addr {
	to := r.order[r.next]
	r.next++
	r.running++
	r.res.Attempts = append(r.res.Attempts, Attempt{Addr: to, Start: now.Sub(r.start)})
	r.over = append(r.over, false)
	return to
}

// Failed records that attempt i failed at at: the next starts now (§5).
func (r *Race) Failed(i int, err error, at time.Time) {
	if r.over[i] {
		return
	}
	r.over[i] = true
	r.running--
	a := &r.res.Attempts[i]
	a.End, a.Err, r.lastErr = at.Sub(r.start), errText(err), err
}

// Won records that attempt i connected at at; every other attempt under
// way is aborted then (the driver cancels and closes them).
func (r *Race) Won(i int, at time.Time) {
	if r.over[i] {
		return
	}
	r.over[i] = true
	r.running--
	a := &r.res.Attempts[i]
	a.End, a.Won = at.Sub(r.start), true
	r.res.IPv6, r.res.Connect = a.Addr.Is6(), a.End
	r.Abort(at)
}

// Abort ends every attempt still under way at at (the race was won, or
// given up by the driver).
func (r *Race) Abort(at time.Time) {
	for i := range r.res.Attempts {
		if !r.over[i] {
			r.over[i] = true
			r.running--
			r.res.Attempts[i].End, r.res.Attempts[i].Aborted = at.Sub(r.start), true
		}
	}
}

// Result is what happened so far (its Conn is the driver's to set).
func (r *Race) Result() Result { return r.res }

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
