package eyeballs

import (
	"net/netip"
	"testing"
	"time"
)

// TestFates: each family's first attempt only; won is completed, an error
// refused, aborted silent for as long as it ran; a family with no attempt
// has no fate.
func TestFates(t *testing.T) {
	a6, a4 := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("192.0.2.1")
	ms := time.Millisecond
	r := Result{Attempts: []Attempt{
		{Addr: a6, Start: 0, End: 250 * ms, Aborted: true},
		{Addr: a4, Start: 250 * ms, End: 252 * ms, Won: true},
		{Addr: a6, Start: 251 * ms, End: 252 * ms, Err: "refused"}, // not the first of IPv6
	}}
	v6, v4 := r.Fates()
	if v6 != (Fate{State: Silent, Time: 250 * ms}) || v4 != (Fate{State: Completed, Time: 2 * ms}) {
		t.Errorf("v2: %+v %+v", v6, v4)
	}
	rec := Record3{Attempts: []Attempt3{
		{Endpoint: Endpoint{Addr: netip.AddrPortFrom(a6, 443), Transport: QUIC}, Start: ms, End: 3 * ms, Outcome: Lost},
	}}
	v6, v4 = rec.Fates()
	if v6 != (Fate{State: Refused, Time: 2 * ms, QUIC: true}) || v4.State != NoFate {
		t.Errorf("v3: %+v %+v", v6, v4)
	}
}
