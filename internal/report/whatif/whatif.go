// Package whatif replays recorded handshake times through a Happy
// Eyeballs decision rule at other timer values: the data to choose a timer
// with (curl#14274), and Bajpai and Schönwälder's figure (ANRW 2016: a
// 300 ms timer picks the slower IPv6 path about 90% of the time) recomputed
// from any set of samples.
//
// Each Sample holds, for one transaction (or one site visit), how long each
// address family's handshake took from its own start, or that it failed or
// never answered. A Rule says which family a client would have ended on at
// a given attempt delay, and when. A Sweep runs every sample through the
// rule at every delay of a grid and counts, per delay, how often the
// chosen family was the slower one and how much time the choice lost
// against the faster family started at once. Its memory is per delay, not
// per sample: samples can be streamed through it, and sweeps of parts
// (runs, files, sites) merged.
//
// Use:
//
//	w := whatif.New(whatif.PreferIPv6, whatif.Delays(0, 500*time.Millisecond, 10*time.Millisecond))
//	for _, s := range samples {
//		w.Add(whatif.Sample{IPv6: whatif.Completed(t6), IPv4: whatif.Completed(t4)})
//	}
//	for _, p := range w.Points() {
//		fmt.Println(p.DelayMS, p.SlowerShare, p.SlowerCI95, p.LostMeanMS)
//	}
//
// It imports only the statistics package (Wilson score intervals).
package whatif

import (
	"time"

	"v6lab/internal/report/stats"
)

// State is what became of one family's handshake in a sample.
type State uint8

const (
	// Missing: the sample has no time for this family (not measured); a
	// sample missing either family is left out of a Sweep and counted.
	Missing State = iota
	// Done: the handshake completed Time after it started.
	Done
	// Failed: the handshake failed Time after it started (refused,
	// unreachable, reset); Happy Eyeballs moves to the next address then.
	Failed
	// Silent: no answer within Time (the horizon the sample was watched
	// for); the rule treats it as never completing, which is exact for
	// every delay up to Time less the other family's handshake.
	Silent
)

// Outcome is one family's handshake in one sample.
type Outcome struct {
	Time  time.Duration
	State State
}

// Completed, FailedAfter and SilentFor make Outcomes.
func Completed(d time.Duration) Outcome   { return Outcome{Time: d, State: Done} }
func FailedAfter(d time.Duration) Outcome { return Outcome{Time: d, State: Failed} }
func SilentFor(d time.Duration) Outcome   { return Outcome{Time: d, State: Silent} }

// completes says whether the handshake completed, and after how long.
func (o Outcome) completes() (time.Duration, bool) { return o.Time, o.State == Done }

// Sample is one transaction's handshakes, one per family.
type Sample struct {
	IPv6, IPv4 Outcome
}

// Rule decides a sample at an attempt delay: the family the client ends on
// (ipv6 true for IPv6) and when its handshake completed, counted from the
// first attempt's start; ok is false when no attempt would complete.
type Rule func(s Sample, delay time.Duration) (ipv6 bool, at time.Duration, ok bool)

// PreferIPv6 is Happy Eyeballs' rule for one address of each family
// (RFC 8305 §5; draft-ietf-happy-happyeyeballs-v3 §6): the IPv6 attempt
// starts at once, the IPv4 one after the delay, or as soon as IPv6's fails
// if that is earlier; the first to complete is kept.
func PreferIPv6(s Sample, delay time.Duration) (bool, time.Duration, bool) {
	return race(s.IPv6, s.IPv4, delay, true)
}

// PreferIPv4 is the same rule with IPv4 first (a client that prefers
// IPv4, or an IPv6 history that failed).
func PreferIPv4(s Sample, delay time.Duration) (bool, time.Duration, bool) {
	return race(s.IPv4, s.IPv6, delay, false)
}

// race runs first at 0 and second at delay (or at first's failure).
func race(first, second Outcome, delay time.Duration, firstIs6 bool) (bool, time.Duration, bool) {
	start2 := delay
	if first.State == Failed && first.Time < start2 {
		start2 = first.Time
	}
	t1, ok1 := first.completes()
	t2, ok2 := second.completes()
	t2 += start2
	switch {
	case ok1 && (!ok2 || t1 <= t2):
		return firstIs6, t1, true
	case ok2:
		return !firstIs6, t2, true
	}
	return false, 0, false
}

