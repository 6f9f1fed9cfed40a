package survey

import (
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"v6lab/internal/proto"
)

// Options are a survey's own settings: one struct whose tags name each
// option for survey files and for v6lab survey's flags alike (proto.Fields),
// and whose json names it in results. Defaults (each tag's default=) are
// set by Defaults; Check checks the whole.
type Options struct {
	Runs      int            `json:"runs" opt:"runs,default=6" usage:"page fetches per family per site, the families interleaved (ipv4 then ipv6, then ipv6 then ipv4, …); at least warmup + 2 (two counted pairs, the fewest a verdict's CI needs)"`
	Warmup    int            `json:"warmup" opt:"warmup,default=1" usage:"leading fetches per family kept in the samples but not counted (a cold resolver cache, a cold server)"`
	Threshold proto.Duration `json:"threshold" opt:"threshold,default=1ms" usage:"a site is the same over both families when the 95% CI of its paired difference lies within ±this; faster or slower when the CI lies wholly beyond it"`
	Timeout   proto.Duration `json:"timeout" opt:"timeout,default=10s" usage:"bound of every request (a lookup, a page with its objects, one object): a site whose answer never ends fails at it"`
	Parallel  int            `json:"parallel" opt:"parallel,default=16" usage:"sites measured at once"`
	SiteConns int            `json:"site_conns" opt:"site_conns,default=2" usage:"connections open at once to one site (its page and its objects' hosts) at most"`
	Rate      int            `json:"rate" opt:"rate,default=20" usage:"connections opened per second at most, over every site"`
	Contact   string         `json:"contact,omitempty" opt:"contact" usage:"a URL or mail address site operators can reach you at, sent in every request's User-Agent (required against real sites)"`
	Exclude   string         `json:"exclude,omitempty" opt:"exclude" usage:"file of names never to contact (one a line; a name excludes its subdomains too), as robots.txt asks of crawlers"`
	Scheme    string         `json:"scheme" opt:"scheme,default=https" usage:"the sites' pages are fetched at SCHEME://NAME/: https or http"`
	// Port, when set, is the sites' port (a lab of sites on loopback).
	Port        int    `json:"port,omitempty" opt:"port" usage:"the sites' port (default: the scheme's)"`
	HTTPVersion string `json:"http_version" opt:"http_version,default=auto" usage:"HTTP version measured: auto (3 where both families' discovery found it offered, else 2 where both negotiated it, else 1.1), 1.1, 2 or 3"`
	MaxObjects  int    `json:"max_objects" opt:"max_objects,default=20" usage:"objects on other hosts fetched per site over each family (0: none)"`
	Redirects   int    `json:"max_redirects" opt:"max_redirects,default=5" usage:"redirects followed to find a site's page"`
	// DNSServers and DNSOver choose the resolvers, as the probes'.
	DNSServers []string `json:"dns_servers,omitempty" opt:"dns_servers,flag=dns-server" usage:"DNS server ADDR[:PORT] to ask (repeat for each family; default: /etc/resolv.conf, whose options timeout:N attempts:N then set the resends)"`
	DNSOver    string   `json:"dns_over" opt:"dns_over,default=auto" usage:"family that carries the lookups: auto (the path's own when there is a DNS server of each family, else the one there is), path, ipv4 or ipv6"`
	Insecure   bool     `json:"insecure,omitempty" opt:"insecure" usage:"accept any TLS certificate: a lab of sites' (never real sites')"`
	// SkipInvalid reports a line that is not a host name as an invalid
	// site instead of refusing the list.
	SkipInvalid bool `json:"skip_invalid,omitempty" opt:"skip_invalid" usage:"a line of the list that is not a host name is reported as an invalid site (default: the list is refused, naming the line)"`
}

// Bounds of the options.
const (
	MaxRuns     = 100
	MaxParallel = 1024
	MaxRate     = 100000
	MaxSiteConn = 16
)

// Defaults sets every option to its default.
func Defaults() *Options {
	o := &Options{}
	for _, f := range proto.Fields(o) {
		if f.Default != "" {
			_ = f.Set(f.Default)
		}
	}
	return o
}

// SetFlags sets the options whose flags were given on fl (over a file's).
func (o *Options) SetFlags(fl *pflag.FlagSet) error {
	if fl.Changed("dns-server") {
		o.DNSServers = nil
	}
	for _, f := range proto.Fields(o) {
		if f.Flag == "" || !fl.Changed(f.Flag) {
			continue
		}
		vals := []string{fl.Lookup(f.Flag).Value.String()}
		if f.Kind() == proto.KindList {
			vals, _ = fl.GetStringArray(f.Flag)
		}
		for _, v := range vals {
			if err := f.Set(v); err != nil {
				return proto.FlagError(err, o)
			}
		}
	}
	return nil
}

