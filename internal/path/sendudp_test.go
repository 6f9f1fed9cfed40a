package path

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// TestSendUDPSendsFirstAndStampsBothWays: the datagram has left when
// SendUDP returns (the server holds it), the socket is pinned, connected
// and read with stamps (the reply's receive stamp, the query's transmit
// stamp), on each family; a server of the other family is refused before
// any socket is made, and a Control hook still applies.
func TestSendUDPSendsFirstAndStampsBothWays(t *testing.T) {
	for _, p := range []Path{IPv4, IPv6} {
		t.Run(string(p), func(t *testing.T) {
			pc, err := net.ListenUDP(p.Network("udp"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.Loopback(), 0)))
			if err != nil {
				t.Skipf("no %s loopback: %v", p, err)
			}
			defer pc.Close()
			server := netip.MustParseAddrPort(pc.LocalAddr().String())
			for _, d := range []Dialer{
				{Path: p},
				{Path: p, Control: func(string, string, syscall.RawConn) error { return nil }},
			} {
				before := time.Now()
				sc, err := d.SendUDP(context.Background(), server, []byte("query"))
				if err != nil {
					t.Fatal(err)
				}
				b := make([]byte, 16)
				_ = pc.SetReadDeadline(time.Now().Add(time.Second))
				n, from, err := pc.ReadFromUDP(b)
				if err != nil || string(b[:n]) != "query" {
					t.Fatalf("the server read %q, %v", b[:n], err)
				}
				if from.AddrPort() != netip.MustParseAddrPort(sc.LocalAddr().String()) {
					t.Errorf("sent from %v, the socket is %v", from, sc.LocalAddr())
				}
				if _, err := pc.WriteToUDP([]byte("reply"), from); err != nil {
					t.Fatal(err)
				}
				_ = sc.SetReadDeadline(time.Now().Add(time.Second))
				if n, err := sc.Read(b); err != nil || string(b[:n]) != "reply" {
					t.Fatalf("read %q, %v", b[:n], err)
				}
				sent := sc.FirstSent()
				// (On loopback a reply may lack its receive stamp; the lab's
				// are checked in the dns package.)
				if sent.IsZero() || sent.Before(before.Add(-time.Second)) || (!sc.LastRx.IsZero() && sc.LastRx.Before(sent)) {
					t.Errorf("stamps: sent %v, reply %v (called at %v)", sent, sc.LastRx, before)
				}
				if err := p.Verify(sc); err != nil {
					t.Error(err)
				}
				sc.Close()
			}
		})
	}
	other := netip.MustParseAddrPort("[::1]:53")
	if _, err := (Dialer{Path: IPv4}).SendUDP(context.Background(), other, []byte("q")); !errors.Is(err, ErrFamily) {
		t.Errorf("an IPv6 server over ipv4: %v", err)
	}
}
