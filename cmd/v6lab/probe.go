package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	mdns "github.com/miekg/dns"
	"github.com/spf13/cobra"

	"v6lab/internal/experiment"
	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/proto/ftp"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/units"
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

// resolverFor is the resolver for host: none for an IP literal, else the
// one the flags describe, and where its servers came from.
func (d *dnsFlags) resolverFor(host string) (*path.Resolver, string, error) {
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return &path.Resolver{}, "none (IP literal)", nil
	}
	return d.resolver()
}

func (d *dnsFlags) resolver() (*path.Resolver, string, error) {
	r := &path.Resolver{}
	src := "--dns-server"
	for _, s := range d.servers {
		ap, err := path.ParseServer(s)
		if err != nil {
			return nil, "", fmt.Errorf("--dns-server: %w", err)
		}
		r.Servers = append(r.Servers, ap)
	}
	if len(r.Servers) == 0 {
		sys, err := path.SystemServers()
		if err != nil {
			return nil, "", err
		}
		r.Servers, src = sys, "/etc/resolv.conf"
	}
	switch d.over {
	case "", "path":
	case "ipv4", "ipv6":
		r.Over = path.Path(d.over)
	default:
		return nil, "", fmt.Errorf("--dns-over: %q is not path, ipv4 or ipv6", d.over)
	}
	return r, src, nil
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
			u, err := httpp.ParseURL(args[0])
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			spec, err := lf.spec("http", "http", u.String())
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			var mb int64
			if maxBody != "" {
				if mb, err = units.ParseSize(maxBody); err != nil || mb <= 0 {
					return &exitError{code: 2, err: fmt.Errorf("--max-body: bad size %q", maxBody)}
				}
			}
			if _, err := httpp.TLSGroups(tlsGroups); err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--tls-groups: %w", err)}
			}
			used, err := (&httpp.Client{URL: u, Objects: !noObjects, Engine: httpp.Engine(strings.TrimPrefix(engine, "auto"))}).EngineUsed()
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--engine: %w", err)}
			}
			res, src, err := df.resolverFor(strings.Trim(u.Hostname(), "[]"))
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			spec.Params = map[string]string{"dns_servers": fmt.Sprint(res.Servers), "dns_source": src,
				"dns_over": orDefault(df.over, "path"), "objects": fmt.Sprint(!noObjects), "engine": string(used), "tls_resume": fmt.Sprint(tlsResume), "tls_groups": orDefault(tlsGroups, httpp.GroupsClassic)}
			_, err = execute(cmd, job{
				exp:     experiment.Single(spec, "hosts"),
				probe:   anyCell(experiment.HTTPProbes{URL: u, Resolver: res, Objects: !noObjects, MaxBody: mb, Insecure: insecure, TLSResume: tlsResume, TLSGroups: tlsGroups, Engine: used}.Probe),
				target:  "remote",
				servers: map[string]string{"http": u.Host},
				results: lf.results,
			})
			return err
		},
	}
	lf.register(cmd, "1,10,100", 11)
	fl := cmd.Flags()
	df.register(cmd)
	fl.BoolVar(&noObjects, "no-objects", false, "fetch only the URL, not the page's embedded objects")
	fl.BoolVar(&insecure, "insecure", false, "accept any TLS certificate")
	fl.StringVar(&tlsGroups, "tls-groups", httpp.GroupsClassic, "https key exchange offered: classic (X25519, P-256, as OpenSSL 3.0's wrk, h2load and curl) or pq (X25519MLKEM768 first, as Go's and current browsers' defaults; more CPU per handshake)")
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
			spec, err := lf.spec("dns", "dns", args[0])
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if len(servers) == 0 {
				return &exitError{code: 2, err: fmt.Errorf("--server is required (one per family measured)")}
			}
			if err := experiment.CheckDNSMode(mode, tcp); err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--mode: %w", err)}
			}
			d := experiment.DNSProbes{Name: args[0], TCP: tcp, Mode: mode}
			for _, s := range servers {
				ap, err := path.ParseServer(s)
				if err != nil {
					return &exitError{code: 2, err: fmt.Errorf("--server: %w", err)}
				}
				d.Servers = append(d.Servers, ap)
			}
			switch t := strings.ToUpper(qtype); t {
			case "", "PATH":
			default:
				v, ok := mdns.StringToType[t]
				if !ok {
					return &exitError{code: 2, err: fmt.Errorf("--type: unknown record type %q", qtype)}
				}
				d.Type = v
			}
			for _, p := range spec.Paths {
				if _, err := d.Probe(p); err != nil {
					return &exitError{code: 2, err: fmt.Errorf("path %s: %w", p, err)}
				}
			}
			spec.Params = map[string]string{"servers": fmt.Sprint(d.Servers), "type": orDefault(qtype, "path"), "tcp": fmt.Sprint(tcp), "mode": orDefault(mode, "stub")}
			_, err = execute(cmd, job{exp: experiment.Single(spec, "hosts"), probe: anyCell(d.Probe), target: "remote",
				servers: map[string]string{"dns": fmt.Sprint(d.Servers)}, results: lf.results})
			return err
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

