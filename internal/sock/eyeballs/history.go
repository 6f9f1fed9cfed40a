package eyeballs

import (
	"net/netip"
	"sync"
	"time"
)

// History is what a client has seen of its destinations' round trips:
// per address, a smoothed RTT and its variation (RFC 6298 §2), from its
// completed handshakes. Version 3 sorts by it within a family (§5.3) and
// sets a Connection Attempt Delay from it (§6). One History is one
// client's (one device's): the users of a cell share it. It is safe for
// concurrent use; the zero value is empty and ready.
type History struct {
	mu  sync.Mutex
	rtt map[netip.Addr]rttEstimate
}

type rttEstimate struct{ srtt, rttvar time.Duration }

// Observe takes one RTT sample of a (a handshake's round trip):
// SRTT ← 7/8 SRTT + 1/8 R, RTTVAR ← 3/4 RTTVAR + 1/4 |SRTT − R|, the
// first sample setting SRTT = R and RTTVAR = R/2 (RFC 6298 §2.2–2.3).
func (h *History) Observe(a netip.Addr, r time.Duration) {
	if h == nil || r <= 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rtt == nil {
		h.rtt = map[netip.Addr]rttEstimate{}
	}
	e, ok := h.rtt[a]
	if !ok {
		h.rtt[a] = rttEstimate{srtt: r, rttvar: r / 2}
		return
	}
	diff := e.srtt - r
	if diff < 0 {
		diff = -diff
	}
	e.rttvar = (3*e.rttvar + diff) / 4
	e.srtt = (7*e.srtt + r) / 8
	h.rtt[a] = e
}

// RTT is a's smoothed RTT and variation, if any sample was taken.
func (h *History) RTT(a netip.Addr) (srtt, rttvar time.Duration, ok bool) {
	if h == nil {
		return 0, 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.rtt[a]
	return e.srtt, e.rttvar, ok
}

// Granularity is the clock granularity G of the retransmission timers
// (RFC 6298 §2, RFC 9002's kGranularity): 1 ms.
const Granularity = time.Millisecond

// Retransmit is when an attempt's handshake would first be sent again,
// given its destination's RTT: SRTT + max(G, 4·RTTVAR), the retransmission
// timeout of RFC 6298 §2.3 and the probe timeout of RFC 9002 §6.2.1 (for
// an Initial packet, without max_ack_delay), which agree.
func Retransmit(srtt, rttvar time.Duration) time.Duration {
	return srtt + max(Granularity, 4*rttvar)
}
