package path

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// truncating is a DNS server on IPv4's loopback whose every UDP answer is
// truncated; over TCP (when tcp is set) it answers after delay. It counts
// the UDP queries.
func truncating(t *testing.T, tcp bool, delay time.Duration) (netip.AddrPort, *atomic.Int64) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var udp atomic.Int64
	answer := func(overUDP bool) dns.HandlerFunc {
		return func(w dns.ResponseWriter, q *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(q)
			if overUDP {
				udp.Add(1)
				m.Truncated = true
			} else {
				time.Sleep(delay)
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1}, A: net.IPv4(192, 0, 2, 9)})
			}
			w.WriteMsg(m)
		}
	}
	u := &dns.Server{PacketConn: pc, Handler: answer(true)}
	go u.ActivateAndServe()
	t.Cleanup(func() { u.Shutdown() })
	if tcp {
		ln, err := net.Listen("tcp4", pc.LocalAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		s := &dns.Server{Listener: ln, Handler: answer(false)}
		go s.ActivateAndServe()
		t.Cleanup(func() { s.Shutdown() })
	}
	return netip.MustParseAddrPort(pc.LocalAddr().String()), &udp
}

// TestTruncatedThenTCP: after a truncated answer the question goes over
// TCP once, waiting the rest of the lookup's time (an answer later than
// the stub's UDP wait is taken), and the hook counts it (Queries: 2). A
// TCP retry that fails fails the lookup, as glibc's with one server does:
// the error says the UDP answer was truncated and TCP asked, and no UDP
// query goes again.
func TestTruncatedThenTCP(t *testing.T) {
	stub := Stub{Timeout: 50 * time.Millisecond, Attempts: 2}
	server, udp := truncating(t, true, 200*time.Millisecond)
	r := &Resolver{Servers: []netip.AddrPort{server}, Stub: stub}
	hook := &LookupHook{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	a, err := r.LookupFrom(ctx, "www.v6lab.test", IPv4, hook)
	if err != nil || a != netip.MustParseAddr("192.0.2.9") || !hook.TCP || hook.Queries() != 2 || udp.Load() != 1 {
		t.Fatalf("slow TCP answer: %v %v; tcp %v, queries %d, UDP %d", a, err, hook.TCP, hook.Queries(), udp.Load())
	}

	server, udp = truncating(t, false, 0) // nothing listens over TCP
	r = &Resolver{Servers: []netip.AddrPort{server}, Stub: stub}
	hook = &LookupHook{}
	_, err = r.LookupFrom(ctx, "www.v6lab.test", IPv4, hook)
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "the answer over UDP was truncated, and asked again over TCP") {
		t.Errorf("TCP refused: %v", err)
	}
	time.Sleep(2 * stub.Timeout) // a resend over UDP, if one were due, would have gone
	if udp.Load() != 1 || hook.Queries() != 2 {
		t.Errorf("TCP refused: UDP got %d queries, the hook says %d; want 1 and 2 (no going back to UDP)", udp.Load(), hook.Queries())
	}
}
