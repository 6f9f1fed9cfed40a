package eyeballs

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"time"
)

// V3 is a version 3 client's settings; a zero field takes the draft's
// recommended value (§9).
type V3 struct {
	// ResolutionDelay (§4.2; default 50 ms), AttemptDelay (§6: between
	// attempts in the absence of RTT data; default 250 ms),
	// MinAttemptDelay (100 ms) and MaxAttemptDelay (2 s).
	ResolutionDelay, AttemptDelay, MinAttemptDelay, MaxAttemptDelay time.Duration
	// PreferredFamilyCount (§5.3; default 1).
	PreferredFamilyCount int
	// Multiplier multiplies the delay for each attempt started while
	// earlier ones are still under way (§6, the Connection Attempt Delay
	// Multiplier; 0 or 1: a constant delay).
	Multiplier float64
	// Fixed: every delay is AttemptDelay, whatever History says (a
	// "simple implementation", §6). Otherwise an attempt to an address
	// whose RTT History knows is followed by its first retransmission's
	// time (Retransmit), and by AttemptDelay when none is known.
	Fixed   bool
	History *History
	// Supported are the application protocols the client speaks (h3 over
	// QUIC; h2 and http/1.1 over TCP with TLS), in its order of
	// preference; default h3, h2, http/1.1.
	Supported []string
	// MaxNames bounds the names followed beside the host (AliasMode
	// targets, ServiceMode TargetNames; default 4).
	MaxNames int
}

// defaults fills V3's zero fields.
func (c V3) defaults() V3 {
	c.ResolutionDelay = cmp.Or(c.ResolutionDelay, ResolutionDelay)
	c.AttemptDelay = cmp.Or(c.AttemptDelay, AttemptDelay)
	c.MinAttemptDelay = cmp.Or(c.MinAttemptDelay, MinAttemptDelay)
	c.MaxAttemptDelay = cmp.Or(c.MaxAttemptDelay, MaxAttemptDelay)
	c.PreferredFamilyCount = cmp.Or(c.PreferredFamilyCount, PreferredFamilyCount)
	c.MaxNames = cmp.Or(c.MaxNames, 4)
	if c.Multiplier < 1 {
		c.Multiplier = 1
	}
	if len(c.Supported) == 0 {
		c.Supported = []string{ALPNH3, ALPNH2, ALPNHTTP11}
	}
	return c
}

// Check says what in c goes against the draft: a delay below the hard
// floor of 10 ms (§6: MUST NOT), a minimum above the maximum, an attempt
// delay outside them, a family count below 1, a multiplier below 1.
func (c V3) Check() error {
	d := c.defaults()
	switch {
	case d.MinAttemptDelay < FloorAttemptDelay:
		return fmt.Errorf("min_attempt_delay %v: a subsequent attempt MUST NOT start within %v of the previous one (draft-ietf-happy-happyeyeballs-v3 §6)", d.MinAttemptDelay, FloorAttemptDelay)
	case d.MaxAttemptDelay < d.MinAttemptDelay:
		return fmt.Errorf("max_attempt_delay %v is below min_attempt_delay %v", d.MaxAttemptDelay, d.MinAttemptDelay)
	case d.AttemptDelay < d.MinAttemptDelay || d.AttemptDelay > d.MaxAttemptDelay:
		return fmt.Errorf("attempt_delay %v: want min_attempt_delay %v to max_attempt_delay %v (draft-ietf-happy-happyeyeballs-v3 §6)", d.AttemptDelay, d.MinAttemptDelay, d.MaxAttemptDelay)
	case d.ResolutionDelay < 0 || d.ResolutionDelay > d.MaxAttemptDelay:
		return fmt.Errorf("resolution_delay %v: want 0 to %v", d.ResolutionDelay, d.MaxAttemptDelay)
	case c.PreferredFamilyCount < 0:
		return fmt.Errorf("preferred_family_count %d: want 1 or more (draft-ietf-happy-happyeyeballs-v3 §5.3)", c.PreferredFamilyCount)
	case c.Multiplier != 0 && c.Multiplier < 1:
		return fmt.Errorf("attempt_delay_multiplier %g: want 1 or more (draft-ietf-happy-happyeyeballs-v3 §6)", c.Multiplier)
	}
	return nil
}

