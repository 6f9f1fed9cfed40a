package lab

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// The client finds the PLAT's prefix as a host on an IPv6-only network
// does (RFC 8781): r1 sends a router advertisement carrying the PREF64
// option on the client's link, and the client reads the prefix from it.
// The advertisement makes r1 no default router (lifetime 0) and carries
// no other option, so the client's kernel changes nothing for it.

const (
	icmp6RouterAdvert = 134
	optPref64         = 38
	// pref64Lifetime is the advertised lifetime, in seconds (a multiple
	// of 8: the option holds it scaled by 8).
	pref64Lifetime = 1800
)

// Pref64Option is the PREF64 option (RFC 8781 §4) for a /96 prefix.
func Pref64Option(p netip.Prefix) []byte {
	b := make([]byte, 16)
	b[0], b[1] = optPref64, 2
	binary.BigEndian.PutUint16(b[2:], pref64Lifetime/8<<3) // the scaled lifetime; PLC 0: a /96
	a := p.Addr().As16()
	copy(b[4:], a[:12])
	return b
}

// routerAdvert is an RA that carries options alone.
func routerAdvert(opts ...[]byte) []byte {
	b := make([]byte, 16) // type, code, checksum (the kernel's), hop limit, flags, lifetime 0, reachable, retrans
	b[0] = icmp6RouterAdvert
	for _, o := range opts {
		b = append(b, o...)
	}
	return b
}

// ParsePref64 reads the PREF64 option of a router advertisement (its ICMPv6
// message); ok is false when it has none.
func ParsePref64(ra []byte) (p netip.Prefix, ok bool, err error) {
	if len(ra) < 16 || ra[0] != icmp6RouterAdvert {
		return p, false, fmt.Errorf("not a router advertisement")
	}
	for opts := ra[16:]; len(opts) >= 2; {
		n := int(opts[1]) * 8
		if n == 0 || n > len(opts) {
			return p, false, fmt.Errorf("an option of length %d in %d bytes", n, len(opts))
		}
		if opts[0] == optPref64 {
			if n != 16 {
				return p, false, fmt.Errorf("PREF64 of %d bytes, not 16", n)
			}
			bits := map[uint16]int{0: 96, 1: 64, 2: 56, 3: 48, 4: 40, 5: 32}[binary.BigEndian.Uint16(opts[2:])&7]
			if bits == 0 {
				return p, false, fmt.Errorf("PREF64 with an unknown prefix length code %d", binary.BigEndian.Uint16(opts[2:])&7)
			}
			var a [16]byte
			copy(a[:], opts[4:16])
			return netip.PrefixFrom(netip.AddrFrom16(a), bits).Masked(), true, nil
		}
		opts = opts[n:]
	}
	return p, false, nil
}

// discoverPref64 has r1 advertise the PLAT's prefix on the client's link
// and returns what the client read: the prefix its CLAT translates to.
func (l *Lab) discoverPref64() (netip.Prefix, error) {
	a := links[0]
	var fd int
	err := Do(NS(l.Name, Client), func() error {
		var err error
		fd, err = icmp6Socket(a.aIf)
		if err != nil {
			return err
		}
		filter := unix.ICMPv6Filter{}
		for i := range filter.Data {
			filter.Data[i] = 0xffffffff
		}
		filter.Data[icmp6RouterAdvert>>5] &^= 1 << (icmp6RouterAdvert & 31)
		if err := unix.SetsockoptICMPv6Filter(fd, unix.SOL_ICMPV6, unix.ICMPV6_FILTER, &filter); err != nil {
			unix.Close(fd)
			return err
		}
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 2})
	})
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("the client's ICMPv6 socket: %w", err)
	}
	defer unix.Close(fd)
	err = Do(NS(l.Name, R1), func() error {
		s, err := icmp6Socket(a.bIf)
		if err != nil {
			return err
		}
		defer unix.Close(s)
		ifc, err := net.InterfaceByName(a.bIf)
		if err != nil {
			return err
		}
		if err := unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_HOPS, 255); err != nil {
			return err
		}
		to := &unix.SockaddrInet6{Addr: netip.MustParseAddr("ff02::1").As16(), ZoneId: uint32(ifc.Index)}
		return unix.Sendto(s, routerAdvert(Pref64Option(l.NAT64.Prefix)), 0, to)
	})
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("r1's router advertisement: %w", err)
	}
	buf := make([]byte, 1500)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("no router advertisement from r1 (%w)", err)
		}
		p, ok, err := ParsePref64(buf[:n])
		if err != nil || !ok {
			continue // another router advertisement
		}
		if p.Bits() != 96 {
			return netip.Prefix{}, fmt.Errorf("r1 advertised %v, but the CLAT translates with a /96", p)
		}
		return p, nil
	}
	return netip.Prefix{}, fmt.Errorf("no PREF64 from r1 in 2 s")
}

// icmp6Socket is a raw ICMPv6 socket bound to interface ifname.
func icmp6Socket(ifname string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMPV6)
	if err != nil {
		return -1, err
	}
	if err := unix.BindToDevice(fd, ifname); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
