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
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	natClient6  = netip.MustParseAddr("2001:db8:64:1::2")
	natClient4  = netip.MustParseAddr("198.18.0.2")
	natServer4  = netip.MustParseAddr("203.0.113.2")
	natServer6  = netip.MustParseAddr("64:ff9b::cb00:7102") // 64:ff9b::203.0.113.2
	xlat        = Translator{Prefix: nat64Prefix, Client6: natClient6, Client4: natClient4}
)

// l4Layer builds the transport layer of proto for a packet over ip.
func l4Layer(t *testing.T, proto string, ip gopacket.NetworkLayer, v6 bool) []gopacket.SerializableLayer {
	t.Helper()
	payload := gopacket.Payload(bytes.Repeat([]byte{0x5a}, 301)) // odd: the checksum's last byte pads
	switch proto {
	case "tcp":
		tcp := &layers.TCP{SrcPort: 40000, DstPort: 80, Seq: 7, ACK: true, PSH: true, Window: 512}
		tcp.SetNetworkLayerForChecksum(ip)
		return []gopacket.SerializableLayer{tcp, payload}
	case "udp":
		udp := &layers.UDP{SrcPort: 40000, DstPort: 53}
		udp.SetNetworkLayerForChecksum(ip)
		return []gopacket.SerializableLayer{udp, payload}
	case "echo":
		if v6 {
			icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(layers.ICMPv6TypeEchoRequest, 0)}
			icmp.SetNetworkLayerForChecksum(ip)
			return []gopacket.SerializableLayer{icmp, &layers.ICMPv6Echo{Identifier: 9, SeqNumber: 3}, payload}
		}
		return []gopacket.SerializableLayer{&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoReply, 0), Id: 9, Seq: 3}, payload}
	}
	t.Fatalf("proto %s", proto)
	return nil
}

func serialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func v6Frame(t *testing.T, src, dst netip.Addr, proto string, mod func(*layers.IPv6)) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
	nh := map[string]layers.IPProtocol{"tcp": layers.IPProtocolTCP, "udp": layers.IPProtocolUDP, "echo": layers.IPProtocolICMPv6}[proto]
	ip := &layers.IPv6{Version: 6, TrafficClass: 0xb8, HopLimit: 63, NextHeader: nh, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	if mod != nil {
		mod(ip)
	}
	return serialize(t, append([]gopacket.SerializableLayer{eth, ip}, l4Layer(t, proto, ip, true)...)...)
}

func v4Frame(t *testing.T, src, dst netip.Addr, proto string, mod func(*layers.IPv4)) []byte {
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, EthernetType: layers.EthernetTypeIPv4}
	p := map[string]layers.IPProtocol{"tcp": layers.IPProtocolTCP, "udp": layers.IPProtocolUDP, "echo": layers.IPProtocolICMPv4}[proto]
	ip := &layers.IPv4{Version: 4, IHL: 5, TOS: 0xb8, TTL: 61, Protocol: p, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	if mod != nil {
		mod(ip)
	}
	return serialize(t, append([]gopacket.SerializableLayer{eth, ip}, l4Layer(t, proto, ip, false)...)...)
}

