package proto

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"v6lab/internal/gen/load"
	"v6lab/internal/input/units"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Options are a cell's options: a pointer to its protocol's own struct,
// which embeds Common and names its options with tags (Fields). They know
// how to check themselves, where the server they name is, and how to make
// the probe; Common gives the rest their defaults.
type Options interface {
	// Check checks the options as the user gave them (given says which)
	// for where the cell runs, and completes them (defaults, decoded
	// values). Its errors name the option: *OptionError.
	Check(where result.Where, given Given) error
	// Target is the server the cell names itself (where: hosts, or a
	// probe command) as seen from path p.
	Target(p path.Path) (Endpoint, error)
	// Probe makes the cell's probe over path p to the server at ep.
	Probe(ep Endpoint, p path.Path) (load.Probe, error)

	// Base is the Common the options embed.
	Base() *Common
	// PathFit says why the checked options cannot run over p where the
	// cell runs (a reply only some paths' queries get).
	PathFit(where result.Where, p path.Path) error
	// Timing says what the cell times when it is not v6lab's own
	// transaction (a trial its transfer, curl its download), for the
	// result's notes; "" for a transaction.
	Timing() string
	// ServerFor names the embedded server that answers the cell when the
	// options choose one ("": the protocol's own; http's tls: https).
	ServerFor() string
	// Destination says where the cell sends its transactions when it
	// names its server (a url, the DNS servers that name it); "" when
	// v6lab chooses the server. Named gives it.
	Destination() string
	// Length is a transport trial's length (omit and time); 0 for
	// transactions. A trial's timeout follows it.
	Length() time.Duration
	// Estimate is what one run of the cell at conns connections takes
	// beyond its transactions' turns, on links of rate bits/s (0:
	// unshaped): a file's transfer, a trial's length.
	Estimate(conns int, rate uint64) time.Duration
	// AttemptDelay is the dual path's Happy Eyeballs attempt delay (0:
	// the protocol does not race the families).
	AttemptDelay() time.Duration
	// PerUser is how many transactions each user runs at once (HTTP/2's
	// streams, as h2load's -m: load.Multiplexer); 1 for most cells.
	PerUser() int
	// Scale shrinks what one transaction carries by f (0 < f ≤ 1), for
	// run --scale: files get smaller, trials shorter.
	Scale(f float64)
	// Settle is the options of a quick transaction that warms path p
	// before the first run (a small file, a short trial; nil: the cell's
	// own), or false to leave the path unsettled (it is known to fail,
	// and its runs say why).
	Settle(p path.Path) (Options, bool)
	// Notes say what a result measuring the cell over paths must tell its
	// reader.
	Notes(paths []path.Path) []string
	// Record is what a probe command's result records of the options,
	// units spelled out (nil: the flags as given).
	Record() map[string]string
}

// Common is what every protocol's options embed: what the run derives
// for a cell, and (a level down, so that the protocol's own methods and
// those of Named, TLSClient and Fetch win) the defaults of Options'
// optional behaviour.
type Common struct {
	// RacesFamilies says the cell also measures a path that races the
	// families (dual), whose client is Go's net package: its pinned
	// paths then run there too, so the cell compares paths, not engines.
	// Derived from the cell's paths, never given.
	RacesFamilies bool `json:"-"`
	defaults
}

// Base is the Common itself.
func (c *Common) Base() *Common { return c }

// defaults are Options' optional behaviour where a protocol has none.
type defaults struct{}

// PathFit: every path fits.
func (defaults) PathFit(result.Where, path.Path) error { return nil }

// Timing: a transaction, timed as one.
func (defaults) Timing() string { return "" }

// ServerFor: the protocol's own server.
func (defaults) ServerFor() string { return "" }

// Length: a transaction, not a trial.
func (defaults) Length() time.Duration { return 0 }

// PerUser: one transaction at a time.
func (defaults) PerUser() int { return 1 }

// Estimate: nothing beyond the transactions' turns.
func (defaults) Estimate(int, uint64) time.Duration { return 0 }

// AttemptDelay: the protocol does not race the families.
func (defaults) AttemptDelay() time.Duration { return 0 }

