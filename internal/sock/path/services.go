package path

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// Service is an HTTPS or SVCB record (RFC 9460) as a Happy Eyeballs
// version 3 client takes it; its fields are Service's, so that
// one converts to the other (this package may not import that one).
type Service struct {
	Priority uint16
	// Target is the TargetName, lower case without its final dot; "" is
	// "." (the owner name).
	Target string
	// ALPN and NoDefaultALPN: the record's alpn and no-default-alpn.
	ALPN          []string
	NoDefaultALPN bool
	// Port is the record's port (0: the origin's).
	Port               uint16
	IPv4Hint, IPv6Hint []netip.Addr
}

// ServiceName is the name an HTTPS query for host at port asks (RFC 9460
// §9.1): host itself for port 443, _PORT._https.host otherwise.
func ServiceName(host string, port uint16) string {
	if port == 443 || port == 0 {
		return host
	}
	return "_" + strconv.Itoa(int(port)) + "._https." + host
}

// Services asks r's server for the HTTPS records (RFC 9460) of name (for
// an origin, its ServiceName; an alias's target as it is), over the
// family r.Over pins (OneFamily), with the same
// retransmissions, TCP after truncation and stamps as a lookup (hook). A
// negative answer (NOERROR without records, or NXDOMAIN) is no records
// and no error: a name without HTTPS records is the common case.
func (r *Resolver) Services(ctx context.Context, name string, hook *LookupHook) ([]Service, error) {
	over := r.Over
	if over == "" {
		over = IPv6
	}
	server, over, err := r.Server(over)
	if err != nil {
		return nil, err
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeHTTPS)
	m.RecursionDesired = true
	wire, err := m.Pack()
	if err != nil {
		return nil, fmt.Errorf("path: resolve %s HTTPS: %w", name, err)
	}
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	q := &Query{Host: m.Question[0].Name, Path: over, Server: server, Over: over, Source: r.Source, Wire: wire, Stub: r.Stub, msg: m}
	in, err := exchange(ctx, q, hook)
	if err != nil {
		return nil, q.Wrap(err)
	}
	switch in.Rcode {
	case dns.RcodeSuccess, dns.RcodeNameError:
	default:
		return nil, q.Wrap(fmt.Errorf("server answered %s", dns.RcodeToString[in.Rcode]))
	}
	var out []Service
	for _, rr := range in.Answer {
		if h, ok := rr.(*dns.HTTPS); ok {
			out = append(out, ServiceOf(&h.SVCB))
		}
	}
	return out, nil
}

// ServiceOf is an HTTPS or SVCB record as Happy Eyeballs version 3 takes
// it: priority, target (lower case, without its final dot; "" for "."),
// alpn and no-default-alpn, port, and the address hints.
func ServiceOf(s *dns.SVCB) Service {
	out := Service{Priority: s.Priority, Target: strings.ToLower(strings.TrimSuffix(s.Target, "."))}
	for _, kv := range s.Value {
		switch v := kv.(type) {
		case *dns.SVCBAlpn:
			out.ALPN = slices.Clone(v.Alpn)
		case *dns.SVCBNoDefaultAlpn:
			out.NoDefaultALPN = true
		case *dns.SVCBPort:
			out.Port = v.Port
		case *dns.SVCBIPv4Hint:
			out.IPv4Hint = hints(v.Hint)
		case *dns.SVCBIPv6Hint:
			out.IPv6Hint = hints(v.Hint)
		}
	}
	return out
}

func hints[T ~[]byte](ips []T) []netip.Addr {
	var out []netip.Addr
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out
}
