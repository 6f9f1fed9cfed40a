package experiment

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"v6lab/internal/content"
	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/proto/dns"
	"v6lab/internal/proto/extclient"
	"v6lab/internal/proto/ftp"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/result"
	"v6lab/internal/transport"
	"v6lab/internal/units"
)

// HTTPProbes makes an HTTP probe per path.
type HTTPProbes struct {
	URL      *url.URL
	Resolver *path.Resolver
	// Resolvers and Sources override Resolver and the client address per
	// path (the lab's 6in4 path has its own DNS view and source address).
	Resolvers map[path.Path]*path.Resolver
	Sources   map[path.Path]netip.Addr
	Objects   bool
	MaxBody   int64
	// Insecure skips certificate checks (self-signed test servers).
	Insecure bool
	// TLSResume lets returning users resume TLS sessions (httpp.ResumeTLS).
	TLSResume bool
	// TLSGroups is the key exchange offered: classic (default) or pq.
	TLSGroups string
	// Engine picks the connection engine (see httpp.Engine).
	Engine httpp.Engine
	// Expect is what a fetched file holds, when v6lab's own content.
	Expect content.Expect
	// Sum records each body's CRC-32C (file transfers).
	Sum bool
}

// Probe returns the probe for one path.
func (h HTTPProbes) Probe(p path.Path) (load.Probe, error) {
	res := h.Resolver
	if r, ok := h.Resolvers[p]; ok {
		res = r
	}
	c := &httpp.Client{URL: h.URL, Path: p, Resolver: res, Source: h.Sources[p], Objects: h.Objects, MaxBody: h.MaxBody,
		UserAgent: "v6lab", Engine: h.Engine, Expect: h.Expect, Sum: h.Sum}
	groups, err := httpp.TLSGroups(h.TLSGroups)
	if err != nil {
		return nil, err
	}
	c.TLS = &tls.Config{InsecureSkipVerify: h.Insecure, CurvePreferences: groups}
	if h.TLSResume {
		c.TLS = httpp.ResumeTLS(c.TLS)
	}
	return c, nil
}

// DNSProbes makes a DNS probe per path: the query travels over the path's
// family to the server of that family.
type DNSProbes struct {
	Name    string
	Servers []netip.AddrPort
	Type    uint16
	TCP     bool
	// Mode is the engine: stub (default) or load (dns.ModeLoad).
	Mode string
}

// Probe returns the probe for one path, or an error naming the missing server.
func (d DNSProbes) Probe(p path.Path) (load.Probe, error) {
	r := path.Resolver{Servers: d.Servers}
	srv, _, err := r.Server(p)
	if err != nil {
		return nil, err
	}
	return &dns.Client{Name: d.Name, Server: srv, Path: p, Type: d.Type, TCP: d.TCP, Mode: d.Mode}, nil
}

// Env is where an experiment's servers are, as its probes see them: the
// embedded servers of the lab or loopback, or nothing for real hosts
// (each cell then names its own).
type Env struct {
	// URL is the embedded HTTP server's index page (host LocalName).
	URL *url.URL
	// Resolver answers every path that Resolvers does not list.
	Resolver  *path.Resolver
	Resolvers map[path.Path]*path.Resolver
	// Sources pin the client address per path (the lab's 6in4 path).
	Sources map[path.Path]netip.Addr
	// Transport is the embedded transport server's address per path.
	Transport map[path.Path]netip.AddrPort
	// FTPPort and SMTPPort are the embedded servers' ports (host: URL's host).
	FTPPort, SMTPPort, IMAPPort int
}

func (env Env) resolver(p path.Path) *path.Resolver {
	if r, ok := env.Resolvers[p]; ok {
		return r
	}
	return env.Resolver
}

// Probe makes the probe of cell group s over path p. A cell that fetches a
// file also reports its rate (bulk transfer, docs/metrics.md).
func (env Env) Probe(s *Spec, p path.Path) (load.Probe, error) {
	pr, err := env.probe(s, p)
	if err == nil && s.File != "" && (s.Protocol == "http" || s.Protocol == "ftp") {
		pr = bulk{pr}
	}
	return pr, err
}

// bulk adds a file transfer's size and rate to each completed sample: the
// body's length where the probe measured one (an HTTP reply's BytesIn
// has its headers too), else the bytes received.
type bulk struct{ load.Probe }

func (b bulk) Do(ctx context.Context, user int) result.Sample {
	s := b.Probe.Do(ctx, user)
	if s.OK() && s.TotalNS > 0 {
		secs := float64(s.TotalNS) / 1e9
		if s.Metrics == nil {
			s.Metrics = map[string]float64{}
		}
		size, ok := s.Metrics["body_bytes"]
		if !ok {
			size = float64(s.BytesIn)
		}
		delete(s.Metrics, "body_bytes")
		s.Metrics["file_bytes"] = size
		s.Metrics["mbytes_per_s"] = size / 1e6 / secs
		s.Metrics["throughput_mbps"] = size * 8 / 1e6 / secs
	}
	return s
}