// Scale: nothing to shrink.
func (defaults) Scale(float64) {}

// Settle: the cell's own transaction settles every path.
func (defaults) Settle(path.Path) (Options, bool) { return nil, true }

// Notes: nothing to tell.
func (defaults) Notes([]path.Path) []string { return nil }

// Record: the flags as given.
func (defaults) Record() map[string]string { return nil }

// Fetch is the option of a cell that retrieves a generated file, whose
// name is its size (1M, 64K, 5879824).
type Fetch struct {
	File string `json:"file,omitempty" opt:"file,fileonly"`
}

// Estimate is the file's transfer at conns connections sharing rate.
func (f *Fetch) Estimate(conns int, rate uint64) time.Duration { return FileTime(f.File, conns, rate) }

// Scale makes the file smaller.
func (f *Fetch) Scale(x float64) { f.File = ScaleFile(f.File, x) }

// Named are the options of a protocol whose cells may name their server
// (where: hosts, the probe commands): its url, the DNS servers that look
// its name up, and the family that carries the lookup.
type Named struct {
	URL        string   `json:"url,omitempty" opt:"url,fileonly"`
	DNSServers []string `json:"dns_servers,omitempty" opt:"dns_servers,flag=dns-server" usage:"DNS server ADDR[:PORT] to ask (repeat for each family; a link-local one with its zone, [fe80::1%eth0]:53; default: /etc/resolv.conf, whose options timeout:N attempts:N then set the resends)"`
	// DNSOver pins the family that carries the lookup (path, ipv4, ipv6).
	DNSOver string `json:"-" opt:"dns_over,flagonly,default=path" usage:"family that carries the DNS query: path, ipv4 or ipv6"`
	// Resolve gives names their addresses, as curl's --resolve: the name
	// stays in the url (Host header, SNI), no lookup is made or timed.
	Resolve []string `json:"resolve,omitempty" opt:"resolve" usage:"NAME=ADDR[,ADDR]: connect to ADDR (the one of the path's family) for NAME without asking DNS, as curl --resolve; NAME stays in the Host header and SNI, and the lookup is timed as 0 (repeat)"`
}

// Hosts reads resolve: each name (lowercase) and its addresses.
func (n *Named) Hosts() (map[string][]netip.Addr, error) {
	if len(n.Resolve) == 0 {
		return nil, nil
	}
	out := map[string][]netip.Addr{}
	for i, r := range n.Resolve {
		name, list, ok := strings.Cut(r, "=")
		at := fmt.Sprintf("resolve[%d]", i)
		if !ok || name == "" || list == "" || strings.IndexFunc(name, func(c rune) bool { return c <= ' ' || c == 0x7f || c == '/' || c == ':' }) >= 0 {
			if split := n.splitEntry(i); split != "" {
				return nil, Errorf(at, "%q is an address alone, after resolve[%d]'s %s: one entry split at its comma, as YAML splits an unquoted [NAME=ADDR,ADDR]; quote the entry: [%q]", r, i-1, n.Resolve[i-1], split)
			}
			return nil, Errorf(at, "%q: want NAME=ADDR[,ADDR], such as www.example.org=192.0.2.1,2001:db8::1 (a name without blanks or control characters; in a file, quoted: [\"www.example.org=192.0.2.1,2001:db8::1\"])", r)
		}
		for _, s := range strings.Split(list, ",") {
			a, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(s), "[]"))
			if err != nil {
				return nil, Errorf(at, "%q is not an address", s)
			}
			key := strings.ToLower(strings.TrimSuffix(name, "."))
			out[key] = append(out[key], a.Unmap())
		}
	}
	return out, nil
}

// splitEntry is resolve[i] joined back to the NAME=ADDR entry before it
// when resolve[i] is an address alone (a list YAML split at its comma),
// else "".
func (n *Named) splitEntry(i int) string {
	if i == 0 || !strings.Contains(n.Resolve[i-1], "=") {
		return ""
	}
	if _, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(n.Resolve[i]), "[]")); err != nil {
		return ""
	}
	return n.Resolve[i-1] + "," + n.Resolve[i]
}

