package http

import (
	"testing"
	"time"

	"v6lab/internal/result"
)

// fates are a sample's two families' fates, failing the test when one is
// absent.
func fates(t *testing.T, m map[string]float64) (v6, v4 result.Fate) {
	t.Helper()
	v6, ok6 := result.FateOf(m, true)
	v4, ok4 := result.FateOf(m, false)
	if !ok6 || !ok4 {
		t.Fatalf("a family's fate is missing: %v", m)
	}
	return v6, v4
}

// TestV3FatesWithoutWhatIf: QUIC blocked over IPv6; without whatif the
// sample holds what the race saw: IPv6's QUIC attempt silent until IPv4's
// began one delay (fallbackDelay) later and won, and it was cancelled,
// IPv4's QUIC attempt done within a delay; nothing is timed after (no
// he_whatif_after).
func TestV3FatesWithoutWhatIf(t *testing.T) {
	c := fallingBack(v3rig(t, lo4))
	s := do(c, 5*time.Second)
	if s.Err != "" {
		t.Fatal(s.Err)
	}
	v6, v4 := fates(t, s.Metrics)
	if v6.State != result.FateSilent || v6.Time < fallbackDelay || v6.Time > 2*fallbackDelay || !v6.QUIC {
		t.Errorf("IPv6's fate %+v, want silent one to two delays of %v, QUIC", v6, fallbackDelay)
	}
	if v4.State != result.FateDone || v4.Time <= 0 || v4.Time > fallbackDelay || !v4.QUIC {
		t.Errorf("IPv4's fate %+v, want done, QUIC", v4)
	}
	if _, ok := s.Metrics["he_whatif_after"]; ok {
		t.Errorf("timed after without whatif: %v", s.Metrics)
	}
}

// TestV3WhatIfTimesTheFamiliesAfter: with whatif, a healthy race (QUIC
// over IPv6 wins, IPv4 never tried) gets both families' QUIC handshakes
// timed after the transaction; with QUIC blocked over IPv6, the cancelled
// IPv6 attempt is replaced by a fresh one that hears nothing for the whole
// WhatIfHorizon. The transaction's own figures do not include that time.
func TestV3WhatIfTimesTheFamiliesAfter(t *testing.T) {
	c := patient(v3rig(t, lo4, lo6))
	c.WhatIf = true
	s := do(c, 5*time.Second)
	if s.Err != "" || s.Metrics["ipv6_won"] != 1 || s.Metrics["he_attempts"] != 1 {
		t.Fatalf("%s: %v", s.Err, s.Metrics)
	}
	v6, v4 := fates(t, s.Metrics)
	if v6.State != result.FateDone || v4.State != result.FateDone || !v4.QUIC || !v6.QUIC || s.Metrics["he_whatif_after"] != 2 {
		t.Errorf("healthy: IPv6 %+v, IPv4 %+v, metrics %v", v6, v4, s.Metrics)
	}

	c = fallingBack(v3rig(t, lo4))
	c.WhatIf = true
	start := time.Now()
	s = do(c, 5*time.Second)
	took := time.Since(start)
	if s.Err != "" || s.Metrics["ipv6_won"] != 0 {
		t.Fatalf("%s: %v", s.Err, s.Metrics)
	}
	v6, v4 = fates(t, s.Metrics)
	if v6.State != result.FateSilent || v6.Time < WhatIfHorizon || !v6.QUIC || v4.State != result.FateDone || s.Metrics["he_whatif_after"] != 2 {
		t.Errorf("QUIC blocked over IPv6: IPv6 %+v, IPv4 %+v, metrics %v", v6, v4, s.Metrics)
	}
	if total := time.Duration(s.TotalNS); total >= WhatIfHorizon || took < WhatIfHorizon {
		t.Errorf("the transaction took %v and Do %v: want the horizon in Do's time only", total, took)
	}
}

// TestV2WhatIfTimesTheFamilyNeverTried: v6lab's RFC 8305 client connects
// over IPv6 at once; IPv4, never tried, gets a TCP handshake timed after
// the transaction, beside IPv6's.
func TestV2WhatIfTimesTheFamilyNeverTried(t *testing.T) {
	c := v3rig(t, lo4, lo6)
	c.V3, c.WhatIf = nil, true
	s := do(c, 5*time.Second)
	if s.Err != "" || s.Metrics["ipv6_won"] != 1 {
		t.Fatalf("%s: %v", s.Err, s.Metrics)
	}
	v6, v4 := fates(t, s.Metrics)
	if v6.State != result.FateDone || v4.State != result.FateDone || v4.QUIC || v4.Time <= 0 || s.Metrics["he_whatif_after"] != 2 {
		t.Errorf("IPv6 %+v, IPv4 %+v, metrics %v", v6, v4, s.Metrics)
	}
}
