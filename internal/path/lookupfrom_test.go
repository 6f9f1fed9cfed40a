package path

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestLookupFromStartsBeforeTheQueryLeaves: start is called once, after the
// query is built and before it is sent (the server's arrival time is
// later); a literal has no lookup and calls no start.
func TestLookupFromStartsBeforeTheQueryLeaves(t *testing.T) {
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	arrived := make(chan time.Time, 4)
	go func() {
		b := make([]byte, 512)
		n, from, err := pc.ReadFromUDP(b)
		if err != nil {
			return
		}
		arrived <- time.Now()
		defer func() { // anything later is reported too
			for {
				if _, _, err := pc.ReadFromUDP(b); err != nil {
					return
				}
				arrived <- time.Now()
			}
		}()
		q := new(dns.Msg)
		q.Unpack(b[:n])
		r := new(dns.Msg)
		r.SetReply(q)
		r.Answer = append(r.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1}, A: net.IPv4(192, 0, 2, 7)})
		out, _ := r.Pack()
		pc.WriteToUDP(out, from)
	}()
	r := &Resolver{Servers: []netip.AddrPort{netip.MustParseAddrPort(pc.LocalAddr().String())}}
	var starts []time.Time
	hook := &LookupHook{Start: func() { starts = append(starts, time.Now()) }}
	a, err := r.LookupFrom(context.Background(), "www.v6lab.test", IPv4, hook)
	if err != nil || a != netip.MustParseAddr("192.0.2.7") {
		t.Fatalf("%v %v", a, err)
	}
	if len(starts) != 1 {
		t.Fatalf("start called %d times", len(starts))
	}
	if ap, err := netip.ParseAddrPort(hook.Local); err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		t.Errorf("the query's address %q", hook.Local)
	}
	if at := <-arrived; at.Before(starts[0]) {
		t.Errorf("the query arrived %v before start", starts[0].Sub(at))
	}
	called := false
	if _, err := r.LookupFrom(context.Background(), "192.0.2.9", IPv4, &LookupHook{Start: func() { called = true }}); err != nil || called {
		t.Errorf("a literal: %v, start called %v", err, called)
	}
	r.Warm(IPv4) // sends nothing toward the server
	select {
	case <-arrived:
		t.Error("Warm sent a packet to the server")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestTheKernelStampsTheQuery: the query's transmit stamp is the kernel's,
// after the start and before the server read it.
func TestTheKernelStampsTheQuery(t *testing.T) {
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	arrived := make(chan time.Time, 1)
	go func() {
		b := make([]byte, 512)
		n, from, err := pc.ReadFromUDP(b)
		if err != nil {
			return
		}
		arrived <- time.Now()
		q := new(dns.Msg)
		q.Unpack(b[:n])
		r := new(dns.Msg)
		r.SetReply(q)
		r.Answer = append(r.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 1}, A: net.IPv4(192, 0, 2, 7)})
		out, _ := r.Pack()
		pc.WriteToUDP(out, from)
	}()
	r := &Resolver{Servers: []netip.AddrPort{netip.MustParseAddrPort(pc.LocalAddr().String())}}
	var start time.Time
	hook := &LookupHook{Start: func() { start = time.Now() }}
	if _, err := r.LookupFrom(context.Background(), "www.v6lab.test", IPv4, hook); err != nil {
		t.Fatal(err)
	}
	at := <-arrived
	if hook.Sent.IsZero() {
		t.Fatal("no transmit stamp from the kernel")
	}
	if hook.Sent.Before(start) || hook.Sent.After(at) {
		t.Errorf("stamp %v is not between the start %v and the server's read %v", hook.Sent, start, at)
	}
}