// anyCell adapts a per-path probe factory to an experiment of one cell group.
func anyCell(f func(path.Path) (load.Probe, error)) func(*experiment.Spec, path.Path) (load.Probe, error) {
	return func(_ *experiment.Spec, p path.Path) (load.Probe, error) { return f(p) }
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
			u, err := experiment.ParseFTPURL(args[0])
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			spec, err := lf.spec("ftp", "ftp", args[0])
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			res, src, err := df.resolverFor(strings.Trim(u.Host, "[]"))
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			spec.Params = map[string]string{"dns_servers": fmt.Sprint(res.Servers), "dns_source": src,
				"dns_over": orDefault(df.over, "path"), "mode": map[bool]string{false: "passive", true: "active"}[active]}
			probe := func(p path.Path) (load.Probe, error) {
				return &ftp.Client{Host: u.Host, Port: u.Port, File: u.File, User: u.User, Password: u.Password,
					Path: p, Resolver: res, Active: active}, nil
			}
			_, err = execute(cmd, job{exp: experiment.Single(spec, "hosts"), probe: anyCell(probe), target: "remote",
				servers: map[string]string{"ftp": fmt.Sprintf("%s:%d", u.Host, u.Port)}, results: lf.results})
			return err
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
			host, port, err := hostPort(args[0], 25)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if size < 0 || size > smtp.MaxMessage {
				return &exitError{code: 2, err: fmt.Errorf("--size: want 0 to %d bytes", smtp.MaxMessage)}
			}
			spec, err := lf.spec("smtp", "smtp", args[0])
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			res, src, err := df.resolverFor(host)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			var tlsCfg *tls.Config
			if insecure {
				tlsCfg = &tls.Config{InsecureSkipVerify: true}
			}
			spec.Params = map[string]string{"dns_servers": fmt.Sprint(res.Servers), "dns_source": src, "from": from, "to": to,
				"size": fmt.Sprint(size), "starttls": fmt.Sprint(startTLS)}
			probe := func(p path.Path) (load.Probe, error) {
				return &smtp.Client{Host: host, Port: port, Path: p, Resolver: res, From: from, To: to, Size: size,
					StartTLS: startTLS, TLS: tlsCfg}, nil
			}
			_, err = execute(cmd, job{exp: experiment.Single(spec, "hosts"), probe: anyCell(probe), target: "remote",
				servers: map[string]string{"smtp": fmt.Sprintf("%s:%d", host, port)}, results: lf.results})
			return err
		},
	}
	lf.register(cmd, "1,10,100", 11)
	fl := cmd.Flags()
	df.register(cmd)
	fl.StringVar(&from, "from", "v6lab@v6lab.test", "envelope sender")
	fl.StringVar(&to, "to", "user%d@v6lab.test", "envelope recipient (%d: the simulated user's number)")
	fl.IntVar(&size, "size", smtp.DefaultMessageSize, "message body size in bytes")
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
			host, port, err := hostPort(args[0], 143)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if users < 1 {
				return &exitError{code: 2, err: fmt.Errorf("--users must be at least 1")}
			}
			if strings.Count(userFormat, "%d") != 1 {
				return &exitError{code: 2, err: fmt.Errorf("--user-format %q must hold %%d once", userFormat)}
			}
			spec, err := lf.spec("imap", "imap", args[0])
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			res, src, err := df.resolverFor(host)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			spec.Params = map[string]string{"dns_servers": fmt.Sprint(res.Servers), "dns_source": src, "users": fmt.Sprint(users), "user_format": userFormat}
			probe := func(p path.Path) (load.Probe, error) {
				return &imap.Client{Host: host, Port: port, Path: p, Resolver: res, Users: users, UserFormat: userFormat, Password: password}, nil
			}
			_, err = execute(cmd, job{exp: experiment.Single(spec, "hosts"), probe: anyCell(probe), target: "remote",
				servers: map[string]string{"imap": fmt.Sprintf("%s:%d", host, port)}, results: lf.results})
			return err
		},
	}
	lf.register(cmd, "1,10,100", 11)
	fl := cmd.Flags()
	df.register(cmd)
	fl.IntVar(&users, "users", imap.DefaultUsers, "users on the server: simulated user i logs in as user (i mod users)+1")
	fl.StringVar(&userFormat, "user-format", "user%d", "user names, %d being the user's number")
	fl.StringVar(&password, "password", imap.Password, "every user's password")
	return cmd
}

// hostPort reads HOST, HOST:PORT, IP, IP:PORT or [IPV6]:PORT; the port is
// def unless given.
func hostPort(arg string, def int) (string, int, error) {
	if ap, err := netip.ParseAddrPort(arg); err == nil {
		return ap.Addr().String(), int(ap.Port()), nil
	}
	if h, p, err := net.SplitHostPort(arg); err == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n < 1 || n > 65535 {
			return "", 0, fmt.Errorf("%q: bad port", arg)
		}
		return strings.Trim(h, "[]"), n, nil
	}
	return strings.Trim(arg, "[]"), def, nil
}
