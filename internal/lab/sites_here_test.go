package lab

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/testutil"
)

// TestSitesHereDropsBlackhole6InSilence (trial6 F17): in a namespace
// SitesHere readied, a connect to a blackhole6 site's IPv6 address is
// not refused at once (a blackhole route's EINVAL) but times out, as a
// real black hole's does; a site's ordinary IPv6 address is there. As
// root, in a namespace of the test's own, which goes with its thread.
func TestSitesHereDropsBlackhole6InSilence(t *testing.T) {
	testutil.RequireRoot(t, "a namespace of its own needs root")
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread, in its own namespace, ends with
		// the goroutine, and the namespace (its veth pair too) with it.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		if err := SitesHere(); err != nil {
			done <- err
			return
		}
		done <- dialBoth()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// dialBoth dials site 5's ordinary IPv6 address (refused: nothing
// listens, but the address answers) and its blackholed one (a timeout).
func dialBoth() error {
	_, v6 := SiteAddrs(5, false)
	_, hole := SiteAddrs(5, true)
	d := net.Dialer{Timeout: 300 * time.Millisecond}
	if _, err := d.Dial("tcp6", netip.AddrPortFrom(v6, 443).String()); !errors.Is(err, unix.ECONNREFUSED) {
		return errors.New("the ordinary address: " + errString(err) + ", want connection refused")
	}
	start := time.Now()
	_, err := d.Dial("tcp6", netip.AddrPortFrom(hole, 443).String())
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || time.Since(start) < 250*time.Millisecond {
		return errors.New("the blackholed address: " + errString(err) + " after " + time.Since(start).String() + ", want a timeout")
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