func (env Env) probe(s *Spec, p path.Path) (load.Probe, error) {
	if s.Client != "" && s.Client != "v6lab" {
		return env.external(s, p)
	}
	switch s.Protocol {
	case "http":
		hp := HTTPProbes{URL: env.URL, Resolver: env.resolver(p), Sources: env.Sources, Objects: true}
		if s.URL != "" {
			u, err := httpp.ParseURL(s.URL)
			if err != nil {
				return nil, err
			}
			res, err := hostResolver(s.DNSServers)
			if err != nil {
				return nil, err
			}
			hp = HTTPProbes{URL: u, Resolver: res, Objects: true}
		} else if s.Objects != nil {
			u := *env.URL
			u.Path = fmt.Sprintf("/pages/%d", *s.Objects)
			hp.URL = &u
		} else if s.File != "" && env.URL != nil {
			u := *env.URL
			u.Path = "/files/" + strings.TrimPrefix(s.File, "/")
			// Both the embedded server and the lab's nginx serve
			// generated content (content.Fill).
			hp.URL, hp.Objects, hp.Expect = &u, false, content.Generated
		}
		if hp.URL == nil {
			return nil, errors.New("no HTTP server to measure")
		}
		hp.Sum = s.File != "" // a bulk transfer records its body's CRC-32C
		return hp.Probe(p)
	case "dns":
		name := s.Query
		if name == "" {
			name = LocalName
		}
		res := env.resolver(p)
		if len(s.DNSServers) > 0 {
			var err error
			if res, err = hostResolver(s.DNSServers); err != nil {
				return nil, err
			}
		}
		if res == nil {
			return nil, errors.New("no DNS server to measure")
		}
		srv, _, err := (&path.Resolver{Servers: res.Servers}).Server(p)
		if err != nil {
			return nil, err
		}
		src := res.Source
		if !src.IsValid() {
			src = env.Sources[p]
		}
		return &dns.Client{Name: name, Server: srv, Path: p, TCP: s.Transport == "tcp", Source: src, Mode: s.Mode}, nil
	case "ftp":
		c := &ftp.Client{Path: p, Resolver: env.resolver(p), Source: env.Sources[p], Active: s.Active, File: "/" + strings.TrimPrefix(cmpOr(s.File, "1M"), "/")}
		if env.URL != nil {
			c.Host, c.Port = env.URL.Hostname(), env.FTPPort
			// The embedded server generates files; ProFTPD serves
			// sparse ones, which read as zeros.
			c.Expect = content.Generated
			if s.Server == "real" {
				c.Expect = content.Zeros
			}
		}
		if s.URL != "" {
			u, err := ParseFTPURL(s.URL)
			if err != nil {
				return nil, err
			}
			res, err := hostResolver(s.DNSServers)
			if err != nil {
				return nil, err
			}
			c.Host, c.Resolver, c.File, c.Source = u.Host, res, u.File, netip.Addr{}
			c.Expect = content.Unknown
			c.Port, c.User, c.Password = u.Port, u.User, u.Password
		}
		if c.Host == "" || c.Port == 0 || c.Resolver == nil {
			return nil, errors.New("no FTP server to measure")
		}
		return c, nil
	case "smtp":
		c := &smtp.Client{Path: p, Resolver: env.resolver(p), Source: env.Sources[p], From: cmpOr(s.From, "v6lab@v6lab.test"),
			To: cmpOr(s.To, "user%d@v6lab.test"), Size: s.Size, StartTLS: s.StartTLS}
		if env.URL != nil {
			c.Host, c.Port = env.URL.Hostname(), env.SMTPPort
		}
		if s.URL != "" {
			u, err := url.Parse(s.URL)
			if err != nil || u.Scheme != "smtp" || u.Hostname() == "" {
				return nil, fmt.Errorf("smtp URL %q: want smtp://host[:port]", s.URL)
			}
			res, err := hostResolver(s.DNSServers)
			if err != nil {
				return nil, err
			}
			c.Host, c.Resolver, c.Source, c.Port = u.Hostname(), res, netip.Addr{}, 25
			if ps := u.Port(); ps != "" {
				c.Port, _ = strconv.Atoi(ps)
			}
		}
		if c.Host == "" || c.Port == 0 || c.Resolver == nil {
			return nil, errors.New("no SMTP server to measure")
		}
		return c, nil
	case "imap":
		c := &imap.Client{Path: p, Resolver: env.resolver(p), Source: env.Sources[p], Users: imap.DefaultUsers, Password: imap.Password}
		if s.Users > 0 {
			c.Users = s.Users
		}
		if env.URL != nil {
			c.Host, c.Port = env.URL.Hostname(), env.IMAPPort
		}
		if s.URL != "" {
			u, err := url.Parse(s.URL)
			if err != nil || u.Scheme != "imap" || u.Hostname() == "" {
				return nil, fmt.Errorf("imap URL %q: want imap://host[:port]", s.URL)
			}
			res, err := hostResolver(s.DNSServers)
			if err != nil {
				return nil, err
			}
			c.Host, c.Resolver, c.Source, c.Port = u.Hostname(), res, netip.Addr{}, 143
			if ps := u.Port(); ps != "" {
				c.Port, _ = strconv.Atoi(ps)
			}
			c.UserFormat, c.Password = s.UserFormat, s.Password
		}
		if c.Host == "" || c.Port == 0 || c.Resolver == nil {
			return nil, errors.New("no IMAP server to measure")
		}
		return c, nil
	case "tcp", "udp":
		srv, ok := env.Transport[p]
		if len(s.Servers) > 0 {
			ok = false
			for _, a := range s.Servers {
				if ap, err := ParseTransportServer(a); err == nil && p.Accepts(ap.Addr()) {
					srv, ok = ap, true
					break
				}
			}
		}
		if !ok {
			return nil, fmt.Errorf("no %s transport server to test against", p.Family())
		}
		o := transport.Options{Test: s.Protocol}
		if s.Test != nil {
			o = *s.Test
			o.Test = s.Protocol
		}
		return &transport.Probe{Server: srv, Path: p, Source: env.Sources[p], Opts: o}, nil
	}
	return nil, fmt.Errorf("protocol %q is not measured by this version", s.Protocol)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// FTPURL is what an ftp:// URL names.
type FTPURL struct {
	Host           string
	Port           int
	File           string
	User, Password string
}

// ParseFTPURL reads ftp://[user[:password]@]host[:port]/path.
func ParseFTPURL(s string) (FTPURL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "ftp" || u.Hostname() == "" || u.Path == "" || u.Path == "/" {
		return FTPURL{}, fmt.Errorf("ftp URL %q: want ftp://[user[:password]@]host[:port]/file", s)
	}
	f := FTPURL{Host: u.Hostname(), Port: 21, File: u.Path}
	if ps := u.Port(); ps != "" {
		if f.Port, err = strconv.Atoi(ps); err != nil || f.Port < 1 || f.Port > 65535 {
			return FTPURL{}, fmt.Errorf("ftp URL %q: bad port", s)
		}
	}
	if u.User != nil {
		f.User = u.User.Username()
		f.Password, _ = u.User.Password()
	}
	return f, nil
}

// ParseTransportServer reads ADDR or ADDR:PORT ([IPV6]:PORT); the port is
// transport.DefaultPort unless given.
func ParseTransportServer(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	ip, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("transport server %q: want ADDR or ADDR:PORT (IPv6 as [ADDR]:PORT)", s)
	}
	return netip.AddrPortFrom(ip, transport.DefaultPort), nil
}

