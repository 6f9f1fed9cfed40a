// Package dnstest is a DNS server for tests of lookups under loss.
package dnstest

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"
)

// Lossy is a DNS server on 127.0.0.1 over UDP that drops the first drop
// queries (every one when drop is negative) and answers the others' A
// question with addr; it counts the queries. It stops when the test ends.
func Lossy(t testing.TB, drop int64, addr netip.Addr) (netip.AddrPort, *atomic.Int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	s := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		if k := n.Add(1); drop < 0 || k <= drop {
			return
		}
		m := new(dns.Msg)
		m.SetReply(q)
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: addr.AsSlice()})
		w.WriteMsg(m)
	})}
	go s.ActivateAndServe()
	t.Cleanup(func() { s.Shutdown() })
	return netip.MustParseAddrPort(pc.LocalAddr().String()), &n
}