// sum16 is the one's-complement sum of b (odd length padded).
func sum16(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func folded(s uint32) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// l4Valid says whether an IPv4 or IPv6 packet's transport checksum is
// right, computed here from the bytes alone.
func l4Valid(pkt []byte) bool {
	var s uint32
	var l4 []byte
	var proto byte
	if pkt[0]>>4 == 4 {
		l4, proto = pkt[20:binary.BigEndian.Uint16(pkt[2:])], pkt[9]
		if proto != 1 {
			s = sum16(pkt[12:20]) + uint32(proto) + uint32(len(l4))
		}
	} else {
		l4, proto = pkt[40:40+binary.BigEndian.Uint16(pkt[4:])], pkt[6]
		s = sum16(pkt[8:40]) + uint32(proto) + uint32(len(l4))
	}
	return folded(s+sum16(l4)) == 0xffff
}

// TestNat64TranslatesTCPUDPAndEcho: each of TCP, UDP and ICMP echo from
// the mapped client to the prefix leaves as IPv4 from the mapped address
// to the embedded one, with a right header and transport checksum, the
// TOS and TTL carried; and each back from the server returns as IPv6 from
// the prefix to the client, the same way (RFC 7915 §§4-5).
func TestNat64TranslatesTCPUDPAndEcho(t *testing.T) {
	n := loadNat64(t)
	for _, proto := range []string{"tcp", "udp", "echo"} {
		in := v6Frame(t, natClient6, natServer6, proto, nil)
		rc, out := run(t, n.to4, in)
		if rc != retPass || len(out) != len(in)-20 {
			t.Fatalf("%s 6to4: rc %d, %d bytes from %d", proto, rc, len(out), len(in))
		}
		ip := out[ethHeader:]
		wantProto := map[string]byte{"tcp": 6, "udp": 17, "echo": 1}[proto]
		if binary.BigEndian.Uint16(out[12:]) != 0x0800 || ip[0] != 0x45 || ip[1] != 0xb8 || ip[8] != 63 || ip[9] != wantProto ||
			netip.AddrFrom4([4]byte(ip[12:16])) != natClient4 || netip.AddrFrom4([4]byte(ip[16:20])) != natServer4 ||
			int(binary.BigEndian.Uint16(ip[2:])) != len(ip) {
			t.Errorf("%s 6to4 header % x", proto, ip[:20])
		}
		if checksum(ip[:20]) != 0 {
			t.Errorf("%s 6to4: IPv4 header checksum wrong: % x", proto, ip[:20])
		}
		if ip[6]&0x40 != 0 { // 341+ bytes: under 1260, no DF
			t.Errorf("%s 6to4: DF set on a %d-byte packet", proto, len(ip))
		}
		if !l4Valid(ip) {
			t.Errorf("%s 6to4: transport checksum wrong", proto)
		}
		if proto == "echo" && ip[20] != icmpEchoReq {
			t.Errorf("echo request became ICMP type %d", ip[20])
		}
		// Back: the server's answer.
		in4 := v4Frame(t, natServer4, natClient4, proto, nil)
		rc, out = run(t, n.to6, in4)
		if rc != retPass || len(out) != len(in4)+20 {
			t.Fatalf("%s 4to6: rc %d, %d bytes from %d", proto, rc, len(out), len(in4))
		}
		ip6 := out[ethHeader:]
		wantNH := map[string]byte{"tcp": 6, "udp": 17, "echo": 58}[proto]
		if binary.BigEndian.Uint16(out[12:]) != 0x86dd || ip6[0] != 0x6b || ip6[1] != 0x80 || ip6[6] != wantNH || ip6[7] != 61 ||
			netip.AddrFrom16([16]byte(ip6[8:24])) != natServer6 || netip.AddrFrom16([16]byte(ip6[24:40])) != natClient6 ||
			int(binary.BigEndian.Uint16(ip6[4:])) != len(ip6)-40 {
			t.Errorf("%s 4to6 header % x", proto, ip6[:40])
		}
		if !l4Valid(ip6) {
			t.Errorf("%s 4to6: transport checksum wrong", proto)
		}
		if proto == "echo" && ip6[40] != icmp6EchoRp {
			t.Errorf("echo reply became ICMPv6 type %d", ip6[40])
		}
	}
	// A large packet gets DF (RFC 7915 §5.1).
	big := v6Frame(t, natClient6, natServer6, "tcp", nil)
	big = append(big, make([]byte, 1000)...)
	binary.BigEndian.PutUint16(big[ethHeader+4:], binary.BigEndian.Uint16(big[ethHeader+4:])+1000)
	if _, out := run(t, n.to4, big); out[ethHeader+6]&0x40 == 0 {
		t.Error("no DF on a 1321-byte IPv4 packet")
	}
	c, err := n.Counters()
	if err != nil {
		t.Fatal(err)
	}
	if c[Translated64] != 4 || c[Translated46] != 3 {
		t.Errorf("counters %v", c)
	}
}

// TestNat64DropsWhatItCannotTranslate: an unmapped source, a fragment, an
// extension header, IPv4 options, an ICMP error, IPv4 UDP without a
// checksum and an expiring hop limit are dropped and counted; traffic not
// for the translator passes on untouched.
func TestNat64DropsWhatItCannotTranslate(t *testing.T) {
	n := loadNat64(t)
	other6 := netip.MustParseAddr("2001:db8:6:1::2")
	type dropCase struct {
		name string
		in4  bool
		in   []byte
		rc   int32
		ctr  int
	}
	cases := []dropCase{
		{"unmapped source", false, v6Frame(t, other6, natServer6, "tcp", nil), retDrop, DroppedUnmapped},
		{"hop limit 1", false, v6Frame(t, natClient6, natServer6, "udp", func(ip *layers.IPv6) { ip.HopLimit = 1 }), retDrop, DroppedHopLimit},
		{"a fragment of ICMPv6", false, v6Fragment(t, 58, 0, false, 0x1234, make([]byte, 64)), retDrop, DroppedUnsupported},
		{"a routing header", false, v6Frame(t, natClient6, natServer6, "udp", func(ip *layers.IPv6) { ip.NextHeader = layers.IPProtocolIPv6Routing }), retDrop, DroppedUnsupported},
		{"not to the prefix", false, v6Frame(t, natClient6, netip.MustParseAddr("2001:db8:6:3::2"), "tcp", nil), retNext, -1},
		{"an IPv4 fragment of ICMP", true, v4Frame(t, natServer4, natClient4, "echo", func(ip *layers.IPv4) { ip.Flags = layers.IPv4MoreFragments }), retDrop, DroppedUnsupported},
		{"IPv4 options", true, v4Frame(t, natServer4, natClient4, "tcp", func(ip *layers.IPv4) {
			ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}), retDrop, DroppedUnsupported},
		{"TTL 1", true, v4Frame(t, natServer4, natClient4, "tcp", func(ip *layers.IPv4) { ip.TTL = 1 }), retDrop, DroppedHopLimit},
		{"not to the mapped address", true, v4Frame(t, natServer4, netip.MustParseAddr("192.0.2.2"), "tcp", nil), retNext, -1},
	}
	// IPv4 UDP with a zero checksum, and an ICMP error.
	zero := v4Frame(t, natServer4, natClient4, "udp", nil)
	zero[ethHeader+20+6], zero[ethHeader+20+7] = 0, 0
	cases = append(cases, dropCase{"UDP without checksum", true, zero, retDrop, DroppedZeroChecksum})
	unreach := v4Frame(t, natServer4, natClient4, "echo", nil)
	unreach[ethHeader+20] = 3 // destination unreachable
	cases = append(cases, dropCase{"ICMP error", true, unreach, retDrop, DroppedUnsupported})
	want := make([]uint64, numTranslatorCounters)
	for _, c := range cases {
		p := n.to4
		if c.in4 {
			p = n.to6
		}
		rc, out := run(t, p, c.in)
		if rc != c.rc {
			t.Errorf("%s: rc %d, want %d", c.name, rc, c.rc)
		}
		if c.rc == retNext && !bytes.Equal(out[:len(c.in)], c.in) {
			t.Errorf("%s: a packet not ours was changed", c.name)
		}
		if c.ctr >= 0 {
			want[c.ctr]++
		}
	}
	got, err := n.Counters()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("counters %v, want %v", got, want)
			break
		}
	}
}

