package bpf

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"v6lab/internal/testutil"

	"github.com/cilium/ebpf"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func requireBPF(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t, "loading BPF programs needs root (CAP_BPF, CAP_NET_ADMIN)")
	if err := Check(); err != nil {
		t.Skipf("this kernel or process has no BPF: %v", err)
	}
}

var (
	r1v4, r2v4 = netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	client6    = netip.MustParseAddr("2001:db8:46:1::2")
	server6    = netip.MustParseAddr("2001:db8:46:3::2")
	r1End      = TunnelEnd{Local: r1v4, Remote: r2v4, Remote6: Prefix64(server6)}
	r2End      = TunnelEnd{Local: r2v4, Remote: r1v4, Remote6: Prefix64(client6)}
)

// frame6 builds an Ethernet frame holding IPv6 src -> dst with a UDP payload.
func frame6(t *testing.T, src, dst netip.Addr, payload int) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 63, NextHeader: layers.IPProtocolUDP, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	udp := &layers.UDP{SrcPort: 4000, DstPort: 53}
	udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, udp, gopacket.Payload(bytes.Repeat([]byte{0xab}, payload))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// frame4 wraps an IPv6 packet (inner, without Ethernet) in IPv4 protocol 41.
func frame4(t *testing.T, src, dst netip.Addr, inner []byte, mod func(*layers.IPv4)) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolIPv6, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	if mod != nil {
		mod(ip)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, gopacket.Payload(inner)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func run(t *testing.T, p *ebpf.Program, in []byte) (int32, []byte) {
	t.Helper()
	out := make([]byte, len(in)+64)
	opts := ebpf.RunOptions{Data: in, DataOut: out}
	rc, err := p.Run(&opts)
	if err != nil {
		t.Fatal(err)
	}
	return int32(rc), opts.DataOut
}

func TestEncapWritesAValidIPv4Header(t *testing.T) {
	requireBPF(t)
	tn, err := NewTunnel(r1End)
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	for _, size := range []int{0, 1, 100, 1432} {
		in := frame6(t, client6, server6, size)
		rc, out := run(t, tn.encap, in)
		if rc != retPass {
			t.Fatalf("payload %d: return %d, want pass", size, rc)
		}
		pkt := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
		ip4, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip4 == nil {
			t.Fatalf("payload %d: no IPv4 layer in % x", size, out[:40])
		}
		if ip4.Protocol != 41 || !ip4.SrcIP.Equal(r1v4.AsSlice()) || !ip4.DstIP.Equal(r2v4.AsSlice()) || ip4.TTL != 64 || ip4.IHL != 5 ||
			ip4.Flags&layers.IPv4DontFragment != 0 || int(ip4.Length) != len(in)-14+20 {
			t.Errorf("payload %d: outer header %+v", size, ip4)
		}
		// The checksum, recomputed by gopacket over the header as sent.
		want := ip4.Checksum
		hdr := append([]byte{}, out[14:34]...)
		hdr[10], hdr[11] = 0, 0
		if got := checksum(hdr); got != want {
			t.Errorf("payload %d: header checksum %#04x, want %#04x", size, want, got)
		}
		if !bytes.Equal(out[34:], in[14:]) {
			t.Errorf("payload %d: the inner packet changed", size)
		}
		if !bytes.Equal(out[:12], in[:12]) {
			t.Errorf("payload %d: the MAC addresses changed", size)
		}
	}
	// Not ours: IPv6 to another prefix, and IPv4, go on unchanged.
	for _, in := range [][]byte{frame6(t, client6, netip.MustParseAddr("2001:db8:6:3::2"), 10), frame4(t, r1v4, r2v4, frame6(t, client6, server6, 10)[14:], nil)} {
		if rc, out := run(t, tn.encap, in); rc != retNext || !bytes.Equal(out, in) {
			t.Errorf("a packet that is not the tunnel's: return %d", rc)
		}
	}
	c, _ := tn.Counters()
	if c[Encapsulated] != 4 || c[EncapFailed] != 0 {
		t.Errorf("counters %v", c)
	}
}

func checksum(b []byte) uint16 {
	var s uint32
	for i := 0; i < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func TestDecapHandsIPv6OnAndDropsWhatRFC4213Drops(t *testing.T) {
	requireBPF(t)
	tn, err := NewTunnel(r2End)
	if err != nil {
		t.Fatal(err)
	}
	defer tn.Close()
	inner := frame6(t, client6, server6, 200)[14:]
	rc, out := run(t, tn.decap, frame4(t, r1v4, r2v4, inner, nil))
	if rc != retPass {
		t.Fatalf("return %d, want pass", rc)
	}
	pkt := gopacket.NewPacket(out, layers.LayerTypeEthernet, gopacket.Default)
	eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip6, _ := pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	if eth.EthernetType != layers.EthernetTypeIPv6 || ip6 == nil || !bytes.Equal(out[14:], inner) {
		t.Fatalf("decapsulated frame: % x", out[:60])
	}
	drops := []struct {
		name    string
		frame   []byte
		counter int
	}{
		{"spoofed source", frame4(t, netip.MustParseAddr("198.51.100.9"), r2v4, inner, nil), DroppedSpoofed},
		{"options", frame4(t, r1v4, r2v4, inner, func(ip *layers.IPv4) {
			ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}), DroppedBad},
		{"fragment", frame4(t, r1v4, r2v4, inner, func(ip *layers.IPv4) { ip.Flags = layers.IPv4MoreFragments }), DroppedBad},
		{"fragment offset", frame4(t, r1v4, r2v4, inner, func(ip *layers.IPv4) { ip.FragOffset = 100 }), DroppedBad},
		{"inner IPv4", frame4(t, r1v4, r2v4, append([]byte{0x45}, inner[1:]...), nil), DroppedBad},
		{"short", frame4(t, r1v4, r2v4, inner[:20], nil), DroppedBad},
	}
	for _, d := range drops {
		before, _ := tn.Counters()
		if rc, _ := run(t, tn.decap, d.frame); rc != retDrop {
			t.Errorf("%s: return %d, want drop", d.name, rc)
		}
		after, _ := tn.Counters()
		if after[d.counter] != before[d.counter]+1 {
			t.Errorf("%s: counter %d went %d -> %d", d.name, d.counter, before[d.counter], after[d.counter])
		}
	}
	// Not ours: protocol 41 to another address, other IPv4, IPv6.
	for _, in := range [][]byte{frame4(t, r1v4, netip.MustParseAddr("198.51.100.7"), inner, nil),
		frame4(t, r1v4, r2v4, inner, func(ip *layers.IPv4) { ip.Protocol = layers.IPProtocolUDP }),
		frame6(t, client6, server6, 10)} {
		if rc, _ := run(t, tn.decap, in); rc != retNext {
			t.Errorf("a packet that is not the tunnel's: return %d", rc)
		}
	}
	c, _ := tn.Counters()
	if c[Decapsulated] != 1 || c[DroppedSpoofed] != 1 || c[DroppedBad] != 5 {
		t.Errorf("counters %v", c)
	}
}

// TestEncapThenDecapIsTheIdentity: what one end sends, the other hands on
// unchanged.
func TestEncapThenDecapIsTheIdentity(t *testing.T) {
	requireBPF(t)
	a, err := NewTunnel(r1End)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := NewTunnel(r2End)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	in := frame6(t, client6, server6, 1000)
	_, mid := run(t, a.encap, in)
	rc, out := run(t, b.decap, mid)
	if rc != retPass || !bytes.Equal(out, in) {
		t.Errorf("round trip: return %d, equal %v", rc, bytes.Equal(out, in))
	}
}

func TestLossDropsItsShare(t *testing.T) {
	requireBPF(t)
	l, err := NewLoss(10)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	in := frame6(t, client6, server6, 10)
	const n = 10000
	dropped := 0
	for range n {
		rc, _ := run(t, l.prog, in)
		switch rc {
		case retDrop:
			dropped++
		case retNext:
		default:
			t.Fatalf("return %d", rc)
		}
	}
	if share := float64(dropped) / n; share < 0.08 || share > 0.12 {
		t.Errorf("dropped %d of %d (%.1f%%), want 10%% ± 2 pp", dropped, n, share*100)
	}
	c, _ := l.Counters()
	if c[LossDropped] != uint64(dropped) || c[LossPassed] != uint64(n-dropped) {
		t.Errorf("counters %v, dropped %d", c, dropped)
	}
	for _, p := range []float64{0, -1, 101} {
		if _, err := NewLoss(p); err == nil {
			t.Errorf("loss %g accepted", p)
		}
	}
}

func TestBadEndpointsAreRefused(t *testing.T) {
	for _, e := range []TunnelEnd{
		{Local: server6, Remote: r2v4, Remote6: Prefix64(server6)},
		{Local: r1v4, Remote: r2v4, Remote6: netip.MustParsePrefix("2001:db8::/48")},
		{Local: r1v4, Remote: r2v4},
	} {
		if _, err := NewTunnel(e); err == nil || errors.Is(err, ErrUnsupported) {
			t.Errorf("%+v: %v", e, err)
		}
	}
}

// TestWithoutPrivilegeTheErrorSaysSo runs this test binary again inside a
// user namespace (root there, no CAP_BPF in the machine's namespace), as
// an unprivileged lab does: loading fails with ErrUnsupported and a
// message that says what is missing.
func TestWithoutPrivilegeTheErrorSaysSo(t *testing.T) {
	if os.Getenv("V6LAB_BPF_CHILD") == "1" {
		_, err := NewTunnel(r1End)
		cerr := Check()
		if !errors.Is(err, ErrUnsupported) || !errors.Is(cerr, ErrUnsupported) {
			t.Fatalf("NewTunnel: %v; Check: %v", err, cerr)
		}
		t.Log(err.Error())
		return
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux) is not installed")
	}
	cmd := exec.Command(unshare, "--user", "--map-root-user", os.Args[0], "-test.run=^TestWithoutPrivilegeTheErrorSaysSo$", "-test.v")
	cmd.Env = append(os.Environ(), "V6LAB_BPF_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "unshare failed") {
		t.Skipf("no user namespaces here: %s", out)
	}
	if err != nil || !strings.Contains(string(out), "the kernel datapath (tc BPF) is not available") {
		t.Fatalf("in a user namespace: %v\n%s", err, out)
	}
}

// TestIPv6LossLeavesIPv4Alone: at 100% the IPv6-only loss program drops
// every IPv6 packet (a blackholed IPv6) and passes every IPv4 one,
// uncounted.
func TestIPv6LossLeavesIPv4Alone(t *testing.T) {
	requireBPF(t)
	l, err := NewIPv6Loss(100)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	v6 := frame6(t, client6, server6, 10)
	v4 := frame4(t, r1v4, r2v4, v6[14:], nil)
	for range 100 {
		if rc, _ := run(t, l.prog, v6); rc != retDrop {
			t.Fatalf("IPv6: return %d", rc)
		}
		if rc, _ := run(t, l.prog, v4); rc != retNext {
			t.Fatalf("IPv4: return %d", rc)
		}
	}
	if c, _ := l.Counters(); c[LossDropped] != 100 || c[LossPassed] != 0 {
		t.Errorf("counters %v", c)
	}
}

// frame6To is frame6 with the UDP datagram sent to port, or (port 0) a
// TCP segment's first bytes in its place.
func frame6To(t *testing.T, port uint16) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 63, NextHeader: layers.IPProtocolUDP, SrcIP: client6.AsSlice(), DstIP: server6.AsSlice()}
	var l4 gopacket.SerializableLayer
	if port == 0 {
		ip.NextHeader = layers.IPProtocolTCP
		tcp := &layers.TCP{SrcPort: 4000, DstPort: 443, SYN: true}
		tcp.SetNetworkLayerForChecksum(ip)
		l4 = tcp
	} else {
		udp := &layers.UDP{SrcPort: 4000, DstPort: layers.UDPPort(port)}
		udp.SetNetworkLayerForChecksum(ip)
		l4 = udp
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, l4, gopacket.Payload(make([]byte, 20))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestIPv6UDPLossDropsQUICAndPassesDNSAndTCP: at 100% the program drops
// every IPv6 UDP datagram to a port but 53 and the DNS ports it was given
// (QUIC to 443 or 8443) and passes IPv6's DNS (to 53, and to the lab's
// DNS server's own port), IPv6's TCP and IPv4 (UDP to 443 inside), those
// uncounted.
func TestIPv6UDPLossDropsQUICAndPassesDNSAndTCP(t *testing.T) {
	requireBPF(t)
	l, err := NewIPv6UDPLoss(100, 36789)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.UDP || !l.IPv6Only {
		t.Errorf("%+v", l)
	}
	for _, c := range []struct {
		what  string
		frame []byte
		want  int32
	}{
		{"QUIC to 443 over IPv6", frame6To(t, 443), retDrop},
		{"QUIC to 8443 over IPv6", frame6To(t, 8443), retDrop},
		{"DNS over IPv6", frame6To(t, 53), retNext},
		{"the lab's DNS over IPv6", frame6To(t, 36789), retNext},
		{"UDP to the port after the lab's DNS", frame6To(t, 36790), retDrop},
		{"TCP over IPv6", frame6To(t, 0), retNext},
		{"IPv4", frame4(t, r1v4, r2v4, frame6To(t, 443)[14:], nil), retNext},
	} {
		if rc, _ := run(t, l.prog, c.frame); rc != c.want {
			t.Errorf("%s: return %d, want %d", c.what, rc, c.want)
		}
	}
	if c, _ := l.Counters(); c[LossDropped] != 3 || c[LossPassed] != 0 {
		t.Errorf("counters %v", c)
	}
}

// TestImpairmentsRecordWhatTheyDrop: lab status reads a loss program's
// share and scope, and a path MTU impairment's drops, from the kernel.
func TestImpairmentsRecordWhatTheyDrop(t *testing.T) {
	requireBPF(t)
	for _, c := range []struct {
		load func() (*Loss, error)
		want string
	}{
		{func() (*Loss, error) { return NewLoss(1.5) }, "1.5% of every packet"},
		{func() (*Loss, error) { return NewIPv6Loss(100) }, "100% of IPv6 packets"},
		{func() (*Loss, error) { return NewIPv6UDPLoss(0.01) }, "0.01% of IPv6 UDP datagrams but DNS's"},
	} {
		l, err := c.load()
		if err != nil {
			t.Fatal(err)
		}
		s, err := readCounters(l.counters, numLossCounters+1)
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := DescribeLoss(s[numLossCounters]); got != c.want {
			t.Errorf("loss setting %q, want %q", got, c.want)
		}
	}
	p, err := NewPMTU(PMTUDrop{PTB6: true, Frag4: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := readCounters(p.counters, NumPMTUCounters+1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := DescribePMTU(s[NumPMTUCounters]), "drops ICMPv6 Packet Too Big, IPv4 fragments"; got != want {
		t.Errorf("path MTU setting %q, want %q", got, want)
	}
	if c, _ := p.Counters(); len(c) != NumPMTUCounters || slices.Max(c) != 0 {
		t.Errorf("the setting leaked into the counters: %v", c)
	}
}
