package eyeballs

import "time"

// A race's per-family handshakes, for the timer what-if
// (internal/report/whatif): what became of each family's first attempt,
// timed from its own start. A sample carries them as metrics named
// he_ipv6_done_ms, he_ipv6_failed_ms or he_ipv6_silent_ms (and ipv4's),
// one per family at most, so that a report can replay the race at any
// other attempt delay.

// The states of a family's handshake.
const (
	// FateDone: the handshake completed Time after it started (for
	// version 3, after TLS or QUIC's handshake, §6.1).
	FateDone = "done"
	// FateFailed: it failed Time after it started (refused, unreachable).
	FateFailed = "failed"
	// FateSilent: no answer in Time (it was cancelled then, or timed out).
	FateSilent = "silent"
)

// Fate is one family's handshake in one race.
type Fate struct {
	State string
	Time  time.Duration
	// QUIC: the attempt was a QUIC one (version 3).
	QUIC bool
}

func family(ipv6 bool) string {
	if ipv6 {
		return "ipv6"
	}
	return "ipv4"
}

// FateKey is the metric that carries a family's fate in state.
func FateKey(ipv6 bool, state string) string {
	return "he_" + family(ipv6) + "_" + state + "_ms"
}

// QUICKey is the metric that says a family's timed attempt was QUIC's.
func QUICKey(ipv6 bool) string { return "he_" + family(ipv6) + "_quic" }

// PutFate writes f as family's metric in m (nothing when f has no State),
// replacing the family's earlier fate.
func PutFate(m map[string]float64, ipv6 bool, f Fate) {
	if f.State == "" || m == nil {
		return
	}
	for _, s := range []string{FateDone, FateFailed, FateSilent} {
		delete(m, FateKey(ipv6, s))
	}
	m[FateKey(ipv6, f.State)] = float64(f.Time) / 1e6
	if f.QUIC {
		m[QUICKey(ipv6)] = 1
	}
}

// FateOf reads family's fate from a sample's metrics.
func FateOf(m map[string]float64, ipv6 bool) (Fate, bool) {
	for _, s := range []string{FateDone, FateFailed, FateSilent} {
		if v, ok := m[FateKey(ipv6, s)]; ok {
			return Fate{State: s, Time: time.Duration(v * 1e6), QUIC: m[QUICKey(ipv6)] == 1}, true
		}
	}
	return Fate{}, false
}

// Fates are a version 2 race's: each family's first attempt, done when it
// won, failed when it failed, silent when it was aborted (another won
// first, or the race ended) after running End − Start; a family with no
// attempt has none.
func (r Result) Fates() (v6, v4 Fate) {
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
		f := Fate{State: FateSilent, Time: a.End - a.Start}
		switch {
		case a.Won:
			f.State = FateDone
		case a.Err != "":
			f.State = FateFailed
		case a.End == 0: // still under way: no end to time
			f = Fate{}
		}
		if i == 0 {
			v6 = f
		} else {
			v4 = f
		}
	}
	return v6, v4
}

// Fates are a version 3 race's: each family's first attempt (QUIC's when
// the records offer h3), as Result's are.
func (r Record3) Fates() (v6, v4 Fate) {
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
		f := Fate{State: FateSilent, Time: a.End - a.Start, QUIC: a.Transport == QUIC}
		switch a.Outcome {
		case Won:
			f.State = FateDone
		case Lost:
			f.State = FateFailed
		case Running:
			f = Fate{}
		}
		if i == 0 {
			v6 = f
		} else {
			v4 = f
		}
	}
	return v6, v4
}
