package lab

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"v6lab/internal/lab/bpf"
	"v6lab/internal/sock/path"
	"v6lab/internal/wire/capture"
)

func requireBPF(t *testing.T) {
	t.Helper()
	requireRoot(t)
	if err := bpf.Check(); err != nil {
		t.Skipf("this kernel or process cannot load tc BPF programs: %v", err)
	}
}

func bpfTunnels(l *Lab) []*bpf.Tunnel {
	var out []*bpf.Tunnel
	for _, o := range l.bpfObjs {
		if t, ok := o.(*bpf.Tunnel); ok {
			out = append(out, t)
		}
	}
	return out
}

// TestBPFTunnelCarriesEveryPath: with the tunnel in tc BPF (attached by
// TCX, and by clsact as on kernels before 6.6), TCP connects over every
// path, 6in4 crosses r1-r2 as protocol 41 only (the capture on r1's link
// sees no bare IPv6 of the tunnel's prefixes), both ends count it, lab
// status shows it, and nothing of it outlives the lab.
func TestBPFTunnelCarriesEveryPath(t *testing.T) {
	requireBPF(t)
	for _, hook := range []string{"tcx", "clsact"} {
		t.Run(hook, func(t *testing.T) {
			l := up(t, Config{Name: testName(t) + "b" + hook[:1], Tunnel: TunnelBPF, BPFHook: hook})
			if l.TunnelImpl != TunnelBPF || l.TunnelHook != hook {
				t.Fatalf("tunnel %s (%s), want bpf (%s)", l.TunnelImpl, l.TunnelHook, hook)
			}
			var capt *capture.Capture
			if err := Do(NS(l.Name, R1), func() error {
				var err error
				capt, err = capture.Open(l.Addr.WireIf, capture.Filter{})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer capt.Close()
			for _, p := range l.Addr.Paths() {
				c := struct {
					p        path.Path
					dst, src netip.Addr
				}{p, l.Addr.Server(p), l.Addr.Client(p)}
				port := echoServer(t, l, serverBind(l, c.p))
				time.Sleep(50 * time.Millisecond) // the previous path's last packets
				capt.Reset(capture.Filter{Port: uint16(port), Nat64: Nat64Wire})
				seen := dialFromClient(t, l, c.p, netip.AddrPortFrom(c.dst, uint16(port)))
				if ap, err := netip.ParseAddrPort(seen); err != nil || ap.Addr() != c.src {
					t.Errorf("%s: server saw the client as %q, want %s", c.p, seen, c.src)
				}
				time.Sleep(100 * time.Millisecond)
				if err := capt.Counts().Proves(c.p); err != nil {
					t.Errorf("%s: %v", c.p, err)
				}
			}
			ts := bpfTunnels(l)
			if len(ts) != 2 {
				t.Fatalf("%d tunnel ends", len(ts))
			}
			for i, tn := range ts {
				c, err := tn.Counters()
				if err != nil {
					t.Fatal(err)
				}
				if c[bpf.Encapsulated] == 0 || c[bpf.Decapsulated] == 0 || c[bpf.EncapFailed]+c[bpf.DecapFailed]+c[bpf.DroppedBad]+c[bpf.DroppedSpoofed] != 0 {
					t.Errorf("end %d counters %v", i, c)
				}
			}
			st, err := Inspect(l.Name)
			if err != nil {
				t.Fatal(err)
			}
			if st.Tunnel != TunnelBPF {
				t.Errorf("status tunnel %q", st.Tunnel)
			}
			var progs []string
			for _, h := range st.Hosts {
				for _, p := range h.BPF {
					progs = append(progs, h.Role+" "+p.Describe())
				}
			}
			// The tunnel's four ends, the translator's two directions, the
			// CLAT's two, and the B4's and the AFTR's two each.
			if len(progs) != 12 || !strings.Contains(strings.Join(progs, "\n"), "r1 eth-r2 egress ("+hook+"): 6in4 encap: ") ||
				!strings.Contains(strings.Join(progs, "\n"), "r1 eth-client ingress ("+hook+"): nat64 (6 to 4): ") {
				t.Errorf("status programs:\n%s", strings.Join(progs, "\n"))
			}
			var ours []ebpf.ProgramID
			for _, tn := range ts {
				ours = append(ours, tn.ProgramIDs()...)
			}
			for _, o := range l.bpfObjs {
				if n, ok := o.(*bpf.Nat64); ok {
					ours = append(ours, n.ProgramIDs()...)
				}
				if w, ok := o.(*bpf.SoftwireEnd); ok {
					ours = append(ours, w.ProgramIDs()...)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			// Programs are freed after an RCU grace period: wait a little.
			// Program ids are allocated cyclically, never reused at once.
			for _, id := range ours {
				deadline := time.Now().Add(3 * time.Second)
				for {
					p, err := ebpf.NewProgramFromID(id)
					if err != nil {
						break
					}
					p.Close()
					if time.Now().After(deadline) {
						t.Errorf("program %d outlived the lab", id)
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
}

// TestBPFTunnelPacketTooBig: an IPv6 packet bigger than the tunnel MTU
// gets an ICMPv6 Packet Too Big from r1 (as from a sit device), the
// sender's path MTU drops to the tunnel's, and a packet of exactly the
// MTU crosses.
func TestBPFTunnelPacketTooBig(t *testing.T) {
	requireBPF(t)
	l := up(t, Config{Name: testName(t) + "m", Tunnel: TunnelBPF, TunnelMTU: 1400})
	srv := udpOnServer(t, l)
	var got atomic.Int64
	go func() {
		buf := make([]byte, 9000)
		for {
			n, _, err := srv.ReadFrom(buf)
			if err != nil {
				return
			}
			got.Store(int64(n))
		}
	}()
	dst := srv.LocalAddr().(*net.UDPAddr)
	var c *net.UDPConn
	if err := Do(NS(l.Name, Client), func() error {
		var err error
		c, err = net.DialUDP("udp6", &net.UDPAddr{IP: l.Addr.ClientTun6.AsSlice()}, dst)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, _ := c.SyscallConn()
	raw.Control(func(fd uintptr) {
		unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO)
	})
	// A new lab drops the first packets while neighbour discovery runs.
	settle(t, func() { c.Write([]byte{1}) }, func() bool { return got.Load() == 1 })
	big := make([]byte, 1400-40-8+1) // one byte over the tunnel MTU
	c.Write(big)
	mtu := 0
	for i := 0; i < 50 && mtu != 1400; i++ {
		time.Sleep(20 * time.Millisecond)
		raw.Control(func(fd uintptr) { mtu, _ = unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU) })
	}
	if mtu != 1400 {
		t.Fatalf("path MTU %d after an oversized packet, want the tunnel's 1400 (no Packet Too Big?)", mtu)
	}
	if _, err := c.Write(big); !errors.Is(err, unix.EMSGSIZE) {
		t.Errorf("a second oversized datagram: %v, want EMSGSIZE", err)
	}
	fit := big[:len(big)-1]
	for i := 0; i < 50 && got.Load() != int64(len(fit)); i++ {
		c.Write(fit)
		time.Sleep(20 * time.Millisecond)
	}
	if got.Load() != int64(len(fit)) {
		t.Errorf("a datagram of exactly the tunnel MTU did not arrive (last %d bytes)", got.Load())
	}
}

// TestBPFTunnelUDPAndPingBothWays: UDP and ICMPv6 echo cross the tunnel
// from the client and back.
func TestBPFTunnelUDPAndPingBothWays(t *testing.T) {
	requireBPF(t)
	l := up(t, Config{Name: testName(t) + "e", Tunnel: TunnelBPF})
	// UDP echo in the server namespace.
	srv := udpOnServer(t, l)
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFrom(buf)
			if err != nil {
				return
			}
			srv.WriteTo(buf[:n], from)
		}
	}()
	var c net.Conn
	if err := Do(NS(l.Name, Client), func() error {
		var err error
		c, err = net.DialUDP("udp6", &net.UDPAddr{IP: l.Addr.ClientTun6.AsSlice()}, srv.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	settle(t, func() { c.Write([]byte{0xff, 'x'}) }, func() bool {
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		n, _ := c.Read(make([]byte, 16))
		return n == 2
	})
	for i := range 20 {
		msg := []byte{byte(i), 'x'}
		c.Write(msg)
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 16)
		for { // replies to settle's datagrams may still come in
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("udp echo %d: %v", i, err)
			}
			if n == 2 && buf[0] == byte(i) {
				break
			}
		}
	}
	// ICMPv6 echo from the client to the server's tunnel address.
	var pc *icmp.PacketConn
	if err := Do(NS(l.Name, Client), func() error {
		var err error
		pc, err = icmp.ListenPacket("ip6:ipv6-icmp", l.Addr.ClientTun6.String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	msg := icmp.Message{Type: ipv6.ICMPTypeEchoRequest, Body: &icmp.Echo{ID: 46, Seq: 1, Data: []byte("v6lab")}}
	b, _ := msg.Marshal(icmp.IPv6PseudoHeader(l.Addr.ClientTun6.AsSlice(), l.Addr.ServerTun6.AsSlice()))
	if _, err := pc.WriteTo(b, &net.IPAddr{IP: l.Addr.ServerTun6.AsSlice()}); err != nil {
		t.Fatal(err)
	}
	pc.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no echo reply over the tunnel: %v", err)
		}
		m, err := icmp.ParseMessage(58, buf[:n])
		if err == nil && m.Type == ipv6.ICMPTypeEchoReply && from.(*net.IPAddr).IP.Equal(l.Addr.ServerTun6.AsSlice()) {
			break
		}
	}
}

// TestBPFTunnelDropsASpoofedSource: protocol 41 to r2 from an address
// other than r1's is dropped and counted (RFC 4213 §3.6).
func TestBPFTunnelDropsASpoofedSource(t *testing.T) {
	requireBPF(t)
	l := up(t, Config{Name: testName(t) + "s", Tunnel: TunnelBPF})
	// A raw IPv4 socket on r1 writes its own header: source 198.51.100.9.
	err := Do(NS(l.Name, R1), func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		inner := make([]byte, 48)
		inner[0] = 0x60
		inner[5] = 8 // payload length
		inner[6] = 17
		inner[7] = 64
		copy(inner[8:24], l.Addr.ClientTun6.AsSlice())
		copy(inner[24:40], l.Addr.ServerTun6.AsSlice())
		pkt := make([]byte, 20+len(inner))
		pkt[0], pkt[8], pkt[9] = 0x45, 64, 41
		pkt[2], pkt[3] = byte(len(pkt)>>8), byte(len(pkt))
		copy(pkt[12:16], netip.MustParseAddr("198.51.100.9").AsSlice())
		dst := l.Addr.TunnelV4[1].As4()
		copy(pkt[16:20], dst[:])
		copy(pkt[20:], inner)
		return unix.Sendto(fd, pkt, 0, &unix.SockaddrInet4{Addr: dst})
	})
	if err != nil {
		t.Fatal(err)
	}
	r2 := bpfTunnels(l)[1]
	var c []uint64
	for i := 0; i < 50; i++ {
		if c, _ = r2.Counters(); c[bpf.DroppedSpoofed] > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if c[bpf.DroppedSpoofed] != 1 || c[bpf.Decapsulated] != 0 {
		t.Errorf("r2 counters %v: want one spoofed packet dropped, none handed on", c)
	}
}

// TestLossInTheKernel: --loss without netem drops its share of a link's
// packets in a tc BPF program (10% of 10,000 datagrams, ± 2 points).
func TestLossInTheKernel(t *testing.T) {
	requireBPF(t)
	l := up(t, Config{Name: testName(t) + "l", Links: map[string]Link{"r1-r2": {Shaping: Shaping{Loss: 10}}}})
	if l.LossImpl == "" {
		t.Fatal("no loss implementation recorded")
	}
	var srv *net.UDPConn
	if err := Do(NS(l.Name, Server), func() error {
		var err error
		srv, err = net.ListenUDP("udp4", &net.UDPAddr{IP: l.Addr.ServerV4.AsSlice()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.SetReadBuffer(8 << 20)
	var got atomic.Int64
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := srv.Read(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	var c *net.UDPConn
	if err := Do(NS(l.Name, Client), func() error {
		var err error
		c, err = net.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	settle(t, func() { c.Write([]byte{0}) }, func() bool { return got.Load() > 0 })
	time.Sleep(50 * time.Millisecond)
	got.Store(0)
	const n = 10000
	for i := range n {
		c.Write([]byte{byte(i)})
		if i%100 == 99 {
			time.Sleep(time.Millisecond) // no queue of ours overflows
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for ctx.Err() == nil && got.Load() < n*85/100 {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	lost := float64(n-got.Load()) / n
	if lost < 0.08 || lost > 0.12 {
		t.Errorf("%d of %d datagrams arrived: %.1f%% lost, want 10%% ± 2 points", got.Load(), n, lost*100)
	}
	t.Logf("loss by %s: %.2f%% of %d datagrams", l.LossImpl, lost*100, n)
	// lab status says where the loss is: on r1-r2 alone (trial10 T11).
	st, err := Inspect(l.Name)
	if err != nil {
		t.Fatal(err)
	}
	if sum := st.Summary(); !strings.Contains(sum, "; loss 10% of every packet on r1-r2;") {
		t.Errorf("lab status configured %q: does not say the loss is on r1-r2", sum)
	}
	// What the run records read: the lab's loss in words and its drops
	// (each settle packet too), a cell group's loss on the same link not
	// counted as the lab's.
	cell, err := LoseOnLink(l.Name, 50)
	if err != nil {
		t.Fatal(err)
	}
	defer cell.Close()
	dropped, cond := WideLoss(l.Name, cell)
	if cond != "loss 10%" {
		t.Errorf("WideLoss condition %q, want \"loss 10%%\" (the cell's 50%% not the lab's)", cond)
	}
	if lostN := uint64(n - got.Load()); dropped < lostN || dropped > lostN+500 {
		t.Errorf("WideLoss dropped %d, want the %d datagrams that never arrived (and at most the settle packets more)", dropped, lostN)
	}
	if _, all := WideLoss(l.Name, nil); all != "loss 10%, 50%" {
		t.Errorf("WideLoss without the cell's programs excluded: %q, want both shares", all)
	}
	// Per link: r1-r2's alone, not every link's (trial10 T11).
	losses := LabLosses(l.Name, cell)
	if len(losses) != 1 || losses[0].Link != "r1-r2" || losses[0].Percent != 10 || losses[0].Dropped != dropped {
		t.Errorf("LabLosses %+v, want r1-r2's 10%% alone, %d dropped", losses, dropped)
	}
	if OnEveryLink(losses) {
		t.Error("OnEveryLink: r1-r2's loss taken for every link's")
	}
}

// settle sends until arrived says the path works: a new lab drops the
// first packets while neighbour discovery runs.
func settle(t *testing.T, send func(), arrived func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		send()
		time.Sleep(20 * time.Millisecond)
		if arrived() {
			return
		}
	}
	t.Fatal("the path never carried a packet")
}

// udpOnServer listens for UDP on the server's 6in4 address, in its
// namespace, until the test ends.
func udpOnServer(t *testing.T, l *Lab) net.PacketConn {
	t.Helper()
	var srv net.PacketConn
	if err := Do(NS(l.Name, Server), func() error {
		var err error
		srv, err = net.ListenPacket("udp6", netip.AddrPortFrom(l.Addr.ServerTun6, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}
