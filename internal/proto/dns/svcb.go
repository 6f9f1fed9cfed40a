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
		return nil, fmt.Errorf("dns: bad %s record for %s %q: %s", tname, name, strings.TrimSpace(rdata), badRdata(name, tname, rdata, err))
	}
	svcb := svcbOf(rr)
	if err := twice(svcb); err != nil {
		return nil, fmt.Errorf("dns: bad %s record for %s %q: %v", tname, name, strings.TrimSpace(rdata), err)
	}
	if svcb.Priority > 0 && !slices.ContainsFunc(svcb.Value, func(kv mdns.SVCBKeyValue) bool { return kv.Key() == mdns.SVCB_ALPN }) {
		return nil, fmt.Errorf("dns: %s record for %s %q has no alpn: give alpn=h3,h2 (or the protocols its endpoint speaks; RFC 9460 §7.1)", tname, name, strings.TrimSpace(rdata))
	}
	return rr, nil
}

// paramForm says what each SvcParam's value is (RFC 9460 §7).
var paramForm = map[string]string{
	"alpn":            "protocol ids separated by commas (h3,h2)",
	"port":            "a port number, 0 to 65535",
	"ipv4hint":        "IPv4 addresses separated by commas",
	"ipv6hint":        "IPv6 addresses separated by commas",
	"mandatory":       "keys separated by commas",
	"no-default-alpn": "no value",
	"ech":             "base64",
}

// badRdata says which part of a record's RDATA miekg/dns refused (its
// error names neither the flag nor the param in words of its own): the
// priority and target, or the first SvcParam that is refused alone.
func badRdata(name, tname, rdata string, err error) string {
	f := strings.Fields(rdata)
	if len(f) < 2 {
		return "want PRIORITY TARGET [PARAM=VALUE ...], e.g. '1 . alpn=h3,h2'"
	}
	head := f[0] + " " + f[1]
	if _, e := mdns.NewRR(fmt.Sprintf("%s %d IN %s %s", name, TTL, tname, head)); e != nil {
		return fmt.Sprintf("%q is not PRIORITY TARGET (a number 0 to 65535, then a name or .)", head)
	}
	for _, p := range f[2:] {
		if _, e := mdns.NewRR(fmt.Sprintf("%s %d IN %s %s %s", name, TTL, tname, head, p)); e != nil {
			key, _, _ := strings.Cut(p, "=")
			if form, ok := paramForm[key]; ok {
				return fmt.Sprintf("param %s is not valid: %s takes %s", p, key, form)
			}
			return fmt.Sprintf("param %s is not valid: unknown key %q (RFC 9460 §14.3.2: alpn, port, ipv4hint, ipv6hint, mandatory, no-default-alpn, ech, or keyNNNNN)", p, key)
		}
	}
	return fmt.Sprintf("not valid RFC 9460 presentation form (%v)", err)
}

// twice refuses a key given twice, or an alpn that lists a protocol id
// twice (miekg/dns takes both; RFC 9460 §2.2 and §7.1.1 give each once).
func twice(svcb *mdns.SVCB) error {
	for i, kv := range svcb.Value {
		if slices.ContainsFunc(svcb.Value[:i], func(o mdns.SVCBKeyValue) bool { return o.Key() == kv.Key() }) {
			return fmt.Errorf("param %s is given twice", kv.Key())
		}
		a, ok := kv.(*mdns.SVCBAlpn)
		if !ok {
			continue
		}
		for i, id := range a.Alpn {
			if slices.Contains(a.Alpn[:i], id) {
				return fmt.Errorf("alpn lists %s twice", id)
			}
		}
	}
	return nil
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
	if !known && !s.named(q.Name) {
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
	if s == nil {
		return false
	}
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
// for Unbound, as the embedded server gives them at the place's name in
// a view whose name has addrs (the hints).
func realHTTPS(at proto.Place, addrs ...netip.Addr) []servers.Record {
	var out []servers.Record
	addrs = slices.DeleteFunc(slices.Clone(addrs), func(a netip.Addr) bool { return !a.IsValid() })
	svc := &Services{Ports: at.HTTPS}
	for _, port := range slices.Sorted(maps.Keys(at.HTTPS)) {
		owner := proto.HTTPSName(at.Name, port)
		rr := svc.record(mdns.Fqdn(owner), port, addrs, false).(*mdns.HTTPS)
		_, rdata, _ := strings.Cut(rr.String(), "HTTPS\t")
		out = append(out, servers.Record{Name: owner, Type: "HTTPS", Data: rdata})
	}
	return out
}
