package http

import (
	"crypto/tls"
	"net/netip"
	"strings"
	"testing"
	"time"

	"v6lab/internal/sock/path"
)

// TestKeptConnectionsSayTheirFamily: a transaction on a kept connection
// records the connection's two ends as its first transaction did, and on
// the dual path the family the race chose then (ipv6_won), so a kept
// dual cell still says which family its figures are of.
func TestKeptConnectionsSayTheirFamily(t *testing.T) {
	r := h3Rig(t)
	for _, p := range []path.Path{path.IPv4, path.IPv6, path.Dual} {
		c := r.client(t, p, "https://www.v6lab.test:%d/")
		c.Version, c.Keep, c.TLS = Version2, true, &tls.Config{InsecureSkipVerify: true}
		first := do(c, 5*time.Second)
		if !first.OK() || first.Local == "" || first.Remote == "" {
			t.Fatalf("%s: first transaction %+v", p, first)
		}
		for i := range 3 {
			s := do(c, 5*time.Second)
			if !s.OK() || !strings.Contains(s.Marker, "kept connection") {
				t.Fatalf("%s, kept transaction %d: %+v", p, i, s)
			}
			if s.Local != first.Local || s.Remote != first.Remote {
				t.Errorf("%s, kept transaction %d: ends %s -> %s, the connection's %s -> %s", p, i, s.Local, s.Remote, first.Local, first.Remote)
			}
			remote := netip.MustParseAddrPort(s.Remote).Addr()
			if p != path.Dual && !p.Accepts(remote) {
				t.Errorf("%s: remote %s", p, remote)
			}
			if v6, ok := s.Metrics["ipv6_won"]; (p == path.Dual) != ok || (ok && v6 != first.Metrics["ipv6_won"]) || (ok && (v6 == 1) != remote.Is6()) {
				t.Errorf("%s, kept transaction %d: ipv6_won %v (%v), the first's %v, remote %s", p, i, v6, ok, first.Metrics["ipv6_won"], remote)
			}
		}
		c.Close()
	}
}
