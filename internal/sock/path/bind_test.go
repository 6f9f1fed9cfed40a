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