// v6Fragment is an IPv6 fragment from the mapped client to the server:
// a Fragment Header (next header nh, offset in bytes, more, id) before l4,
// a piece of the transport bytes.
func v6Fragment(t *testing.T, nh byte, offset int, more bool, id uint32, l4 []byte) []byte {
	t.Helper()
	b := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd}
	ip := make([]byte, 40+8)
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(8+len(l4)))
	ip[6], ip[7] = protoFragment, 64
	copy(ip[8:], natClient6.AsSlice())
	copy(ip[24:], natServer6.AsSlice())
	field := uint16(offset/8) << 3
	if more {
		field |= 1
	}
	ip[40] = nh
	binary.BigEndian.PutUint16(ip[42:], field)
	binary.BigEndian.PutUint32(ip[44:], id)
	return append(append(b, ip...), l4...)
}

// TestNat64TranslatesUDPFragments: a 2000-byte UDP datagram from the
// client in two IPv6 fragments leaves as two IPv4 fragments (the id's low
// 16 bits, MF on the first, the offsets, DF clear, right header checksums),
// whose transport bytes together carry a right IPv4 UDP checksum (RFC 7915
// §5.1.1).
func TestNat64TranslatesUDPFragments(t *testing.T) {
	n := loadNat64(t)
	// The whole datagram as IPv6 would carry it unfragmented.
	ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: natClient6.AsSlice(), DstIP: natServer6.AsSlice()}
	udp := &layers.UDP{SrcPort: 40000, DstPort: 5301}
	udp.SetNetworkLayerForChecksum(ip)
	whole := serialize(t, ip, udp, gopacket.Payload(bytes.Repeat([]byte{0xc3, 0x5a, 0x01}, 667)))[40:]
	var l4 []byte
	for i, part := range twoFragments(whole) {
		rc, out := run(t, n.to4, v6Fragment(t, protoUDP, part.off, part.more, 0xabcd1234, part.data))
		if rc != retPass {
			t.Fatalf("fragment %d: rc %d", i, rc)
		}
		v4 := out[ethHeader:]
		total := int(binary.BigEndian.Uint16(v4[2:]))
		field := binary.BigEndian.Uint16(v4[6:])
		if v4[9] != protoUDP || binary.BigEndian.Uint16(v4[4:]) != 0x1234 || total != 20+len(part.data) ||
			int(field&0x1fff)*8 != part.off || (field&0x2000 != 0) != part.more || field&0x4000 != 0 || checksum(v4[:20]) != 0 {
			t.Fatalf("fragment %d: IPv4 header % x", i, v4[:20])
		}
		l4 = append(l4, v4[20:total]...)
	}
	// The reassembled datagram's checksum, with IPv4's pseudo header.
	pseudo := append(append(natClient4.AsSlice(), natServer4.AsSlice()...), 0, protoUDP, byte(len(l4)>>8), byte(len(l4)))
	if folded(sum16(pseudo)+sum16(l4)) != 0xffff {
		t.Error("the reassembled UDP checksum is wrong")
	}
	if c, _ := n.Counters(); c[Translated64] != 2 {
		t.Errorf("counters %v", c)
	}
}

