package result

import "time"

// A dual-path race's per-family handshakes in a sample's metrics, for the
// timer what-if (docs/metrics.md, "The timer what-if"): what became of
// each family's first attempt, timed from its own start, as
// he_ipv6_done_ms, he_ipv6_failed_ms or he_ipv6_silent_ms (and ipv4's),
// one per family at most, and he_ipv6_quic (ipv4's) 1 when it was QUIC's.

// The states of a family's handshake.
const (
	// FateDone: the handshake completed Time after it started.
	FateDone = "done"
	// FateFailed: it failed Time after it started (refused, unreachable).
	FateFailed = "failed"
	// FateSilent: no answer in Time (cancelled then, or timed out).
	FateSilent = "silent"
)

// Fate is one family's handshake in one sample.
type Fate struct {
	State string
	Time  time.Duration
	// QUIC: the attempt was a QUIC one (Happy Eyeballs version 3).
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
	delete(m, QUICKey(ipv6))
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
