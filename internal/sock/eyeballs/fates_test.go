package eyeballs

import (
	"net/netip"
	"testing"
	"time"
)

// TestFates: each family's first attempt only; won is done, an error
// failed, aborted silent for as long as it ran; a family with no attempt
// has no fate; the metrics carry them and read back.
func TestFates(t *testing.T) {
	a6, a4 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("192.0.2.1")
	ms := time.Millisecond
	r := Result{Attempts: []Attempt{
		{Addr: a6, Start: 0, End: 250 * ms, Aborted: true},
		{Addr: a4, Start: 250 * ms, End: 252 * ms, Won: true},
		{Addr: a6, Start: 251 * ms, End: 252 * ms, Err: "refused"}, // not the first of IPv6
	}}
	v6, v4 := r.Fates()
	if v6 != (Fate{State: FateSilent, Time: 250 * ms}) || v4 != (Fate{State: FateDone, Time: 2 * ms}) {
		t.Errorf("v2: %+v %+v", v6, v4)
	}
	rec := Record3{Attempts: []Attempt3{
		{Endpoint: Endpoint{Addr: netip.AddrPortFrom(a6, 443), Transport: QUIC}, Start: ms, End: 3 * ms, Outcome: Lost},
	}}
	v6, v4 = rec.Fates()
	if v6 != (Fate{State: FateFailed, Time: 2 * ms, QUIC: true}) || v4.State != "" {
		t.Errorf("v3: %+v %+v", v6, v4)
	}
	m := map[string]float64{}
	PutFate(m, true, Fate{State: FateSilent, Time: time.Second, QUIC: true})
	PutFate(m, true, v6) // replaces the silent one
	PutFate(m, false, v4)
	if len(m) != 2 || m["he_ipv6_failed_ms"] != 2 || m["he_ipv6_quic"] != 1 {
		t.Errorf("metrics %v", m)
	}
	if f, ok := FateOf(m, true); !ok || f != v6 {
		t.Errorf("read back %+v %v, want %+v", f, ok, v6)
	}
	if _, ok := FateOf(m, false); ok {
		t.Error("IPv4 has a fate")
	}
}
