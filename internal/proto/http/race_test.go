package http

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"v6lab/internal/gen/load"
	"v6lab/internal/sock/path"
)

// truncatingDNS answers www.test's A with 127.0.0.1 and its AAAA with ::1,
// except that the AAAA answer over UDP is truncated: only a client that
// asks again over TCP learns the IPv6 address.
func truncatingDNS(t *testing.T) netip.AddrPort {
	t.Helper()
	h := func(udp bool) mdns.HandlerFunc {
		return func(w mdns.ResponseWriter, q *mdns.Msg) {
			m := new(mdns.Msg)
			m.SetReply(q)
			hdr := mdns.RR_Header{Name: q.Question[0].Name, Rrtype: q.Question[0].Qtype, Class: mdns.ClassINET, Ttl: 60}
			switch q.Question[0].Qtype {
			case mdns.TypeA:
				m.Answer = append(m.Answer, &mdns.A{Hdr: hdr, A: net.IPv4(127, 0, 0, 1)})
			case mdns.TypeAAAA:
				if udp {
					m.Truncated = true
				} else {
					m.Answer = append(m.Answer, &mdns.AAAA{Hdr: hdr, AAAA: net.IPv6loopback})
				}
			}
			w.WriteMsg(m)
		}
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", pc.LocalAddr().String())
	if err != nil {
		pc.Close()
		t.Skipf("the DNS port over TCP: %v", err)
	}
	u := &mdns.Server{PacketConn: pc, Handler: h(true)}
	s := &mdns.Server{Listener: ln, Handler: h(false)}
	go u.ActivateAndServe()
	go s.ActivateAndServe()
	t.Cleanup(func() { u.Shutdown(); s.Shutdown() })
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// TestDualAsksATruncatedAnswerAgain: the dual path's AAAA answer comes
// truncated over UDP; the race asks again over TCP while it waits (the A
// answer's 50 ms Resolution Delay) and connects over IPv6, the only
// family the server listens on, on either engine; the sample counts three
// queries (dns_queries: AAAA and A over UDP, AAAA again over TCP).
func TestDualAsksATruncatedAnswerAgain(t *testing.T) {
	srv, err := Listen(context.Background(), ServerConfig{}, []netip.Addr{lo6}, 0)
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	res := &path.Resolver{Servers: []netip.AddrPort{truncatingDNS(t)}}
	u, err := ParseURL(fmt.Sprintf("http://www.test:%d/", srv.Port))
	if err != nil {
		t.Fatal(err)
	}
	for _, engine := range []Engine{EngineEvloop, EngineGoDial} {
		s := do(&Client{URL: u, Path: path.Dual, Resolver: res, Engine: engine}, 5*time.Second)
		if s.Err != "" || s.Metrics["ipv6_won"] != 1 || s.Metrics["he_attempts"] != 1 || s.Metrics[load.MetricQueries] != 3 {
			t.Errorf("%s: %q, metrics %v", engine, s.Err, s.Metrics)
		}
		if ms := s.Metrics["he_connect_ms"]; ms <= 0 || ms >= 50 {
			t.Errorf("%s: connected at %v ms, want within the Resolution Delay", engine, ms)
		}
	}
}