// names is what the race knows of one name: its addresses by family
// (answered: the query came back, positive or not), its services.
type names struct {
	v6, v4       []netip.Addr
	got6, got4   bool
	services     []Service
	gotServices  bool // a ServiceMode answer, or a negative one
	aliasFollows bool // an AliasMode answer sent us elsewhere
}

// Race3 decides a version 3 race. It is not safe for concurrent use.
type Race3 struct {
	cfg        V3
	host       string
	port       uint16
	start      time.Time
	queue      []Query // to send
	asked      map[Query]bool
	pending    int
	names      map[string]*names
	svcName    string // the name whose services count (after aliases)
	firstAddr  time.Time
	began      bool
	rec        Record3
	running    int
	due        time.Time // the Next Connection Attempt Timer
	lastStart  time.Time
	lastErr    error
	over       bool
	followedNS int
}

// Start begins a race to host:port at start: its queries are HTTPS, AAAA,
// A, in that order (§4.1).
func (c V3) Start(host string, port uint16, start time.Time) *Race3 {
	r := &Race3{cfg: c.defaults(), host: lower(host), port: port, start: start,
		asked: map[Query]bool{}, names: map[string]*names{}, rec: Record3{Winner: -1}}
	r.svcName = r.host
	for _, t := range []uint16{TypeHTTPS, TypeAAAA, TypeA} {
		r.ask(Query{Name: r.host, Type: t})
	}
	return r
}

// ask queues q unless it was asked already.
func (r *Race3) ask(q Query) {
	if r.asked[q] {
		return
	}
	r.asked[q] = true
	r.queue = append(r.queue, q)
	r.pending++
}

// Begin sets the race's start: when its first query left.
func (r *Race3) Begin(at time.Time) { r.start = at }

func (r *Race3) name(n string) *names {
	x := r.names[n]
	if x == nil {
		x = &names{}
		r.names[n] = x
	}
	return x
}

// Answer records q's reply, received at.
func (r *Race3) Answer(q Query, rep Reply, at time.Time) {
	q.Name = lower(q.Name)
	if !r.asked[q] {
		return
	}
	r.pending--
	a := Answered{Query: q, At: at.Sub(r.start), Addrs: len(rep.Addrs), Services: len(rep.Services)}
	if rep.Err != nil {
		a.Err = rep.Err.Error()
	}
	r.rec.Answers = append(r.rec.Answers, a)
	n := r.name(q.Name)
	switch q.Type {
	case TypeAAAA:
		n.v6, n.got6 = onlyFamily(rep.Addrs, true), true
	case TypeA:
		n.v4, n.got4 = onlyFamily(rep.Addrs, false), true
	case TypeHTTPS:
		r.services(q.Name, n, rep.Services)
	}
	if r.firstAddr.IsZero() && r.positive() {
		r.firstAddr = at
	}
}

// services takes an HTTPS answer: AliasMode sends the race to ask its
// target (§4.2.1: service information counts once ServiceMode records
// come); ServiceMode records are kept, and their TargetNames other than
// the host asked for their addresses.
func (r *Race3) services(name string, n *names, svcs []Service) {
	if name != r.svcName {
		return // a stale alias hop
	}
	for _, s := range svcs {
		if s.Priority == 0 && s.Target != "" && r.followedNS < r.cfg.MaxNames {
			r.followedNS++
			n.aliasFollows = true
			r.svcName = lower(s.Target)
			r.ask(Query{Name: r.svcName, Type: TypeHTTPS})
			return
		}
	}
	for _, s := range svcs {
		if s.Priority == 0 {
			continue
		}
		s.Target = lower(s.Target)
		n.services = append(n.services, s)
		if t := cmp.Or(s.Target, name); t != r.host && r.followedNS < r.cfg.MaxNames {
			if !r.asked[Query{Name: t, Type: TypeAAAA}] {
				r.followedNS++
			}
			r.ask(Query{Name: t, Type: TypeAAAA})
			r.ask(Query{Name: t, Type: TypeA})
		}
	}
	n.gotServices = true
}

