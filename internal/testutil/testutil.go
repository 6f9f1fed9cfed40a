// Package testutil holds what v6lab's tests share: the skip of a root-only
// test, and in its folders test servers (servetest) and one transaction of
// a protocol as a cell runs it (prototest). Only tests import it.
package testutil

import (
	"net"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// RequireRoot skips a test (or benchmark) that needs root, saying why
// (CI runs as root, so it runs there).
func RequireRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skipf("%s (CI runs as root)", why)
	}
}

// FreePort picks a port that is free now on both loopback addresses, for
// TCP and for UDP over IPv4: for a server that must be given its port
// (a real daemon's configuration).
func FreePort(tb testing.TB) int {
	tb.Helper()
	for range 50 {
		p := strconv.Itoa(20000 + int(time.Now().UnixNano()%20000))
		l4, err4 := net.Listen("tcp4", "127.0.0.1:"+p)
		l6, err6 := net.Listen("tcp6", "[::1]:"+p)
		u4, erru := net.ListenPacket("udp4", "127.0.0.1:"+p)
		for _, c := range []interface{ Close() error }{l4, l6, u4} {
			if c != nil {
				c.Close()
			}
		}
		if err4 == nil && err6 == nil && erru == nil {
			n, _ := strconv.Atoi(p)
			return n
		}
	}
	tb.Fatal("no free port")
	return 0
}

// InOwnNetns runs the test on a locked thread in a new network namespace
// (its loopback, up, carries only the test's packets), back in the old
// one when it ends; it skips the test when not root, saying why.
func InOwnNetns(t *testing.T, why string) {
	t.Helper()
	RequireRoot(t, why)
	runtime.LockOSThread()
	old, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := netns.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		netns.Set(old)
		ns.Close()
		old.Close()
		runtime.UnlockOSThread()
	})
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		t.Fatal(err)
	}
}
