package bpf

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var (
	clat6 = netip.MustParseAddr("2001:db8:464:1::2")
	clat4 = netip.MustParseAddr("192.0.0.4")
)

// TestCLATTranslatesTheOtherWayRound: a CLAT turns its IPv4 address's
// packets to the server into IPv6 from its IPv6 address to the prefix
// (TCP, UDP, echo), and the server's IPv6 answers back into IPv4 to it;
// the nat64 path's own IPv6 (to another address) passes untouched.
func TestCLATTranslatesTheOtherWayRound(t *testing.T) {
	requireBPF(t)
	n, err := NewNat64(Translator{Prefix: nat64Prefix, Client6: clat6, Client4: clat4, CLAT: true})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for _, proto := range []string{"tcp", "udp", "echo"} {
		in4 := v4Frame(t, clat4, natServer4, proto, nil)
		rc, out := run(t, n.to6, in4)
		if rc != retPass || len(out) != len(in4)+20 {
			t.Fatalf("%s 4to6: rc %d, %d bytes from %d", proto, rc, len(out), len(in4))
		}
		ip6 := out[ethHeader:]
		if binary.BigEndian.Uint16(out[12:]) != 0x86dd || netip.AddrFrom16([16]byte(ip6[8:24])) != clat6 ||
			netip.AddrFrom16([16]byte(ip6[24:40])) != natServer6 || ip6[7] != 61 {
			t.Errorf("%s 4to6 header % x", proto, ip6[:40])
		}
		if !l4Valid(ip6) {
			t.Errorf("%s 4to6: transport checksum wrong", proto)
		}
		in6 := v6Frame(t, natServer6, clat6, proto, nil)
		rc, out = run(t, n.to4, in6)
		if rc != retPass || len(out) != len(in6)-20 {
			t.Fatalf("%s 6to4: rc %d, %d bytes from %d", proto, rc, len(out), len(in6))
		}
		ip := out[ethHeader:]
		if netip.AddrFrom4([4]byte(ip[12:16])) != natServer4 || netip.AddrFrom4([4]byte(ip[16:20])) != clat4 || checksum(ip[:20]) != 0 {
			t.Errorf("%s 6to4 header % x", proto, ip[:20])
		}
		if !l4Valid(ip) {
			t.Errorf("%s 6to4: transport checksum wrong", proto)
		}
	}
	// Not the CLAT's: IPv6 from the prefix to the nat64 client, IPv4 from
	// another source; and a hop limit of 1 is delivered, not dropped.
	for _, in := range [][]byte{v6Frame(t, natServer6, natClient6, "tcp", nil), v4Frame(t, natClient4, natServer4, "udp", nil)} {
		p := n.to4
		if binary.BigEndian.Uint16(in[12:]) == 0x0800 {
			p = n.to6
		}
		if rc, out := run(t, p, in); rc != retNext || !bytes.Equal(out, in) {
			t.Errorf("not the CLAT's, but rc %d", rc)
		}
	}
	if rc, _ := run(t, n.to4, v6Frame(t, natServer6, clat6, "udp", func(ip *layers.IPv6) { ip.HopLimit = 1 })); rc != retPass {
		t.Errorf("hop limit 1 to the CLAT: rc %d", rc)
	}
}

