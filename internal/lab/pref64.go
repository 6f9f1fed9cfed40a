package lab

import (
	"encoding/binary"
	"errors"
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
// r1 repeats the advertisement until the client has it, as a router
// repeats its first ones (RFC 4861 §6.2.4): the lab's loss (--loss, a
// program on every link end) may drop any one of them, and a send it
// drops fails with ENOBUFS.
func (l *Lab) discoverPref64() (netip.Prefix, error) {
	a := links[0]
	client, err := l.pref64Listener(a.aIf)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("the client's ICMPv6 socket: %w", err)
	}
	defer unix.Close(client)
	router, to, err := l.pref64Sender(a.bIf)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("r1's ICMPv6 socket: %w", err)
	}
	defer unix.Close(router)
	ra := routerAdvert(Pref64Option(l.NAT64.Prefix))
	buf := make([]byte, 1500)
	deadline := time.Now().Add(pref64Wait)
	sent, dropped := 0, 0
	for time.Now().Before(deadline) {
		switch err := unix.Sendto(router, ra, 0, to); {
		case err == nil:
			sent++
		case errors.Is(err, unix.ENOBUFS):
			dropped++
		default:
			return netip.Prefix{}, fmt.Errorf("r1's router advertisement: %w", err)
		}
		p, ok, err := readPref64(client, buf)
		if err != nil {
			return netip.Prefix{}, err
		}
		if ok {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("no PREF64 from r1 in %v (%d advertisements sent, %d dropped on r1's link)", pref64Wait, sent, dropped)
}

const (
	// pref64Wait bounds the discovery; pref64Resend is how long the
	// client waits for one advertisement before r1 sends the next (on
	// veth it comes within microseconds): 100 tries, so that even a
	// lab lossy enough to let one packet in ten through (--loss 90)
	// builds but for one time in tens of thousands.
	pref64Wait   = 5 * time.Second
	pref64Resend = 50 * time.Millisecond
)

// pref64Listener is the client's socket that receives router
// advertisements alone, waiting pref64Resend for each.
func (l *Lab) pref64Listener(ifname string) (int, error) {
	var fd int
	err := Do(NS(l.Name, Client), func() error {
		var err error
		fd, err = icmp6Socket(ifname)
		if err != nil {
			return err
		}
		filter := unix.ICMPv6Filter{}
		for i := range filter.Data {
			filter.Data[i] = 0xffffffff
		}
		filter.Data[icmp6RouterAdvert>>5] &^= 1 << (icmp6RouterAdvert & 31)
		err = unix.SetsockoptICMPv6Filter(fd, unix.SOL_ICMPV6, unix.ICMPV6_FILTER, &filter)
		if err == nil {
			tv := unix.NsecToTimeval(pref64Resend.Nanoseconds())
			err = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		}
		if err != nil {
			unix.Close(fd)
		}
		return err
	})
	return fd, err
}

// pref64Sender is r1's socket on the client's link and the all-nodes
// address it advertises to.
func (l *Lab) pref64Sender(ifname string) (int, *unix.SockaddrInet6, error) {
	var fd int
	var to *unix.SockaddrInet6
	err := Do(NS(l.Name, R1), func() error {
		ifc, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		if fd, err = icmp6Socket(ifname); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_HOPS, 255); err != nil {
			unix.Close(fd)
			return err
		}
		to = &unix.SockaddrInet6{Addr: netip.MustParseAddr("ff02::1").As16(), ZoneId: uint32(ifc.Index)}
		return nil
	})
	return fd, to, err
}

// readPref64 reads router advertisements until one carries a PREF64 or
// the socket's wait ends (ok false, no error).
func readPref64(fd int, buf []byte) (netip.Prefix, bool, error) {
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			return netip.Prefix{}, false, nil
		}
		if err != nil {
			return netip.Prefix{}, false, fmt.Errorf("the client's ICMPv6 socket: %w", err)
		}
		p, ok, err := ParsePref64(buf[:n])
		if err != nil || !ok {
			continue // another router advertisement
		}
		if p.Bits() != 96 {
			return netip.Prefix{}, false, fmt.Errorf("r1 advertised %v, but the CLAT translates with a /96", p)
		}
		return p, true, nil
	}
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
