package tcpflow

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// frame builds an Ethernet frame of a TCP segment (payload of n bytes).
func frame(t *testing.T, src, dst netip.AddrPort, seq, ack uint32, syn, fin bool, payload []byte) []byte {
	t.Helper()
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: seq, Ack: ack,
		SYN: syn, FIN: fin, ACK: !syn || ack != 0, Window: 65535}
	if syn {
		tcp.Options = []layers.TCPOption{{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: []byte{0x05, 0xb4}}} // 1460
	}
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}}
	var ip gopacket.SerializableLayer
	if src.Addr().Is4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		v4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
		tcp.SetNetworkLayerForChecksum(v4)
		ip = v4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		v6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
		tcp.SetNetworkLayerForChecksum(v6)
		ip = v6
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestTimelineOfAnHTTPFetch replays a fetch as the server sees it: the
// handshake, the GET, three data segments with one sent twice, the client's
// ACKs, and the FINs. The delay runs from the GET to the ACK of the last
// byte; the bytes leave the retransmission out.
func TestTimelineOfAnHTTPFetch(t *testing.T) {
	for _, fam := range []struct {
		client, server string
		ipHdr          int
	}{{"192.0.2.2:40000", "203.0.113.2:80", 20}, {"[2001:db8:6:1::2]:40000", "[2001:db8:6:3::2]:80", 40}} {
		c, s := netip.MustParseAddrPort(fam.client), netip.MustParseAddrPort(fam.server)
		tr := New(80)
		t0 := time.Unix(1000, 0)
		at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
		get := []byte("GET /320K HTTP/1.1\r\nHost: x\r\n\r\n")
		data := make([]byte, 1000)
		steps := []struct {
			ms    int
			frame []byte
		}{
			{0, frame(t, c, s, 100, 0, true, false, nil)},
			{1, frame(t, s, c, 500, 101, true, false, nil)},
			{2, frame(t, c, s, 101, 501, false, false, nil)},
			{3, frame(t, c, s, 101, 501, false, false, get)},                           // request
			{5, frame(t, s, c, 501, 101+uint32(len(get)), false, false, data)},         // 501-1501
			{6, frame(t, s, c, 1501, 101+uint32(len(get)), false, false, data)},        // 1501-2501
			{7, frame(t, c, s, 101+uint32(len(get)), 1501, false, false, nil)},         // ack 1501
			{9, frame(t, s, c, 1501, 101+uint32(len(get)), false, false, data)},        // retransmission
			{10, frame(t, s, c, 2501, 101+uint32(len(get)), false, false, data[:500])}, // 2501-3001, last
			{12, frame(t, c, s, 101+uint32(len(get)), 3001, false, false, nil)},        // last ACK
			{13, frame(t, s, c, 3001, 101+uint32(len(get)), false, true, nil)},         // FIN, not counted
			{14, frame(t, c, s, 101+uint32(len(get)), 3002, false, true, nil)},
		}
		for _, st := range steps {
			tr.Frame(at(st.ms), st.frame, len(st.frame))
		}
		// A frame of another port is no part of it.
		other := frame(t, c, netip.AddrPortFrom(s.Addr(), 8080), 1, 1, false, false, data)
		tr.Frame(at(11), other, len(other))

		tl, ok := tr.Take(c)
		if !ok || !tl.Complete() {
			t.Fatalf("%s: %+v, %v", c, tl, ok)
		}
		if tl.SYN != at(0) || tl.Request != at(3) || tl.LastAck != at(12) || tl.Delay() != 9*time.Millisecond {
			t.Errorf("%s: SYN %v request %v last ACK %v", c, tl.SYN.Sub(t0), tl.Request.Sub(t0), tl.LastAck.Sub(t0))
		}
		tcpHdr := 20
		// GET, 3 data segments, 2 ACKs: the retransmission left out.
		want := int64(6*(fam.ipHdr+tcpHdr) + len(get) + 2500)
		if tl.Bytes != want || tl.Packets != 6 || tl.Retransmissions != 1 || tl.ServerBytes != 2500 {
			t.Errorf("%s: bytes %d (want %d), packets %d, retransmissions %d, server data %d", c, tl.Bytes, want, tl.Packets, tl.Retransmissions, tl.ServerBytes)
		}
		if got, w := tl.ThroughputMbps(), float64(want)*8/0.009/1e6; got != w {
			t.Errorf("throughput %g, want %g", got, w)
		}
		// Each direction on its own: the server sent 3 data segments, it
		// received the GET and 2 ACKs.
		out := int64(3*(fam.ipHdr+tcpHdr) + 2500)
		if tl.OutBytes != out || tl.InBytes != want-out || tl.OutMbps() != float64(out)*8/0.009/1e6 || tl.InMbps() != float64(want-out)*8/0.009/1e6 {
			t.Errorf("%s: out %d (want %d), in %d (want %d)", c, tl.OutBytes, out, tl.InBytes, want-out)
		}
		if _, again := tr.Take(c); again {
			t.Error("Take twice")
		}
	}
}

// TestOffloadedSegmentsCountTheirHeaders: a 4380-byte packet handed to the
// capture before segmentation leaves as three 1460-byte segments.
func TestOffloadedSegmentsCountTheirHeaders(t *testing.T) {
	c, s := netip.MustParseAddrPort("192.0.2.2:40000"), netip.MustParseAddrPort("203.0.113.2:80")
	tr := New(80)
	now := time.Now()
	for _, f := range [][]byte{
		frame(t, c, s, 100, 0, true, false, nil),
		frame(t, c, s, 101, 501, false, false, []byte("GET / HTTP/1.1\r\n\r\n")),
		frame(t, s, c, 501, 119, false, false, make([]byte, 4380)),
		frame(t, c, s, 119, 4881, false, false, nil),
	} {
		tr.Frame(now, f, len(f))
		now = now.Add(time.Millisecond)
	}
	tl, _ := tr.Take(c)
	if want := int64(40+18) + 3*40 + 4380 + 40; tl.Bytes != want || tl.Packets != 5 {
		t.Errorf("bytes %d packets %d, want %d and 5", tl.Bytes, tl.Packets, want)
	}
}

// FuzzFrame: no frame, however broken, panics the tracker.
func FuzzFrame(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add(make([]byte, 60), 60)
	seed := frame(&testing.T{}, netip.MustParseAddrPort("192.0.2.2:4"), netip.MustParseAddrPort("192.0.2.3:80"), 1, 0, true, false, nil)
	f.Add(seed, len(seed))
	f.Fuzz(func(t *testing.T, b []byte, wire int) {
		tr := New(80)
		tr.Frame(time.Now(), b, wire)
		if len(b) > 40 {
			tr.Frame(time.Now(), b[:40], wire)
		}
	})
}
