package dns

import (
	"fmt"
	"slices"
	"strings"

	mdns "github.com/miekg/dns"

	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// The replies that complete a query (the expect option). A negative
// answer is as much a DNS transaction as a positive one, and dnsperf times
// both; v6lab times the kind the cell says it expects and fails the rest,
// so a server that answers otherwise is seen, not averaged in.
const (
	ExpectAnswer   = "answer"   // NOERROR with a record of the asked type (the default)
	ExpectNoData   = "nodata"   // NOERROR without one (RFC 2308 §2.2)
	ExpectNXDomain = "nxdomain" // NXDOMAIN: the name does not exist (RFC 2308 §2.1)
	ExpectAny      = "any"      // any reply to the question; its rcode is in the marker
)

// parseExpect reads an expect option ("" is answer).
func parseExpect(s string) (string, error) {
	switch e := strings.ToLower(s); e {
	case "":
		return ExpectAnswer, nil
	case ExpectAnswer, ExpectNoData, ExpectNXDomain, ExpectAny:
		return e, nil
	}
	return "", fmt.Errorf("%q: want answer, nodata, nxdomain or any", s)
}

// placeTypes are the record types v6lab's own DNS servers (lab and
// loopback, embedded and Unbound) hold for each name they know.
var placeTypes = map[string][]uint16{
	mdns.CanonicalName(proto.LocalName):  {mdns.TypeA, mdns.TypeAAAA},
	mdns.CanonicalName(proto.V4OnlyName): {mdns.TypeA},
	mdns.CanonicalName(proto.LargeName):  {mdns.TypeA, mdns.TypeAAAA, mdns.TypeTXT},
}

// askedName is the name a lab or loopback cell looks up, canonical.
func askedName(o *Options) string {
	return mdns.CanonicalName(proto.Or(o.Query, proto.LocalName))
}

// checkExpect refuses an expectation no query of a lab or loopback cell
// can meet whatever its path: NXDOMAIN for a name v6lab's servers know,
// an empty answer for one they do not (that is NXDOMAIN). Whether a known
// name lacks the type asked is the path's question (PathFit).
func checkExpect(o *Options, where result.Where) error {
	e, err := parseExpect(o.Expect)
	if err != nil {
		return proto.Errorf("expect", "%v", err)
	}
	if where == result.Hosts {
		return nil
	}
	_, known := placeTypes[askedName(o)]
	switch {
	case e == ExpectNoData && !known:
		return proto.Errorf("expect", "nodata: v6lab's DNS servers (lab and loopback) do not know %s, so it gets NXDOMAIN; the one empty answer there is the AAAA of query: %s (an A record alone)", proto.Or(o.Query, proto.LocalName), proto.V4OnlyName)
	case e == ExpectNXDomain && known:
		return proto.Errorf("expect", "nxdomain: v6lab's DNS servers (lab and loopback) answer %s; give a query they do not know (nosuch.v6lab.test)", strings.TrimSuffix(askedName(o), "."))
	}
	return nil
}

// PathFit refuses expect: nodata over a path whose query asks for a type
// the name has on v6lab's servers (the path's own type: A on ipv4, AAAA on
// the others; or type). A dns cell over nat64 asks the server through the
// translator, not the path's DNS64 view, so the IPv4-only name's AAAA is
// empty there too.
func (o *Options) PathFit(where result.Where, p path.Path) error {
	e, err := parseExpect(o.Expect)
	if err != nil || where == result.Hosts || e != ExpectNoData {
		return err
	}
	qt, err := queryType(o.Type)
	if err != nil {
		return err
	}
	if qt == 0 {
		qt = mdns.TypeAAAA
		if !p.Kind().IPv6 {
			qt = mdns.TypeA
		}
	}
	if slices.Contains(placeTypes[askedName(o)], qt) {
		return proto.Errorf("expect", "nodata over %s: its query asks for the %s record, which %s has (%s has an A record alone: type: AAAA asks for the one it lacks)",
			p, mdns.TypeToString[qt], strings.TrimSuffix(askedName(o), "."), proto.V4OnlyName)
	}
	return nil
}

// answers counts reply's records of type qt.
func answers(reply *mdns.Msg, qt uint16) int {
	n := 0
	for _, rr := range reply.Answer {
		if rr.Header().Rrtype == qt {
			n++
		}
	}
	return n
}

// meets says whether reply, already known to answer q's question, is the
// kind of reply expect asks for.
func meets(q, reply *mdns.Msg, expect string) error {
	qt := q.Question[0].Qtype
	n := answers(reply, qt)
	rcode := mdns.RcodeToString[reply.Rcode]
	switch expect {
	case ExpectAny:
		return nil
	case ExpectNXDomain:
		if reply.Rcode != mdns.RcodeNameError {
			return fmt.Errorf("server answered %s with %s, not NXDOMAIN (expect: nxdomain): %w", rcode, records(n, qt), ErrReply)
		}
		return nil
	}
	if reply.Rcode != mdns.RcodeSuccess {
		return fmt.Errorf("server answered %s: %w", rcode, ErrReply)
	}
	switch {
	case expect == ExpectNoData && n > 0:
		return fmt.Errorf("%s has %s, not none (expect: nodata): %w", q.Question[0].Name, records(n, qt), ErrReply)
	case expect != ExpectNoData && n == 0:
		return fmt.Errorf("%s has no %s record: %w", q.Question[0].Name, mdns.TypeToString[qt], ErrReply)
	}
	return nil
}

// records says "1 A record", "2 AAAA records".
func records(n int, qt uint16) string {
	s := fmt.Sprintf("%d %s record", n, mdns.TypeToString[qt])
	if n != 1 {
		s += "s"
	}
	return s
}
