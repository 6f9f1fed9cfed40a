package dns

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	mdns "github.com/miekg/dns"

	"v6lab/internal/gen/load"
	"v6lab/internal/lab/servers"
	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// serverKey is the embedded server's key (the protocol's name).
const serverKey = "dns"

// Protocol is DNS query response time: its options, commands and servers.
var Protocol = proto.Protocol{
	Name: "dns",
	New:  func() proto.Options { return &Options{} },
	Command: proto.Command{
		Arg:    "NAME",
		SetArg: func(o proto.Options, arg string) { o.(*Options).Query = arg },
		Short:  "Measure DNS query response time over each path",
		Long: `probe dns times DNS queries for NAME, each on a new socket pinned to the path, sent to
the --server of that path's family. The record type is the path's own (A on ipv4, AAAA on
ipv6) unless --type says otherwise. A query completes on a matching NOERROR reply that
holds a record of the asked type; NXDOMAIN, SERVFAIL or an empty answer fail it, unless
--expect says which negative answer to time: nodata (NOERROR, no record of the type),
nxdomain, or any (every reply to the question completes; its rcode is in the sample's
marker, as dnsperf counts response codes).

Two engines (--mode): stub, the default, sends each query on a socket of its own, as a
stub resolver (glibc's) does, so its time includes what an application's lookup costs;
load keeps a few long-lived UDP sockets per path with every user's query in flight at
once, replies matched by ID, as dnsperf does: a load generator that still times every
query (from the send to the read that received its reply) and pins the family.`,
		Example: `  v6lab probe dns www.example.test --server 192.0.2.53 --server 2001:db8::53
  # against v6lab serve dns's example (www.lab.test on 127.0.0.1:5353 and [::1]:5353):
  v6lab probe dns www.lab.test --server 127.0.0.1:5353 --server [::1]:5353 --conns 1,100
  v6lab probe dns www.lab.test --server 127.0.0.1:5353 --paths ipv4 --type AAAA
  v6lab probe dns www.lab.test --server [::1]:5353 --paths ipv6 --tcp
  v6lab probe dns nosuch.lab.test --server 127.0.0.1:5353 --paths ipv4 --expect nxdomain
  v6lab probe dns www.lab.test --server 127.0.0.1:5353 --paths ipv4 --mode load --conns 100 --duration 10s`,
	},
	Server: &proto.Server{
		Key:      serverKey,
		About:    about,
		AboutAt:  aboutAt,
		Settings: func() any { return &ServerSettings{} },
		Serve:    serve,
		Command: proto.ServeCommand{
			Short: "Serve A, AAAA, HTTPS and SVCB records over UDP and TCP on both families",
			Long: `serve dns answers A and AAAA queries for the names given with --record NAME=ADDR
(repeat; an IPv4 address makes an A record, an IPv6 one an AAAA record; an IPv4-mapped
::ffff:a.b.c.d is refused, not served as an AAAA: it would send IPv6 sockets over IPv4,
so no IPv6 path is measured; 0.0.0.0 and :: are refused too), and HTTPS and SVCB
queries (RFC 9460) with the records given by --https and --svcb NAME=RDATA, over UDP
and TCP on every --listen address, until interrupted. Unknown names get NXDOMAIN; a
known name without the asked type gets an empty answer (a name given only an HTTPS or
SVCB record is known: its A and AAAA are empty, RFC 8020). A ServiceMode record must
give its alpn (the protocols its endpoint speaks): v6lab's Happy Eyeballs v3 client
races QUIC and TCP by it; a param given twice, or an alpn id listed twice, is refused. In a lab or loopback run the server also gives the https servers
it names an HTTPS record of its own (alpn, port, and the name's addresses as hints),
at _PORT._https.NAME (RFC 9460 §9.1).`,
			Example: `  v6lab serve dns --listen 127.0.0.1:5353 --listen [::1]:5353 --record www.lab.test=127.0.0.1 --record www.lab.test=::1
  v6lab serve dns --record www.lab.test=::1 --https 'www.lab.test=1 . alpn=h3,h2 port=8443 ipv6hint=::1'
  v6lab serve dns --record www.lab.test=::1 --https 'alias.lab.test=0 www.lab.test.'`,
			Listen:  []string{"127.0.0.1:5353", "[::1]:5353"},
			Require: "record",
		},
		// A DNS server is reached by its address.
		ByAddress: true,
	},
	Real: &proto.Real{Program: "unbound", Package: "unbound", Port: RealPort, Always: true, Start: startReal, ForPaths: realForPaths},
}