// Delays is the grid from..to (inclusive) in steps of step.
func Delays(from, to, step time.Duration) []time.Duration {
	var out []time.Duration
	for d := from; d <= to && step > 0; d += step {
		out = append(out, d)
	}
	return out
}

// Sweep replays samples through a rule at each delay. Its zero value is
// not usable: make one with New.
type Sweep struct {
	rule   Rule
	delays []time.Duration
	// Tolerance: a family counts as the slower one only when its handshake
	// took more than this longer than the other's (0: any difference, as
	// Bajpai and Schönwälder counted).
	Tolerance  time.Duration
	n, missing int
	acc        []PointSums
}

// PointSums sum one delay's replays (exported fields: a State's).
type PointSums struct {
	Chosen           int     `json:"c"`           // samples with a choice
	None             int     `json:"x,omitempty"` // neither completes
	Slower           int     `json:"s,omitempty"` // the chosen family was the slower one
	IPv6Slower       int     `json:"s6,omitempty"`
	IPv6PickedSlower int     `json:"p6,omitempty"` // of those, the rule chose IPv6
	LostNS           float64 `json:"l,omitempty"`
	LostSlow         float64 `json:"ls,omitempty"`
	ChosenIPv6       int     `json:"c6,omitempty"` // the rule chose IPv6
}

// Saved is a sweep's sums, to be kept (a run's record) and taken back
// into a sweep of the same rule and delays (Restore).
type Saved struct {
	N       int         `json:"n"`
	Missing int         `json:"missing,omitempty"`
	Sums    []PointSums `json:"sums"`
}

// Save is w's sums.
func (w *Sweep) Save() Saved {
	return Saved{N: w.n, Missing: w.missing, Sums: append([]PointSums(nil), w.acc...)}
}

// Restore makes a sweep of rule over delays holding st's sums (ignored
// when st is of another number of delays).
func Restore(rule Rule, delays []time.Duration, st Saved) *Sweep {
	w := New(rule, delays)
	if len(st.Sums) == len(delays) {
		w.n, w.missing = st.N, st.Missing
		copy(w.acc, st.Sums)
	}
	return w
}

// New makes a sweep of rule over delays.
func New(rule Rule, delays []time.Duration) *Sweep {
	return &Sweep{rule: rule, delays: append([]time.Duration(nil), delays...), acc: make([]PointSums, len(delays))}
}

// Add replays one sample at every delay. A sample missing either family
// is counted (Missing) and left out.
func (w *Sweep) Add(s Sample) {
	if s.IPv6.State == Missing || s.IPv4.State == Missing {
		w.missing++
		return
	}
	w.n++
	t6, ok6 := s.IPv6.completes()
	t4, ok4 := s.IPv4.completes()
	best, ok := t6, ok6
	if ok4 && (!ok || t4 < t6) {
		best, ok = t4, true
	}
	// Which family is the slower one, if they differ by more than the
	// tolerance (a family that never completes is the slower).
	slow6 := ok4 && (!ok6 || t6 > t4+w.Tolerance)
	slow4 := ok6 && (!ok4 || t4 > t6+w.Tolerance)
	for i, d := range w.delays {
		p := &w.acc[i]
		if slow6 {
			p.IPv6Slower++
		}
		ipv6, at, chose := w.rule(s, d)
		if !chose || !ok {
			p.None++
			continue
		}
		p.Chosen++
		lost := float64(at - best)
		p.LostNS += lost
		if ipv6 {
			p.ChosenIPv6++
		}
		if (ipv6 && slow6) || (!ipv6 && slow4) {
			p.Slower++
			p.LostSlow += lost
		}
		if ipv6 && slow6 {
			p.IPv6PickedSlower++
		}
	}
}

