package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"v6lab/internal/lab"
	"v6lab/internal/sock/path"
)

func ipv6Pkt(next byte, srcPort, dstPort uint16) []byte {
	p := make([]byte, 60)
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:], 20) // payload length
	p[6] = next
	binary.BigEndian.PutUint16(p[40:], srcPort)
	binary.BigEndian.PutUint16(p[42:], dstPort)
	return p
}

func ipv4Pkt(proto byte, payload []byte) []byte {
	p := make([]byte, 20, 20+len(payload))
	p[0] = 0x45
	binary.BigEndian.PutUint16(p[2:], uint16(20+len(payload))) // total length
	p[9] = proto
	return append(p, payload...)
}

func ether(typ uint16, payload []byte) []byte {
	f := make([]byte, 14, 14+len(payload))
	binary.BigEndian.PutUint16(f[12:], typ)
	return append(f, payload...)
}

func l4(src, dst uint16) []byte {
	b := make([]byte, 20)
	binary.BigEndian.PutUint16(b, src)
	binary.BigEndian.PutUint16(b[2:], dst)
	return b
}

func TestClassify(t *testing.T) {
	f := Filter{Port: 8080}
	cases := []struct {
		name  string
		frame []byte
		want  Class
	}{
		{"ipv4 tcp to service", ether(0x0800, ipv4Pkt(6, l4(40000, 8080))), IPv4},
		{"ipv4 udp from service", ether(0x0800, ipv4Pkt(17, l4(8080, 40000))), IPv4},
		{"ipv4 other port", ether(0x0800, ipv4Pkt(6, l4(40000, 53))), Ignored},
		{"ipv6 tcp", ether(0x86DD, ipv6Pkt(6, 40000, 8080)), IPv6},
		{"ipv6 icmp (ND)", ether(0x86DD, ipv6Pkt(58, 0, 8080)), Ignored},
		{"6in4 tcp", ether(0x0800, ipv4Pkt(41, ipv6Pkt(6, 8080, 40000))), SixIn4},
		{"6in4 other port", ether(0x0800, ipv4Pkt(41, ipv6Pkt(6, 1, 2))), Ignored},
		{"dslite tcp", ether(0x86DD, append(ipv6Pkt(4, 0, 0)[:40], ipv4Pkt(6, l4(40000, 8080))...)), DSLite},
		{"dslite other port", ether(0x86DD, append(ipv6Pkt(4, 0, 0)[:40], ipv4Pkt(6, l4(40000, 53))...)), Ignored},
		{"arp", ether(0x0806, make([]byte, 28)), Ignored},
		{"runt", []byte{1, 2, 3}, Ignored},
	}
	// Port 0 takes any TCP or UDP packet, and still nothing else.
	anyPort := map[string]Class{"ipv4 other port": IPv4, "6in4 other port": SixIn4, "dslite other port": DSLite, "ipv6 icmp (ND)": Ignored, "arp": Ignored}
	for _, c := range cases {
		if want, ok := anyPort[c.name]; ok {
			if got := Classify(c.frame, Filter{}); got != want {
				t.Errorf("%s, any port: %v, want %v", c.name, got, want)
			}
		}
		if got := Classify(c.frame, f); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestUDPFilterCountsQUICAlone: an HTTP/3 service's filter counts its
// port's UDP on every family, and its DNS lookup, but not TCP on its port:
// a run that went over TCP proves nothing.
func TestUDPFilterCountsQUICAlone(t *testing.T) {
	f := Filter{Port: 8443, Also: 53, UDP: true}
	for _, c := range []struct {
		name  string
		frame []byte
		want  Class
	}{
		{"ipv4 quic", ether(0x0800, ipv4Pkt(17, l4(40000, 8443))), IPv4},
		{"ipv6 quic", ether(0x86DD, ipv6Pkt(17, 8443, 40000)), IPv6},
		{"6in4 quic", ether(0x0800, ipv4Pkt(41, ipv6Pkt(17, 40000, 8443))), SixIn4},
		{"ipv4 tcp on the port", ether(0x0800, ipv4Pkt(6, l4(40000, 8443))), Ignored},
		{"6in4 tcp on the port", ether(0x0800, ipv4Pkt(41, ipv6Pkt(6, 8443, 40000))), Ignored},
		{"dns over tcp", ether(0x0800, ipv4Pkt(6, l4(40000, 53))), IPv4},
	} {
		if got := Classify(c.frame, f); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestProves(t *testing.T) {
	if err := (Counts{IPv4: 10}).Proves(path.IPv4); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		counts Counts
		p      path.Path
	}{
		{Counts{}, path.IPv6},
		{Counts{IPv4: 3}, path.IPv6},
		{Counts{IPv6: 3, SixIn4: 1}, path.SixIn4},
	} {
		if err := c.counts.Proves(c.p); !errors.Is(err, ErrWrongWire) {
			t.Errorf("%+v proves %s: %v", c.counts, c.p, err)
		}
	}
}

func FuzzClassify(f *testing.F) {
	f.Add(ether(0x0800, ipv4Pkt(41, ipv6Pkt(6, 8080, 1))))
	f.Add(ether(0x86DD, ipv6Pkt(17, 8080, 1)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Classify(b, Filter{Port: 8080})
	})
}

// labCapture builds a lab named prefix+pid and counts on r1's link to r2;
// both are gone when the test ends.
func labCapture(t *testing.T, prefix string) (*lab.Lab, *Capture) {
	t.Helper()
	testutil.RequireRoot(t, "needs root to build a lab")
	l, err := lab.Up(context.Background(), lab.Config{Name: fmt.Sprintf("%s%d", prefix, os.Getpid()%10000)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var cp *Capture
	if err := lab.Do(lab.NS(l.Name, lab.R1), func() error {
		var err error
		cp, err = Open(l.Addr.WireIf, Filter{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	return l, cp
}

// TestWireProvesEveryPath builds a lab, captures on r1's link to r2, and
// checks each path's traffic is what the path claims.
func TestWireProvesEveryPath(t *testing.T) {
	l, cp := labCapture(t, "cap")
	var pcap bytes.Buffer
	if err := cp.Record(&pcap); err != nil {
		t.Fatal(err)
	}
	var total uint64
	var classes []Class
	for _, c := range []struct {
		p        path.Path
		dst, src netip.Addr
	}{
		{path.IPv4, l.Addr.ServerV4, netip.Addr{}},
		{path.IPv6, l.Addr.ServerV6, netip.Addr{}},
		{path.SixIn4, l.Addr.ServerTun6, l.Addr.ClientTun6},
	} {
		var ln net.Listener
		if err := lab.Do(lab.NS(l.Name, lab.Server), func() error {
			var err error
			ln, err = path.Listen(context.Background(), c.p, netip.AddrPortFrom(c.dst, 0).String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				s, err := ln.Accept()
				if err != nil {
					return
				}
				io.WriteString(s, "hello")
				s.Close()
			}
		}()
		port := ln.Addr().(*net.TCPAddr).AddrPort()
		cp.Reset(Filter{Port: port.Port()})
		var conn net.Conn
		if err := lab.Do(lab.NS(l.Name, lab.Client), func() error {
			var err error
			conn, err = path.Dialer{Path: c.p, Source: c.src}.Dial(context.Background(), "tcp", port)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		io.ReadAll(conn)
		conn.Close()
		time.Sleep(200 * time.Millisecond)
		counts := cp.Counts()
		total += counts.IPv4 + counts.IPv6 + counts.SixIn4
		for range counts.IPv4 + counts.IPv6 + counts.SixIn4 {
			classes = append(classes, map[path.Path]Class{path.IPv4: IPv4, path.IPv6: IPv6, path.SixIn4: SixIn4}[c.p])
		}
		if err := counts.Proves(c.p); err != nil {
			t.Errorf("%v", err)
		}
		for _, other := range path.All {
			// A dual-stack run may carry either family: its proof is
			// that nothing else is on the wire.
			if other != c.p && !other.Kind().Dual && counts.Proves(other) == nil {
				t.Errorf("the %s run's wire also proves %s: %+v", c.p, other, counts)
			}
		}
		ln.Close()
	}
	// The pcap holds exactly the counted frames, in order, and each reads
	// back as the class it was counted as.
	cp.Close()
	if err := cp.RecordErr(); err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewReader(&pcap)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Errorf("link type %v", r.LinkType())
	}
	var n int
	for ; ; n++ {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		if ci.Length < ci.CaptureLength || ci.CaptureLength > snap || n >= len(classes) {
			t.Fatalf("packet %d: %+v", n, ci)
		}
		if got := Classify(data, Filter{Port: portOf(data)}); got != classes[n] {
			t.Errorf("packet %d reads back as class %d, counted as %d", n, got, classes[n])
		}
	}
	if uint64(n) != total || total == 0 {
		t.Errorf("pcap holds %d packets, %d were counted", n, total)
	}
}

// portOf returns a frame's TCP source port, wherever its headers are.
func portOf(frame []byte) uint16 {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	var tcps []*layers.TCP
	for _, l := range p.Layers() {
		if t, ok := l.(*layers.TCP); ok {
			tcps = append(tcps, t)
		}
	}
	if len(tcps) == 0 {
		return 0
	}
	return uint16(tcps[len(tcps)-1].SrcPort)
}

// TestTheDNSLookupIsCountedWithItsTransaction: a run of http counts the
// packets of its DNS lookup too (a lookup sent over the wrong family would
// fail the run), but a run of dns counts only its own port.
func TestTheDNSLookupIsCountedWithItsTransaction(t *testing.T) {
	dnsV6 := ether(0x86DD, ipv6Pkt(17, 40000, 5353))
	httpV4 := ether(0x0800, ipv4Pkt(6, l4(40000, 8080)))
	if got := Classify(dnsV6, Filter{Port: 8080, Also: 5353}); got != IPv6 {
		t.Errorf("the lookup's packet: %v", got)
	}
	if got := Classify(dnsV6, Filter{Port: 8080}); got != Ignored {
		t.Errorf("without Also: %v", got)
	}
	// An ipv4 run whose lookup went over IPv6 is not proven.
	c := Counts{}
	for _, fr := range [][]byte{httpV4, dnsV6} {
		switch Classify(fr, Filter{Port: 8080, Also: 5353}) {
		case IPv4:
			c.IPv4++
		case IPv6:
			c.IPv6++
		}
	}
	if err := c.Proves(path.IPv4); err == nil {
		t.Error("a run whose DNS went over IPv6 passed the ipv4 wire check")
	}
}

// tcpSeg is a TCP header from sport to dport with the given flags.
func tcpSeg(sport, dport uint16, flags byte) []byte {
	b := l4(sport, dport)
	b[12] = 5 << 4
	b[13] = flags
	return b
}

// ipv6Between is a TCP segment in an IPv6 packet from 2001:db8::1 to
// 2001:db8::2.
func ipv6Between(seg []byte) []byte {
	p := make([]byte, 40, 40+len(seg))
	p[0] = 0x60
	binary.BigEndian.PutUint16(p[4:], uint16(len(seg)))
	p[6] = 6
	copy(p[8:24], netip.MustParseAddr("2001:db8::1").AsSlice())
	copy(p[24:40], netip.MustParseAddr("2001:db8::2").AsSlice())
	return append(p, seg...)
}

// ipv4Between is an IPv4 packet from src to dst (last octets of 10.0.0.x).
func ipv4Between(proto byte, src, dst byte, payload []byte) []byte {
	p := ipv4Pkt(proto, payload)
	copy(p[12:16], []byte{10, 0, 0, src})
	copy(p[16:20], []byte{10, 0, 0, dst})
	return p
}

// TestALateRetransmissionIsStray: under loss, a client retransmits data of
// a connection whose run has ended into the next run's window (a 6in4
// run's segment in a nat64 run). Data the wire already saw sent, or the
// server acknowledged, is stray; new data on a connection kept from an
// earlier run still counts.
func TestALateRetransmissionIsStray(t *testing.T) {
	c := &Capture{}
	at := func(when time.Time, frames ...[]byte) {
		for _, f := range frames {
			c.mu.Lock()
			c.frame(when, f, len(f))
			c.mu.Unlock()
		}
	}
	const ack, psh = 0x10, 0x08
	seg := func(sport, dport uint16, seq, acked uint32, data string) []byte {
		b := tcpSeg(sport, dport, ack|psh)
		binary.BigEndian.PutUint32(b[4:], seq)
		binary.BigEndian.PutUint32(b[8:], acked)
		p := ipv6Between(append(b, data...))
		if sport == 443 { // from 2001:db8::2
			p[23], p[39] = 2, 1
		}
		return ether(0x0800, ipv4Pkt(41, p))
	}
	client := func(seq uint32, data string) []byte { return seg(40000, 443, seq, 1, data) }
	server := func(acked uint32) []byte { return seg(443, 40000, 1, acked, "") }

	c.Reset(Filter{Port: 443})
	at(time.Now(), client(0xfffffff0, "request")) // a kept connection's data counts
	// Its next segment is lost before r1's link; the next window opens.
	c.Reset(Filter{Port: 443})
	at(time.Now(),
		client(0xfffffff0, "request"), // sent again: the wire saw it
		server(0),                     // the server has both (across the wrap): stray as the service's
		client(0xfffffff7, "the rest!"),
	)
	if got := c.Counts(); got != (Counts{Stray: 3}) {
		t.Errorf("an earlier run's retransmissions: %+v, want 3 stray", got)
	}
	at(time.Now(), client(0, "next")) // new data on the kept connection
	if got := c.Counts(); got != (Counts{SixIn4: 1, Stray: 3}) {
		t.Errorf("new data on a kept connection: %+v, want it counted", got)
	}
	// The server's reply to it is this run's (keepalive: the run's
	// transaction on a connection an earlier run opened), not stray.
	at(time.Now(), server(4))
	if got := c.Counts(); got != (Counts{SixIn4: 2, Stray: 3}) {
		t.Errorf("the reply on a kept connection: %+v, want it counted as the run's", got)
	}

	// An acknowledgment read late, from before the window, marks too.
	c.Reset(Filter{Port: 443})
	at(time.Now().Add(-time.Second), server(11))
	at(time.Now(), client(4, "more"), client(4, "more and new"))
	if got := c.Counts(); got != (Counts{SixIn4: 1, Stray: 1}) {
		t.Errorf("after an acknowledgment from before the window: %+v", got)
	}

	// A connection quiet for markWindows windows is forgotten.
	for range markWindows + 1 {
		c.Reset(Filter{Port: 443})
	}
	at(time.Now(), client(0xfffffff0, "request"))
	if got := c.Counts(); got != (Counts{SixIn4: 1}) {
		t.Errorf("a forgotten connection: %+v", got)
	}
}

// TestOnlyFlowsOpenedInTheWindowCount feeds frames to the counting
// (without a ring): packets of a connection or flow that did not start in
// the window are stray, not the run's.
func TestOnlyFlowsOpenedInTheWindowCount(t *testing.T) {
	c := &Capture{flows: make(map[flowKey]bool)}
	send := func(frames ...[]byte) {
		for _, f := range frames {
			c.mu.Lock()
			c.frame(time.Now(), f, len(f))
			c.mu.Unlock()
		}
	}
	const syn, rst, ack, synAck = 0x02, 0x04, 0x10, 0x12
	v4 := func(proto, src, dst byte, l4 []byte) []byte { return ether(0x0800, ipv4Between(proto, src, dst, l4)) }

	c.Reset(Filter{Port: 8080, Also: 53})
	send(
		v4(6, 2, 1, tcpSeg(8080, 40000, ack)),               // an earlier connection's retransmission
		v4(6, 2, 1, tcpSeg(8080, 40000, synAck)),            // a SYN-ACK whose SYN was not seen
		v4(6, 1, 2, tcpSeg(40000, 8080, rst)),               // the client's reset: it has no such connection
		v4(6, 1, 2, tcpSeg(40001, 8080, syn)),               // this run's connection opens
		v4(6, 2, 1, tcpSeg(8080, 40001, synAck)),            // and is answered
		v4(6, 1, 2, tcpSeg(40001, 8080, ack)),               //
		v4(17, 2, 1, l4(53, 40002)),                         // a DNS answer to a query never seen
		v4(17, 1, 2, l4(40003, 53)),                         // this run's query
		v4(17, 2, 1, l4(53, 40003)),                         // and its answer
		v4(6, 1, 2, tcpSeg(40009, 9999, syn)),               // not the service
		ether(0x86DD, ipv6Pkt(6, 8080, 40000)),              // an IPv6 straggler from the server
		ether(0x0800, ipv4Pkt(41, ipv6Pkt(6, 8080, 40000))), // a 6in4 one
	)
	got := c.Counts()
	if want := (Counts{IPv4: 5, Stray: 6}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if err := got.Proves(path.IPv4); err != nil {
		t.Errorf("the strays failed the run: %v", err)
	}

	// A QUIC flow an earlier run left: the server retransmits to a client
	// whose close a lossy link dropped, and the client answers (its
	// closed connection's CONNECTION_CLOSE again): both stray, in 6in4 as
	// in any class. A flow the client opens in the window counts whole.
	c.Reset(Filter{Port: 443, UDP: true})
	send(
		ether(0x0800, ipv4Pkt(41, ipv6Pkt(17, 443, 40000))), // the server's retransmission, first in the window
		ether(0x0800, ipv4Pkt(41, ipv6Pkt(17, 40000, 443))), // the client's answer on that flow
		v4(17, 1, 2, l4(40001, 443)),                        // this run's connection opens
		v4(17, 2, 1, l4(443, 40001)),                        // and is answered
		v4(17, 1, 2, l4(40001, 443)),
	)
	if got := c.Counts(); got != (Counts{IPv4: 3, Stray: 2}) {
		t.Errorf("a QUIC flow an earlier run left: %+v", got)
	}

	// What a client sends always counts, opened in the window or not: a
	// connection kept from an earlier run is still proven.
	c.Reset(Filter{Port: 8080})
	send(
		v4(6, 1, 2, tcpSeg(40001, 8080, syn)),
		ether(0x86DD, ipv6Pkt(6, 40000, 8080)),                   // data (no flags) to the server over IPv6
		v4(6, 1, 3, append(tcpSeg(40001, 8080, ack), "data"...)), // same ports, another server: another flow
	)
	got = c.Counts()
	if want := (Counts{IPv4: 2, IPv6: 1}); got != want {
		t.Errorf("a client's packets: %+v, want %+v", got, want)
	}
	if err := got.Proves(path.IPv4); err == nil {
		t.Error("a client's IPv6 packets on a connection not opened in the window passed an ipv4 run")
	}

	// A new window forgets the flows of the last. A client's FIN or bare
	// ACK of a connection not opened in it is an earlier run's close,
	// which a run that follows at once can see: stray, on any family.
	c.Reset(Filter{Port: 8080})
	const fin = 0x01
	send(
		v4(6, 2, 1, tcpSeg(8080, 40001, ack)),
		ether(0x86DD, ipv6Between(tcpSeg(40001, 8080, fin|ack))),
		ether(0x86DD, ipv6Between(tcpSeg(40001, 8080, ack))),
		// A FIN with the last data (TLS's close_notify), retransmitted
		// under loss into the next run: a close too.
		ether(0x86DD, ipv6Between(append(tcpSeg(40001, 8080, fin|ack), "alert"...))),
	)
	if got := c.Counts(); got != (Counts{Stray: 4}) {
		t.Errorf("after Reset: %+v", got)
	}
	// Taking every port (a transport test), which end is the client is
	// unknown: every datagram and every segment with data counts, opened
	// in the window or not; a FIN, reset or bare ACK of a connection not
	// opened in it is an earlier trial's close, from either end (a
	// server's FIN retransmitted over 6in4 into an ipv4 trial, and the
	// client's ACK of it): stray.
	c.Reset(Filter{})
	sixin4 := func(seg []byte) []byte { return ether(0x0800, ipv4Pkt(41, ipv6Between(seg))) }
	send(
		v4(17, 2, 1, l4(5201, 40000)),
		v4(6, 2, 1, append(tcpSeg(5201, 40000, ack), "data"...)),
		sixin4(tcpSeg(40267, 54437, fin|ack)),
		sixin4(tcpSeg(54437, 40267, ack)),
		sixin4(tcpSeg(54437, 40267, rst)),
	)
	if got := c.Counts(); got != (Counts{IPv4: 2, Stray: 3}) {
		t.Errorf("any port: %+v", got)
	}
	if err := c.Counts().Proves(path.IPv4); err != nil {
		t.Errorf("an earlier trial's close failed the run: %v", err)
	}
	// Its data still counts, and a connection opened in the window
	// counts all its packets.
	send(
		sixin4(append(tcpSeg(54437, 40267, ack), "data"...)),
		v4(6, 1, 2, tcpSeg(40002, 5201, syn)),
		v4(6, 1, 2, tcpSeg(40002, 5201, fin|ack)),
	)
	if got := c.Counts(); got != (Counts{IPv4: 4, SixIn4: 1, Stray: 3}) {
		t.Errorf("any port, data and an opened connection: %+v", got)
	}
}

// TestAnEarlierConnectionsPacketsDoNotFailARun: in a lab, a connection
// over IPv6 from before the window sends while an IPv4 run is counted (as
// a server retransmits to the lost resets of an impaired run's clients);
// the run is still proven IPv4, and the packets are reported as stray.
func TestAnEarlierConnectionsPacketsDoNotFailARun(t *testing.T) {
	l, cp := labCapture(t, "cps")
	var ln6, ln4 net.Listener
	if err := lab.Do(lab.NS(l.Name, lab.Server), func() error {
		var err error
		if ln6, err = path.Listen(context.Background(), path.IPv6, netip.AddrPortFrom(l.Addr.ServerV6, 0).String()); err != nil {
			return err
		}
		port := ln6.Addr().(*net.TCPAddr).Port
		ln4, err = path.Listen(context.Background(), path.IPv4, netip.AddrPortFrom(l.Addr.ServerV4, uint16(port)).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln6.Close()
	defer ln4.Close()
	port := uint16(ln6.Addr().(*net.TCPAddr).Port)
	go func() {
		for {
			s, err := ln4.Accept()
			if err != nil {
				return
			}
			io.WriteString(s, "hello")
			s.Close()
		}
	}()
	dial := func(p path.Path, dst netip.Addr) net.Conn {
		var conn net.Conn
		if err := lab.Do(lab.NS(l.Name, lab.Client), func() error {
			var err error
			conn, err = path.Dialer{Path: p}.Dial(context.Background(), "tcp", netip.AddrPortFrom(dst, port))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	// The earlier run's client is gone (its socket closed, its FIN
	// acknowledged); the server, still open, sends late, and the client's
	// kernel answers with a reset.
	old := dial(path.IPv6, l.Addr.ServerV6)
	srv, err := ln6.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	old.Close()
	if _, err := srv.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the server read %v, not the client's FIN", err)
	}

	time.Sleep(Quiet)
	cp.Reset(Filter{Port: port})
	io.WriteString(srv, "late")
	conn := dial(path.IPv4, l.Addr.ServerV4)
	if b, _ := io.ReadAll(conn); string(b) != "hello" {
		t.Errorf("read %q", b)
	}
	conn.Close()
	time.Sleep(Quiet)
	cp.Drain()
	c := cp.Counts()
	if err := c.Proves(path.IPv4); err != nil {
		t.Errorf("an earlier connection's packets failed the run: %v", err)
	}
	if c.Stray < 2 || c.IPv6 != 0 {
		t.Errorf("counts %+v: want the server's late IPv6 data and the client's reset as stray", c)
	}
}

// TestARingThatCannotBeSetUpFailsEveryRun: a socket that is not a packet
// socket bound to an interface counts nothing, and each run's check
// fails naming why, rather than passing on no packets.
func TestARingThatCannotBeSetUpFailsEveryRun(t *testing.T) {
	ln, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.UDPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	c := FromFD(fd, Filter{})
	defer c.Close()
	k := Check{C: c, Ports: map[string]uint16{"http": 80}}
	k.Start("http", path.IPv4)
	if _, err := k.Stop(path.IPv4); err == nil || !strings.Contains(err.Error(), "not a packet socket") {
		t.Errorf("Stop: %v", err)
	}
}

// quicDgram is a UDP datagram from sport to dport whose payload starts
// with first (a QUIC header's first byte: 0xc0 a long header, an Initial;
// 0x40 a short one).
func quicDgram(sport, dport uint16, first byte) []byte {
	b := l4(sport, dport)
	b[8] = first
	return b
}

// udp6Between is a UDP datagram in an IPv6 packet from 2001:db8::1 to
// 2001:db8::2 (or back, from the service's port).
func udp6Between(dgram []byte) []byte {
	p := ipv6Between(dgram)
	p[6] = 17
	if binary.BigEndian.Uint16(dgram) == 443 {
		p[23], p[39] = 2, 1
	}
	return p
}

// TestAnotherPathsKeptQUICConnectionIsStray: with HTTP/3 keepalive, each
// path's users keep their QUIC connections across runs, and those send a
// few datagrams (quic-go's path MTU probes, ACKs, a server's datagram)
// during other paths' runs (trial8 F0). A connection is its window's
// path's from its first long-header packet: another path's, or one opened
// before any window (settling), is stray when not of the running path's
// form; the running path's own kept connections count from either end,
// so a leak over another form still fails the run.
func TestAnotherPathsKeptQUICConnectionIsStray(t *testing.T) {
	c := &Capture{flows: make(map[flowKey]bool)} // as FromFD makes it
	send := func(frames ...[]byte) {
		for _, f := range frames {
			c.mu.Lock()
			c.frame(time.Now(), f, len(f))
			c.mu.Unlock()
		}
	}
	window := func(p path.Path) {
		c.Reset(Filter{Port: 443, Also: 53, UDP: true, Path: p, Wire: p.Kind().Wire})
	}
	const initial, short = 0xc0, 0x40
	v4 := func(src, dst byte, d []byte) []byte { return ether(0x0800, ipv4Between(17, src, dst, d)) }
	v6 := func(d []byte) []byte { return ether(0x86DD, udp6Between(d)) }
	sixin4 := func(d []byte) []byte { return ether(0x0800, ipv4Pkt(41, udp6Between(d))) }

	// Settling's connection, opened before any window, and the ipv6
	// run's users' connection, kept.
	send(v6(quicDgram(40100, 443, initial)), v6(quicDgram(443, 40100, initial)))
	window(path.IPv6)
	send(v6(quicDgram(40000, 443, initial)), v6(quicDgram(443, 40000, initial)), v6(quicDgram(40000, 443, short)))
	if got := c.Counts(); got != (Counts{IPv6: 3}) {
		t.Fatalf("the ipv6 run: %+v", got)
	}

	// The ipv4 run: its own connection and lookup count; the ipv6
	// connection's path MTU probe, ACK and the server's datagram, and
	// settling's last datagram, are stray.
	window(path.IPv4)
	send(
		v4(1, 2, quicDgram(40001, 443, initial)),
		v6(quicDgram(40000, 443, short)), // a path MTU probe
		v4(2, 1, quicDgram(443, 40001, initial)),
		v6(quicDgram(443, 40000, short)), // its ACK
		v4(1, 2, l4(40002, 53)),          // the run's lookup
		v4(2, 1, l4(53, 40002)),
		v6(quicDgram(40000, 443, short)), // an ACK
		v6(quicDgram(40100, 443, short)), // settling's
		v4(1, 2, quicDgram(40001, 443, short)),
	)
	got := c.Counts()
	if want := (Counts{IPv4: 5, Stray: 4}); got != want {
		t.Errorf("an ipv4 run beside the ipv6 kept connection: %+v, want %+v", got, want)
	}
	if err := got.Proves(path.IPv4); err != nil {
		t.Errorf("another path's kept connection failed the run: %v", err)
	}

	// The ipv4 run again: its kept connection counts from either end (the
	// server's datagram first), as the 6in4 run's own; the ipv6 and ipv4
	// connections are stray in the 6in4 run (IPv6 in IPv4 is not IPv6).
	window(path.IPv4)
	send(v4(2, 1, quicDgram(443, 40001, short)), v4(1, 2, quicDgram(40001, 443, short)), v6(quicDgram(443, 40000, short)))
	if got := c.Counts(); got != (Counts{IPv4: 2, Stray: 1}) {
		t.Errorf("the ipv4 run's kept connection: %+v", got)
	}
	window(path.SixIn4)
	send(sixin4(quicDgram(40003, 443, initial)), v6(quicDgram(40000, 443, short)), v4(2, 1, quicDgram(443, 40001, short)), sixin4(quicDgram(443, 40003, short)))
	if got := c.Counts(); got != (Counts{SixIn4: 2, Stray: 2}) || got.Proves(path.SixIn4) != nil {
		t.Errorf("a 6in4 run beside kept ipv6 and ipv4 connections: %+v", got)
	}

	// A leak: the ipv4 run's users open a connection over IPv6. It fails
	// that run, and, kept, every ipv4 run it carries datagrams in.
	window(path.IPv4)
	send(v4(1, 2, quicDgram(40004, 443, initial)), v6(quicDgram(40005, 443, initial)))
	if err := c.Counts().Proves(path.IPv4); !errors.Is(err, ErrWrongWire) {
		t.Errorf("an ipv4 run's connection over IPv6 passed: %+v", c.Counts())
	}
	window(path.IPv4)
	send(v4(1, 2, quicDgram(40004, 443, short)), v6(quicDgram(443, 40005, short)), v6(quicDgram(40005, 443, short)))
	if got := c.Counts(); got != (Counts{IPv4: 1, IPv6: 2}) || !errors.Is(got.Proves(path.IPv4), ErrWrongWire) {
		t.Errorf("an ipv4 run's kept connection over IPv6: %+v, want it counted and failing the run", got)
	}

	// A flow never seen opened (its Initial before the capture) counts in
	// the running path's form, and so do the service's answers to it.
	window(path.IPv6)
	send(v6(quicDgram(40006, 443, short)), v6(quicDgram(443, 40006, short)))
	if got := c.Counts(); got != (Counts{IPv6: 2}) {
		t.Errorf("an unknown flow of the path's form: %+v", got)
	}
}
