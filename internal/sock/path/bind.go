package path

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
)

// BindSamePort calls bind(port) for every address in addrs with one port
// shared by all, so a service has one port on both families (and UDP+TCP
// can share it too, when bind opens both). With port 0 the first bind picks
// a free port; if a later address has that port taken, all are closed and
// it tries again with a new one.
func BindSamePort(addrs []netip.Addr, port int, bind func(a netip.Addr, port int) (io.Closer, int, error)) ([]io.Closer, int, error) {
	for attempt := 0; attempt < 20; attempt++ {
		var open []io.Closer
		p := port
		var err error
		for _, a := range addrs {
			var c io.Closer
			var got int
			c, got, err = bind(a, p)
			if err != nil {
				break
			}
			open = append(open, c)
			p = got
		}
		if err == nil {
			return open, p, nil
		}
		for _, c := range open {
			c.Close()
		}
		if port != 0 || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("path: no port free on all of %v", addrs)
}

// ListenerAddrs are the addresses the listeners are bound to.
func ListenerAddrs(lns []net.Listener) []netip.AddrPort {
	var out []netip.AddrPort
	for _, ln := range lns {
		out = append(out, ln.Addr().(*net.TCPAddr).AddrPort())
	}
	return out
}

// ListenSamePort opens a TCP listener on every address, one port for all of
// them (0 picks one), each pinned to its address's family.
func ListenSamePort(ctx context.Context, addrs []netip.Addr, port int) ([]net.Listener, int, error) {
	closers, got, err := BindSamePort(addrs, port, func(a netip.Addr, p int) (io.Closer, int, error) {
		ln, err := Listen(ctx, OfAddr(a), netip.AddrPortFrom(a, uint16(p)).String())
		if err != nil {
			return nil, 0, err
		}
		return ln, ln.Addr().(*net.TCPAddr).Port, nil
	})
	if err != nil {
		return nil, 0, err
	}
	lns := make([]net.Listener, len(closers))
	for i, c := range closers {
		lns[i] = c.(net.Listener)
	}
	return lns, got, nil
}
