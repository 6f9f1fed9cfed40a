package dns

import (
	"net/netip"
	"testing"

	"v6lab/internal/path"
	"v6lab/internal/proto"
)

// TestPlaceZoneGivesALabOnlyPathItsOwnAddress: the native name has the
// ipv4 and ipv6 addresses; asked on the 6in4 address, the view answers
// AAAA with the tunnel's address and A with the native IPv4 one.
func TestPlaceZoneGivesALabOnlyPathItsOwnAddress(t *testing.T) {
	v4, v6, tun := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8:6::1")
	zone, views := placeZone(proto.Place{Name: "www.v6lab.test", Addrs: map[path.Path]netip.Addr{path.IPv4: v4, path.IPv6: v6, path.SixIn4: tun}})
	got := zone["www.v6lab.test."]
	if len(got) == 0 {
		got = zone["www.v6lab.test"]
	}
	if len(got) != 2 || got[0] != v4 || got[1] != v6 {
		t.Errorf("zone %v", zone)
	}
	view, ok := views[tun]
	if !ok || len(views) != 1 {
		t.Fatalf("views %v", views)
	}
	for _, addrs := range view {
		if len(addrs) != 2 || addrs[0] != v4 || addrs[1] != tun {
			t.Errorf("view %v", view)
		}
	}
}
