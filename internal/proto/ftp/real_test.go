package ftp

// The real server, answering v6lab's own client over both families.

import (
	"context"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"v6lab/internal/lab/servers"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil"
)

// TestMain answers servers.InetdCommand: ProFTPD's tests run this test
// binary as their inetd, as v6lab runs itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "inetd" {
		os.Exit(servers.InetdMain(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

func TestProFTPDServesSparseFiles(t *testing.T) {
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	if err := servers.CheckInstalled([]servers.Program{{Name: "proftpd", Package: "proftpd-core"}}); err != nil {
		t.Skip(err)
	}
	port := testutil.FreePort(t)
	s, err := startProFTPD(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		map[string]int64{"1M": 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.Contains(s.Version, "ProFTPD") {
		t.Errorf("version %q", s.Version)
	}
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		for _, active := range []bool{false, true} {
			c := &Client{Host: p.Loopback().String(), Port: port, File: "/1M", Path: p, Resolver: &path.Resolver{}, Active: active}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			smp := c.Do(ctx, 0)
			cancel()
			if !smp.OK() || smp.BytesIn != 1<<20 || !strings.HasPrefix(smp.Marker, "226") {
				t.Errorf("%s active=%v: %q %q", p, active, smp.Err, smp.Marker)
			}
		}
	}
}

// TestProFTPDAnswersBackToBackSessions: one user's sessions one after
// another, as a one-connection cell runs them. Standalone ProFTPD slept
// 0.2 s (more than once) before accepting a connection that arrived right
// after a session ended: 0.4-1.4 s a transaction on loopback. From inetd
// each is answered at once.
func TestProFTPDAnswersBackToBackSessions(t *testing.T) {
	testutil.RequireRoot(t, "ProFTPD binds as root and changes user")
	if err := servers.CheckInstalled([]servers.Program{{Name: "proftpd", Package: "proftpd-core"}}); err != nil {
		t.Skip(err)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s, err := startProFTPD(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, port, map[string]int64{"1K": 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.HasSuffix(s.Version, "(from inetd)") {
		t.Errorf("version %q does not say how ProFTPD runs", s.Version)
	}
	c := &Client{Host: "127.0.0.1", Port: port, File: "/1K", Path: path.IPv4, Resolver: &path.Resolver{}}
	var took []time.Duration
	for range 9 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		smp := c.Do(ctx, 0)
		cancel()
		if !smp.OK() || smp.BytesIn != 1<<10 {
			t.Fatalf("transaction %d: %q", len(took), smp.Err)
		}
		took = append(took, smp.Total())
	}
	slices.Sort(took)
	// The median is far apart either way: a few ms from inetd (tens on a
	// loaded machine, forking a ProFTPD per session), 0.4 s or more
	// standalone.
	if took[len(took)/2] > 300*time.Millisecond {
		t.Errorf("back-to-back sessions took %v (sorted): ProFTPD waits before it accepts", took)
	}
}