func onlyFamily(addrs []netip.Addr, v6 bool) []netip.Addr {
	var out []netip.Addr
	for _, a := range addrs {
		if a = a.Unmap(); a.Is6() == v6 {
			out = append(out, a)
		}
	}
	return out
}

// positive: some address is known, from A or AAAA or from a hint.
func (r *Race3) positive() bool {
	for _, n := range r.names {
		if len(n.v6) > 0 || len(n.v4) > 0 {
			return true
		}
		for _, s := range n.services {
			if len(s.IPv6Hint) > 0 || len(s.IPv4Hint) > 0 {
				return true
			}
		}
	}
	return false
}

// ready says whether §4.2's first condition set holds: an address, the
// preferred family's answer (AAAA for the host, or an ipv6hint, which
// counts as a positive answer) and the service information (ServiceMode
// records or a negative answer).
func (r *Race3) ready() bool {
	svc := r.name(r.svcName)
	hinted := slices.ContainsFunc(svc.services, func(s Service) bool { return len(s.IPv6Hint) > 0 })
	return r.positive() && (r.name(r.host).got6 || hinted) && svc.gotServices
}

// Action is what the driver is to do next.
type Action struct {
	// Query to send (non-zero Type).
	Query Query
	// Attempt to start (when Start is set): its index is Index.
	Attempt Endpoint
	Start   bool
	Index   int
	// Wake: nothing to do until an answer, an outcome, or this time
	// (zero: no timer).
	Wake time.Time
	// Err: the race is lost.
	Err error
}

// Next says what to do at now. Call it until it returns an Action with
// neither a Query nor an attempt to Start.
func (r *Race3) Next(now time.Time) Action {
	if len(r.queue) > 0 {
		q := r.queue[0]
		r.queue = r.queue[1:]
		return Action{Query: q}
	}
	if r.over {
		return Action{}
	}
	if !r.began {
		if wait, err := r.resolving(now); !wait.IsZero() || err != nil || !r.began {
			return Action{Wake: wait, Err: err}
		}
	}
	return r.connecting(now)
}

// resolving decides §4.2: begin, wait (until the Resolution Delay ends),
// or fail when every answer came back without an address.
func (r *Race3) resolving(now time.Time) (time.Time, error) {
	switch {
	case r.ready():
	case r.positive():
		if due := r.firstAddr.Add(r.cfg.ResolutionDelay); now.Before(due) {
			return due, nil
		}
	case r.pending == 0:
		r.over = true
		return time.Time{}, fmt.Errorf("eyeballs: %s has no address (%s): %w", r.host, r.answersText(), ErrNoEndpoint)
	default:
		return time.Time{}, nil
	}
	r.began = true
	r.rec.Began = now.Sub(r.start)
	return time.Time{}, nil
}

