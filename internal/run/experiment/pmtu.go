package experiment

import (
	"time"

	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// BlackHoleDetect is about how long a TCP connection with
// tcp_mtu_probing 1 retransmits into a path MTU black hole before the
// kernel lowers its segment size (measured on Linux 6.18: 6.4 to 6.7 s;
// docs/transition.md), for estimates.
const BlackHoleDetect = 6500 * time.Millisecond

// pmtuWait is how much longer than usual a transaction of the group over
// p is likely to take, for a plan's estimate: the whole timeout where its
// path MTU settings break p with nothing to mend it (a TCP stall, a DNS
// answer in dropped fragments), the black hole's detection with
// tcp_mtu_probing 1.
func (s *CellGroup) pmtuWait(p path.Path) time.Duration {
	d := s.PMTU.Drop()
	v6 := p.Kind().IPv6 && !p.Kind().Translated // nat64's far side is IPv4
	timeout := time.Duration(s.Timeout)
	if dg, ok := s.Options.(proto.Datagrams); ok && dg.OverUDP() {
		// A UDP answer that needs fragments is lost where they are
		// dropped (nat64's arrive as IPv6 ones); QUIC sends none.
		if dg.Fragmented() && (p.Kind().IPv6 && d.Frag6 || !p.Kind().IPv6 && d.Frag4) {
			return timeout
		}
		return 0
	}
	if v6 && d.PTB6 || !v6 && d.PTB4 {
		switch {
		case s.PMTU.MSSClamp, s.PMTU.MTUProbing != nil && *s.PMTU.MTUProbing == 2:
			return 0
		case s.PMTU.MTUProbing != nil && *s.PMTU.MTUProbing == 1:
			return min(timeout, BlackHoleDetect)
		}
		return timeout
	}
	return 0
}
