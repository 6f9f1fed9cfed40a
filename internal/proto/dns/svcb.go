package dns

import (
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"

	mdns "github.com/miekg/dns"

	"v6lab/internal/lab/servers"
	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// Services are the HTTPS and SVCB records (RFC 9460) the embedded server
// gives beside its zone's addresses.
type Services struct {
	// Records are records given as they are (v6lab serve dns --https,
	// --svcb), by owner name (canonical).
	Records map[string][]mdns.RR
	// Ports are the https servers of the place, by port, with the ALPN ids
	// each speaks. An HTTPS query for _PORT._https.NAME (NAME for port
	// 443) of a name of the zone gets a ServiceMode record: priority 1,
	// its TargetName the name asked (without the port prefix: the
	// addresses the client asks for anyway; "." at port 443), alpn, port,
	// and the name's addresses in the view as ipv4hint and ipv6hint.
	Ports map[int][]string
}

// ParseService reads a record given as NAME=RDATA for type rrtype (HTTPS
// or SVCB), RDATA in RFC 9460's presentation form ("1 . alpn=h3,h2
// port=8443 ipv6hint=2001:db8::1"; "0 target.example." for an alias), and
// checks it: a ServiceMode record needs an alpn (v6lab's clients choose
// QUIC or TCP by it; without one the record says only http/1.1, which the
// record would not be needed for).
func ParseService(s string, rrtype uint16) (mdns.RR, error) {
	tname := mdns.TypeToString[rrtype]
	name, rdata, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(rdata) == "" {
		return nil, fmt.Errorf("dns: bad %s record %q (want NAME=RDATA, e.g. www.lab.test='1 . alpn=h3,h2 port=8443')", tname, s)
	}
	name = mdns.CanonicalName(strings.TrimSpace(name))
	rr, err := mdns.NewRR(fmt.Sprintf("%s %d IN %s %s", name, TTL, tname, rdata))
	if err != nil || rr == nil {
		return nil, fmt.Errorf("dns: bad %s record for %s %q: %v", tname, name, strings.TrimSpace(rdata), err)
	}
	svcb := svcbOf(rr)
	if svcb.Priority > 0 && !slices.ContainsFunc(svcb.Value, func(kv mdns.SVCBKeyValue) bool { return kv.Key() == mdns.SVCB_ALPN }) {
		return nil, fmt.Errorf("dns: %s record for %s %q has no alpn: give alpn=h3,h2 (or the protocols its endpoint speaks; RFC 9460 §7.1)", tname, name, strings.TrimSpace(rdata))
	}
	return rr, nil
}

// svcbOf is an HTTPS or SVCB record's SVCB part.
func svcbOf(rr mdns.RR) *mdns.SVCB {
	switch v := rr.(type) {
	case *mdns.HTTPS:
		return &v.SVCB
	case *mdns.SVCB:
		return v
	}
	return &mdns.SVCB{}
}

// asked reads a question: the name of the zone it asks about (without
// the port prefix of an HTTPS query, RFC 9460 §9.1, and the impairment
// labels, proto.AskedName), the port it asks about, and what its labels
// ask.
func asked(q mdns.Question) (string, int, proto.NameAsk) {
	name, port := q.Name, 443
	if q.Qtype == mdns.TypeHTTPS {
		name, port = proto.HTTPSOwner(name)
	}
	base, a := proto.AskedName(name)
	return base, port, a
}

// answer puts the records of an HTTPS or SVCB question in m: records
// given by name first, else the one the place's ports make. NXDOMAIN for
// a name the zone does not know; an empty answer for one it knows
// without a record.
func (s *Services) answer(m *mdns.Msg, q mdns.Question, z Zone) {
	if s != nil {
		for _, rr := range s.Records[mdns.CanonicalName(q.Name)] {
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, mdns.Copy(rr))
			}
		}
	}
	if len(m.Answer) > 0 {
		return
	}
	base, port, ask := asked(q)
	addrs, known := z[mdns.CanonicalName(base)]
	if !known && (s == nil || !s.named(q.Name)) {
		m.SetRcode(m, mdns.RcodeNameError)
		return
	}
	if s == nil || q.Qtype != mdns.TypeHTTPS || ask.NoHTTPS || len(s.Ports[port]) == 0 || !known {
		return
	}
	m.Answer = append(m.Answer, s.record(q.Name, port, addrs, ask.NoHints))
}

// named says whether a record is given for name or under it.
func (s *Services) named(name string) bool {
	c := mdns.CanonicalName(name)
	for k := range s.Records {
		if k == c || strings.HasSuffix(k, "."+c) {
			return true
		}
	}
	return false
}

// record is the HTTPS record of an https server on port for a name of
// the zone with addrs, asked as qname.
func (s *Services) record(qname string, port int, addrs []netip.Addr, noHints bool) mdns.RR {
	target := "." // the owner name: at port 443, the name asked
	if host, _ := proto.HTTPSOwner(qname); host != qname {
		target = mdns.Fqdn(host) // _PORT._https.NAME has no address: NAME
	}
	rr := &mdns.HTTPS{SVCB: mdns.SVCB{Hdr: mdns.RR_Header{Name: qname, Rrtype: mdns.TypeHTTPS, Class: mdns.ClassINET, Ttl: TTL},
		Priority: 1, Target: target}}
	rr.Value = append(rr.Value, &mdns.SVCBAlpn{Alpn: slices.Clone(s.Ports[port])}, &mdns.SVCBPort{Port: uint16(port)})
	if noHints {
		return rr
	}
	var v4, v6 []net.IP
	for _, a := range addrs {
		if a.Is4() {
			v4 = append(v4, net.IP(a.AsSlice()))
		} else {
			v6 = append(v6, net.IP(a.AsSlice()))
		}
	}
	if len(v4) > 0 {
		rr.Value = append(rr.Value, &mdns.SVCBIPv4Hint{Hint: v4})
	}
	if len(v6) > 0 {
		rr.Value = append(rr.Value, &mdns.SVCBIPv6Hint{Hint: v6})
	}
	return rr
}

// realHTTPS are the HTTPS records of a place's https servers (Place.HTTPS)
// for Unbound, as the embedded server gives them at the place's name.
func realHTTPS(at proto.Place) []servers.Record {
	var out []servers.Record
	addrs := []netip.Addr{at.Addrs[path.IPv4], at.Addrs[path.IPv6]}
	addrs = slices.DeleteFunc(addrs, func(a netip.Addr) bool { return !a.IsValid() })
	svc := &Services{Ports: at.HTTPS}
	for _, port := range slices.Sorted(maps.Keys(at.HTTPS)) {
		owner := proto.HTTPSName(at.Name, port)
		rr := svc.record(mdns.Fqdn(owner), port, addrs, false).(*mdns.HTTPS)
		_, rdata, _ := strings.Cut(rr.String(), "HTTPS\t")
		out = append(out, servers.Record{Name: owner, Type: "HTTPS", Data: rdata})
	}
	return out
}
