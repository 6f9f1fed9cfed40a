package eyeballs

import "time"

// A race's per-family handshakes, for the timer what-if: what became of
// each family's first attempt, timed from its own start (a sample carries
// them as result.Fate's metrics).

// FateState is what became of a family's first attempt.
type FateState uint8

const (
	// NoFate: the family had no attempt (or it is still under way).
	NoFate FateState = iota
	// Completed: the handshake completed Time after it started (for
	// version 3, after TLS or QUIC's handshake, §6.1).
	Completed
	// Refused: it failed Time after it started (refused, unreachable).
	Refused
	// Silent: no answer in Time (it was cancelled then: another won, or
	// the race ended).
	Silent
)

// Fate is one family's first attempt in one race.
type Fate struct {
	State FateState
	Time  time.Duration
	// QUIC: the attempt was a QUIC one (version 3).
	QUIC bool
}

// Fates are a version 2 race's: each family's first attempt, completed
// when it won, refused when it failed, silent when it was aborted (another
// won first, or the race ended) after running End − Start.
func (r Result) Fates() (v6, v4 Fate) {
	var out [2]Fate
	seen := [2]bool{}
	for _, a := range r.Attempts {
		i := 1
		if a.Addr.Is6() {
			i = 0
		}
		if seen[i] {
			continue
		}
		seen[i] = true
		f := Fate{State: Silent, Time: a.End - a.Start}
		switch {
		case a.Won:
			f.State = Completed
		case a.Err != "":
			f.State = Refused
		case a.End == 0: // still under way: no end to time
			f = Fate{}
		}
		out[i] = f
	}
	return out[0], out[1]
}

// Fates are a version 3 race's: each family's first attempt (QUIC's when
// the records offer h3), as Result's are.
func (r Record3) Fates() (v6, v4 Fate) {
	var out [2]Fate
	seen := [2]bool{}
	for _, a := range r.Attempts {
		i := 1
		if a.Addr.Addr().Is6() {
			i = 0
		}
		if seen[i] {
			continue
		}
		seen[i] = true
		f := Fate{State: Silent, Time: a.End - a.Start, QUIC: a.Transport == QUIC}
		switch a.Outcome {
		case Won:
			f.State = Completed
		case Lost:
			f.State = Refused
		case Running:
			f = Fate{}
		}
		out[i] = f
	}
	return out[0], out[1]
}
