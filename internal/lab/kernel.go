package lab

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"v6lab/internal/lab/bpf"
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
	if err := checkTunnel(cfg); err != nil {
		return err
	}
	for _, name := range LinkNames {
		if sh := cfg.Link(name).Shaping; sh.Delay > 0 || sh.Jitter > 0 {
			return HasNetem()
		}
	}
	return nil
}

// checkTunnel says why the 6in4 tunnel cfg names (sit, bpf, userspace)
// cannot be built here, as building it would fail; auto (empty) takes the
// first that works and vxlan is a benchmark's.
func checkTunnel(cfg Config) error {
	if cfg.NoTunnel {
		return nil
	}
	switch cfg.Tunnel {
	case TunnelSit:
		if err := HasSit(); err != nil {
			return fmt.Errorf("tunnel sit (--tunnel, or a topology's tunnel.implementation): %w: --tunnel bpf (a topology's tunnel.implementation: bpf) carries 6in4 in tc BPF programs instead, or leave the tunnel unset to take the first that works", err)
		}
	case TunnelBPF:
		if err := bpf.Check(); err != nil {
			return fmt.Errorf("tunnel bpf (--tunnel, or a topology's tunnel.implementation): 6in4 over tc BPF: %w", err)
		}
	case TunnelUserspace:
		f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("tunnel userspace (--tunnel, or a topology's tunnel.implementation): the userspace tunnel needs the TUN device: %w", err)
		}
		f.Close()
	}
	return nil
}

// HasNetem says whether the kernel has the netem qdisc (ErrNoNetem if
// not): it adds one to the loopback of a network namespace of its own,
// which vanishes with it.
func HasNetem() error {
	return inScratchNamespace("netem", func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		attrs := netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Handle: netlink.MakeHandle(1, 0), Parent: netlink.HANDLE_ROOT}
		err = netlink.QdiscAdd(netlink.NewNetem(attrs, netlink.NetemQdiscAttrs{Latency: 1000}))
		switch {
		case errors.Is(err, unix.ENOENT):
			return ErrNoNetem
		case err != nil:
			return fmt.Errorf("lab: netem: %w", err)
		}
		return nil
	})
}

// HasSit says whether the kernel has the sit (6in4) device (an error
// wrapping ErrNoSit if not): it makes one in a network namespace of its
// own, which vanishes with it.
func HasSit() error {
	return inScratchNamespace("sit", func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return fmt.Errorf("lab: %w", err)
		}
		defer h.Close()
		return (&Lab{}).addSit(h, netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"))
	})
}

// inScratchNamespace runs probe in a new network namespace of its own,
// which vanishes with it.
func inScratchNamespace(what string, probe func() error) error {
	errc := make(chan error, 1)
	go func() {
		// The thread changes namespace and is never unlocked: Go ends it
		// with the goroutine, so no other goroutine runs in that netns.
		runtime.LockOSThread()
		ns, err := netns.New()
		if err != nil {
			errc <- fmt.Errorf("lab: a namespace to probe %s in: %w", what, err)
			return
		}
		defer ns.Close()
		errc <- probe()
	}()
	return <-errc
}
