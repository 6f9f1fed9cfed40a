// Package path pins network traffic to one IP family and proves it did.
//
// A Path names how a client reaches a server: ipv4, ipv6, or 6in4 (IPv6 carried
// in IPv4 protocol 41, which at the socket level is IPv6; the lab makes the
// tunnel). Every socket is opened with an explicit family ("tcp4", "udp6", …),
// every name is resolved with the record type of the path, and every connection
// is checked afterwards: a mismatch is an error, never a silent fallback.
//
// It imports nothing of v6lab but kstamp (the kernel's timestamps).
package path

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// Path is one way of reaching a server.
type Path string

// The paths v6lab measures.
const (
	IPv4   Path = "ipv4"
	IPv6   Path = "ipv6"
	SixIn4 Path = "6in4"
	// NAT64 is IPv6 from an IPv6-only client translated to IPv4 for an
	// IPv4-only server (lab only: RFC 6146/7915, DNS64 RFC 6147).
	NAT64 Path = "nat64"
	// XLAT464 is an IPv4 application on an IPv6-only access network
	// through 464XLAT: the client host's CLAT and r1's NAT64 (lab only,
	// RFC 6877).
	XLAT464 Path = "464xlat"
	// DSLite is an IPv4 application on an IPv6-only access network
	// through DS-Lite: IPv4 in IPv6 from the client host's B4 to the AFTR
	// at r2, a NAT44 (lab only, RFC 6333).
	DSLite Path = "dslite"
	// Dual is a dual-stack client racing the families by Happy Eyeballs
	// (RFC 8305): the family that won is recorded per transaction.
	Dual Path = "dual"
)

// All lists every known path in report order (the paths of Kinds).
var All = func() []Path {
	var out []Path
	for _, k := range Kinds {
		out = append(out, k.Path)
	}
	return out
}()

// ErrFamily is wrapped by every error about an address of the wrong family.
var ErrFamily = errors.New("address family mismatch")

// Parse turns a user's word into a Path.
func Parse(s string) (Path, error) {
	p := Path(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := KindOf(p); ok {
		return p, nil
	}
	return "", fmt.Errorf("path: unknown path %q (want %s)", s, Names())
}

// Names lists the paths there are, for messages: "ipv4, ipv6, … or dual".
func Names() string {
	var names []string
	for _, k := range Kinds {
		names = append(names, string(k.Path))
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ParseList parses a comma-separated list such as "ipv4,ipv6", refusing duplicates.
func ParseList(s string) ([]Path, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("path: empty path list %q", s)
	}
	var out []Path
	seen := map[Path]bool{}
	for i, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			return nil, fmt.Errorf("path: %q: entry %d is empty (a comma too many)", s, i+1)
		}
		p, err := Parse(f)
		if err != nil {
			return nil, err
		}
		if seen[p] {
			return nil, fmt.Errorf("path: %s listed twice", p)
		}
		seen[p] = true
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("path: empty path list %q", s)
	}
	return out, nil
}

// IsIPv6 reports whether the path's endpoints speak IPv6 (true for 6in4).
func (p Path) IsIPv6() bool {
	r := row(p)
	return r != nil && r.IPv6
}

// Family is "IPv4" or "IPv6", the family of the path's endpoint addresses
// ("IPv4 or IPv6" for dual).
func (p Path) Family() string {
	if p.Kind().Dual {
		return "IPv4 or IPv6"
	}
	if p.IsIPv6() {
		return "IPv6"
	}
	return "IPv4"
}

// Network returns the pinned Go network name for proto ("tcp" or "udp"),
// unpinned for dual.
func (p Path) Network(proto string) string {
	if p.Kind().Dual {
		return proto
	}
	if p.IsIPv6() {
		return proto + "6"
	}
	return proto + "4"
}

// Accepts reports whether addr belongs to the path's family. An IPv4-mapped
// IPv6 address is IPv4 on the wire, so it never counts as IPv6.
func (p Path) Accepts(addr netip.Addr) bool {
	if !addr.IsValid() {
		return false
	}
	r := row(p)
	if r != nil && r.Dual {
		return true
	}
	if r != nil && r.IPv6 {
		return addr.Is6() && !addr.Is4In6()
	}
	return addr.Unmap().Is4()
}

