package sockaddr

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOf: families, an IPv4-mapped address as IPv4, and a zone by name or
// number as the interface's index; an unknown zone is an error naming it.
func TestOf(t *testing.T) {
	sa, err := Of(netip.MustParseAddrPort("192.0.2.1:53"))
	if v4, ok := sa.(*unix.SockaddrInet4); err != nil || !ok || v4.Port != 53 || v4.Addr != [4]byte{192, 0, 2, 1} {
		t.Errorf("IPv4: %#v, %v", sa, err)
	}
	sa, err = Of(netip.MustParseAddrPort("[::ffff:192.0.2.1]:53"))
	if _, ok := sa.(*unix.SockaddrInet4); err != nil || !ok {
		t.Errorf("IPv4-mapped: %#v, %v", sa, err)
	}
	sa, err = Of(netip.MustParseAddrPort("[2001:db8::1]:80"))
	if v6, ok := sa.(*unix.SockaddrInet6); err != nil || !ok || v6.Port != 80 || v6.ZoneId != 0 || v6.Addr[0] != 0x20 {
		t.Errorf("IPv6: %#v, %v", sa, err)
	}
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no lo: %v", err)
	}
	for _, zone := range []string{"lo", "1"} {
		sa, err = Of(netip.MustParseAddrPort("[fe80::1%" + zone + "]:53"))
		if v6, ok := sa.(*unix.SockaddrInet6); err != nil || !ok || (zone == "lo" && v6.ZoneId != uint32(lo.Index)) || (zone == "1" && v6.ZoneId != 1) {
			t.Errorf("zone %s: %#v, %v", zone, sa, err)
		}
	}
	if _, err := Of(netip.MustParseAddrPort("[fe80::1%nosuch0]:53")); err == nil || !strings.Contains(err.Error(), `zone "nosuch0": no such interface`) {
		t.Errorf("unknown zone: %v", err)
	}
}

// TestPinAndBind: an IPv6 socket is pinned (IPV6_V6ONLY), and a socket
// with a source is bound to it.
func TestPinAndBind(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		t.Skipf("no IPv6 socket here: %v", err)
	}
	defer unix.Close(fd)
	if err := PinAndBind(fd, netip.MustParseAddr("::1"), true); err != nil {
		t.Skipf("no ::1 here: %v", err)
	}
	if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY); err != nil || v != 1 {
		t.Errorf("IPV6_V6ONLY %d (%v)", v, err)
	}
	sa, err := unix.Getsockname(fd)
	if a, ok := sa.(*unix.SockaddrInet6); err != nil || !ok || netip.AddrFrom16(a.Addr) != netip.MustParseAddr("::1") {
		t.Errorf("bound to %+v (%v)", sa, err)
	}
}
