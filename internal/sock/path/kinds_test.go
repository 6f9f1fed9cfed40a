package path

import (
	"strings"
	"testing"
)

// TestKindsAreOneTable: every path kind has one complete row, and what
// callers ask of a path comes from it.
func TestKindsAreOneTable(t *testing.T) {
	seen := map[Path]bool{}
	for i, k := range Kinds {
		if seen[k.Path] || k.Rank != i || k.Display == "" || k.HeaderBytes == 0 || k.CSSClass == "" || k.Wire == "" {
			t.Errorf("row %d is incomplete or repeated: %+v", i, k)
		}
		seen[k.Path] = true
		if p, err := Parse(strings.ToUpper(string(k.Path))); err != nil || p != k.Path {
			t.Errorf("Parse(%s) = %v, %v", k.Path, p, err)
		}
		if k.Path.IsIPv6() != k.IPv6 || (k.Path.Network("tcp") == "tcp6") != k.IPv6 || (k.Path.Network("tcp") == "tcp") != k.Dual {
			t.Errorf("%s: family disagrees with its row", k.Path)
		}
	}
	if len(All) != len(Kinds) || strings.Join([]string{string(All[0]), string(All[1]), string(All[2]), string(All[3]), string(All[4]), string(All[5]), string(All[6])}, ",") != "ipv4,ipv6,6in4,nat64,464xlat,dslite,dual" {
		t.Errorf("All = %v", All)
	}
	// An IPv4 application over an IPv6-only access network: IPv4 sockets,
	// the access link's IPv6 proven apart.
	for _, p := range []Path{XLAT464, DSLite} {
		if k := p.Kind(); k.IPv6 || !k.LabOnly || k.Access == "" || !k.NATed || p.Network("udp") != "udp4" {
			t.Errorf("%s: %+v", p, k)
		}
	}
	if lo := LabOnly(); len(lo) != 4 || lo[0] != SixIn4 || lo[1] != NAT64 || lo[2] != XLAT464 || lo[3] != DSLite {
		t.Errorf("LabOnly = %v", lo)
	}
	for _, k := range Kinds {
		if err := k.Path.OffLab("loopback"); (err != nil) != k.LabOnly {
			t.Errorf("%s off the lab: %v", k.Path, err)
		}
	}
	if _, err := Parse("nat46"); err == nil || !strings.Contains(err.Error(), `unknown path "nat46" (want ipv4, ipv6, 6in4, nat64, 464xlat, dslite or dual)`) {
		t.Errorf("Parse(nat46): %v", err)
	}
	if k, ok := KindOf("other"); ok || k.Rank != len(Kinds) {
		t.Errorf("an unknown path: %+v %v", k, ok)
	}
}
