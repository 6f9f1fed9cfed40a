package sixin4

import (
	"bytes"
	"net/netip"
	"testing"
)

var peer = netip.MustParseAddr("198.51.100.2")

// datagram builds a received IPv4 datagram (as a raw socket hands it over)
// in a tunnel buffer and returns the buffer and its length.
func datagram(src netip.Addr, proto byte, options int, inner []byte) ([]byte, int) {
	ihl := ipv4Head + options
	d := make([]byte, ihl+len(inner))
	d[0] = 0x40 | byte(ihl/4)
	d[9] = proto
	copy(d[12:16], src.AsSlice())
	copy(d[ihl:], inner)
	buf := make([]byte, bufSize)
	copy(buf[offset-ipv4Head:], d)
	return buf, len(d)
}

func ipv6Packet() []byte {
	p := make([]byte, 60)
	p[0] = 0x60
	for i := 40; i < 60; i++ {
		p[i] = byte(i)
	}
	return p
}

func TestInnerKeepsOnlyIPv6FromThePeer(t *testing.T) {
	tun := &Tunnel{peer: peer}
	inner := ipv6Packet()
	cases := []struct {
		name    string
		src     netip.Addr
		proto   byte
		options int
		inner   []byte
		ok      bool
	}{
		{"from peer", peer, Protocol, 0, inner, true},
		{"with IPv4 options", peer, Protocol, 8, inner, true},
		{"another source", netip.MustParseAddr("203.0.113.9"), Protocol, 0, inner, false},
		{"not protocol 41", peer, 17, 0, inner, false},
		{"IPv4 inside", peer, Protocol, 0, append([]byte{0x45}, inner[1:]...), false},
		{"runt", peer, Protocol, 0, inner[:20], false},
	}
	for _, c := range cases {
		buf, n := datagram(c.src, c.proto, c.options, c.inner)
		got, ok := tun.inner(buf, n)
		if ok != c.ok {
			t.Errorf("%s: ok = %v", c.name, ok)
			continue
		}
		if ok && !bytes.Equal(got[offset:], inner) {
			t.Errorf("%s: inner packet not at the offset", c.name)
		}
	}
}

func FuzzInner(f *testing.F) {
	buf, n := datagram(peer, Protocol, 0, ipv6Packet())
	f.Add(buf[offset-ipv4Head : offset-ipv4Head+n])
	f.Add([]byte{0x4f, 0, 0, 0, 0, 0, 0, 0, 0, 41})
	f.Fuzz(func(t *testing.T, d []byte) {
		if len(d) > bufSize-offset+ipv4Head {
			return
		}
		buf := make([]byte, bufSize)
		copy(buf[offset-ipv4Head:], d)
		tun := &Tunnel{peer: peer}
		got, ok := tun.inner(buf, len(d))
		if ok && (len(got) < offset+40 || got[offset]>>4 != 6) {
			t.Fatalf("accepted a packet that is not IPv6: %x", got[offset:])
		}
	})
}