// TestNat46TranslatesUDPFragments: the server's 2000-byte UDP datagram in
// two IPv4 fragments returns as two IPv6 fragments: a Fragment Header
// with the IPv4 id, M and the offsets, and transport bytes that carry a
// right IPv6 UDP checksum together (RFC 7915 §4.1).
func TestNat46TranslatesUDPFragments(t *testing.T) {
	n := loadNat64(t)
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: natServer4.AsSlice(), DstIP: natClient4.AsSlice()}
	udp := &layers.UDP{SrcPort: 5301, DstPort: 40000}
	udp.SetNetworkLayerForChecksum(ip)
	whole := serialize(t, ip, udp, gopacket.Payload(bytes.Repeat([]byte{0x77, 0x01, 0x9e}, 667)))[20:]
	var l4 []byte
	for i, part := range twoFragments(whole) {
		frag := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, Id: 0xbeef, FragOffset: uint16(part.off / 8),
			SrcIP: natServer4.AsSlice(), DstIP: natClient4.AsSlice()}
		if part.more {
			frag.Flags = layers.IPv4MoreFragments
		}
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, EthernetType: layers.EthernetTypeIPv4}
		rc, out := run(t, n.to6, serialize(t, eth, frag, gopacket.Payload(part.data)))
		if rc != retPass {
			t.Fatalf("fragment %d: rc %d", i, rc)
		}
		v6 := out[ethHeader:]
		field := binary.BigEndian.Uint16(v6[42:])
		if v6[6] != protoFragment || v6[40] != protoUDP || int(binary.BigEndian.Uint16(v6[4:])) != 8+len(part.data) ||
			binary.BigEndian.Uint32(v6[44:]) != 0xbeef || int(field>>3)*8 != part.off || (field&1 == 1) != part.more ||
			netip.AddrFrom16([16]byte(v6[8:24])) != natServer6 || netip.AddrFrom16([16]byte(v6[24:40])) != natClient6 {
			t.Fatalf("fragment %d: IPv6 and Fragment Header % x", i, v6[:48])
		}
		l4 = append(l4, v6[48:48+len(part.data)]...)
	}
	pseudo := append(append(natServer6.AsSlice(), natClient6.AsSlice()...), 0, 0, byte(len(l4)>>8), byte(len(l4)), 0, 0, 0, protoUDP)
	if folded(sum16(pseudo)+sum16(l4)) != 0xffff {
		t.Error("the reassembled UDP checksum is wrong")
	}
	if c, _ := n.Counters(); c[Translated46] != 2 {
		t.Errorf("counters %v", c)
	}
}

func TestBadTranslatorsAreRefused(t *testing.T) {
	for _, x := range []Translator{
		{Prefix: netip.MustParsePrefix("64:ff9b::/64"), Client6: natClient6, Client4: natClient4},
		{Prefix: nat64Prefix, Client6: natClient4, Client4: natClient4},
		{Prefix: netip.MustParsePrefix("10.0.0.0/8"), Client6: natClient6, Client4: natClient4},
	} {
		if err := x.check(); err == nil {
			t.Errorf("%+v accepted", x)
		}
	}
}

// loadNat64 loads the test translator (skipping without BPF), unloaded
// when the test ends.
func loadNat64(t *testing.T) *Nat64 {
	t.Helper()
	requireBPF(t)
	n, err := NewNat64(xlat)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// fragment is a piece of a datagram's transport bytes at an offset.
type fragment struct {
	off  int
	more bool
	data []byte
}

// twoFragments cuts transport bytes in two at 1448 (a multiple of 8).
func twoFragments(whole []byte) []fragment {
	const cut = 1448
	return []fragment{{0, true, whole[:cut]}, {cut, false, whole[cut:]}}
}