// CheckAddr returns an error wrapping ErrFamily when addr is not of the path's family.
func (p Path) CheckAddr(what string, addr netip.Addr) error {
	if p.Accepts(addr) {
		return nil
	}
	return fmt.Errorf("path: %s address %s is %s, path %s needs %s: %w",
		what, addr, familyName(addr), p, p.Family(), ErrFamily)
}

func familyName(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "invalid"
	case a.Is4() || a.Is4In6():
		return "IPv4"
	default:
		return "IPv6"
	}
}

// AddrOf extracts the IP address of a net.Addr from a TCP or UDP socket.
func AddrOf(a net.Addr) netip.Addr {
	switch v := a.(type) {
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(v.IP)
		return ip
	case *net.UDPAddr:
		ip, _ := netip.AddrFromSlice(v.IP)
		return ip
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr()
	}
	return netip.Addr{}
}

// Verify checks that both ends of conn are of the path's family. The error
// names both addresses.
func (p Path) Verify(conn net.Conn) error {
	l, r := AddrOf(conn.LocalAddr()), AddrOf(conn.RemoteAddr())
	if p.Accepts(l) && p.Accepts(r) {
		return nil
	}
	return fmt.Errorf("path: %s connection went %s -> %s (%s -> %s): %w",
		p, conn.LocalAddr(), conn.RemoteAddr(), familyName(l), familyName(r), ErrFamily)
}

// Dialer opens pinned connections for one path.
type Dialer struct {
	Path Path
	// Source, when valid, is the local address to bind.
	Source netip.Addr
	// Control, when set, sets socket options before the connection is
	// made (TCP_MAXSEG, buffers, congestion control for transport tests).
	Control func(network, address string, c syscall.RawConn) error
}

// Check says whether a connection to remote (and from the source, when
// set) would keep to the path: an error wrapping ErrFamily otherwise.
// Dialers of their own (the event loop) check with it before connecting.
func (d Dialer) Check(remote netip.Addr) error {
	if err := d.Path.CheckAddr("remote", remote); err != nil {
		return err
	}
	if d.Source.IsValid() {
		return d.Path.CheckAddr("source", d.Source)
	}
	return nil
}

// Dial connects to addr over proto ("tcp" or "udp") with the path's family,
// no Happy Eyeballs fallback, and verifies the connection's addresses.
func (d Dialer) Dial(ctx context.Context, proto string, addr netip.AddrPort) (net.Conn, error) {
	if err := d.Check(addr.Addr()); err != nil {
		return nil, err
	}
	// No Happy Eyeballs fallback, and no TCP keep-alive: a connection per
	// transaction never idles, and the four setsockopt calls keep-alive
	// costs are a measurable share of a loopback transaction.
	nd := net.Dialer{FallbackDelay: -1, KeepAlive: -1, Control: d.Control}
	if d.Source.IsValid() {
		if proto == "udp" {
			nd.LocalAddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(d.Source, 0))
		} else {
			nd.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(d.Source, 0))
		}
	}
	conn, err := nd.DialContext(ctx, d.Path.Network(proto), addr.String())
	if err != nil {
		return nil, err
	}
	if err := d.Path.Verify(conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Listen opens a TCP listener pinned to the path's family. An IPv6 listener
// is IPv6-only, so IPv4 clients can never reach it through a mapped address.
func Listen(ctx context.Context, p Path, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, p.Network("tcp"), addr)
}

// ListenPacket opens a UDP socket pinned to the path's family.
func ListenPacket(ctx context.Context, p Path, addr string) (net.PacketConn, error) {
	var lc net.ListenConfig
	return lc.ListenPacket(ctx, p.Network("udp"), addr)
}

// OfAddr returns the native path (ipv4 or ipv6) for an address.
func OfAddr(a netip.Addr) Path {
	if a.Unmap().Is4() {
		return IPv4
	}
	return IPv6
}

// Loopback returns the loopback address of the path's family.
func (p Path) Loopback() netip.Addr {
	if p.IsIPv6() {
		return netip.IPv6Loopback()
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// Embed is IPv4 address a under an RFC 6052 /96 prefix (64:ff9b::/96 gives
// 64:ff9b::a.b.c.d): how NAT64 and DNS64 name an IPv4 host in IPv6.
func Embed(prefix netip.Prefix, a netip.Addr) netip.Addr {
	b := prefix.Addr().As16()
	v4 := a.Unmap().As4()
	copy(b[12:], v4[:])
	return netip.AddrFrom16(b)
}
