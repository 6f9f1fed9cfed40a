package smtp

// The real server, answering v6lab's own client over both families.

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"v6lab/internal/lab/servers"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil"
)

func TestPostfixAcceptsMail(t *testing.T) {
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	if err := servers.CheckInstalled([]servers.Program{{Name: "postfix", Package: "postfix"}}); err != nil {
		t.Skip(err)
	}
	port := testutil.FreePort(t)
	s, err := startPostfix(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port, "v6lab.test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.HasPrefix(s.Version, "Postfix 3") {
		t.Errorf("version %q", s.Version)
	}
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		c := &Client{Host: p.Loopback().String(), Port: port, Path: p, Resolver: &path.Resolver{}, From: "a@v6lab.test", To: "user%d@v6lab.test"}
		for u := range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			smp := c.Do(ctx, u)
			cancel()
			if !smp.OK() || !strings.Contains(smp.Marker, "queued as") {
				t.Errorf("%s user %d: %q %q", p, u, smp.Err, smp.Marker)
			}
		}
	}
}
