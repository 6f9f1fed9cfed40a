package survey

import (
	"context"
	"net"
	"net/netip"
	"testing"

	mdns "github.com/miekg/dns"

	"v6lab/internal/result"
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
