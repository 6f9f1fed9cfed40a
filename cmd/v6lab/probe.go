package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"v6lab/internal/experiment"
	"v6lab/internal/measure"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
)

func newProbeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Measure a real host: HTTP transactions or DNS queries over each path",
		Example: `  v6lab probe http http://www.example.test/ --conns 1,10,100 --runs 11
  v6lab probe dns www.example.test --server 192.0.2.53 --server [2001:db8::53]:53`,
	}
	cmd.AddCommand(newProbeHTTPCmd(), newProbeDNSCmd(), newProbeFTPCmd(), newProbeSMTPCmd(), newProbeIMAPCmd())
	return cmd
}

// dnsFlags choose the DNS server and the family the query travels over.
type dnsFlags struct {
	servers []string
	over    string
}

func (d *dnsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&d.servers, "dns-server", nil, "DNS server ADDR[:PORT] to ask (repeat for each family; default: /etc/resolv.conf)")
	fl.StringVar(&d.over, "dns-over", "path", "family that carries the DNS query: path, ipv4 or ipv6")
}

// options puts the flags into a cell's options.
func (d *dnsFlags) options(o *proto.Options) {
	o.DNSServers, o.Probe.DNSOver = d.servers, d.over
}

// probeTarget is a probe command's measurement of a server it names: the
// cell's options checked by the protocol as an experiment file's are
// (flags names the flag of each option), every path's server found, then
// run.
type probeTarget struct {
	lf       *loadFlags
	name     string
	target   string
	opts     proto.Options
	flags    map[string]string
	params   map[string]string
	describe string
}

func (pt probeTarget) run(cmd *cobra.Command) error {
	spec, err := pt.lf.spec(pt.name, pt.name, pt.target)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	spec.Options = pt.opts
	p := all.MustGet(pt.name)
	given := func(opt string) bool {
		f, ok := pt.flags[opt]
		return ok && cmd.Flags().Changed(f)
	}
	if err := p.Check(&spec.Options, "hosts", given); err != nil {
		return &exitError{code: 2, err: flagError(err, pt.flags)}
	}
	var first proto.Endpoint
	for i, path := range spec.Paths {
		ep, err := p.Target(&spec.Options, path)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("path %s: %w", path, err)}
		}
		if i == 0 {
			first = ep
		}
	}
	spec.Params = pt.params
	if spec.Params == nil {
		spec.Params = map[string]string{}
	}
	if _, ok := pt.flags["dns_servers"]; ok && pt.name != "dns" {
		spec.Params["dns_servers"], spec.Params["dns_source"] = fmt.Sprint(first.DNS), dnsSource(first, spec.Options)
		spec.Params["dns_over"] = orDefault(spec.Options.Probe.DNSOver, "path")
	}
	_, err = execute(cmd, measure.Job{Exp: experiment.Single(spec, "hosts"), Probe: experiment.Probes(nil), Target: "remote",
		Servers: map[string]string{pt.name: pt.describe}, Results: pt.lf.results})
	return err
}

// dnsSource says where the DNS servers of ep came from.
func dnsSource(ep proto.Endpoint, o proto.Options) string {
	switch {
	case len(ep.DNS) == 0:
		return "none (IP literal)"
	case len(o.DNSServers) > 0:
		return "--dns-server"
	}
	return "/etc/resolv.conf"
}

// flagError names the flag of a bad option.
func flagError(err error, flags map[string]string) error {
	oe, ok := proto.AsOptionError(err)
	if !ok || oe.Option == "" {
		return err
	}
	name, _, _ := strings.Cut(oe.Option, "[")
	if f, ok := flags[name]; ok {
		return fmt.Errorf("--%s: %w", f, oe.Err)
	}
	return err
}

// dnsFlagNames are the flags of the options every named-host probe takes.
func dnsFlagNames(more map[string]string) map[string]string {
	m := map[string]string{"dns_servers": "dns-server", "dns_over": "dns-over"}
	for k, v := range more {
		m[k] = v
	}
	return m
}

