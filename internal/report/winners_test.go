package report

import (
	"strings"
	"testing"

	"v6lab/internal/result"
)

// TestWinnersCountedPerCell: each dual sample counts once under the family
// and transport that won its race (v2's samples, without quic_won, over
// tcp); samples that raced nothing count nowhere; the report gives each
// share with its Wilson interval, most frequent first.
func TestWinnersCountedPerCell(t *testing.T) {
	for _, c := range []struct {
		m    map[string]float64
		want string
	}{
		{map[string]float64{"ipv6_won": 1, "quic_won": 1}, "ipv6/quic"},
		{map[string]float64{"ipv6_won": 0, "quic_won": 1}, "ipv4/quic"},
		{map[string]float64{"ipv6_won": 1, "quic_won": 0}, "ipv6/tcp"},
		{map[string]float64{"ipv6_won": 0}, "ipv4/tcp"},
		{map[string]float64{"he_attempts": 2}, ""},
		{nil, ""},
	} {
		if got := Winner(c.m); got != c.want {
			t.Errorf("%v: %q, want %q", c.m, got, c.want)
		}
	}
	a := newCellAdds()
	for i := range 10 {
		m := map[string]float64{"ipv6_won": 1, "quic_won": 1}
		if i >= 8 {
			m["ipv6_won"] = 0
		}
		a.add(&result.Sample{TotalNS: 1e6, Metrics: m}, int64(i), -1)
	}
	a.add(&result.Sample{Err: "refused", ErrKind: "connect"}, 10, -1) // failed: no winner
	b := newCellAdds()
	c := newCellAcc(cellKey{})
	c.adds = b
	c.merge(a, nil)
	if b.winners["ipv6/quic"] != 8 || b.winners["ipv4/quic"] != 2 || len(b.winners) != 2 {
		t.Fatalf("winners %v", b.winners)
	}
	txt := winnersText(&Cell{Winners: b.winners})
	// 8 of 10: Wilson's 95% interval is 49.02–94.33%.
	if !strings.HasPrefix(txt, "ipv6/quic 80% (49.02–94.33%), ipv4/quic 20%") {
		t.Errorf("%q", txt)
	}
}
