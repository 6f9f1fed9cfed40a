package proto

import (
	"fmt"
	"strings"
	"time"

	"v6lab/internal/gen/transport"
	"v6lab/internal/input/units"
	"v6lab/internal/sock/path"
)

// Options are a cell's protocol options, one field per option of any
// protocol (docs/experiments.md says which apply where); each protocol's
// Check reads its own. They are recorded flat in every result's spec.
type Options struct {
	URL        string   `json:"url,omitempty"`
	Objects    *int     `json:"objects,omitempty"`
	Query      string   `json:"query,omitempty"`
	DNSServers []string `json:"dns_servers,omitempty"`
	Transport  string   `json:"transport,omitempty"`
	// Mode is a DNS cell's engine: stub (default) or load.
	Mode string `json:"mode,omitempty"`
	// Expect is the reply that completes a DNS query: answer (default),
	// nodata, nxdomain or any.
	Expect string `json:"expect,omitempty"`
	// Type is a DNS query's record type: path (the path's own: A on ipv4,
	// AAAA on the others; the default), A, AAAA, …
	Type string `json:"type,omitempty"`
	// File is the file to retrieve (a size such as 1M on the embedded
	// servers); Active uses EPRT/PORT instead of EPSV/PASV (FTP).
	File   string `json:"file,omitempty"`
	Active bool   `json:"active,omitempty"`
	// Client downloads a file cell with another program: curl or wget.
	Client string `json:"client,omitempty"`
	// AttemptDelay is Happy Eyeballs' Connection Attempt Delay on the
	// dual path ("250ms"; empty: RFC 8305's default).
	AttemptDelay string `json:"attempt_delay,omitempty"`
	// Dialer races the families on the dual path: v6lab's own RFC 8305
	// ("" or "v6lab") or Go's standard net.Dialer ("go": RFC 6555).
	Dialer string `json:"dialer,omitempty"`
	// AAAADelay makes the embedded DNS server answer the dual path's
	// AAAA lookups this late ("300ms"; an impairment).
	AAAADelay string `json:"aaaa_delay,omitempty"`
	// RacesFamilies says the cell also measures a path that races the
	// families (dual), whose client is Go's net package: its pinned
	// paths then run there too, so the cell compares paths, not engines.
	// Derived from the cell's paths (experiment.Spec.RacesFamilies).
	RacesFamilies bool `json:"-"`
	// SMTP: envelope, message size, STARTTLS.
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	Size     int    `json:"size,omitempty"`
	StartTLS bool   `json:"starttls,omitempty"`
	// TLSPin is the SHA-256 of the certificate a real server must show
	// (https, SMTP's STARTTLS), in place of a CA's verification: how a
	// client trusts `v6lab serve http --tls` or `serve smtp` elsewhere.
	TLSPin string `json:"tls_pin,omitempty"`
	// TLS fetches over HTTPS from v6lab's own embedded server (lab and
	// loopback; a named server's url says its scheme itself).
	TLS bool `json:"tls,omitempty"`
	// TLSResume lets returning users resume TLS sessions with the
	// server's tickets (https).
	TLSResume bool `json:"tls_resume,omitempty"`
	// TLSGroups is the https key exchange offered: classic (the default)
	// or pq.
	TLSGroups string `json:"tls_groups,omitempty"`
	// HTTPVersion is the HTTP version an http cell speaks: "1.1" (the
	// default), "2" (h2 over TLS, or h2c by prior knowledge) or "3" (h3
	// over QUIC).
	HTTPVersion string `json:"http_version,omitempty"`
	// ZeroRTT sends the first request in QUIC's 0-RTT data when the user
	// resumes (http_version 3 with tls_resume).
	ZeroRTT bool `json:"zero_rtt,omitempty"`
	// Keepalive keeps each user's HTTP/2 or HTTP/3 connection for its
	// next transactions (as wrk, h2load and oha do).
	Keepalive bool `json:"keepalive,omitempty"`
	// IMAP: user i logs in as user(i mod Users)+1 (UserFormat, Password
	// for real servers).
	Users      int    `json:"users,omitempty"`
	UserFormat string `json:"user_format,omitempty"`
	Password   string `json:"password,omitempty"`
	// Test shapes a tcp or udp cell's trials (decoded from Trial by
	// Check); Servers are the transport servers to test against.
	Test    *transport.Options `json:"test,omitempty"`
	Servers []string           `json:"servers,omitempty"`
	// Trial is a tcp or udp cell's options as given, before Check.
	Trial *TrialInput `json:"-"`

	// The probe commands' own settings (flags only).
	Probe ProbeSettings `json:"-"`
}

// ProbeSettings are options only the probe commands take.
type ProbeSettings struct {
	// NoObjects fetches only the URL (http).
	NoObjects bool
	// Insecure accepts any certificate (https, smtp STARTTLS).
	Insecure bool
	// MaxBody bounds each HTTP body ("64M"; empty: the client's default).
	MaxBody string
	// Engine is the HTTP connection engine (auto, evloop, go).
	Engine string
	// DNSOver pins the family that carries the lookup (path, ipv4, ipv6).
	DNSOver string
}

// TrialInput is a tcp or udp cell's options as the user gave them: an
// experiment file's fields or the tcp and udp commands' flags.
type TrialInput struct {
	Time, Omit, Interval                            time.Duration
	Bytes, Window, SndBuf, RcvBuf, Bottleneck, Rate string
	Streams, MSS, Size                              int
	Congestion                                      string
	Reverse                                         bool
}

// Common option names: every protocol that reaches a named host takes
// url and dns_servers.
const (
	OptURL        = "url"
	OptDNSServers = "dns_servers"
)

// CheckURLWhere applies the rule every protocol with a url shares: with
// where: hosts the url is required (want describes it), elsewhere v6lab
// chooses the server and a url is refused.
func CheckURLWhere(o *Options, where, want, why string) error {
	hosts := where == "hosts"
	if hosts && o.URL == "" {
		return Errorf("", "url is required with where: hosts (%s)", want)
	}
	if !hosts && o.URL != "" {
		return Errorf(OptURL, "only with where: hosts; %s", why)
	}
	return nil
}

// CheckDNSServers checks dns_servers (only with where: hosts, each a server
// address) and the probe commands' --dns-over.
func CheckDNSServers(o *Options, where string) error {
	if len(o.DNSServers) > 0 && where != "hosts" {
		return Errorf(OptDNSServers, "only with where: hosts; in the lab and on loopback the embedded DNS server answers")
	}
	for i, srv := range o.DNSServers {
		if _, err := path.ParseServer(srv); err != nil {
			return Errorf(fmt.Sprintf("%s[%d]", OptDNSServers, i), "%v", err)
		}
	}
	return CheckDNSOver(o.Probe.DNSOver)
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
func CheckFile(file, where string) error {
	if where == "hosts" {
		return Errorf("file", "with where: hosts the url names the file")
	}
	if n, err := units.ParseSize(strings.TrimPrefix(file, "/")); err != nil || n > MaxFileSize {
		return Errorf("file", "%q: the embedded servers' files are sizes such as 1M, 64K or 5879824", file)
	}
	return nil
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
	first, rest, ok := strings.Cut(name, ".")
	d, err := time.ParseDuration(strings.TrimPrefix(strings.ToLower(first), AAAADelayLabel))
	if !ok || rest == "" || !strings.HasPrefix(strings.ToLower(first), AAAADelayLabel) || err != nil || d <= 0 || d > MaxAAAADelay {
		return name, 0
	}
	return rest, d
}