// TestPLATServesEveryMapping: a PLAT with two mappings translates each
// client to its own IPv4 address and back.
func TestPLATServesEveryMapping(t *testing.T) {
	requireBPF(t)
	second4 := netip.MustParseAddr("100.64.0.4")
	n, err := NewNat64(Translator{Prefix: nat64Prefix, Client6: natClient6, Client4: natClient4, More: []Mapping{{clat6, second4}}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	for _, m := range []Mapping{{natClient6, natClient4}, {clat6, second4}} {
		_, out := run(t, n.to4, v6Frame(t, m.V6, natServer6, "tcp", nil))
		if got := netip.AddrFrom4([4]byte(out[ethHeader+12 : ethHeader+16])); got != m.V4 || !l4Valid(out[ethHeader:]) {
			t.Errorf("%v left as %v", m.V6, got)
		}
		_, out = run(t, n.to6, v4Frame(t, natServer4, m.V4, "udp", nil))
		if got := netip.AddrFrom16([16]byte(out[ethHeader+24 : ethHeader+40])); got != m.V6 || !l4Valid(out[ethHeader:]) {
			t.Errorf("%v came back to %v", m.V4, got)
		}
	}
	if rc, _ := run(t, n.to4, v6Frame(t, netip.MustParseAddr("2001:db8:6:1::2"), natServer6, "tcp", nil)); rc != retDrop {
		t.Errorf("unmapped source: rc %d", rc)
	}
	if _, err := NewNat64(Translator{Prefix: nat64Prefix, Client6: natClient6, Client4: natClient4, More: []Mapping{{clat4, clat6}}}); err == nil {
		t.Error("a mapping of IPv4 to IPv6 accepted")
	}
}

var (
	b4v6   = netip.MustParseAddr("2001:db8:d5:1::2")
	aftrv6 = netip.MustParseAddr("2001:db8:6:2::2")
	b4v4   = netip.MustParseAddr("192.0.0.2")
)

// TestSoftwireCarriesIPv4InIPv6: the B4 puts its IPv4 packets in IPv6
// (next header 4) to the AFTR, which takes them out whole; the AFTR's
// answers come back to the B4 the same way; a softwire packet from any
// other source is dropped, and the B4 leaves other IPv4 alone.
func TestSoftwireCarriesIPv4InIPv6(t *testing.T) {
	requireBPF(t)
	b4, err := NewSoftwire(Softwire{Local6: b4v6, Remote6: aftrv6, B4: b4v4})
	if err != nil {
		t.Fatal(err)
	}
	defer b4.Close()
	aftr, err := NewSoftwire(Softwire{Local6: aftrv6, Remote6: b4v6, B4: b4v4, AFTR: true})
	if err != nil {
		t.Fatal(err)
	}
	defer aftr.Close()
	for _, c := range []struct {
		from, to *SoftwireEnd
		in       []byte
	}{{b4, aftr, v4Frame(t, b4v4, natServer4, "tcp", nil)}, {aftr, b4, v4Frame(t, natServer4, b4v4, "udp", nil)}} {
		rc, out := run(t, c.from.encap, c.in)
		if rc != retPass || len(out) != len(c.in)+40 {
			t.Fatalf("encap: rc %d, %d bytes from %d", rc, len(out), len(c.in))
		}
		ip6 := out[ethHeader:]
		if binary.BigEndian.Uint16(out[12:]) != 0x86dd || ip6[0] != 0x60 || ip6[6] != 4 || ip6[7] != 64 ||
			int(binary.BigEndian.Uint16(ip6[4:])) != len(ip6)-40 ||
			netip.AddrFrom16([16]byte(ip6[8:24])) != c.from.W.Local6 || netip.AddrFrom16([16]byte(ip6[24:40])) != c.from.W.Remote6 {
			t.Errorf("encap header % x", ip6[:40])
		}
		if !bytes.Equal(ip6[40:], c.in[ethHeader:]) {
			t.Error("the inner packet changed")
		}
		rc, back := run(t, c.to.decap, out)
		if rc != retPass || !bytes.Equal(back, c.in) {
			t.Errorf("decap: rc %d, % x", rc, back[:34])
		}
	}
	// The B4 leaves other IPv4 alone; a softwire packet from elsewhere is dropped.
	if rc, _ := run(t, b4.encap, v4Frame(t, natClient4, natServer4, "tcp", nil)); rc != retNext {
		t.Errorf("other IPv4 at the B4: rc %d", rc)
	}
	_, wrapped := run(t, b4.encap, v4Frame(t, b4v4, natServer4, "tcp", nil))
	copy(wrapped[ethHeader+8:], netip.MustParseAddr("2001:db8:6:1::9").AsSlice())
	if rc, _ := run(t, aftr.decap, wrapped); rc != retDrop {
		t.Errorf("spoofed softwire source: rc %d", rc)
	}
	// An inner packet that is not IPv4.
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolIPv4, SrcIP: b4v6.AsSlice(), DstIP: aftrv6.AsSlice()}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, eth, ip, gopacket.Payload(bytes.Repeat([]byte{0x60}, 40))); err != nil {
		t.Fatal(err)
	}
	if rc, _ := run(t, aftr.decap, buf.Bytes()); rc != retDrop {
		t.Errorf("inner IPv6: rc %d", rc)
	}
	c, _ := aftr.Counters()
	if c[Decapsulated] != 1 || c[Encapsulated] != 1 || c[DroppedSpoofed] != 1 || c[DroppedBad] != 1 {
		t.Errorf("AFTR counters %v", c)
	}
	if _, err := NewSoftwire(Softwire{Local6: b4v4, Remote6: aftrv6, B4: b4v4}); err == nil {
		t.Error("an IPv4 softwire end accepted")
	}
}