// external makes a curl or wget download of a file cell.
func (env Env) external(s *Spec, p path.Path) (load.Probe, error) {
	if err := extclient.Check(s.Client); err != nil {
		return nil, err
	}
	size, err := units.ParseSize(strings.TrimPrefix(s.File, "/"))
	if err != nil {
		size = 0
	}
	c := &extclient.Client{Program: s.Client, Path: p, Resolver: env.resolver(p), Source: env.Sources[p], Expect: size}
	switch {
	case s.URL != "":
		u, err := url.Parse(s.URL)
		if err != nil {
			return nil, err
		}
		if c.Resolver, err = hostResolver(s.DNSServers); err != nil {
			return nil, err
		}
		c.URL, c.Source, c.Expect = u, netip.Addr{}, 0
	case env.URL == nil:
		return nil, errors.New("no server to download from")
	case s.Protocol == "ftp":
		c.URL = &url.URL{Scheme: "ftp", Host: net.JoinHostPort(env.URL.Hostname(), strconv.Itoa(env.FTPPort)), Path: "/" + strings.TrimPrefix(s.File, "/")}
	default:
		u := *env.URL
		u.Path = "/files/" + strings.TrimPrefix(s.File, "/")
		c.URL = &u
	}
	return c, nil
}

// hostResolver asks the given servers, or the system's when none are given.
func hostResolver(servers []string) (*path.Resolver, error) {
	r := &path.Resolver{}
	for _, s := range servers {
		ap, err := path.ParseServer(s)
		if err != nil {
			return nil, err
		}
		r.Servers = append(r.Servers, ap)
	}
	if len(r.Servers) == 0 {
		sys, err := path.SystemServers()
		if err != nil {
			return nil, err
		}
		r.Servers = sys
	}
	return r, nil
}