// Merge adds o's replays (a sweep of the same rule and delays) to w's.
func (w *Sweep) Merge(o *Sweep) {
	w.n += o.n
	w.missing += o.missing
	for i := range w.acc {
		if i >= len(o.acc) {
			break
		}
		a, b := &w.acc[i], o.acc[i]
		a.Chosen += b.Chosen
		a.None += b.None
		a.Slower += b.Slower
		a.IPv6Slower += b.IPv6Slower
		a.IPv6PickedSlower += b.IPv6PickedSlower
		a.LostNS += b.LostNS
		a.LostSlow += b.LostSlow
		a.ChosenIPv6 += b.ChosenIPv6
	}
}

// N is how many samples were replayed; Missing how many were left out
// for lack of a family's time.
func (w *Sweep) N() int       { return w.n }
func (w *Sweep) Missing() int { return w.missing }

// Point is one attempt delay's replay of every sample.
type Point struct {
	DelayMS float64 `json:"delay_ms"`
	// N is the samples replayed; None those in which neither family
	// completed (no choice: a failed transaction at any delay).
	N    int `json:"n"`
	None int `json:"none,omitempty"`
	// Slower is how many samples the rule ended on the slower family
	// (of N − None), SlowerShare that share and SlowerCI95 its Wilson
	// score interval.
	Slower      int         `json:"slower"`
	SlowerShare *float64    `json:"slower_share"`
	SlowerCI95  *[2]float64 `json:"slower_ci95,omitempty"`
	// IPv6Slower counts the samples whose IPv6 handshake was the slower,
	// and IPv6PickedWhenSlower the share of those in which the rule
	// still ended on IPv6 (Bajpai and Schönwälder's figure), with its
	// Wilson interval; IPv6PickedSlower how many.
	IPv6Slower             int         `json:"ipv6_slower"`
	IPv6PickedSlower       int         `json:"ipv6_picked_slower"`
	IPv6PickedWhenSlower   *float64    `json:"ipv6_picked_when_slower"`
	IPv6PickedWhenSlowerCI *[2]float64 `json:"ipv6_picked_when_slower_ci95,omitempty"`
	// IPv6 is how many samples the rule ended on IPv6, IPv6Share
	// their share (of N − None).
	IPv6      int      `json:"ipv6"`
	IPv6Share *float64 `json:"ipv6_share"`
	// LostMeanMS is the mean time lost against the faster family started
	// at once (ms, over the samples with a choice); LostWhenSlowerMS the
	// mean over those that ended on the slower family.
	LostMeanMS       *float64 `json:"lost_mean_ms"`
	LostWhenSlowerMS *float64 `json:"lost_when_slower_ms"`
}

// Points are the sweep's figures, one per delay, in the delays' order.
func (w *Sweep) Points() []Point {
	out := make([]Point, len(w.delays))
	for i, d := range w.delays {
		p := w.acc[i]
		pt := Point{DelayMS: float64(d) / 1e6, N: w.n, None: p.None, Slower: p.Slower, IPv6Slower: p.IPv6Slower,
			IPv6PickedSlower: p.IPv6PickedSlower, IPv6: p.ChosenIPv6}
		if p.Chosen > 0 {
			pt.SlowerShare = share(p.Slower, p.Chosen)
			pt.SlowerCI95 = wilson(p.Slower, p.Chosen)
			pt.IPv6Share = share(p.ChosenIPv6, p.Chosen)
			lost := p.LostNS / float64(p.Chosen) / 1e6
			pt.LostMeanMS = &lost
		}
		if p.Slower > 0 {
			l := p.LostSlow / float64(p.Slower) / 1e6
			pt.LostWhenSlowerMS = &l
		}
		if p.IPv6Slower > 0 {
			pt.IPv6PickedWhenSlower = share(p.IPv6PickedSlower, p.IPv6Slower)
			pt.IPv6PickedWhenSlowerCI = wilson(p.IPv6PickedSlower, p.IPv6Slower)
		}
		out[i] = pt
	}
	return out
}

// At is the point at delay d, if the sweep has it.
func (w *Sweep) At(d time.Duration) (Point, bool) {
	for i, x := range w.delays {
		if x == d {
			return w.Points()[i], true
		}
	}
	return Point{}, false
}

func share(k, n int) *float64 {
	v := float64(k) / float64(n)
	return &v
}

func wilson(k, n int) *[2]float64 {
	ci, ok := stats.Wilson(k, n)
	if !ok {
		return nil
	}
	return &ci
}
