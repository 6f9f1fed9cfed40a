package experiment

import (
	"crypto/tls"
	"net/netip"
	"net/url"

	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/proto/dns"
	httpp "v6lab/internal/proto/http"
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
}

// Probe returns the probe for one path.
func (h HTTPProbes) Probe(p path.Path) (load.Probe, error) {
	res := h.Resolver
	if r, ok := h.Resolvers[p]; ok {
		res = r
	}
	c := &httpp.Client{URL: h.URL, Path: p, Resolver: res, Source: h.Sources[p], Objects: h.Objects, MaxBody: h.MaxBody,
		UserAgent: "v6lab"}
	if h.Insecure {
		c.TLS = &tls.Config{InsecureSkipVerify: true}
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
}

// Probe returns the probe for one path, or an error naming the missing server.
func (d DNSProbes) Probe(p path.Path) (load.Probe, error) {
	r := path.Resolver{Servers: d.Servers}
	srv, _, err := r.Server(p)
	if err != nil {
		return nil, err
	}
	return &dns.Client{Name: d.Name, Server: srv, Path: p, Type: d.Type, TCP: d.TCP}, nil
}
