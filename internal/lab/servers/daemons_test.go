package servers_test

// The real daemons, each answering v6lab's own client over both families.

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"v6lab/internal/lab/servers"
	"v6lab/internal/testutil"
)

func TestNginxServesTheContent(t *testing.T) {
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	port := testutil.FreePort(t)
	s, err := servers.StartNginx(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		servers.Content{"/index.html": []byte("<html>hello</html>"), "/obj/0": []byte("x")},
		// A generated file larger than any write, streamed to disk in chunks.
		servers.Generated{"/files/3M": {Size: 3<<20 + 7, Fill: func(p []byte, off int64) {
			for i := range p {
				p[i] = byte('a' + (off+int64(i))%26)
			}
		}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.Contains(s.Version, "nginx/") {
		t.Errorf("version %q", s.Version)
	}
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/files/3M")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(body) != 3<<20+7 || body[0] != 'a' || body[3<<20+6] != byte('a'+(3<<20+6)%26) {
		t.Errorf("generated file: %d bytes", len(body))
	}
	for _, u := range []string{"http://127.0.0.1:%d/", "http://[::1]:%d/obj/0"} {
		resp, err := http.Get(strings.Replace(u, "%d", strconv.Itoa(port), 1))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) == 0 {
			t.Errorf("%s: %d %q", u, resp.StatusCode, b)
		}
	}
}

func TestUnboundAnswersWithViews(t *testing.T) {
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	port := testutil.FreePort(t)
	v4, v6, tun := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:46::10")
	s, err := servers.StartUnbound(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		"v6lab.test", []servers.Record{{Name: "www.v6lab.test", Addr: v4}, {Name: "www.v6lab.test", Addr: v6}, {Name: "large.v6lab.test", TXT: strings.Repeat("a", 250)},
			{Name: "large.v6lab.test", TXT: strings.Repeat("b", 250)}, {Name: "large.v6lab.test", TXT: strings.Repeat("c", 250)},
			{Name: "large.v6lab.test", TXT: strings.Repeat("d", 250)}, {Name: "large.v6lab.test", TXT: strings.Repeat("e", 250)},
			{Name: "large.v6lab.test", TXT: `six "quoted" \ 6`},
			{Name: "_8443._https.www.v6lab.test", Type: "HTTPS", Data: `1 www.v6lab.test. alpn="h3,h2" port="8443" ipv6hint="2001:db8::10"`}},
		[]servers.View{{Name: "tunnel", Clients: netip.MustParsePrefix("::1/128"), Records: []servers.Record{{Name: "www.v6lab.test", Addr: tun}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.Contains(s.Version, "unbound") {
		t.Errorf("version %q", s.Version)
	}
	ask := func(server string, qt uint16) string {
		m := new(dns.Msg)
		m.SetQuestion("www.v6lab.test.", qt)
		if qt == dns.TypeHTTPS {
			m.SetQuestion("_8443._https.www.v6lab.test.", qt)
		}
		r, err := dns.Exchange(m, server)
		if err != nil || len(r.Answer) == 0 {
			return "error"
		}
		return r.Answer[0].String()
	}
	p := strconv.Itoa(port)
	if got := ask("127.0.0.1:"+p, dns.TypeA); !strings.HasSuffix(got, "192.0.2.10") {
		t.Errorf("A from 127.0.0.1: %s", got)
	}
	if got := ask("127.0.0.1:"+p, dns.TypeAAAA); !strings.HasSuffix(got, "2001:db8::10") {
		t.Errorf("AAAA from 127.0.0.1: %s", got)
	}
	if got := ask("[::1]:"+p, dns.TypeAAAA); !strings.HasSuffix(got, "2001:db8:46::10") {
		t.Errorf("AAAA from the view's client ::1: %s", got)
	}
	// An HTTPS record (RFC 9460), as the lab's real servers' are given.
	if got := ask("127.0.0.1:"+p, dns.TypeHTTPS); !strings.HasSuffix(got, `HTTPS	1 www.v6lab.test. alpn="h3,h2" port="8443" ipv6hint="2001:db8::10"`) {
		t.Errorf("HTTPS: %s", got)
	}
	// A TXT answer of about 1,300 bytes: whole over UDP with EDNS 4096
	// (max-udp-size: 4096), truncated with 1232.
	for _, size := range []uint16{4096, 1232} {
		m := new(dns.Msg)
		m.SetQuestion("large.v6lab.test.", dns.TypeTXT)
		m.SetEdns0(size, false)
		r, err := dns.Exchange(m, "127.0.0.1:"+p)
		switch {
		case err != nil:
			t.Errorf("TXT with EDNS %d: %v", size, err)
		case size == 4096 && (r.Truncated || len(r.Answer) != 6 || r.Len() < 1300):
			t.Errorf("TXT with EDNS 4096: truncated %v, %d records, %d bytes", r.Truncated, len(r.Answer), r.Len())
		case size == 1232 && !r.Truncated:
			t.Errorf("TXT with EDNS 1232: %d bytes, not truncated", r.Len())
		case size == 4096 && !slices.ContainsFunc(r.Answer, func(rr dns.RR) bool { return strings.Contains(rr.String(), `six \"quoted\"`) }):
			t.Errorf("TXT: quoting lost: %v", r.Answer)
		}
	}
}
