package dns

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	mdns "github.com/miekg/dns"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// Protocol is DNS query response time (proto.Protocol).
type Protocol struct{}

func (Protocol) Name() string { return "dns" }

func (Protocol) Options() []string {
	return []string{"query", proto.OptDNSServers, "transport", "mode", "expect", "type"}
}

// Check applies dns's rules: with where: hosts a query and the servers to
// ask; transport udp or tcp; the engine (CheckMode); a reply to expect that
// the cell's servers can give (checkExpect).
func (Protocol) Check(o *proto.Options, where string, given proto.Given) error {
	if where == "hosts" && (o.Query == "" || len(o.DNSServers) == 0) {
		return proto.Require("the name to look up and the server to ask", "query", "dns_servers")
	}
	switch o.Transport {
	case "", "udp", "tcp":
	default:
		return proto.Errorf("transport", "%q: want udp or tcp", o.Transport)
	}
	if err := CheckMode(o.Mode, o.Transport == "tcp"); err != nil {
		return proto.Errorf("mode", "%v", err)
	}
	qt, err := queryType(o.Type)
	if err != nil {
		return proto.Errorf("type", "%v", err)
	}
	o.Type = mdns.TypeToString[qt] // "aaaa" is recorded as AAAA, "path" as nothing
	if qt == 0 {
		o.Type = ""
	}
	if err := checkExpect(o, where); err != nil {
		return err
	}
	return proto.CheckDNSServers(o, where)
}

// CheckMode checks a DNS cell's engine: stub (a socket per query, the
// default) or load (long-lived sockets, queries matched by ID; UDP only).
func CheckMode(mode string, tcp bool) error {
	switch mode {
	case "", ModeStub:
	case ModeLoad:
		if tcp {
			return fmt.Errorf("the load engine sends over UDP; use stub with tcp")
		}
	default:
		return fmt.Errorf("%q: want stub or load", mode)
	}
	return nil
}

// queryType reads a record type: path (or empty: the path's own), A, AAAA, …
func queryType(s string) (uint16, error) {
	switch t := strings.ToUpper(s); t {
	case "", "PATH":
		return 0, nil
	default:
		v, ok := mdns.StringToType[t]
		if !ok {
			return 0, fmt.Errorf("unknown record type %q", s)
		}
		return v, nil
	}
}

// Target is the cell's DNS server of path p's family.
func (Protocol) Target(o *proto.Options, p path.Path) (proto.Endpoint, error) {
	r := path.Resolver{}
	for _, s := range o.DNSServers {
		ap, err := path.ParseServer(s)
		if err != nil {
			return proto.Endpoint{}, err
		}
		r.Servers = append(r.Servers, ap)
	}
	srv, _, err := r.Server(p)
	if err != nil {
		return proto.Endpoint{}, err
	}
	return proto.Endpoint{Host: srv.Addr().String(), Port: int(srv.Port())}, nil
}

// Probe asks the server at ep for the cell's query (default: the name of
// the embedded servers).
func (Protocol) Probe(o *proto.Options, ep proto.Endpoint, p path.Path) (load.Probe, error) {
	if ep.Host == "" {
		return nil, errors.New("no DNS server to measure")
	}
	srv, err := ep.AddrPort()
	if err != nil {
		return nil, err
	}
	if !p.Accepts(srv.Addr()) {
		return nil, fmt.Errorf("no %s DNS server to send the query over (have %v)", p.Family(), srv)
	}
	qt, err := queryType(o.Type)
	if err != nil {
		return nil, err
	}
	expect, err := parseExpect(o.Expect)
	if err != nil {
		return nil, err
	}
	return &Client{Name: proto.Or(o.Query, proto.LocalName), Server: srv, Path: p, Type: qt, TCP: o.Transport == "tcp", Source: ep.Source, Mode: o.Mode, Expect: expect}, nil
}

// RealServer is the lab's real DNS server.
func (Protocol) RealServer() string { return "unbound" }

// RealFit: every dns cell fits Unbound.
func (Protocol) RealFit(*proto.Options) error { return nil }

// About describes the embedded server.
func (Protocol) About() string {
	return "embedded (miekg/dns messages; UDP answered on a thread blocked in recvfrom, TCP by miekg/dns)"
}

// AboutAt adds the views of a place with lab-only paths.
func (p Protocol) AboutAt(at proto.Place) string {
	for q := range at.Addrs {
		if q.Kind().LabOnly {
			return p.About() + ", a view per tunnel address (DNS64 on the nat64 path's)"
		}
	}
	return p.About()
}

// Serve answers A and AAAA for the place's name: the native paths'
// addresses (and A alone for proto.V4OnlyName), and on the address of a lab-only path (6in4) a view that
// gives that path's address for its family, so the path looks its name up
// through itself, as in the study. The setting record (NAME=ADDR,
// repeated) serves those records instead.
func (Protocol) Serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	zone, views := Zone{}, Views{}
	for _, r := range at.Settings["record"] {
		if err := zone.ParseRecord(r); err != nil {
			return nil, proto.Errorf("record", "%v", err)
		}
	}
	if len(zone) == 0 {
		zone, views = placeZone(at)
	}
	if len(zone) == 0 {
		return nil, proto.Errorf("record", "nothing to serve: give at least one NAME=ADDR")
	}
	s, err := proto.Listen(at, func(addrs []netip.Addr, port int) (*Server, error) {
		return ListenViews(ctx, zone, views, addrs, port)
	})
	if err != nil {
		return nil, err
	}
	return running{s, zone.Names()}, nil
}

// placeZone is the zone of a place's name (and of proto.V4OnlyName, its
// IPv4 address alone), and a view per lab-only path.
func placeZone(at proto.Place) (Zone, Views) {
	zone, views := Zone{}, Views{}
	if at.Name == "" {
		return zone, views
	}
	native := map[bool]netip.Addr{}
	for _, k := range path.Kinds {
		if a, ok := at.Addrs[k.Path]; ok && !k.LabOnly {
			zone.Add(at.Name, a)
			native[k.IPv6] = a
		}
	}
	// The same server as an IPv4-only host, in every view.
	v4only := func(z Zone) {
		if v4, ok := native[false]; ok {
			z.Add(proto.V4OnlyName, v4)
		}
	}
	v4only(zone)
	for _, k := range path.Kinds {
		a, ok := at.Addrs[k.Path]
		if !ok || !k.LabOnly {
			continue
		}
		if k.Translated {
			// A DNS64 view: the name as an IPv4-only server has it,
			// its AAAA synthesised from its A (RFC 6147 §5.1.7).
			v := Zone{}
			if v4, ok := native[false]; ok {
				v.Add(at.Name, v4)
			}
			v4only(v)
			views[a] = v.Synthesize(at.DNS64)
			continue
		}
		v := Zone{}
		if other, ok := native[!k.IPv6]; ok {
			v.Add(at.Name, other)
		}
		v.Add(at.Name, a)
		v4only(v)
		views[a] = v
	}
	return zone, views
}

type running struct {
	*Server
	names []string
}

func (r running) Port() int { return r.Server.Port }

func (r running) Detail() string { return fmt.Sprintf("udp, tcp; names %v", r.names) }

// ByAddress: a DNS server is reached by its address.
func (Protocol) ByAddress() bool { return true }
