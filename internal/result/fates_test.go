package result

import (
	"testing"
	"time"
)

// TestFates: a family's fate is one metric (a later one replaces it),
// read back as written; a family without one has none.
func TestFates(t *testing.T) {
	m := map[string]float64{}
	PutFate(m, true, Fate{State: FateSilent, Time: time.Second, QUIC: true})
	failed := Fate{State: FateFailed, Time: 2 * time.Millisecond}
	PutFate(m, true, failed)
	PutFate(m, false, Fate{}) // no state: nothing
	if len(m) != 1 || m["he_ipv6_failed_ms"] != 2 {
		t.Errorf("metrics %v", m)
	}
	if f, ok := FateOf(m, true); !ok || f != failed {
		t.Errorf("read back %+v %v, want %+v", f, ok, failed)
	}
	if _, ok := FateOf(m, false); ok {
		t.Error("IPv4 has a fate")
	}
}
