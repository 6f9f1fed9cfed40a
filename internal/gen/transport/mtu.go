package transport

import (
	"context"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/path"
)

// UDP and IP header sizes of a datagram, by family.
const (
	udpHdr     = 8
	ipv4Header = 20
	ipv6Header = 40
)

// pathMTU is the MTU the kernel knows toward a connected UDP socket's
// peer (its route's, or a smaller one Packet Too Big taught it): IP_MTU or
// IPV6_MTU; 0 when it cannot be read.
func pathMTU(c *net.UDPConn, ipv6 bool) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	mtu := 0
	raw.Control(func(fd uintptr) {
		if ipv6 {
			mtu, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU)
		} else {
			mtu, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU)
		}
	})
	return mtu
}

// ipHeader is the IP header of a datagram over the family.
func ipHeader(ipv6 bool) int {
	if ipv6 {
		return ipv6Header
	}
	return ipv4Header
}

// MaxPayload is the largest UDP payload that leaves in one IP packet over
// mtu (IPv4: mtu-28, IPv6: mtu-48).
func MaxPayload(mtu int, ipv6 bool) int { return mtu - ipHeader(ipv6) - udpHdr }

// Fragments is how many IP packets a datagram of size bytes of payload
// leaves as over mtu: 1 when it fits; each fragment but the last carries
// a multiple of 8 bytes of the UDP datagram.
func Fragments(size, mtu int, ipv6 bool) int {
	if mtu <= 0 || size <= MaxPayload(mtu, ipv6) {
		return 1
	}
	per := (mtu - ipHeader(ipv6)) &^ 7
	if ipv6 {
		per = (mtu - ipv6Header - 8) &^ 7 // the fragment header's 8 bytes
	}
	return (size + udpHdr + per - 1) / per
}

// maxDatagram is the largest payload toward server over d's path that the
// kernel's path MTU lets leave unfragmented (size: max), from a connected
// socket that sends nothing.
func maxDatagram(ctx context.Context, d path.Dialer, server netip.AddrPort) (int, error) {
	conn, err := d.Dial(ctx, "udp", server)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ipv6 := server.Addr().Unmap().Is6()
	mtu := pathMTU(conn.(*net.UDPConn), ipv6)
	if mtu <= 0 {
		mtu = 1280 // IPv6's minimum; IPv4's 576 would waste the rest
	}
	return max(MinDatagram, MaxPayload(mtu, ipv6)), nil
}