func newProbeHTTPCmd() *cobra.Command {
	var lf loadFlags
	var df dnsFlags
	var noObjects, insecure, tlsResume bool
	var maxBody, engine, tlsGroups string
	cmd := &cobra.Command{
		Use:   "http URL",
		Short: "Measure HTTP(S) page retrieval, DNS lookup included, over each path",
		Long: `probe http times full page retrievals of URL: the host name is looked up once per
transaction with the record type of the path (A for ipv4, AAAA for ipv6) by asking a
DNS server directly over --dns-over, then a new connection pinned to the path fetches
the page and its embedded objects on the same host; the transaction ends when every
byte has arrived with status 200. A host without an A or AAAA record fails that path
with a clear error; there is never a fallback to the other family.`,
		Example: `  v6lab probe http http://www.example.test/ --paths ipv4,ipv6 --conns 1,10,100 --runs 11
  v6lab probe http https://www.example.test/ --dns-over ipv4 --dns-server 192.0.2.53
  v6lab probe http http://[2001:db8::80]:8080/files/1M --paths ipv6 --no-objects
  v6lab probe http http://127.0.0.1:8080/ --paths ipv4 --conns 10 --runs 1 --warmup 0 --duration 10s`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := proto.Options{URL: args[0], Probe: proto.ProbeSettings{NoObjects: noObjects, Insecure: insecure, TLSResume: tlsResume,
				TLSGroups: tlsGroups, MaxBody: maxBody, Engine: engine}}
			df.options(&o)
			host := args[0]
			if u, err := url.Parse(args[0]); err == nil {
				host = u.Host
			}
			return probeTarget{lf: &lf, name: "http", target: args[0], opts: o, describe: host,
				flags: dnsFlagNames(map[string]string{"max_body": "max-body", "tls_groups": "tls-groups", "engine": "engine"}),
				params: map[string]string{"objects": fmt.Sprint(!noObjects), "engine": all.HTTPEngine(&o),
					"tls_resume": fmt.Sprint(tlsResume), "tls_groups": orDefault(tlsGroups, "classic")}}.run(cmd)
		},
	}
	lf.register(cmd, "1,10,100", 11)
	fl := cmd.Flags()
	df.register(cmd)
	fl.BoolVar(&noObjects, "no-objects", false, "fetch only the URL, not the page's embedded objects")
	fl.BoolVar(&insecure, "insecure", false, "accept any TLS certificate")
	fl.StringVar(&tlsGroups, "tls-groups", "classic", "https key exchange offered: classic (X25519, P-256, as OpenSSL 3.0's wrk, h2load and curl) or pq (X25519MLKEM768 first, as Go's and current browsers' defaults; more CPU per handshake)")
	fl.BoolVar(&tlsResume, "tls-resume", false, "https: users resume TLS sessions with the server's tickets (returning users, as browsers, wrk and h2load); off: every handshake is full (new users, as MITRE's); each sample's marker says which it got")
	fl.StringVar(&maxBody, "max-body", "", "largest body accepted per response (e.g. 64M; default 4G)")
	fl.StringVar(&engine, "engine", "auto", "connection engine: evloop (v6lab's epoll loop: plain http, --no-objects), go (Go's net package: anything), auto (evloop where it applies)")
	return cmd
}

