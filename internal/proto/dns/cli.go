package dns

import "v6lab/internal/proto"

// Command is dns's face on the command line: v6lab probe dns and
// v6lab serve dns.
func (Protocol) Command() proto.Command {
	return proto.Command{
		Arg:   "NAME",
		Short: "Measure DNS query response time over each path",
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
  v6lab probe dns www.example.test --server 127.0.0.1:5353 --paths ipv4 --type AAAA --conns 1,100
  v6lab probe dns www.example.test --server [::1]:5353 --paths ipv6 --tcp
  v6lab probe dns nosuch.example.test --server 127.0.0.1:5353 --paths ipv4 --expect nxdomain
  v6lab probe dns www.example.test --server 127.0.0.1:5353 --paths ipv4 --mode load --conns 100 --duration 10s`,
		Flags: []proto.Flag{
			{Name: "server", Option: "dns_servers", Kind: proto.KindList, Default: "", Usage: "DNS server ADDR[:PORT] (repeat: one per family)"},
			{Name: "type", Option: "type", Kind: proto.KindString, Default: "path", Usage: "record type to ask: path (A on ipv4, AAAA on ipv6), A, AAAA, …"},
			{Name: "tcp", Option: "transport", Kind: proto.KindBool, Default: "false", Usage: "send queries over TCP"},
			{Name: "expect", Option: "expect", Kind: proto.KindString, Default: ExpectAnswer, Usage: "the reply that completes a query: answer (NOERROR with a record of the type), nodata, nxdomain or any"},
			{Name: "mode", Option: "mode", Kind: proto.KindString, Default: "stub", Usage: "engine: stub (a socket per query, as a stub resolver) or load (long-lived sockets, queries matched by ID, as dnsperf)"},
		},
		Serve: proto.ServeCommand{
			Short: "Serve A and AAAA records over UDP and TCP on both families",
			Long: `serve dns answers A and AAAA queries for the names given with --record NAME=ADDR
(repeat; an IPv4 address makes an A record, an IPv6 one an AAAA record), over UDP and
TCP on every --listen address, until interrupted. Unknown names get NXDOMAIN; a known
name without the asked type gets an empty answer.`,
			Example: `  v6lab serve dns --listen 127.0.0.1:5353 --listen [::1]:5353 --record www.lab.test=127.0.0.1 --record www.lab.test=::1`,
			Listen:  []string{"127.0.0.1:5353", "[::1]:5353"},
			Flags: []proto.Flag{
				{Name: "record", Option: "record", Kind: proto.KindList, Default: "", Usage: "NAME=ADDR record to serve (repeat)"},
			},
			Require: "record",
		},
	}
}

// SetArg puts the probe command's NAME into the options.
func (Protocol) SetArg(o *proto.Options, arg string) { o.Query = arg }