// Endpoint is where host is on path p as the options say: given by
// resolve, or looked up by the DNS servers given (or the system's) over
// the family dns_over pins.
func (n *Named) Endpoint(host string, p path.Path) (Endpoint, error) {
	hosts, _, err := n.hostFit(host, p, "--resolve")
	if err != nil {
		return Endpoint{}, err
	}
	e := Endpoint{Host: host, DNSOver: n.Over(), Hosts: hosts}
	if _, given := hosts[strings.ToLower(strings.TrimSuffix(host, "."))]; given {
		return e, nil // not looked up: no DNS server needed
	}
	rc, err := HostResolver(host, n.DNSServers, e.DNSOver, p)
	e.DNS, e.DNSStub = rc.Servers, rc.Stub
	return e, err
}

// HostFitter is options whose url names a host that every path of the
// cell must reach (Named): an experiment file (where: hosts) checks it
// when it is read, as a probe command does before it runs.
type HostFitter interface {
	HostFit(p path.Path) error
}

// HostFit refuses a url whose host no transaction over p could reach: an
// IP literal of the other family or IPv4-mapped (a literal is not looked
// up), or a name resolve gives no address of p's family. It makes
// Endpoint's checks, which would fail each run, and names the option
// (url, resolve[i]) for an experiment file's line.
func (n *Named) HostFit(p path.Path) error {
	u, err := url.Parse(n.URL)
	if err != nil || u.Hostname() == "" {
		return nil // the url's own check says what is wrong
	}
	_, option, err := n.hostFit(u.Hostname(), p, "resolve:")
	if err != nil && option == "" {
		return err // resolve's own error, which Check names first
	} else if err != nil {
		return Errorf(option, "path %s: %v", p, err)
	}
	return nil
}

