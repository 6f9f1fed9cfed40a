package path

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// fakeDNS answers the first query it gets on the loopback address of p
// with one record of the path's type, and reports the time every datagram
// arrived (the first and any later one).
func fakeDNS(t *testing.T, p Path) (*Resolver, <-chan time.Time) {
	t.Helper()
	pc, err := net.ListenUDP(p.Network("udp"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.Loopback(), 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	arrived := make(chan time.Time, 4)
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
		h := dns.RR_Header{Name: q.Question[0].Name, Rrtype: q.Question[0].Qtype, Class: dns.ClassINET, Ttl: 1}
		if p.IsIPv6() {
			r.Answer = append(r.Answer, &dns.AAAA{Hdr: h, AAAA: net.ParseIP("2001:db8::7")})
		} else {
			r.Answer = append(r.Answer, &dns.A{Hdr: h, A: net.IPv4(192, 0, 2, 7)})
		}
		out, _ := r.Pack()
		pc.WriteToUDP(out, from)
		for { // anything later is reported too
			if _, _, err := pc.ReadFromUDP(b); err != nil {
				return
			}
			arrived <- time.Now()
		}
	}()
	return &Resolver{Servers: []netip.AddrPort{netip.MustParseAddrPort(pc.LocalAddr().String())}}, arrived
}

// answer is what fakeDNS answers for path p.
func answer(p Path) netip.Addr {
	if p.IsIPv6() {
		return netip.MustParseAddr("2001:db8::7")
	}
	return netip.MustParseAddr("192.0.2.7")
}

// TestLookupFromStartsBeforeTheQueryLeaves: start is called once, after the
// query is built and before it is sent (the server's arrival time is
// later), on each family, and the answer's receive stamp comes back; a
// literal has no lookup and calls no start.
func TestLookupFromStartsBeforeTheQueryLeaves(t *testing.T) {
	for _, p := range []Path{IPv4, IPv6} {
		r, arrived := fakeDNS(t, p)
		var starts []time.Time
		hook := &LookupHook{Start: func() { starts = append(starts, time.Now()) }}
		a, err := r.LookupFrom(context.Background(), "www.v6lab.test", p, hook)
		returned := time.Now()
		if err != nil || a != answer(p) {
			t.Fatalf("%s: %v %v", p, a, err)
		}
		if len(starts) != 1 {
			t.Fatalf("%s: start called %d times", p, len(starts))
		}
		if ap, err := netip.ParseAddrPort(hook.Local); err != nil || ap.Addr() != p.Loopback() || ap.Port() == 0 {
			t.Errorf("%s: the query's address %q", p, hook.Local)
		}
		at := <-arrived
		if at.Before(starts[0]) {
			t.Errorf("%s: the query arrived %v before start", p, starts[0].Sub(at))
		}
		// The kernel's transmit stamp: after the start, before the server read it.
		if hook.Sent.IsZero() || hook.Sent.Before(starts[0]) || hook.Sent.After(at) {
			t.Errorf("%s: stamp %v is not between the start %v and the server's read %v", p, hook.Sent, starts[0], at)
		}
		// The answer's receive stamp: after the server read the query,
		// before the lookup returned.
		if hook.Answered.IsZero() || hook.Answered.Before(at) || hook.Answered.After(returned) {
			t.Errorf("%s: answer's stamp %v is not between the server's read %v and the return %v", p, hook.Answered, at, returned)
		}
		called := false
		if _, err := r.LookupFrom(context.Background(), p.Loopback().String(), p, &LookupHook{Start: func() { called = true }}); err != nil || called {
			t.Errorf("%s: a literal: %v, start called %v", p, err, called)
		}
		r.Warm(p) // sends nothing toward the server
		select {
		case <-arrived:
			t.Errorf("%s: Warm sent a packet to the server", p)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// answerOnce reads one query on pc and sends an empty reply to it with
// each of the IDs the query's plus offset (1: a stray reply, 0: its own).
func answerOnce(pc *net.UDPConn, offsets ...uint16) {
	b := make([]byte, 512)
	n, from, err := pc.ReadFromUDP(b)
	if err != nil {
		return
	}
	q := new(dns.Msg)
	q.Unpack(b[:n])
	r := new(dns.Msg)
	r.SetReply(q)
	for _, off := range offsets {
		r.Id = q.Id + off
		out, _ := r.Pack()
		pc.WriteToUDP(out, from)
	}
}

// TestQueryOnRawSocket: the query's own socket reports a refused port at
// once, ignores a reply with another ID, refuses a server of the other
// family by name, and ends with its context.
func TestQueryOnRawSocket(t *testing.T) {
	m := new(dns.Msg)
	m.SetQuestion("www.v6lab.test.", dns.TypeA)
	wire, _ := m.Pack()
	ctx := context.Background()

	dead, _ := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	deadAddr := netip.MustParseAddrPort(dead.LocalAddr().String())
	dead.Close()
	start := time.Now()
	if _, err := exchangeUDP(ctx, m.Id, wire, IPv4, deadAddr, netip.Addr{}, Stub{Timeout: time.Second}, &LookupHook{}); !errors.Is(err, syscall.ECONNREFUSED) || time.Since(start) > 500*time.Millisecond {
		t.Errorf("closed port: %v after %v", err, time.Since(start))
	}

	if _, err := exchangeUDP(ctx, m.Id, wire, IPv6, deadAddr, netip.Addr{}, Stub{Timeout: time.Second}, &LookupHook{}); !errors.Is(err, ErrFamily) {
		t.Errorf("an IPv4 server over ipv6: %v", err)
	}

	// A server that first answers with a stray ID, then properly.
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go answerOnce(pc, 1, 0)
	server := netip.MustParseAddrPort(pc.LocalAddr().String())
	hook := &LookupHook{}
	in, err := exchangeUDP(ctx, m.Id, wire, IPv4, server, netip.Addr{}, Stub{Timeout: time.Second}, hook)
	if err != nil || in.Id != m.Id || hook.Sent.IsZero() {
		t.Fatalf("stray then right: %v %v, stamp %v", in, err, hook.Sent)
	}

	// Nobody answers now: the context ends the wait (its deadline is the
	// socket's, so either may be reported first).
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := exchangeUDP(short, m.Id, wire, IPv4, server, netip.Addr{}, Stub{Timeout: 5 * time.Second}, &LookupHook{}); !(errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)) || time.Since(start) > time.Second {
		t.Errorf("silent server: %v after %v", err, time.Since(start))
	}
}

// linkLocal is a link-local IPv6 address of an interface that is up, with
// its zone (the test skips without one).
func linkLocal(t *testing.T) netip.Addr {
	t.Helper()
	ifs, _ := net.Interfaces()
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp == 0 || ifi.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is6() && p.Addr().IsLinkLocalUnicast() {
				return p.Addr().WithZone(ifi.Name)
			}
		}
	}
	t.Skip("no interface with a link-local IPv6 address")
	return netip.Addr{}
}

// TestQueryToALinkLocalServer: a DNS server at a link-local address is
// asked on the interface its zone names (without the zone the kernel
// refuses to send).
func TestQueryToALinkLocalServer(t *testing.T) {
	ll := linkLocal(t)
	pc, err := net.ListenUDP("udp6", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ll, 0)))
	if err != nil {
		t.Skipf("listen on %s: %v", ll, err)
	}
	defer pc.Close()
	go answerOnce(pc, 0)
	m := new(dns.Msg)
	m.SetQuestion("www.v6lab.test.", dns.TypeAAAA)
	wire, _ := m.Pack()
	server := netip.AddrPortFrom(ll, uint16(pc.LocalAddr().(*net.UDPAddr).Port))
	if in, err := exchangeUDP(context.Background(), m.Id, wire, IPv6, server, netip.Addr{}, Stub{Timeout: time.Second}, &LookupHook{}); err != nil || in.Id != m.Id {
		t.Fatalf("%s: %v, %v", server, in, err)
	}
	unknown := netip.AddrPortFrom(ll.WithZone("nosuch0"), server.Port())
	if _, err := exchangeUDP(context.Background(), m.Id, wire, IPv6, unknown, netip.Addr{}, Stub{Timeout: time.Second}, &LookupHook{}); err == nil || !strings.Contains(err.Error(), `zone "nosuch0"`) {
		t.Errorf("an unknown zone: %v", err)
	}
}

