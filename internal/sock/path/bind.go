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
func BindSamePort[C io.Closer](addrs []netip.Addr, port int, bind func(a netip.Addr, port int) (C, int, error)) ([]C, int, error) {
	for attempt := 0; attempt < 20; attempt++ {
		var open []C
		p := port
		var err error
		for _, a := range addrs {
			var c C
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
	return BindSamePort(addrs, port, func(a netip.Addr, p int) (net.Listener, int, error) {
		ln, err := Listen(ctx, OfAddr(a), netip.AddrPortFrom(a, uint16(p)).String())
		if err != nil {
			return nil, 0, err
		}
		return ln, ln.Addr().(*net.TCPAddr).Port, nil
	})
}

// Both is a TCP listener and a UDP socket bound to one address and port.
type Both struct {
	TCP net.Listener
	UDP net.PacketConn
}

// Close closes both sockets.
func (b Both) Close() error { return errors.Join(b.TCP.Close(), b.UDP.Close()) }

// ListenBothSamePort opens a TCP listener and a UDP socket on every
// address, one port for all of them and for both protocols (0 picks one),
// each pinned to its address's family: for a service that answers the same
// on TCP and UDP (DNS, a traffic sink). The TCP listener picks the port and
// the UDP socket takes it; a port taken on either is tried again as
// BindSamePort does.
func ListenBothSamePort(ctx context.Context, addrs []netip.Addr, port int) ([]Both, int, error) {
	return BindSamePort(addrs, port, func(a netip.Addr, p int) (Both, int, error) {
		ln, err := Listen(ctx, OfAddr(a), netip.AddrPortFrom(a, uint16(p)).String())
		if err != nil {
			return Both{}, 0, err
		}
		p = ln.Addr().(*net.TCPAddr).Port
		pc, err := ListenPacket(ctx, OfAddr(a), netip.AddrPortFrom(a, uint16(p)).String())
		if err != nil {
			ln.Close()
			return Both{}, 0, err
		}
		return Both{TCP: ln, UDP: pc}, p, nil
	})
}
