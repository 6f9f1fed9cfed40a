package lab

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"v6lab/internal/sock/path"
)

// CheckKernel says what of cfg this kernel cannot do, before any lab is
// built: what building it would refuse (a congestion control it does not
// have, delay or jitter without netem), so a dry run refuses it too.
func CheckKernel(cfg Config) error {
	if cfg.Congestion != "" {
		if err := path.CheckCongestion(cfg.Congestion); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	for _, name := range LinkNames {
		if sh := cfg.Link(name).Shaping; sh.Delay > 0 || sh.Jitter > 0 {
			return HasNetem()
		}
	}
	return nil
}

// HasNetem says whether the kernel has the netem qdisc (ErrNoNetem if
// not): it adds one to the loopback of a network namespace of its own,
// which vanishes with it.
func HasNetem() error {
	errc := make(chan error, 1)
	go func() {
		// The thread changes namespace and is never unlocked: Go ends it
		// with the goroutine, so no other goroutine runs in that netns.
		runtime.LockOSThread()
		ns, err := netns.New()
		if err != nil {
			errc <- fmt.Errorf("lab: a namespace to probe netem in: %w", err)
			return
		}
		defer ns.Close()
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			errc <- fmt.Errorf("lab: %w", err)
			return
		}
		attrs := netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
		err = netlink.QdiscAdd(netlink.NewNetem(attrs, netlink.NetemQdiscAttrs{Latency: 1000}))
		switch {
		case errors.Is(err, unix.ENOENT):
			errc <- ErrNoNetem
		case err != nil:
			errc <- fmt.Errorf("lab: netem: %w", err)
		default:
			errc <- nil
		}
	}()
	return <-errc
}
