package converse

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto/scripted"
	"v6lab/internal/sock/evloop"
	"v6lab/internal/sock/path"
)

// untilEOF is done when the server closes.
type untilEOF struct{ got strings.Builder }

func (u *untilEOF) Feed(b []byte, eof bool) (bool, error) {
	u.got.Write(b)
	return eof, nil
}

// greeter says hello on one connection and closes (its port).
func greeter(t *testing.T) uint16 {
	return uint16(scripted.Serve(t, func(c net.Conn, _ *bufio.Reader) { io.WriteString(c, "hello") }))
}

// nameServer answers A queries for "www.test." with 127.0.0.1 on UDP and
// TCP; over UDP it says truncated when truncate is set, and never
// answers "silent.test.".
func nameServer(t *testing.T, truncate bool) netip.AddrPort {
	t.Helper()
	h := func(udp bool) dns.HandlerFunc {
		return func(w dns.ResponseWriter, q *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(q)
			switch name := q.Question[0].Name; {
			case name == "silent.test.":
				return
			case udp && truncate:
				m.Truncated = true
			case name == "www.test." && q.Question[0].Qtype == dns.TypeA:
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(127, 0, 0, 1)})
			}
			w.WriteMsg(m)
		}
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	ln, err := net.Listen("tcp4", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	u := &dns.Server{PacketConn: pc, Handler: h(true)}
	s := &dns.Server{Listener: ln, Handler: h(false)}
	go u.ActivateAndServe()
	go s.ActivateAndServe()
	t.Cleanup(func() { u.Shutdown(); s.Shutdown() })
	return loopback(uint16(port))
}

func loopback(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
}

func exchange(t *testing.T, server netip.AddrPort, host string, port uint16, timeout time.Duration) (*load.Trace, *evloop.Exchange, evloop.Result) {
	t.Helper()
	return exchangeWith(t, &path.Resolver{Servers: []netip.AddrPort{server}}, host, port, timeout)
}

// exchangeWith runs Exchange for host's port over IPv4, looked up by res.
func exchangeWith(t *testing.T, res *path.Resolver, host string, port uint16, timeout time.Duration) (*load.Trace, *evloop.Exchange, evloop.Result) {
	t.Helper()
	eng, err := evloop.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	tr := load.Begin("test", path.IPv4)
	x := &evloop.Exchange{Remote: netip.AddrPortFrom(netip.Addr{}, port), Reply: &untilEOF{}}
	r := Exchange(ctx, eng, tr, res, host, path.IPv4, x)
	return tr, x, r
}

// TestLookupOnTheLoop: the name is looked up on the loop and connected to
// with the answer's address; the sample carries the query's address, the
// resolve mark, the wire time from the query and the turn from the answer
// to the connect as a client turn.
func TestLookupOnTheLoop(t *testing.T) {
	port := greeter(t)
	tr, x, r := exchange(t, nameServer(t, false), "www.test", port, 2*time.Second)
	if r.Err != nil {
		t.Fatalf("%s: %v", r.Phase, r.Err)
	}
	if x.Remote != loopback(port) || x.Reply.(*untilEOF).got.String() != "hello" {
		t.Fatalf("connected to %v, got %q", x.Remote, x.Reply.(*untilEOF).got.String())
	}
	tr.Received(r.LastRead, r.LastRx)
	tr.ClientTurns(r.ClientTurns)
	s := tr.Done("ok")
	if a, err := netip.ParseAddrPort(s.DNSLocal); err != nil || !a.Addr().IsLoopback() {
		t.Errorf("dns_local %q", s.DNSLocal)
	}
	if s.ResolveNS <= 0 || s.ResolveNS >= s.TotalNS {
		t.Errorf("resolve %d of total %d", s.ResolveNS, s.TotalNS)
	}
	if s.WireNS <= 0 || s.WireNS > s.TotalNS {
		t.Errorf("wire %d of total %d", s.WireNS, s.TotalNS)
	}
	if s.ClientTurnNS <= 0 || s.ClientTurnNS >= s.WireNS {
		t.Errorf("client turns %d (the answer to the connect), wire %d", s.ClientTurnNS, s.WireNS)
	}
}

// TestLookupFailuresAndFallback: a truncated answer is asked again over
// TCP and the exchange still runs; a name without an address and a
// silent server fail in phase resolve with errors that name the lookup; a
// literal is connected to with no lookup.
func TestLookupFailuresAndFallback(t *testing.T) {
	port := greeter(t)
	tr, x, r := exchange(t, nameServer(t, true), "www.test", port, 2*time.Second)
	if r.Err != nil || x.Remote != loopback(port) || tr.S.ResolveNS <= 0 || tr.S.DNSLocal == "" {
		t.Errorf("after a truncated answer: %s: %v, connected to %v, resolve %d, dns_local %q", r.Phase, r.Err, x.Remote, tr.S.ResolveNS, tr.S.DNSLocal)
	}
	ns := nameServer(t, false)
	_, _, r = exchange(t, ns, "none.test", port, 2*time.Second)
	if r.Phase != "resolve" || !errors.Is(r.Err, path.ErrNoAddress) || !strings.Contains(r.Err.Error(), "none.test") {
		t.Errorf("a name without an address: %s: %v", r.Phase, r.Err)
	}
	_, _, r = exchange(t, ns, "silent.test", port, 100*time.Millisecond)
	if r.Phase != "resolve" || !errors.Is(r.Err, context.DeadlineExceeded) || !strings.Contains(r.Err.Error(), "silent.test A via "+ns.String()) {
		t.Errorf("a silent server: %s: %v", r.Phase, r.Err)
	}
	port = greeter(t)
	tr, x, r = exchange(t, ns, "127.0.0.1", port, 2*time.Second)
	if r.Err != nil || x.Remote != loopback(port) || tr.S.DNSLocal != "" || tr.S.ResolveNS != 0 {
		t.Errorf("a literal: %s: %v, connected to %v, dns_local %q, resolve %d", r.Phase, r.Err, x.Remote, tr.S.DNSLocal, tr.S.ResolveNS)
	}
}
