package load

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"v6lab/internal/path"
)

// slowDNS answers every A query with 127.0.0.1 after wait, on loopback.
func slowDNS(t *testing.T, wait time.Duration) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		b := make([]byte, 512)
		for {
			n, from, err := pc.ReadFromUDP(b)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(b[:n]) != nil || len(q.Question) != 1 {
				continue
			}
			r := new(dns.Msg)
			r.SetReply(q)
			r.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(127, 0, 0, 1)}}
			out, _ := r.Pack()
			time.Sleep(wait)
			pc.WriteToUDP(out, from)
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// TestOpenCountsTheLookupTurn: a probe that counts its turns gets the
// lookup's, from the answer's arrival to the SYN (or the connect call),
// which the DNS server's own time is not part of; one that does not
// count them leaves client_turn_ns unset.
func TestOpenCountsTheLookupTurn(t *testing.T) {
	const wait = 20 * time.Millisecond
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	res := &path.Resolver{Servers: []netip.AddrPort{slowDNS(t, wait)}}
	open := func(count bool) *Trace {
		tr := Begin("x", path.IPv4)
		if count {
			tr.CountTurns()
		}
		_, release, failed := tr.Open(context.Background(), res, "www.v6lab.test", port, path.Dialer{Path: path.IPv4})
		if failed != nil {
			t.Fatal(failed.Err)
		}
		release()
		return tr
	}
	if tr := open(false); tr.S.ClientTurnNS != 0 {
		t.Errorf("a probe that does not count its turns got %v", time.Duration(tr.S.ClientTurnNS))
	}
	// The first lookup may find the kernel's receive stamps still off
	// (kstamp.Hold): it then counts no turn.
	for range 3 {
		tr := open(true)
		if tr.S.ClientTurnNS == 0 {
			continue
		}
		if tr.S.ResolveNS < int64(wait) || tr.S.ClientTurnNS >= int64(wait) {
			t.Errorf("lookup %v, turn %v: want the turn after the answer, not the server's %v", time.Duration(tr.S.ResolveNS), time.Duration(tr.S.ClientTurnNS), wait)
		}
		return
	}
	t.Error("no lookup turn counted")
}
