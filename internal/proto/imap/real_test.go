package imap

// The real server, answering v6lab's own client over both families.

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"v6lab/internal/lab/servers"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil"
)

func TestDovecotServesEachUsersMessage(t *testing.T) {
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	if err := servers.CheckInstalled([]servers.Program{{Name: "dovecot", Package: "dovecot-imapd"}}); err != nil {
		t.Skip(err)
	}
	port := testutil.FreePort(t)
	s, err := startDovecot(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		20, "secret", []byte("From: <a@v6lab.test>\r\nSubject: x\r\n\r\nhello\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.HasPrefix(s.Version, "Dovecot 2.") {
		t.Errorf("version %q", s.Version)
	}
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		c := &Client{Host: p.Loopback().String(), Port: port, Path: p, Resolver: &path.Resolver{}, Users: 20, Password: "secret"}
		for u := range 20 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			smp := c.Do(ctx, u)
			cancel()
			if !smp.OK() || !strings.HasSuffix(smp.Marker, fmt.Sprintf("of user%d", u+1)) {
				t.Errorf("%s user %d: %q %q", p, u, smp.Err, smp.Marker)
			}
		}
	}
}