// Options are a dns cell's options.
type Options struct {
	proto.Common
	Query      string   `json:"query,omitempty" opt:"query,fileonly"`
	DNSServers []string `json:"dns_servers,omitempty" opt:"dns_servers,flag=server" usage:"DNS server ADDR[:PORT] (repeat: one per family)"`
	Transport  string   `json:"transport,omitempty" opt:"transport,fileonly"`
	// TCP is the probe command's --tcp: transport tcp.
	TCP bool `json:"-" opt:"tcp,flagonly" usage:"send queries over TCP"`
	// Mode is the engine: stub (default) or load.
	Mode string `json:"mode,omitempty" opt:"mode,default=stub" usage:"engine: stub (a socket per query, as a stub resolver) or load (long-lived sockets, queries matched by ID, as dnsperf)"`
	// Expect is the reply that completes a query: answer (default),
	// nodata, nxdomain or any.
	Expect string `json:"expect,omitempty" opt:"expect,default=answer" usage:"the reply that completes a query: answer (NOERROR with a record of the type), nodata, nxdomain or any"`
	// Type is the record type: path (the path's own: A on ipv4, AAAA on
	// the others; the default), A, AAAA, …
	Type string `json:"type,omitempty" opt:"type,default=path" usage:"record type to ask: path (A on ipv4, AAAA on ipv6), A, AAAA, …"`
	// EDNS is the UDP payload size the query advertises (EDNS(0), RFC
	// 6891); 0 sends none (a server then truncates at 512 bytes).
	EDNS int `json:"edns,omitempty" opt:"edns" usage:"EDNS(0) UDP payload size the query advertises, 512 to 65535 (1232 as DNS Flag Day 2020 advised; 4096 lets an answer come in IP fragments); 0: no EDNS"`
	// Resend is a stub's retransmission: the query goes again after
	// this wait without a reply, the wait doubled each time (0: never).
	Resend proto.Duration `json:"resend,omitempty" opt:"resend" usage:"send a UDP query again after this wait without a reply, the wait doubled each time, as a stub resolver does (10ms to 10s; stub mode)"`
}

// EDNS bounds and DNS Flag Day 2020's advice.
const (
	MinEDNS     = 512
	FlagDayEDNS = 1232
	MaxResend   = 10 * time.Second
)

