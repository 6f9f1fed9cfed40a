package survey

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"v6lab/internal/proto"
	"v6lab/internal/report/sites"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// TestHTTPSRecordIsRecordedAndOffersH3: a site's HTTPS record is asked,
// its text recorded, and an h3 ALPN found; a name without one is NODATA.
func TestHTTPSRecordIsRecordedAndOffersH3(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &mdns.Server{PacketConn: pc, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, req *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(req)
		if req.Question[0].Name == "h3.example." {
			rr, _ := mdns.NewRR(`h3.example. 60 IN HTTPS 1 . alpn="h3,h2"`)
			m.Answer = append(m.Answer, rr)
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	defer srv.Shutdown()
	o := Defaults()
	m := &measurer{o: o, dns: []netip.AddrPort{netip.MustParseAddrPort(pc.LocalAddr().String())}}
	s := &result.Site{Name: "h3.example"}
	if !m.httpsRecord(context.Background(), s) || len(s.Lookups) != 1 || s.Lookups[0].Type != "HTTPS" || s.Lookups[0].Data == "" {
		t.Errorf("h3.example: %+v", s.Lookups)
	}
	s = &result.Site{Name: "plain.example"}
	if m.httpsRecord(context.Background(), s) || s.Lookups[0].Err != "NODATA" {
		t.Errorf("plain.example: %+v", s.Lookups)
	}
}

// TestASiteRecordHasItsEnd: a site's record carries when it ended, not
// Go's zero time (a deferred assignment to an unnamed result was lost).
func TestASiteRecordHasItsEnd(t *testing.T) {
	m := &measurer{o: Defaults()}
	b := m.site(context.Background(), Entry{Index: 1, Line: 1, Name: "bad name", Bad: "a blank"})
	if b.site.End.IsZero() || b.site.End.Before(b.site.Start) {
		t.Errorf("start %v end %v", b.site.Start, b.site.End)
	}
}

// TestOnlyAnAnswerMeansNoAddress: NXDOMAIN, or NOERROR without a record,
// is "no address"; SERVFAIL or a server that refuses is a failed lookup
// (verdict lookup_failed, the error kept), and a survey none of whose
// lookups was answered says so (trial4 F7).
func TestOnlyAnAnswerMeansNoAddress(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &mdns.Server{PacketConn: pc, Handler: mdns.HandlerFunc(func(w mdns.ResponseWriter, req *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(req)
		q := req.Question[0]
		switch {
		case q.Name == "gone.example.":
			m.Rcode = mdns.RcodeNameError
		case q.Name == "v4.example." && q.Qtype == mdns.TypeA:
			rr, _ := mdns.NewRR("v4.example. 60 IN A 192.0.2.1")
			m.Answer = append(m.Answer, rr)
		case q.Name == "sick.example." && q.Qtype == mdns.TypeAAAA:
			m.Rcode = mdns.RcodeServerFailure
		case q.Name == "sick.example.":
			rr, _ := mdns.NewRR("sick.example. 60 IN A 192.0.2.2")
			m.Answer = append(m.Answer, rr)
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	defer srv.Shutdown()
	o := Defaults()
	o.Timeout = proto.Duration(2 * time.Second)
	v4 := map[path.Path]path.Path{path.IPv6: path.IPv4}
	m := &measurer{o: o, dns: []netip.AddrPort{netip.MustParseAddrPort(pc.LocalAddr().String())}, over: v4}
	for name, want := range map[string]sites.Verdict{"gone.example": sites.NoAddress, "sick.example": sites.LookupFailed} {
		b := m.site(context.Background(), Entry{Index: 1, Line: 1, Name: name})
		if r := sites.Judge(&b.site, b.samples, sites.Criteria{}); r.V != want || (want == sites.LookupFailed && !strings.Contains(r.Why, "SERVFAIL")) {
			t.Errorf("%s: verdict %s (%s), want %s; lookups %+v", name, r.V, r.Why, want, b.site.Lookups)
		}
	}
	s := &result.Site{Name: "v4.example"}
	if have, failed := m.lookups(context.Background(), s); len(have) != 1 || failed != "" || s.Lookups[1].Failed {
		t.Errorf("v4.example (A, no AAAA): have %v failed %q %+v", have, failed, s.Lookups)
	}
	if err := m.tally.noAnswer(m.dns); err != nil {
		t.Errorf("a server that answered: %v", err)
	}
	// Nothing listens here: every lookup is refused.
	dead := &measurer{o: o, dns: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:1")}, over: v4}
	b := dead.site(context.Background(), Entry{Index: 1, Line: 1, Name: "v4.example"})
	if r := sites.Judge(&b.site, b.samples, sites.Criteria{}); r.V != sites.LookupFailed || !strings.Contains(r.Why, "refused") {
		t.Errorf("refused: verdict %s (%s); lookups %+v", r.V, r.Why, b.site.Lookups)
	}
	if err := dead.tally.noAnswer(dead.dns); !errors.Is(err, ErrNoDNSAnswer) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("no answer at all: %v", err)
	}
}

// TestAForcedVersionNotOfferedIsWarnedOf (trial6 F4): --http-version 3
// against sites whose discovery found HTTP/3 offered over neither family,
// or 2 over http (h2c, which discovery cannot find), is warned of once,
// naming the first such site; a site that offers it, or auto, is not.
func TestAForcedVersionNotOfferedIsWarnedOf(t *testing.T) {
	https, plain := &url.URL{Scheme: "https", Host: "a.example"}, &url.URL{Scheme: "http", Host: "a.example"}
	fams := func(offers ...string) map[path.Path]found {
		return map[path.Path]found{path.IPv4: {fam: result.SiteFamily{Offers: offers}}, path.IPv6: {fam: result.SiteFamily{Offers: offers}}}
	}
	for _, tc := range []struct {
		version string
		u       *url.URL
		finds   map[path.Path]found
		want    string
	}{
		{"3", https, fams("h2"), "discovery found HTTP/3 offered over neither family"},
		{"3", https, fams("h2", "h3"), ""},
		{"2", plain, fams(), "h2c"},
		{"2", https, fams(), ""},
		{"auto", https, fams(), ""},
	} {
		var out strings.Builder
		o := Defaults()
		o.HTTPVersion = tc.version
		m := &measurer{o: o, warn: &out}
		for _, name := range []string{"same.v6lab.test", "slow6.v6lab.test"} {
			m.warnNotOffered(name, m.forcedNotOffered(tc.u, tc.finds, Families))
		}
		switch got := out.String(); {
		case tc.want == "" && got != "":
			t.Errorf("%s over %s, offers %v: warned %q", tc.version, tc.u.Scheme, tc.finds[path.IPv4].fam.Offers, got)
		case tc.want != "" && (!strings.Contains(got, tc.want) || strings.Count(got, "\n") != 1 || !strings.Contains(got, "warning: same.v6lab.test:")):
			t.Errorf("%s over %s: %q, want one line naming the first site and %q", tc.version, tc.u.Scheme, got, tc.want)
		}
	}
}