// A failed lookup of a name /etc/hosts holds says so, and why v6lab did not
// take it from there; other names' errors are as they were.
func TestFailedLookupOfAHostsFileNameSaysSo(t *testing.T) {
	hosts := parseHosts(strings.NewReader("# comment\n127.0.0.1 localhost vm # trailing\n::1 ip6-localhost\nbad-line\nnot-an-addr name\n"))
	if len(hosts) != 3 || hosts["localhost"][0] != netip.MustParseAddr("127.0.0.1") || hosts["ip6-localhost"][0] != netip.MustParseAddr("::1") {
		t.Fatalf("parsed %v", hosts)
	}
	defer func(f func() map[string][]netip.Addr) { hostsFile = f }(hostsFile)
	hostsFile = func() map[string][]netip.Addr { return hosts }
	r := &Resolver{Servers: []netip.AddrPort{netip.MustParseAddrPort("192.0.2.53:53")}}
	const hint = "is in /etc/hosts as [127.0.0.1], which v6lab does not read"
	for _, c := range []struct {
		host  string
		rcode int
		hint  bool
	}{
		{"localhost", dns.RcodeNameError, true},
		{"VM.", dns.RcodeSuccess, true}, // no record: case and the final dot do not matter
		{"www.example.test", dns.RcodeNameError, false},
	} {
		q, _, err := r.Prepare(c.host, IPv4)
		if err != nil {
			t.Fatal(err)
		}
		in := new(dns.Msg)
		in.SetRcode(q.msg, c.rcode)
		_, err = q.addr(in)
		if err == nil || strings.Contains(err.Error(), hint) != c.hint {
			t.Errorf("%s, rcode %d: %v (hint wanted: %v)", c.host, c.rcode, err, c.hint)
		}
		if err := q.Wrap(errors.New("timeout")); strings.Contains(err.Error(), hint) != c.hint {
			t.Errorf("%s timed out: %v", c.host, err)
		}
	}
	// No DNS server of the family: the same hint.
	if _, _, err := r.Prepare("localhost", IPv6); err == nil || !strings.Contains(err.Error(), "no IPv6 DNS server") || !strings.Contains(err.Error(), hint) {
		t.Errorf("no IPv6 server: %v", err)
	}
}