func newProbeDNSCmd() *cobra.Command {
	var lf loadFlags
	var servers []string
	var qtype, mode string
	var tcp bool
	cmd := &cobra.Command{
		Use:   "dns NAME",
		Short: "Measure DNS query response time over each path",
		Long: `probe dns times DNS queries for NAME, each on a new socket pinned to the path, sent to
the --server of that path's family. The record type is the path's own (A on ipv4, AAAA on
ipv6) unless --type says otherwise. A query completes on a matching NOERROR reply that
holds a record of the asked type; NXDOMAIN, SERVFAIL or an empty answer fail it.

Two engines (--mode): stub, the default, sends each query on a socket of its own, as a
stub resolver (glibc's) does, so its time includes what an application's lookup costs;
load keeps a few long-lived UDP sockets per path with every user's query in flight at
once, replies matched by ID, as dnsperf does: a load generator that still times every
query (from the send to the read that received its reply) and pins the family.`,
		Example: `  v6lab probe dns www.example.test --server 192.0.2.53 --server 2001:db8::53
  v6lab probe dns www.example.test --server 127.0.0.1:5353 --paths ipv4 --type AAAA --conns 1,100
  v6lab probe dns www.example.test --server [::1]:5353 --paths ipv6 --tcp
  v6lab probe dns www.example.test --server 127.0.0.1:5353 --paths ipv4 --mode load --conns 100 --duration 10s`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(servers) == 0 {
				return &exitError{code: 2, err: fmt.Errorf("--server is required (one per family measured)")}
			}
			o := proto.Options{Query: args[0], DNSServers: servers, Mode: mode, Probe: proto.ProbeSettings{Type: qtype}}
			if tcp {
				o.Transport = "tcp"
			}
			return probeTarget{lf: &lf, name: "dns", target: args[0], opts: o, describe: fmt.Sprint(servers),
				flags:  map[string]string{"dns_servers": "server", "mode": "mode", "type": "type", "transport": "tcp"},
				params: map[string]string{"servers": fmt.Sprint(servers), "type": orDefault(qtype, "path"), "tcp": fmt.Sprint(tcp), "mode": orDefault(mode, "stub")}}.run(cmd)
		},
	}
	lf.register(cmd, "1,10,100", 11)
	fl := cmd.Flags()
	fl.StringArrayVar(&servers, "server", nil, "DNS server ADDR[:PORT] (repeat: one per family)")
	fl.StringVar(&qtype, "type", "path", "record type to ask: path (A on ipv4, AAAA on ipv6), A, AAAA, …")
	fl.BoolVar(&tcp, "tcp", false, "send queries over TCP")
	fl.StringVar(&mode, "mode", "stub", "engine: stub (a socket per query, as a stub resolver) or load (long-lived sockets, queries matched by ID, as dnsperf)")
	return cmd
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func newProbeFTPCmd() *cobra.Command {
	var lf loadFlags
	var df dnsFlags
	var active bool
	cmd := &cobra.Command{
		Use:   "ftp URL",
		Short: "Measure FTP file retrieval, DNS lookup included, over each path",
		Long: `probe ftp times file retrievals from URL (ftp://[user[:password]@]host[:port]/file): the
host name is looked up with the path's record type, a new control connection pinned to
the path logs in (anonymous unless the URL names a user), asks SIZE, opens a passive data
connection (EPSV on IPv6, PASV on IPv4, RFC 2428; a PASV reply naming another host is
refused), retrieves the file, and the transaction ends on the 226 reply with every byte
in. --active uses EPRT/PORT instead.`,
		Example: `  v6lab probe ftp ftp://ftp.example.test/pub/1M --paths ipv4,ipv6 --conns 1,10,100 --runs 11
  v6lab probe ftp ftp://v6lab:secret@127.0.0.1:2121/1M --paths ipv4 --active`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := proto.Options{URL: args[0], Active: active}
			df.options(&o)
			return probeTarget{lf: &lf, name: "ftp", target: args[0], opts: o, describe: args[0], flags: dnsFlagNames(nil),
				params: map[string]string{"mode": map[bool]string{false: "passive", true: "active"}[active]}}.run(cmd)
		},
	}
	lf.register(cmd, "1,10,100", 11)
	fl := cmd.Flags()
	df.register(cmd)
	fl.BoolVar(&active, "active", false, "active mode: EPRT/PORT, the server connects back")
	return cmd
}