// answersText lists the answers for an error.
func (r *Race3) answersText() string {
	var out []string
	for _, a := range r.rec.Answers {
		s := fmt.Sprintf("%s %s: %d", TypeName(a.Type), a.Name, a.Addrs+a.Services)
		if a.Err != "" {
			s = fmt.Sprintf("%s %s: %s", TypeName(a.Type), a.Name, a.Err)
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "no answer"
	}
	return fmt.Sprint(out)
}

// connecting decides §6: start the next endpoint when none is under way
// or the Next Connection Attempt Timer has fired; wait; or fail when
// nothing is left and nothing runs or may still be answered.
func (r *Race3) connecting(now time.Time) Action {
	list := r.Endpoints()
	if len(list) > 0 && (r.running == 0 || !now.Before(r.due)) {
		if floor := r.lastStart.Add(FloorAttemptDelay); r.running == 0 && !r.lastStart.IsZero() && now.Before(floor) {
			return Action{Wake: floor}
		}
		return r.launch(list[0], now)
	}
	if len(list) > 0 {
		return Action{Wake: r.due}
	}
	if r.running == 0 && r.pending == 0 {
		r.over = true
		err := r.lastErr
		if err == nil {
			err = ErrNoEndpoint
		}
		return Action{Err: fmt.Errorf("eyeballs: every attempt to %s failed (last: %w)", r.host, err)}
	}
	return Action{}
}

// launch starts e: the timer is set to the delay that follows it.
func (r *Race3) launch(e Endpoint, now time.Time) Action {
	i := len(r.rec.Attempts)
	if i > 0 {
		prev := &r.rec.Attempts[i-1]
		prev.Delay = now.Sub(r.start) - prev.Start
	}
	r.rec.Attempts = append(r.rec.Attempts, Attempt3{Endpoint: e, Start: now.Sub(r.start)})
	r.running++
	r.lastStart = now
	r.due = now.Add(r.delay(e))
	return Action{Attempt: e, Start: true, Index: i}
}

// delay is the Connection Attempt Delay after an attempt to e (§6): its
// first retransmission by the RTT History knows of its address, else the
// fixed delay; multiplied for each other attempt still under way; within
// the minimum and maximum.
func (r *Race3) delay(e Endpoint) time.Duration {
	d := r.cfg.AttemptDelay
	if srtt, rttvar, ok := r.cfg.History.RTT(e.Addr.Addr()); ok && !r.cfg.Fixed {
		d = Retransmit(srtt, rttvar)
	}
	for range r.running - 1 {
		d = time.Duration(float64(d) * r.cfg.Multiplier)
	}
	return min(max(d, r.cfg.MinAttemptDelay, FloorAttemptDelay), r.cfg.MaxAttemptDelay)
}

// Progress records that attempt i's transport handshake completed at at
// (TCP's, TLS still to come): when it is the latest attempt, the timer is
// extended by twice the time it took, at least the 10 ms floor (§6.1: the
// estimated time for TLS to complete).
func (r *Race3) Progress(i int, at time.Time) {
	if i < 0 || i >= len(r.rec.Attempts) || r.rec.Attempts[i].Outcome != Running {
		return
	}
	a := &r.rec.Attempts[i]
	a.Progress = at.Sub(r.start)
	if i == len(r.rec.Attempts)-1 {
		took := a.Progress - a.Start
		r.due = later(r.due, at.Add(max(2*took, FloorAttemptDelay)))
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Failed records that attempt i failed at at: the next may start at once
// (RFC 8305 §5; not within 10 ms of the previous start, §6).
func (r *Race3) Failed(i int, err error, at time.Time) {
	if !r.end(i, Lost, at) {
		return
	}
	r.rec.Attempts[i].Err = errText(err)
	r.lastErr = err
	r.due = at
}

// Won records that attempt i succeeded at at (§6.1: after TLS, or QUIC's
// handshake); every other attempt under way is cancelled then, and the
// race is over.
func (r *Race3) Won(i int, at time.Time) {
	if !r.end(i, Won, at) {
		return
	}
	r.rec.Winner, r.rec.Connect = i, at.Sub(r.start)
	r.Abort(at)
}

// Abort ends the race at at: attempts under way are cancelled.
func (r *Race3) Abort(at time.Time) {
	for i := range r.rec.Attempts {
		r.end(i, Cancelled, at)
	}
	r.over = true
}

// end closes attempt i with o, if it is under way.
func (r *Race3) end(i int, o Outcome, at time.Time) bool {
	if i < 0 || i >= len(r.rec.Attempts) || r.rec.Attempts[i].Outcome != Running {
		return false
	}
	a := &r.rec.Attempts[i]
	a.Outcome, a.End = o, at.Sub(r.start)
	r.running--
	return true
}

// Record is what the race did so far.
func (r *Race3) Record() Record3 {
	rec := r.rec
	rec.Answers = slices.Clone(rec.Answers)
	rec.Attempts = slices.Clone(rec.Attempts)
	return rec
}

// Over says whether the race is decided (won, lost or aborted).
func (r *Race3) Over() bool { return r.over }