// Check checks the options; its errors name the option (proto.OptionError).
func (o *Options) Check() error {
	timeout := time.Duration(o.Timeout)
	for _, c := range []struct {
		opt    string
		bad    bool
		format string
		args   []any
	}{
		{"runs", o.Runs < 1 || o.Runs > MaxRuns, "%d: want 1 to %d fetches per family", []any{o.Runs, MaxRuns}},
		{"warmup", o.Warmup < 0 || o.Warmup >= o.Runs, "%d: want 0 to runs-1 (%d)", []any{o.Warmup, o.Runs - 1}},
		{"runs", o.Runs < o.Warmup+2, "%d with warmup %d: want at least warmup + 2 (%d): fewer than two counted pairs give no site a timed verdict", []any{o.Runs, o.Warmup, o.Warmup + 2}},
		{"threshold", o.Threshold < 0 || time.Duration(o.Threshold) > 10*time.Second, "%v: want 0 to 10s", []any{o.Threshold}},
		{"timeout", timeout < 100*time.Millisecond || timeout > 5*time.Minute, "%v: want 100ms to 5m", []any{o.Timeout}},
		{"parallel", o.Parallel < 1 || o.Parallel > MaxParallel, "%d: want 1 to %d sites at once", []any{o.Parallel, MaxParallel}},
		{"site_conns", o.SiteConns < 1 || o.SiteConns > MaxSiteConn, "%d: want 1 to %d connections to one site", []any{o.SiteConns, MaxSiteConn}},
		{"rate", o.Rate < 1 || o.Rate > MaxRate, "%d: want 1 to %d connections per second", []any{o.Rate, MaxRate}},
		{"scheme", o.Scheme != "https" && o.Scheme != "http", "%q: want https or http", []any{o.Scheme}},
		{"port", o.Port < 0 || o.Port > 65535, "%d: want 1 to 65535, or 0 for the scheme's", []any{o.Port}},
		{"http_version", !slices.Contains([]string{"auto", "1.1", "2", "3"}, o.HTTPVersion), "%q: want auto, 1.1, 2 or 3", []any{o.HTTPVersion}},
		{"http_version", o.HTTPVersion == "3" && o.Scheme == "http", "3 is QUIC, always TLS: give scheme https", nil},
		{"max_objects", o.MaxObjects < 0 || o.MaxObjects > 256, "%d: want 0 to 256 objects", []any{o.MaxObjects}},
		{"max_redirects", o.Redirects < 0 || o.Redirects > 20, "%d: want 0 to 20", []any{o.Redirects}},
		{"dns_over", !slices.Contains([]string{"auto", "path", "ipv4", "ipv6"}, o.DNSOver), "%q: want auto, path, ipv4 or ipv6", []any{o.DNSOver}},
	} {
		if c.bad {
			return proto.Errorf(c.opt, c.format, c.args...)
		}
	}
	if err := proto.CheckLine("contact", o.Contact); err != nil {
		return err
	}
	return checkContact(o.Contact)
}

// checkContact refuses a contact a site operator could not use: it must be
// a URL (https://example.org/survey, mailto:me@example.org) or a mail
// address (me@example.org), with no spaces. Empty is checked elsewhere
// (only a survey of real sites needs one).
func checkContact(c string) error {
	if c == "" {
		return nil
	}
	bad := func(why string) error {
		return proto.Errorf("contact", "%q: want a URL (https://example.org/about, mailto:me@example.org) or a mail address (me@example.org): %s", c, why)
	}
	if strings.ContainsAny(c, " \t") {
		return bad("it holds a space")
	}
	if u, err := url.Parse(c); err == nil && u.Scheme != "" {
		switch {
		case u.Scheme == "mailto":
			if _, err := mail.ParseAddress(u.Opaque); err != nil {
				return bad("mailto: names no mail address")
			}
			return nil
		case (u.Scheme == "https" || u.Scheme == "http") && u.Host != "":
			return nil
		case u.Scheme == "https" || u.Scheme == "http":
			return bad("the URL names no host")
		}
	}
	if a, err := mail.ParseAddress(c); err == nil && a.Address == c && strings.Contains(c[strings.LastIndexByte(c, '@')+1:], ".") {
		return nil
	}
	return bad("neither a URL nor a mail address")
}

// UserAgent is what every request of the survey says it is: v6lab, its
// version, and the operator's contact.
func (o *Options) UserAgent(version string) string {
	ua := "v6lab/" + version
	if o.Contact != "" {
		ua += fmt.Sprintf(" (IPv4/IPv6 survey; +%s)", o.Contact)
	}
	return ua
}