// Check applies dns's rules: with where: hosts a query and the servers to
// ask; transport udp or tcp; the engine (CheckMode); a reply to expect that
// the cell's servers can give (checkExpect).
func (o *Options) Check(where result.Where, given proto.Given) error {
	if where == result.Hosts && (o.Query == "" || len(o.DNSServers) == 0) {
		return proto.Require("the name to look up and the server to ask", "query", "dns_servers")
	}
	if o.Query != "" {
		if err := CheckName(o.Query); err != nil {
			return proto.Errorf("query", "%v", err)
		}
	}
	if o.TCP {
		o.Transport = "tcp"
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
	if err := o.checkEDNS(); err != nil {
		return err
	}
	return proto.CheckDNSServers(o.DNSServers, "", where)
}

// checkEDNS checks the EDNS payload size and the stub's resends.
func (o *Options) checkEDNS() error {
	if o.EDNS != 0 && (o.EDNS < MinEDNS || o.EDNS > 65535) {
		return proto.Errorf("edns", "%d: want a UDP payload size from %d to 65535 (%d as DNS Flag Day 2020 advised), or 0 for no EDNS", o.EDNS, MinEDNS, FlagDayEDNS)
	}
	if o.Resend != 0 {
		switch d := time.Duration(o.Resend); {
		case d < 10*time.Millisecond || d > MaxResend:
			return proto.Errorf("resend", "%v: want 10ms to %v", d, MaxResend)
		case o.Mode == ModeLoad:
			return proto.Errorf("resend", "the load engine sends each query once, as dnsperf does: resend is the stub engine's")
		case o.Transport == "tcp":
			return proto.Errorf("resend", "resends a UDP query; over tcp the connection retransmits")
		}
	}
	return nil
}

// OverUDP says whether the queries go over UDP (proto.Datagrams).
func (o *Options) OverUDP() bool { return o.Transport != "tcp" }

// Fragmented says whether an answer may come in IP fragments: over UDP
// with an EDNS buffer above DNS Flag Day 2020's (proto.Datagrams).
func (o *Options) Fragmented() bool { return o.OverUDP() && o.EDNS > FlagDayEDNS }

// Destination is the query and the servers asked.
func (o *Options) Destination() string {
	servers := strings.Join(o.DNSServers, ", ")
	switch {
	case o.Query != "" && servers != "":
		return o.Query + " at " + servers
	case servers != "":
		return servers
	}
	return o.Query
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
func (o *Options) Target(p path.Path) (proto.Endpoint, error) {
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
func (o *Options) Probe(ep proto.Endpoint, p path.Path) (load.Probe, error) {
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
	return &Client{Name: proto.Or(o.Query, proto.LocalName), Server: srv, Path: p, Type: qt, TCP: o.Transport == "tcp", Source: ep.Source, Mode: o.Mode, Expect: expect,
		EDNS: uint16(o.EDNS), Resend: time.Duration(o.Resend)}, nil
}

// about describes the embedded server.
const about = "embedded (miekg/dns messages; UDP answered on a thread blocked in recvfrom, TCP by miekg/dns)"

// aboutAt adds the views placeZone gives the place's lab-only paths, of
// those the run measures (at.Measured): 6in4's address as the name's
// AAAA on its own address, a DNS64 view on the nat64 path's.
func aboutAt(at proto.Place) string {
	measured := func(p path.Path) bool {
		_, ok := at.Addrs[p]
		return ok && (at.Measured == nil || slices.Contains(at.Measured, p))
	}
	switch six, dns64 := measured(path.SixIn4), measured(path.NAT64); {
	case six && dns64:
		return about + ", a view per tunnel address (DNS64 on the nat64 path's)"
	case six:
		return about + ", a view on the 6in4 path's address (its tunnel address as the AAAA)"
	case dns64:
		return about + ", a DNS64 view on the nat64 path's address"
	}
	return about
}

// ServerSettings are the embedded server's: the records to serve instead
// of the place's name (v6lab serve dns --record).
type ServerSettings struct {
	Records []string `opt:"record" usage:"NAME=ADDR record to serve (repeat)"`
	HTTPS   []string `opt:"https" usage:"NAME=RDATA HTTPS record to serve (RFC 9460 presentation form, e.g. www.lab.test='1 . alpn=h3,h2 port=8443 ipv6hint=::1'; 0 TARGET for an alias; repeat)"`
	SVCB    []string `opt:"svcb" usage:"NAME=RDATA SVCB record to serve (as --https; repeat)"`
}

// services reads the settings' HTTPS and SVCB records, and takes the
// place's https servers for the records of its own names.
func (set *ServerSettings) services(at proto.Place) (*Services, error) {
	svc := &Services{Records: map[string][]mdns.RR{}, Ports: at.HTTPS}
	for _, list := range []struct {
		opt    string
		rrtype uint16
		recs   []string
	}{{"https", mdns.TypeHTTPS, set.HTTPS}, {"svcb", mdns.TypeSVCB, set.SVCB}} {
		for _, r := range list.recs {
			rr, err := ParseService(r, list.rrtype)
			if err != nil {
				return nil, proto.Errorf(list.opt, "%v", err)
			}
			svc.Records[rr.Header().Name] = append(svc.Records[rr.Header().Name], rr)
		}
	}
	return svc, nil
}

// serve answers A and AAAA for the place's name: the native paths'
// addresses (and A alone for proto.V4OnlyName), and on the address of a lab-only path (6in4) a view that
// gives that path's address for its family, so the path looks its name up
// through itself, as in the study. The setting record (NAME=ADDR,
// repeated) serves those records instead.
func serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	zone, views := Zone{}, Views{}
	set, _ := at.Settings.(*ServerSettings)
	if set == nil {
		set = &ServerSettings{}
	}
	for _, r := range set.Records {
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
	svc, err := set.services(at)
	if err != nil {
		return nil, err
	}
	s, err := proto.Listen(at, func(addrs []netip.Addr, port int) (*Server, error) {
		return ListenServices(ctx, zone, views, svc, addrs, port)
	})
	if err != nil {
		return nil, err
	}
	names := zone.Names()
	for _, k := range slices.Sorted(maps.Keys(svc.Records)) {
		if !slices.Contains(names, k) {
			names = append(names, k+" (HTTPS/SVCB only)")
		}
	}
	return running{s, names}, nil
}

// IPv4OnlyArpa is the name whose synthesised AAAA gives a host its NAT64
// prefix (RFC 7050): the DNS64 view answers it.
const IPv4OnlyArpa = "ipv4only.arpa"

// placeZone is the zone of a place's name (and of proto.LargeName, the
// same addresses and a large TXT answer, and of proto.V4OnlyName, its
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
	large(zone, at.Name)
	for _, k := range path.Kinds {
		a, ok := at.Addrs[k.Path]
		if !ok || !k.LabOnly || a == native[k.IPv6] {
			// (464xlat and dslite reach the server's own IPv4 address:
			// its answers are the zone's.)
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
			// RFC 7050: a host finds the prefix by asking the AAAA of
			// this IPv4-only name (its A records are RFC 7050's).
			v.Add(IPv4OnlyArpa, netip.MustParseAddr("192.0.0.170"))
			v.Add(IPv4OnlyArpa, netip.MustParseAddr("192.0.0.171"))
			large(v, at.Name)
			views[a] = v.Synthesize(at.DNS64)
			continue
		}
		v := Zone{}
		if other, ok := native[!k.IPv6]; ok {
			v.Add(at.Name, other)
		}
		v.Add(at.Name, a)
		v4only(v)
		large(v, at.Name)
		views[a] = v
	}
	return zone, views
}

// large gives proto.LargeName the addresses name has in z (its TXT
// records are every view's: Zone.handler).
func large(z Zone, name string) {
	k := mdns.CanonicalName(name)
	for _, a := range z[k] {
		z.Add(proto.LargeName, a)
	}
}

type running struct {
	*Server
	names []string
}

func (r running) Port() int { return r.Server.Port }

func (r running) Detail() string { return fmt.Sprintf("udp, tcp; names %v", r.names) }

// RealPort is the real Unbound's port in the lab's server host.
const RealPort = 53

// realForPaths: a second Unbound, the DNS64 one, where a real cell runs
// over the nat64 path (startReal).
func realForPaths(paths []path.Path) []servers.Program {
	if slices.Contains(paths, path.NAT64) {
		return []servers.Program{{Name: "unbound", Package: "unbound", Role: dns64Role}}
	}
	return nil
}

// dns64Role is the DNS64 Unbound's name in a result's header.
const dns64Role = "dns64"

// startReal starts Unbound as the embedded server answers: the name with
// both families (the tunnel's clients get its address as the AAAA, by a
// view of their prefix) and the IPv4-only name; and, where a cell runs over
// the lab's nat64 path (RealPlace.Paths), a second Unbound whose dns64
// module answers that path's lookups on its DNS64 address.
func startReal(ctx context.Context, at proto.RealPlace) (*proto.RealRunning, error) {
	v4 := at.Addrs[path.IPv4]
	v4only := servers.Record{Name: proto.V4OnlyName, Addr: v4}
	dns64 := at.Addrs[path.NAT64] // the nat64 path's DNS64 view's address
	plain := slices.DeleteFunc(at.Listen(), func(x netip.Addr) bool { return x == dns64 })
	if !slices.Contains(at.Paths, path.NAT64) {
		dns64 = netip.Addr{} // no cell looks up there: no DNS64 Unbound
	}
	records, views, about := realRecords(at)
	ub, err := servers.StartUnbound(ctx, at.Daemon, plain, RealPort, "v6lab.test", records, views)
	if err != nil {
		return nil, err
	}
	run := &proto.RealRunning{Stop: ub.Stop, About: map[string]string{"dns (real)": proto.RealAbout(ub, about)}}
	if dns64.IsValid() {
		d64, err := servers.StartUnboundDNS64(ctx, at.Daemon, dns64, RealPort, "v6lab.test",
			append([]servers.Record{{Name: at.Name, Addr: v4}, v4only}, largeRecords(v4)...), at.DNS64)
		if err != nil {
			ub.Stop()
			return nil, err
		}
		run.Stop = func() { d64.Stop(); ub.Stop() }
		run.Roles = map[string][]string{dns64Role + " (real)": {serverKey}}
		run.About[dns64Role+" (real)"] = fmt.Sprintf("%s in the server namespace on %s: its dns64 module synthesises AAAA under %s for the nat64 path (the name as an IPv4-only host has it)", d64.Version, dns64, at.DNS64)
	}
	return run, nil
}

// realRecords are what Unbound answers, as the embedded server does: the
// name's A and AAAA, the IPv4-only name, the HTTPS records of the place's
// https servers (Place.HTTPS, started before it) with the name's
// addresses as hints, and the large name; and, where a cell runs over the
// lab's 6in4 path, a view for the tunnel's clients giving the tunnel address instead
// (in the AAAA and the hints).
func realRecords(at proto.RealPlace) ([]servers.Record, []servers.View, string) {
	v4, v6 := at.Addrs[path.IPv4], at.Addrs[path.IPv6]
	zone := func(v6 netip.Addr) []servers.Record {
		out := []servers.Record{{Name: at.Name, Addr: v4}, {Name: at.Name, Addr: v6}, {Name: proto.V4OnlyName, Addr: v4}}
		return append(append(out, realHTTPS(at.Place, v4, v6)...), largeRecords(v4, v6)...)
	}
	tun, ok := at.Addrs[path.SixIn4]
	if !ok || !at.Sources[path.SixIn4].IsValid() || !slices.Contains(at.Paths, path.SixIn4) {
		return zone(v6), nil, ""
	}
	view := servers.View{Name: "tunnel", Clients: netip.PrefixFrom(at.Sources[path.SixIn4], 64).Masked(), Records: zone(tun)}
	return zone(v6), []servers.View{view}, ", a view for the tunnel's clients"
}

// largeRecords are proto.LargeName's records on a real server: addrs,
// and the TXT records of its large answer.
func largeRecords(addrs ...netip.Addr) []servers.Record {
	var out []servers.Record
	for _, a := range addrs {
		out = append(out, servers.Record{Name: proto.LargeName, Addr: a})
	}
	for _, t := range proto.LargeTXT() {
		out = append(out, servers.Record{Name: proto.LargeName, TXT: t})
	}
	return out
}
