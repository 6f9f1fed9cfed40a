package path

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestDialStampedPinsAndStamps: a QUIC client's socket is of the path's
// family and connected to the server, refuses an address of the other
// family, and keeps the kernel's stamps of its first datagram out and of
// the datagrams it reads, and its bytes each way.
func TestDialStampedPinsAndStamps(t *testing.T) {
	for _, p := range []Path{IPv4, IPv6} {
		srv, err := net.ListenUDP(p.Network("udp"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.Loopback(), 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		go func() {
			b := make([]byte, 2048)
			for {
				n, from, err := srv.ReadFrom(b)
				if err != nil {
					return
				}
				srv.WriteTo(b[:n], from) // echo
			}
		}()
		to := srv.LocalAddr().(*net.UDPAddr).AddrPort()
		other := IPv4
		if p == IPv4 {
			other = IPv6
		}
		if _, err := DialStamped(context.Background(), Dialer{Path: other}, to); err == nil {
			t.Errorf("%s: a socket of %s reached %v", p, other, to)
		}
		if _, err := DialStamped(context.Background(), Dialer{Path: Dual}, to); err == nil {
			t.Errorf("%s: a dual socket", p)
		}
		c, err := DialStamped(context.Background(), Dialer{Path: p}, to)
		if err != nil {
			t.Fatal(err)
		}
		if l := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr(); !p.Accepts(l) || l.IsUnspecified() {
			t.Errorf("%s: local address %v", p, l)
		}
		b := make([]byte, 100)
		for i := range 3 {
			if _, err := c.WriteTo(b[:10+i], nil); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if n, from, err := c.ReadFrom(b); err != nil || n != 10+i || from.(*net.UDPAddr).AddrPort() != to {
				t.Fatalf("%s: read %d from %v: %v", p, n, from, err)
			}
		}
		first, last := c.Received()
		sent := c.FirstSent()
		if first.IsZero() || last.Before(first) || sent.IsZero() || first.Before(sent) {
			t.Errorf("%s: sent %v, received %v to %v", p, sent, first, last)
		}
		if in, out := c.Bytes(); in != 33 || out != 33 {
			t.Errorf("%s: %d bytes in, %d out", p, in, out)
		}
		c.Close()
	}
	// A socket of the process's own keeps UDP_GRO on after the sockets
	// close, so that the next connection does not patch the kernel again.
	if on, err := unix.GetsockoptInt(groFD, unix.SOL_UDP, unix.UDP_GRO); err != nil || on != 1 {
		t.Errorf("no socket holds UDP_GRO on (fd %d): %d, %v", groFD, on, err)
	}
}

// TestStampedReadAllocatesNothing: reading datagrams (recvmmsg, their
// stamps) allocates nothing a read: a QUIC client reads every datagram
// of its connection so, several a request.
func TestStampedReadAllocatesNothing(t *testing.T) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	to := srv.LocalAddr().(*net.UDPAddr).AddrPort()
	c, err := DialStamped(context.Background(), Dialer{Path: IPv4}, to)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	back := net.UDPAddrFromAddrPort(c.LocalAddr().(*net.UDPAddr).AddrPort())
	b := make([]byte, 100)
	read := func() {
		if _, err := srv.WriteToUDP(b[:20], back); err != nil {
			t.Fatal(err)
		}
		if n, _, err := c.ReadFrom(b); err != nil || n != 20 {
			t.Fatalf("read %d: %v", n, err)
		}
	}
	read() // the socket's first read registers it with the poller
	if n := testing.AllocsPerRun(100, read); n != 0 {
		t.Errorf("%.1f allocations a datagram read", n)
	}
	if first, last := c.Received(); first.IsZero() || last.Before(first) {
		t.Errorf("stamps %v to %v", first, last)
	}
}

// TestStampedReadsABatchInOrder: datagrams that wait together are read by
// one recvmmsg (without GRO the first into the reader's buffer) and the
// others through the socket's ring, and handed over whole, in order, each
// with its stamp; a buffer too short for a datagram gets its first bytes.
// The read's buffers go back to the pool once its datagrams are handed
// over, and a read that waits in vain holds none.
func TestStampedReadsABatchInOrder(t *testing.T) {
	for _, gro := range []bool{false, true} {
		srv, c := stampedPair(t, gro)
		back := net.UDPAddrFromAddrPort(c.LocalAddr().(*net.UDPAddr).AddrPort())
		n := rxBatch + 3 // more than one read takes
		for i := range n {
			d := make([]byte, 100+i)
			for j := range d {
				d[j] = byte(i + 1)
			}
			if _, err := srv.WriteToUDP(d, back); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(50 * time.Millisecond) // all wait before the first read
		b := make([]byte, 2048)
		for i := range n {
			for j := range b {
				b[j] = 0xff
			}
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			m, _, err := c.ReadFrom(b)
			if err != nil || m != 100+i || b[0] != byte(i+1) || b[m-1] != byte(i+1) || b[m] != 0xff {
				t.Fatalf("gro %v: datagram %d: read %d bytes (%x...%x): %v", gro, i, m, b[0], b[max(m-1, 0)], err)
			}
		}
		if first, last := c.Received(); first.IsZero() || last.Before(first) {
			t.Errorf("gro %v: stamps %v to %v", gro, first, last)
		}
		if c.rx.buf != nil {
			t.Errorf("gro %v: the socket holds its read's buffers after handing every datagram over", gro)
		}
		if _, err := srv.WriteToUDP(make([]byte, 300), back); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if m, _, err := c.ReadFrom(b[:50]); err != nil || m != 50 {
			t.Errorf("gro %v: a 300-byte datagram into 50 bytes: %d, %v", gro, m, err)
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if m, _, err := c.ReadFrom(b); err == nil || c.rx.buf != nil {
			t.Errorf("gro %v: a read with nothing to read: %d bytes, %v; buffers held: %v", gro, m, err, c.rx.buf != nil)
		}
	}
}

// TestStampedReadsAGSOSendWhole: a server's GSO send (one sendmsg of three
// datagrams, as quic-go's server sends a reply) reaches the socket as one
// message with UDP_GRO, and is handed over as its three datagrams, in
// order, each with the send's stamp; without GRO the kernel splits it.
func TestStampedReadsAGSOSendWhole(t *testing.T) {
	for _, gro := range []bool{false, true} {
		srv, c := stampedPair(t, gro)
		back := net.UDPAddrFromAddrPort(c.LocalAddr().(*net.UDPAddr).AddrPort())
		d := make([]byte, 1200*2+500)
		for i := range d {
			d[i] = byte(i / 1200)
		}
		oob := make([]byte, unix.CmsgSpace(2))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
		h.SetLen(unix.CmsgLen(2))
		*(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = 1200
		if _, _, err := srv.WriteMsgUDP(d, oob, back); err != nil {
			t.Skipf("no GSO send here: %v", err)
		}
		b := make([]byte, 2048)
		for i, want := range []int{1200, 1200, 500} {
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			m, _, err := c.ReadFrom(b)
			if err != nil || m != want || b[0] != byte(i) || b[m-1] != byte(i) {
				t.Fatalf("gro %v: datagram %d: %d bytes (%x...%x), want %d: %v", gro, i, m, b[0], b[max(m-1, 0)], want, err)
			}
			if i == 0 && gro && (c.rx.n != 1 || c.rx.seg[0] != 1200) {
				t.Errorf("gro: the send came as %d messages (datagram size %d), want 1 of 1200", c.rx.n, c.rx.seg[0])
			}
		}
		if first, last := c.Received(); first.IsZero() || !last.Equal(first) {
			t.Errorf("gro %v: stamps %v to %v: want one, the send's", gro, first, last)
		}
	}
}

// stampedPair is a server socket on 127.0.0.1 and a stamped client
// socket connected to it, with or without GRO.
func stampedPair(t *testing.T, gro bool) (*net.UDPConn, *StampedPacketConn) {
	t.Helper()
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := DialStamped(context.Background(), Dialer{Path: IPv4}, srv.LocalAddr().(*net.UDPAddr).AddrPort())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if gro != c.rx.gro {
		if gro {
			t.Skip("UDP_GRO is not offered here")
		}
		_ = c.rc.Control(func(fd uintptr) { _ = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 0) })
		c = newStamped(c.c, c.rc, false)
	}
	return srv, c
}
