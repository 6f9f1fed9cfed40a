package path

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// servicesDNS answers HTTPS queries from records (presentation form, by
// query name; a name not there is NXDOMAIN) on 127.0.0.1, and reports
// every name asked.
func servicesDNS(t *testing.T, records map[string][]string) (*Resolver, <-chan string) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan string, 8)
	h := dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		name := q.Question[0].Name
		asked <- name
		m := new(dns.Msg)
		m.SetReply(q)
		rrs, ok := records[name]
		if !ok {
			m.Rcode = dns.RcodeNameError
		}
		for _, r := range rrs {
			rr, err := dns.NewRR(name + " 60 IN HTTPS " + r)
			if err != nil {
				t.Errorf("%s: %v", r, err)
				continue
			}
			m.Answer = append(m.Answer, rr)
		}
		w.WriteMsg(m)
	})
	s := &dns.Server{PacketConn: pc, Handler: h}
	go s.ActivateAndServe()
	t.Cleanup(func() { s.Shutdown() })
	return &Resolver{Servers: []netip.AddrPort{netip.MustParseAddrPort(pc.LocalAddr().String())}, Over: IPv4}, asked
}

// TestServicesReadsHTTPSRecords: an HTTPS query for a port other than 443
// goes to _PORT._https.NAME (RFC 9460 §9.1); each record's priority,
// target, alpn, no-default-alpn, port and hints come back; an alias is
// priority 0 with its target; a name without records (NXDOMAIN, or
// NOERROR and none) is no records and no error.
func TestServicesReadsHTTPSRecords(t *testing.T) {
	res, asked := servicesDNS(t, map[string][]string{
		"_8443._https.www.test.": {`1 . alpn=h3,h2 port=8443 ipv4hint=192.0.2.1 ipv6hint=2001:db8::1`, `2 Alt.Test. alpn=h2 no-default-alpn`},
		"alias.test.":            {`0 www.test.`},
		"none.test.":             nil,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got := ServiceName("www.test", 8443); got != "_8443._https.www.test" || ServiceName("www.test", 443) != "www.test" {
		t.Fatalf("ServiceName: %q", got)
	}
	svcs, err := res.Services(ctx, ServiceName("www.test", 8443), nil)
	if err != nil || len(svcs) != 2 {
		t.Fatalf("%v %+v", err, svcs)
	}
	if n := <-asked; n != "_8443._https.www.test." {
		t.Errorf("asked %q", n)
	}
	a, b := svcs[0], svcs[1]
	if a.Priority != 1 || a.Target != "" || !slices.Equal(a.ALPN, []string{"h3", "h2"}) || a.NoDefaultALPN || a.Port != 8443 ||
		!slices.Equal(a.IPv4Hint, []netip.Addr{netip.MustParseAddr("192.0.2.1")}) || !slices.Equal(a.IPv6Hint, []netip.Addr{netip.MustParseAddr("2001:db8::1")}) {
		t.Errorf("first record %+v", a)
	}
	if b.Priority != 2 || b.Target != "alt.test" || !slices.Equal(b.ALPN, []string{"h2"}) || !b.NoDefaultALPN || b.Port != 0 {
		t.Errorf("second record %+v", b)
	}
	if svcs, err := res.Services(ctx, "alias.test", nil); err != nil || len(svcs) != 1 || svcs[0].Priority != 0 || svcs[0].Target != "www.test" {
		t.Errorf("alias: %v %+v", err, svcs)
	}
	for _, n := range []string{"none.test", "nxdomain.test"} {
		if svcs, err := res.Services(ctx, n, nil); err != nil || len(svcs) != 0 {
			t.Errorf("%s: %v %+v", n, err, svcs)
		}
	}
}

// TestServicesFollowTheStub: an HTTPS query goes again as the
// resolver's Stub says, as an address lookup's does.
func TestServicesFollowTheStub(t *testing.T) {
	server, arrived := lossyDNS(t, -1)
	r := &Resolver{Servers: []netip.AddrPort{server}, Over: IPv4, Stub: Stub{Timeout: 30 * time.Millisecond, Attempts: 2}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	hook := &LookupHook{}
	_, err := r.Services(ctx, "www.test", hook)
	if err == nil || !strings.Contains(err.Error(), "no answer to 2 queries") || !strings.Contains(err.Error(), "attempts:2") || len(drain(arrived)) != 2 || hook.Queries() != 2 {
		t.Errorf("%v; hook counts %d", err, hook.Queries())
	}
}
