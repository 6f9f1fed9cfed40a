package path

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"syscall"
	"testing"
)

func TestBindSamePortSharesOnePort(t *testing.T) {
	addrs := []netip.Addr{IPv4.Loopback(), IPv6.Loopback()}
	closers, port, err := BindSamePort(addrs, 0, func(a netip.Addr, p int) (io.Closer, int, error) {
		ln, err := Listen(context.Background(), OfAddr(a), netip.AddrPortFrom(a, uint16(p)).String())
		if err != nil {
			return nil, 0, err
		}
		return ln, ln.Addr().(*net.TCPAddr).Port, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for i, c := range closers {
		if got := c.(net.Listener).Addr().(*net.TCPAddr); got.Port != port || !addrs[i].IsLoopback() {
			t.Errorf("listener %d on %v, want port %d", i, got, port)
		}
	}
	// A fixed port already taken is an error, not a silent new port.
	_, _, err = BindSamePort(addrs[:1], port, func(a netip.Addr, p int) (io.Closer, int, error) {
		ln, err := Listen(context.Background(), OfAddr(a), netip.AddrPortFrom(a, uint16(p)).String())
		if err != nil {
			return nil, 0, err
		}
		return ln, p, nil
	})
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("taken port: %v", err)
	}
}

func TestListenBothSamePortPairsTCPAndUDP(t *testing.T) {
	addrs := []netip.Addr{IPv4.Loopback(), IPv6.Loopback()}
	socks, port, err := ListenBothSamePort(context.Background(), addrs, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, b := range socks {
			b.Close()
		}
	}()
	if len(socks) != len(addrs) {
		t.Fatalf("%d pairs for %d addresses", len(socks), len(addrs))
	}
	for i, b := range socks {
		tcp, udp := b.TCP.Addr().(*net.TCPAddr), b.UDP.LocalAddr().(*net.UDPAddr)
		if tcp.Port != port || udp.Port != port || tcp.AddrPort().Addr() != addrs[i] || udp.AddrPort().Addr() != addrs[i] {
			t.Errorf("pair %d: TCP %v, UDP %v; want both on %v port %d", i, tcp, udp, addrs[i], port)
		}
	}
	// A fixed port whose UDP half is taken fails, and leaves its TCP
	// half closed: the port can be listened on again.
	pc, err := ListenPacket(context.Background(), IPv4, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	taken := pc.LocalAddr().(*net.UDPAddr).Port
	if _, _, err := ListenBothSamePort(context.Background(), addrs[:1], taken); !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("UDP port taken: %v", err)
	}
	ln, err := Listen(context.Background(), IPv4, netip.AddrPortFrom(addrs[0], uint16(taken)).String())
	if err != nil {
		t.Fatalf("the failed pair left its TCP listener open: %v", err)
	}
	ln.Close()
}
