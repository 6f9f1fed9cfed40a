package proto

import (
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"v6lab/internal/gen/content"
	"v6lab/internal/sock/path"
)

// Endpoint is where one server answers on one path, as plain data: what a
// lab run hands its measuring process and what a probe dials.
type Endpoint struct {
	// Scheme is a URL's scheme where it matters (http or https).
	Scheme string `json:"scheme,omitempty"`
	// Host is a name to look up with the path's record type, or an
	// address.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Resource is what a named server serves: a URL's path and query, an
	// FTP file.
	Resource string `json:"resource,omitempty"`
	// DNS are the servers that resolve Host; DNSOver pins the family the
	// lookup travels over (empty: the path's).
	DNS     []netip.AddrPort `json:"dns,omitempty"`
	DNSOver path.Path        `json:"dns_over,omitempty"`
	// DNSStub is how a lost query is sent again: /etc/resolv.conf's
	// options timeout/attempts when DNS are its servers (HostResolver),
	// else the zero Stub (v6lab's own schedule).
	DNSStub path.Stub `json:"dns_stub,omitzero"`
	// Source is the client's address on the path, when it must be chosen
	// (the lab's 6in4 path).
	Source netip.Addr `json:"source,omitzero"`
	// User and Password log in (FTP, IMAP).
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	// Content is what the server's files hold: generated (v6lab's
	// servers, the lab's nginx), zeros (sparse files) or unknown.
	Content content.Expect `json:"content,omitempty"`
	// CertSHA256 pins an embedded server's self-signed TLS certificate
	// (Pinned): v6lab's clients trust exactly that one.
	CertSHA256 string `json:"cert_sha256,omitempty"`
	// Hosts are names given their addresses (--resolve): not looked up.
	Hosts map[string][]netip.Addr `json:"hosts,omitempty"`
}

// Resolver resolves the endpoint's Host.
func (e Endpoint) Resolver() *path.Resolver {
	return &path.Resolver{Servers: e.DNS, Over: e.DNSOver, Source: e.Source, Hosts: e.Hosts, Stub: e.DNSStub}
}

// AddrPort is the endpoint as an address, for protocols that dial one.
func (e Endpoint) AddrPort() (netip.AddrPort, error) {
	a, err := netip.ParseAddr(strings.Trim(e.Host, "[]"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("server %q is not an address", e.Host)
	}
	return netip.AddrPortFrom(a, uint16(e.Port)), nil
}

// Endpoints are where every server of a run is: by server key (a
// protocol's name, real/NAME for its real Debian server) and path.
type Endpoints map[string]map[path.Path]Endpoint

// Set records where server key answers on path p.
func (es Endpoints) Set(key string, p path.Path, e Endpoint) {
	if es[key] == nil {
		es[key] = map[path.Path]Endpoint{}
	}
	es[key][p] = e
}

// Get is where server key answers on path p.
func (es Endpoints) Get(key string, p path.Path) (Endpoint, bool) {
	e, ok := es[key][p]
	return e, ok
}

// HostResolver is the DNS servers given (dns_servers, --dns-server), or the
// system's when none are (/etc/resolv.conf's nameservers, with its
// options timeout:N attempts:N as the Stub that resends a lost query, as
// glibc's resolver would): for a Host that is a name. A Host that is an
// address needs none. Path p's lookups, sent over the family over (""
// the path's own), need a server of that family among them: without one
// every transaction would fail, so it is an error here.
func HostResolver(host string, servers []string, over, p path.Path) (path.ResolvConf, error) {
	rc, err := hostServers(host, servers)
	if err != nil || len(rc.Servers) == 0 {
		return rc, err
	}
	if _, _, err := (&path.Resolver{Servers: rc.Servers, Over: over}).Server(p); err != nil {
		return path.ResolvConf{}, fmt.Errorf("%w (the DNS servers: %s; --dns-over ipv4 or ipv6 sends every lookup over one family)", err, Or(strings.Join(servers, ", "), "/etc/resolv.conf's"))
	}
	return rc, nil
}

func hostServers(host string, servers []string) (path.ResolvConf, error) {
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return path.ResolvConf{}, nil
	}
	var out []netip.AddrPort
	for _, s := range servers {
		ap, err := path.ParseServer(s)
		if err != nil {
			return path.ResolvConf{}, err
		}
		out = append(out, ap)
	}
	if len(out) == 0 {
		return systemResolvConf()
	}
	return path.ResolvConf{Servers: out}, nil
}

// systemResolvConf reads the system's resolv.conf (a test's stands in).
var systemResolvConf = path.SystemResolvConf

// HostPortTarget reads a server URL scheme://host[:port] (def: the port
// when none is given) into an endpoint of path p, its host resolved as n
// says (Named.Endpoint).
func HostPortTarget(n *Named, scheme string, def int, p path.Path) (Endpoint, error) {
	u, err := url.Parse(n.URL)
	if err != nil || u.Scheme != scheme || u.Hostname() == "" {
		return Endpoint{}, fmt.Errorf("%s URL %q: want %s://host[:port]", scheme, Redact(n.URL), scheme)
	}
	e, err := n.Endpoint(u.Hostname(), p)
	if err != nil {
		return Endpoint{}, err
	}
	e.Port = def
	if ps := u.Port(); ps != "" {
		if e.Port, err = strconv.Atoi(ps); err != nil || e.Port < 1 || e.Port > 65535 {
			return Endpoint{}, fmt.Errorf("%s URL %q: bad port", scheme, Redact(n.URL))
		}
	}
	return e, nil
}

// ServerURL makes scheme://HOST[:PORT] of a command's HOST, HOST:PORT, IP,
// IP:PORT or [IPV6]:PORT argument; an argument that is a URL already (the
// form an experiment file's url: takes) is kept, for the options to check
// its scheme.
func ServerURL(scheme, arg string) string {
	if strings.Contains(arg, "://") {
		return arg
	}
	if a, err := netip.ParseAddr(strings.Trim(arg, "[]")); err == nil && a.Is6() {
		return scheme + "://[" + a.String() + "]"
	}
	return scheme + "://" + arg
}

// Redact is a url with its password masked (xxxxx), as results and
// reports record it: a password given in a url is used, never written.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); !ok {
		return raw
	}
	return u.Redacted()
}

// Redacted reports whether raw is a url whose password Redact masked.
func Redacted(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return false
	}
	p, ok := u.User.Password()
	return ok && p == "xxxxx"
}