func newProbeSMTPCmd() *cobra.Command {
	var lf loadFlags
	var df dnsFlags
	var from, to string
	var size int
	var startTLS, insecure bool
	cmd := &cobra.Command{
		Use:   "smtp HOST[:PORT]",
		Short: "Measure SMTP mail submission, DNS lookup included, over each path",
		Long: `probe smtp times sending one message per transaction to HOST (port 25 unless given): the
name is looked up with the path's record type, a new connection pinned to the path reads
the greeting, then EHLO, MAIL FROM, RCPT TO and DATA; the transaction ends on the server's
250 acceptance of the message ("250 ok queued as …"). A refusal at any step (4xx, 5xx)
is a failed transaction that keeps the server's reply. --to may hold %d, replaced by the
simulated user's number.`,
		Example: `  v6lab probe smtp mx.example.test --paths ipv4,ipv6 --conns 1,10,100,500 --to postmaster@example.test
  v6lab probe smtp 127.0.0.1:2525 --paths ipv4 --to 'user%d@v6lab.test' --size 64000
  v6lab probe smtp mx.example.test:587 --starttls`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := proto.Options{URL: proto.ServerURL("smtp", args[0]), From: from, To: to, Size: size, StartTLS: startTLS,
				Probe: proto.ProbeSettings{Insecure: insecure}}
			df.options(&o)
			return probeTarget{lf: &lf, name: "smtp", target: args[0], opts: o, describe: args[0],
				flags:  dnsFlagNames(map[string]string{"from": "from", "to": "to", "size": "size"}),
				params: map[string]string{"from": from, "to": to, "size": fmt.Sprint(size), "starttls": fmt.Sprint(startTLS)}}.run(cmd)
		},
	}
	lf.register(cmd, "1,10,100", 11)
	fl := cmd.Flags()
	df.register(cmd)
	fl.StringVar(&from, "from", "v6lab@v6lab.test", "envelope sender")
	fl.StringVar(&to, "to", "user%d@v6lab.test", "envelope recipient (%d: the simulated user's number)")
	fl.IntVar(&size, "size", 4096, "message body size in bytes")
	fl.BoolVar(&startTLS, "starttls", false, "upgrade with STARTTLS before MAIL FROM")
	fl.BoolVar(&insecure, "insecure", false, "with --starttls: accept any certificate")
	return cmd
}

func newProbeIMAPCmd() *cobra.Command {
	var lf loadFlags
	var df dnsFlags
	var users int
	var userFormat, password string
	cmd := &cobra.Command{
		Use:   "imap HOST[:PORT]",
		Short: "Measure IMAP mail retrieval, DNS lookup included, over each path",
		Long: `probe imap times mail retrievals from HOST (port 143 unless given): the name is looked up
with the path's record type, then simulated user i logs in as its own user (--user-format
with i mod --users + 1), selects INBOX and fetches message 1; the transaction ends on the
tagged OK of the FETCH. Literal sizes are checked against what arrives and bounded.`,
		Example: `  v6lab probe imap 127.0.0.1:1143 --paths ipv4 --conns 1,10,100,200 --users 500
  v6lab probe imap mail.example.test --user-format 'test%d' --password secret --users 50`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := proto.Options{URL: proto.ServerURL("imap", args[0]), Users: users, UserFormat: userFormat, Password: password}
			df.options(&o)
			return probeTarget{lf: &lf, name: "imap", target: args[0], opts: o, describe: args[0],
				flags:  dnsFlagNames(map[string]string{"users": "users", "user_format": "user-format", "password": "password"}),
				params: map[string]string{"users": fmt.Sprint(users), "user_format": userFormat}}.run(cmd)
		},
	}
	lf.register(cmd, "1,10,100", 11)
	fl := cmd.Flags()
	df.register(cmd)
	fl.IntVar(&users, "users", 500, "users on the server: simulated user i logs in as user (i mod users)+1")
	fl.StringVar(&userFormat, "user-format", "user%d", "user names, %d being the user's number")
	fl.StringVar(&password, "password", "v6lab", "every user's password")
	return cmd
}