// hostFit checks host over path p (Endpoint, HostFit): an IP literal of
// p's family, or a name resolve (spelt as the user gives it) gives an
// address of p's family, or none. It returns the resolve entries and, on
// an error, the option to blame.
func (n *Named) hostFit(host string, p path.Path, resolve string) (map[string][]netip.Addr, string, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil && a.Is4In6() {
		// A socket of either family would carry it as IPv4, or not at all.
		if !p.Accepts(a.Unmap()) {
			return nil, OptURL, fmt.Errorf("%s is an IPv4-mapped IPv6 address, which is IPv4: give an %s address, or a name (with %s for an address of each family)", host, p.Family(), resolve)
		}
		return nil, OptURL, fmt.Errorf("%s is an IPv4-mapped IPv6 address, which is IPv4: give %s", host, a.Unmap())
	} else if err == nil && !p.Accepts(a) {
		// An address is not looked up: every transaction would fail.
		fam := "IPv4"
		if a.Is6() {
			fam = "IPv6"
		}
		return nil, OptURL, fmt.Errorf("%s is an %s address, which is not looked up: give an %s one, or a name (with %s for an address of each family)", host, fam, p.Family(), resolve)
	}
	hosts, err := n.Hosts()
	if err != nil {
		return nil, "", err // an *OptionError naming resolve[i]
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if addrs, given := hosts[name]; given && !slices.ContainsFunc(addrs, p.Accepts) {
		// Not looked up: an address of the path's family, or every
		// transaction would fail.
		return hosts, n.resolveAt(name), fmt.Errorf("%s: %s gives it no %s address (%v): add one, or leave %s out of the paths", host, resolve, p.Family(), addrs, p)
	}
	return hosts, "", nil
}

// resolveAt names the first resolve entry for name (lowercase): resolve[i].
func (n *Named) resolveAt(name string) string {
	for i, r := range n.Resolve {
		if k, _, _ := strings.Cut(r, "="); strings.ToLower(strings.TrimSuffix(k, ".")) == name {
			return fmt.Sprintf("resolve[%d]", i)
		}
	}
	return "resolve"
}

// Notes say which names were not looked up, and why their lookups read 0.
func (n *Named) Notes([]path.Path) []string {
	if len(n.Resolve) == 0 {
		return nil
	}
	return []string{result.ResolveNotePrefix + strings.Join(n.Resolve, " ") + " were given, not looked up (as curl --resolve): their transactions' resolve time is 0 and their wire time starts at the connection's first packet (the SYN; for HTTP/3 the first QUIC datagram)"}
}

// Common option names.
const (
	OptURL        = "url"
	OptDNSServers = "dns_servers"
)

// CheckURL applies the rule every protocol with a url shares: with where:
// hosts the url is required (want describes it), elsewhere v6lab chooses
// the server and a url is refused. It checks dns_servers and dns_over too.
func (n *Named) CheckURL(where result.Where, want, why string) error {
	hosts := where == result.Hosts
	if hosts && n.URL == "" {
		return Errorf("", "url is required with where: hosts (%s)", want)
	}
	if !hosts && n.URL != "" {
		return Errorf(OptURL, "only with where: hosts; %s", why)
	}
	if u, err := url.Parse(n.URL); err == nil && u.Host != "" {
		if err := CheckHost(u.Hostname()); err != nil {
			return Errorf(OptURL, "%q: %v", Redact(n.URL), err)
		}
	}
	return n.CheckDNSServers(where)
}

// CheckHost refuses a host that is neither an IP address nor a DNS host
// name (labels of 1 to 63 letters, digits, hyphens or underscores, 253
// characters in all): "http://;id/" would send a DNS query for ";id".
func CheckHost(host string) error {
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	n := strings.TrimSuffix(host, ".")
	if n == "" || len(n) > 253 {
		return fmt.Errorf("host %q is neither a DNS name nor an IP address", host)
	}
	for _, l := range strings.Split(n, ".") {
		bad := strings.IndexFunc(l, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' })
		if l == "" || len(l) > 63 || bad >= 0 {
			return fmt.Errorf("host %q is neither a DNS name nor an IP address (a name's labels are 1 to 63 letters, digits, hyphens or underscores)", host)
		}
	}
	return nil
}

// CheckHostPortURL is the rule for a server url of scheme://host[:port]
// (smtp, imap): that scheme, a host, at most a port; no user, path or
// query, which the protocol would not use.
func CheckHostPortURL(raw, scheme string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != scheme || u.Hostname() == "" || u.User != nil || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return Errorf(OptURL, "%q: want %s://host[:port]", Redact(raw), scheme)
	}
	return nil
}

// CheckDNSServers checks dns_servers (only with where: hosts, each a server
// address) and dns_over.
func (n *Named) CheckDNSServers(where result.Where) error {
	if len(n.Resolve) > 0 && where != result.Hosts {
		return Errorf("resolve", "only with where: hosts; in the lab and on loopback the embedded DNS server answers")
	}
	hosts, err := n.Hosts()
	if err != nil {
		return err
	}
	if err := n.checkResolveNames(hosts); err != nil {
		return err
	}
	return CheckDNSServers(n.DNSServers, n.DNSOver, where)
}

// checkResolveNames refuses a resolve entry for a name the url does not
// name: it would give an address to no host the cell connects to.
func (n *Named) checkResolveNames(hosts map[string][]netip.Addr) error {
	u, err := url.Parse(n.URL)
	if len(hosts) == 0 || err != nil || u.Hostname() == "" {
		return nil
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for i, r := range n.Resolve {
		name, _, _ := strings.Cut(r, "=")
		if strings.ToLower(strings.TrimSuffix(name, ".")) != host {
			return Errorf(fmt.Sprintf("resolve[%d]", i), "%q names no host of the target: its url's host is %s", name, u.Hostname())
		}
	}
	return nil
}

// CheckDNSServers checks DNS servers a cell names (only with where: hosts,
// each a server address) and the family its lookups go over.
func CheckDNSServers(servers []string, over string, where result.Where) error {
	if len(servers) > 0 && where != result.Hosts {
		return Errorf(OptDNSServers, "only with where: hosts; in the lab and on loopback the embedded DNS server answers")
	}
	for i, srv := range servers {
		if _, err := path.ParseServer(srv); err != nil {
			return Errorf(fmt.Sprintf("%s[%d]", OptDNSServers, i), "%v", err)
		}
	}
	return CheckDNSOver(over)
}

// Over is the family the lookups are pinned to ("": the path's own).
func (n *Named) Over() path.Path { return path.Path(strings.TrimPrefix(n.DNSOver, "path")) }

// Destination is the url, and the DNS servers that name its host.
func (n *Named) Destination() string {
	u := Redact(n.URL) // a url's password is used, never written
	if u != "" && len(n.DNSServers) > 0 {
		return u + " (names from " + strings.Join(n.DNSServers, ", ") + ")"
	}
	return u
}

// CheckDNSOver checks the family a lookup is pinned to: path (or empty: the
// path's own), ipv4 or ipv6.
func CheckDNSOver(over string) error {
	switch over {
	case "", "path", "ipv4", "ipv6":
		return nil
	}
	return Errorf("dns_over", "%q is not path, ipv4 or ipv6", over)
}

// MaxFileSize bounds a file the embedded servers generate.
const MaxFileSize = 1 << 40

// CheckFile checks a file cell's size name (the embedded servers generate
// files whose names are their sizes).
func CheckFile(file string, where result.Where) error {
	if where == result.Hosts {
		return Errorf("file", "with where: hosts the url names the file")
	}
	if _, err := FileSize(file); err != nil {
		return Errorf("file", "%q: the embedded servers' files are sizes such as 1M, 64K or 5879824", file)
	}
	return nil
}

// FileSize is the size a file cell's file names.
func FileSize(file string) (int64, error) {
	n, err := units.ParseSize(strings.TrimPrefix(file, "/"))
	if err == nil && n > MaxFileSize {
		err = fmt.Errorf("%d bytes is more than %d", n, int64(MaxFileSize))
	}
	return n, err
}

// SettleFile is the small file a lab run fetches to settle a file cell's
// paths: never the cell's own, which may take minutes on a slow link.
const SettleFile = "/1K"

// FileTime guesses how long n simultaneous transfers of a file (its size
// as its name) take through a bottleneck of rate bits/s (0: unshaped,
// taken as 1 Gbit/s): a shaped link carries 1448/1538 of its rate as TCP
// payload. It is what a run estimate adds for a file cell.
func FileTime(file string, n int, rate uint64) time.Duration {
	size, err := units.ParseSize(strings.TrimPrefix(file, "/"))
	if file == "" || err != nil {
		return 0
	}
	goodput := 1e9
	if rate > 0 {
		goodput = float64(rate) * 1448 / 1538
	}
	return time.Duration(float64(size*int64(n)) * 8 / goodput * float64(time.Second))
}

// ScaleFile is a file shrunk by f for run --scale, at least 64 KiB.
func ScaleFile(file string, f float64) string {
	n, err := FileSize(file)
	if err != nil || file == "" {
		return file
	}
	return fmt.Sprint(max(64<<10, int64(float64(n)*f)))
}

// Or is a, or b when a is empty.
func Or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// AAAADelayLabel starts a name whose AAAA answer the embedded DNS server
// delays: aaaa-delay-300ms.www.v6lab.test is www.v6lab.test with its AAAA
// 300 ms late (at most MaxAAAADelay), so one lab run can measure a
// dual-stack client against a late AAAA beside a prompt one.
const AAAADelayLabel = "aaaa-delay-"

// MaxAAAADelay bounds that delay.
const MaxAAAADelay = 5 * time.Second

// DelayedName strips an aaaa-delay-D label from name: the name to answer
// for, and the delay (0 when there is none or it is not a duration up to
// MaxAAAADelay).
func DelayedName(name string) (string, time.Duration) {
	if rest, a := AskedName(name); a.AAAA > 0 {
		return rest, a.AAAA
	}
	return name, 0
}

// CheckLine refuses a value that goes on a protocol's command line (a
// user name, a password, a path) if it holds a control character: a CR or
// LF would end the line early and send what follows as a command of its
// own (docs/security.md).
func CheckLine(option, value string) error {
	for _, r := range value {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return Errorf(option, "%q holds a control character (%U), which would end or split the protocol's command line", value, r)
		}
	}
	return nil
}
