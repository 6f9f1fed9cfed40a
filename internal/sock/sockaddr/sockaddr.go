// Package sockaddr turns an address and port into the kernel's socket
// address for raw system calls, the zone of a link-local IPv6 address
// (fe80::1%eth0, or %2) as its interface's index: without it the kernel
// refuses to send to a link-local address.
package sockaddr

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Of is ap's socket address: IPv4 for an IPv4 (or IPv4-mapped) address,
// IPv6 otherwise, with its zone's interface index. A zone that names no
// interface is an error.
func Of(ap netip.AddrPort) (unix.Sockaddr, error) {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.Unmap().As4()}, nil
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
	if z := a.Zone(); z != "" {
		id, err := zoneIndex(z)
		if err != nil {
			return nil, fmt.Errorf("address %s: zone %q: %w", a, z, err)
		}
		sa.ZoneId = id
	}
	return sa, nil
}

// zoneIndex is the index of the interface a zone names (a number is one
// already). Only link-local addresses carry a zone, so the lookup is rare.
func zoneIndex(z string) (uint32, error) {
	if n, err := strconv.ParseUint(z, 10, 32); err == nil {
		return uint32(n), nil
	}
	ifi, err := net.InterfaceByName(z)
	if err != nil {
		return 0, fmt.Errorf("no such interface")
	}
	return uint32(ifi.Index), nil
}

// PinAndBind pins a new socket to its family (an IPv6 socket never
// carries IPv4-mapped traffic) and binds it to source when valid (port
// 0: the kernel's choice). The socket is left open on an error.
func PinAndBind(fd int, source netip.Addr, ipv6 bool) error {
	if ipv6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 1); err != nil {
			return os.NewSyscallError("setsockopt IPV6_V6ONLY", err)
		}
	}
	if !source.IsValid() {
		return nil
	}
	sa, err := Of(netip.AddrPortFrom(source, 0))
	if err != nil {
		return err
	}
	return os.NewSyscallError("bind", unix.Bind(fd, sa))
}
