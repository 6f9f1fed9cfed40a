package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/input/units"
	"v6lab/internal/proto"
	"v6lab/internal/proto/extclient"
	"v6lab/internal/result"
	"v6lab/internal/sock/eyeballs"
	"v6lab/internal/sock/path"
)

// Protocol is HTTP(S) page and file retrieval: its options, commands and
// servers.
var Protocol = proto.Protocol{
	Name: "http",
	New:  func() proto.Options { return &Options{} },
	Command: proto.Command{
		Arg:    "URL",
		SetArg: func(o proto.Options, arg string) { o.(*Options).URL = arg },
		Short:  "Measure HTTP(S) page retrieval, DNS lookup included, over each path",
		Long: `probe http times full page retrievals of URL: the host name is looked up once per
transaction with the record type of the path (A for ipv4, AAAA for ipv6) by asking a
DNS server directly over --dns-over, then a new connection pinned to the path fetches
the page and its embedded objects on the same host; the transaction ends when every
byte has arrived with status 200. A host without an A or AAAA record fails that path
with a clear error; there is never a fallback to the other family. The dual path
(--paths dual) connects as a dual-stack client does instead: AAAA and A asked together,
then Happy Eyeballs (RFC 8305, --attempt-delay between attempts; or Go's own dialer,
RFC 6555, with --dialer go; or Happy Eyeballs version 3 with --dialer v3 on https: the
HTTPS record asked beside AAAA and A, QUIC raced with TCP, every timer a flag), each
sample saying which family (and with v3 which transport) won. --http-version 2 speaks
HTTP/2 (h2 by ALPN over https://, h2c by prior knowledge over http://) and 3 HTTP/3 (QUIC,
https:// only, on a UDP socket v6lab binds to the path's family and connects to the
address it looked up): the page's objects are streams of the one connection, and each
sample records the protocol spoken, the handshake and the first byte.`,
		Example: `  v6lab probe http http://www.example.test/ --paths ipv4,ipv6 --conns 1,10,100 --runs 11
  v6lab probe http https://www.example.test/ --dns-over ipv4 --dns-server 192.0.2.53
  v6lab probe http https://www.example.test/ --paths ipv4,dual --dialer v3 --resolution-delay 50ms --min-attempt-delay 100ms
  v6lab probe http http://[2001:db8::80]:8080/files/1M --paths ipv6 --no-objects
  v6lab probe http http://127.0.0.1:8080/ --paths ipv4 --conns 10 --runs 1 --warmup 0 --duration 10s
  v6lab probe http http://www.example.test/ --paths ipv4,ipv6,dual --attempt-delay 100ms
  v6lab probe http https://www.example.test/ --http-version 2 --paths ipv4,ipv6
  v6lab probe http https://www.example.test/ --http-version 3 --paths ipv4,ipv6 --tls-resume --zero-rtt`,
	},
	Server:        &Embedded,
	Real:          &proto.Real{Program: "nginx", Package: "nginx-light", Port: RealPort, Fit: realFit, Start: startReal, Uses: realUsesNginx, Needs: realNeeds},
	Races:         true,
	ServerCapture: true,
}

// The real servers' ports in the lab's server host: nginx's plain HTTP
// and its HTTPS (HTTP/1.1 and HTTP/2 by ALPN), and Caddy's HTTP/3 (QUIC on
// the port's UDP; its TCP answers HTTP/1.1 and 2 too), each a port of its
// own so the wire check counts its cells' packets apart.
const (
	RealPort    = 80
	RealTLSPort = 443
	RealH3Port  = 8443
)

// Options are an http cell's options.
type Options struct {
	proto.Common
	proto.Named
	proto.Fetch
	proto.TLSClient
	extclient.Choice
	// Objects selects the embedded server's page with that many objects.
	Objects *int `json:"objects,omitempty" opt:"objects,fileonly"`
	// TLS fetches over HTTPS from v6lab's own embedded server (lab and
	// loopback; a named server's url says its scheme itself).
	TLS bool `json:"tls,omitempty" opt:"tls,fileonly"`
	// TLSResume lets returning users resume TLS sessions with the
	// server's tickets (https).
	TLSResume bool `json:"tls_resume,omitempty" opt:"tls_resume" usage:"https: users resume TLS sessions with the server's tickets (returning users, as browsers, wrk and h2load); off: every handshake is full (new users, as MITRE's); each sample's marker says which it got"`
	// TLSGroups is the https key exchange offered: classic (the default)
	// or pq.
	TLSGroups string `json:"tls_groups,omitempty" opt:"tls_groups" usage:"https key exchange offered: classic (the default: X25519, P-256, as OpenSSL 3.0's wrk, h2load and curl) or pq (X25519MLKEM768 first, as Go's and current browsers' defaults; more CPU per handshake)"`
	// Delay is Happy Eyeballs' Connection Attempt Delay on the dual path
	// (0: RFC 8305's default).
	Delay proto.Duration `json:"attempt_delay,omitempty" opt:"attempt_delay,default=250ms" usage:"the dual path's Connection Attempt Delay with v6lab's dialer (RFC 8305)"`
	// Dialer races the families on the dual path: v6lab's own RFC 8305
	// ("" or "v6lab") or Go's standard net.Dialer ("go": RFC 6555).
	Dialer string `json:"dialer,omitempty" opt:"dialer" usage:"the dual path's dialer: v6lab (RFC 8305 Happy Eyeballs, the default; also named v2), v3 (Happy Eyeballs version 3: HTTPS, AAAA and A asked, QUIC and TCP raced; needs https) or go (Go's net.Dialer, RFC 6555, 300 ms)"`
	// V3Timers are dialer v3's timers (zero: the draft's values).
	V3Timers
	// WhatIf times, after each dual transaction, the handshake of each
	// family its race did not see through (whatif.go).
	WhatIf bool `json:"whatif,omitempty" opt:"whatif" usage:"the dual path with dialer v2 or v3: after each transaction, time a handshake of each family the race did not see complete or fail (never tried, or cancelled when another won), up to 1s, for the report's timer what-if; costs run time, not the transaction's figures (docs/metrics.md)"`
	// AAAADelay makes the embedded DNS server answer the dual path's
	// AAAA lookups this late (an impairment).
	AAAADelay proto.Duration `json:"aaaa_delay,omitempty" opt:"aaaa_delay,fileonly"`
	// ADelay and HTTPSDelay do the same for the A answer and the HTTPS
	// record (proto.NameAsk).
	ADelay     proto.Duration `json:"a_delay,omitempty" opt:"a_delay,fileonly"`
	HTTPSDelay proto.Duration `json:"https_delay,omitempty" opt:"https_delay,fileonly"`
	// HTTPVersion is the HTTP version spoken: 1.1 (""), 2 or 3
	// (version.go); a file's cell may list several, a group each.
	HTTPVersion string `json:"http_version,omitempty" opt:"http_version" usage:"HTTP version: 1.1 (the default), 2 (h2 over TLS by ALPN for https://, h2c by prior knowledge for http://; the objects as streams of one connection) or 3 (h3 over QUIC, https:// only, on a UDP socket pinned to the path's family)"`
	// ZeroRTT sends a resumed HTTP/3 transaction's first request in 0-RTT.
	ZeroRTT bool `json:"zero_rtt,omitempty" opt:"zero_rtt" usage:"with --http-version 3 and --tls-resume: returning users send the page's request in QUIC 0-RTT data"`
	// Keepalive keeps each user's HTTP/2 or HTTP/3 connection for its
	// next transactions (kept.go).
	Keepalive bool `json:"keepalive,omitempty" opt:"keepalive" usage:"with --http-version 2 or 3: each user keeps its connection for its next transactions (no lookup, no handshake after its first), as wrk, h2load and oha measure"`
	// Streams is how many transactions run at once on each user's kept
	// HTTP/2 connection (shared.go; 0 or 1: one at a time).
	Streams int `json:"streams,omitempty" opt:"streams" usage:"with --http-version 2 and --keepalive: transactions at once on each connection, as h2load's -m (each a page, or with --no-objects one request, on a stream of its own); --conns stays the number of connections; default 1: one at a time, as a browser tab"`
	// UserAgent is sent with every request (default: v6lab).
	UserAgent string `json:"user_agent,omitempty" opt:"user_agent" usage:"the User-Agent of every request (default v6lab); a survey sends v6lab's with the operator's contact"`
	// The probe command's own settings.
	NoObjects bool   `json:"-" opt:"no_objects,flagonly" usage:"fetch only the URL, not the page's embedded objects"`
	MaxBody   string `json:"-" opt:"max_body,flagonly" usage:"largest body accepted per response (e.g. 64M; default 4G)"`
	Engine    string `json:"-" opt:"engine,flagonly,default=auto" usage:"connection engine: evloop (v6lab's epoll loop: plain http, lookups and the dual path's Happy Eyeballs in the loop), go-dial (Go's dialer, Happy Eyeballs by goroutines on the dual path, then the epoll loop: plain http), go (Go's net package: anything), auto (evloop for plain http, go-dial where the dual path uses dialer go, go for https)"`
}

// Check applies http's rules: a url only with where: hosts, objects or a
// file (not both), the probe command's TLS and engine settings.
func (o *Options) Check(where result.Where, given proto.Given) error {
	hosts := where == result.Hosts
	if o.Dialer == DialerV3 && o.External() {
		// Said first: what else curl or wget cannot do is beside the point.
		return proto.Errorf("dialer", "v3 is v6lab's own client: %s races by its own rules (leave out client, or give dialer v6lab)", o.Client)
	}
	if o.Objects != nil {
		if *o.Objects < 0 || *o.Objects > MaxObjects {
			return proto.Errorf("objects", "%d: want 0 to %d embedded objects", *o.Objects, MaxObjects)
		}
		if hosts {
			return proto.Errorf("objects", "sets the embedded server's page; with where: hosts the real page decides")
		}
	}
	if err := o.CheckURL(where, "the page to fetch", "v6lab chooses the embedded server's URL"); err != nil {
		return err
	}
	var u *url.URL // the url, parsed once for every rule below
	if o.URL != "" {
		var err error
		if u, err = ParseURL(o.URL); err != nil {
			return proto.Errorf(proto.OptURL, "%v (want http:// or https:// and a host)", err)
		}
		// It goes on the request line (escaped, as every client sends
		// it); a control character in it is a mistake or an attack.
		if err := proto.CheckLine(proto.OptURL, u.Path); err != nil {
			return err
		}
	}
	if err := proto.CheckLine("user_agent", o.UserAgent); err != nil {
		return err
	}
	if o.File != "" {
		if err := proto.CheckFile(o.File, where); err != nil {
			return err
		}
		if o.Objects != nil {
			return proto.Errorf("objects", "a cell fetches a page with objects or a file, not both")
		}
	}
	if err := o.checkVersion(where, u, given); err != nil {
		return err
	}
	if err := o.checkEngine(u); err != nil {
		return err
	}
	if err := o.Choice.Check(o.File, o.URL); err != nil {
		return err
	}
	if err := o.CheckPin(where); err != nil {
		return err
	}
	if err := o.checkTLS(where, u); err != nil {
		return err
	}
	return o.checkDual(where, u, given)
}

// checkEngine checks the probe command's engine and body bound.
func (o *Options) checkEngine(u *url.URL) error {
	if o.MaxBody != "" {
		if mb, err := units.ParseSize(o.MaxBody); err != nil || mb <= 0 {
			return proto.Errorf("max_body", "bad size %q", o.MaxBody)
		}
	}
	if v := o.HTTPVersion; v == Version2 || v == Version3 {
		if _, err := versionEngine(v, engine(o.Engine)); err != nil {
			return proto.Errorf("engine", "%v", err)
		}
	} else if u != nil {
		if _, err := (&Client{URL: u, Objects: !o.NoObjects, Engine: engine(o.Engine)}).EngineUsed(); err != nil {
			return proto.Errorf("engine", "%v", err)
		}
	}
	if engine(o.Engine) == EngineEvloop && o.RacesFamilies && o.Dialer == "go" {
		// Every one of its dual transactions would fail with ErrEngine.
		return proto.Errorf("engine", "evloop races the dual path's families with v6lab's dialer, and the cell asks for Go's (dialer: go): use go-dial (what auto picks here) or go")
	}
	return nil
}

// checkTLS refuses TLS settings where nothing is https (they would be
// recorded and ignored), and v6lab's own TLS options with another client.
func (o *Options) checkTLS(where result.Where, u *url.URL) error {
	if _, err := TLSGroups(o.TLSGroups); err != nil {
		return proto.Errorf("tls_groups", "%v", err)
	}
	https := u != nil && u.Scheme == "https"
	if !o.TLS && !https && o.HTTPVersion != Version3 { // HTTP/3 is always TLS
		for _, s := range []struct {
			option, what string
			set          bool
		}{{"tls_resume", "resumes TLS sessions", o.TLSResume}, {"tls_groups", "chooses the TLS key exchange", o.TLSGroups != ""}} {
			switch {
			case !s.set:
			case where == result.Hosts:
				return proto.Errorf(s.option, "%s, but the url is not https://", s.what)
			default:
				return proto.Needs(s.option, proto.Give{Option: "tls"}, "%s", s.what)
			}
		}
	}
	if o.TLSGroups != "" && o.External() {
		return proto.Errorf("tls_groups", "is v6lab's own client's: %s offers its own key exchange", o.Client)
	}
	if o.TLS {
		switch {
		case where == result.Hosts:
			return proto.Errorf("tls", "asks for v6lab's own https server; with where: hosts the url's scheme says https")
		case o.External():
			return proto.Errorf("tls", "is v6lab's own client's: %s cannot pin the embedded server's self-signed certificate", o.Client)
		}
	}
	if o.TLSPin != "" {
		switch {
		case !https:
			return proto.Errorf(proto.OptTLSPin, "pins an https server's certificate: the url is not https://")
		case o.External():
			return proto.Errorf(proto.OptTLSPin, "is v6lab's own client's: %s verifies certificates its own way", o.Client)
		}
	}
	return nil
}

// checkDual checks the dual path's settings: its attempt delay, dialer
// and the embedded DNS server's late AAAA.
func (o *Options) checkDual(where result.Where, u *url.URL, given proto.Given) error {
	if d := time.Duration(o.Delay); (d != 0 || given("attempt_delay")) && (d < 10*time.Millisecond || d > 2*time.Second) {
		// RFC 8305 recommends 250 ms and allows 10 ms to 2 s (§5).
		return proto.Errorf("attempt_delay", "%v: want 10ms to 2s (RFC 8305 §5)", d)
	}
	for _, late := range []struct {
		option, what string
		d            proto.Duration
	}{{"aaaa_delay", "AAAA", o.AAAADelay}, {"a_delay", "A", o.ADelay}, {"https_delay", "HTTPS", o.HTTPSDelay}} {
		switch d := time.Duration(late.d); {
		case d == 0:
		case d < 0 || d > proto.MaxAAAADelay:
			return proto.Errorf(late.option, "%v: want a duration above 0 and at most %v", d, proto.MaxAAAADelay)
		case where == result.Hosts:
			return proto.Errorf(late.option, "the embedded DNS server delays %s, but where is hosts", late.what)
		}
	}
	if !slices.Contains(Dialers, o.Dialer) {
		return proto.Errorf("dialer", "%q: want v6lab or v2 (RFC 8305, the default), v3 (Happy Eyeballs version 3) or go (Go's net.Dialer, RFC 6555)", o.Dialer)
	}
	if err := o.checkWhatIf(); err != nil {
		return err
	}
	return o.checkV3(where, u)
}

// PathFit: the dual path races the families by Happy Eyeballs, which
// v6lab's own client and curl do, not wget.
func (o *Options) PathFit(where result.Where, p path.Path) error {
	if p.Kind().Dual && o.HTTPVersion == Version3 && o.Dialer != DialerV3 {
		pinned := "ipv4, ipv6, 6in4 and nat64"
		if where.OffLab() { // 6in4 and nat64 are the lab's
			pinned = "ipv4 and ipv6"
		}
		return proto.Needs("http_version", proto.Give{Option: "dialer", Value: DialerV3, Why: "Happy Eyeballs version 3 races QUIC; or measure HTTP/3 over " + pinned + " alone"},
			"3 over the %s path: its Happy Eyeballs (RFC 8305) races TCP connections, not QUIC", p)
	}
	if p.Kind().Dual && len(o.Resolve) > 0 {
		return proto.Errorf("resolve", "%s races the answers of a lookup, and --resolve makes none: measure ipv4 and ipv6", p)
	}
	if p.Kind().Dual && o.External() && o.Client != "curl" {
		return fmt.Errorf("%s races the families by Happy Eyeballs, which v6lab's own client and curl do, not %s", p, o.Client)
	}
	return nil
}

// ServerFor names the https server for a cell with tls.
func (o *Options) ServerFor() string {
	if o.HTTPVersion == Version3 || (o.Dialer == DialerV3 && o.RacesFamilies) {
		return ServerKeyH3
	}
	if o.TLS {
		return ServerKeyTLS
	}
	return ""
}

// AttemptDelay is the dual path's attempt delay.
func (o *Options) AttemptDelay() time.Duration {
	if o.Delay > 0 {
		return time.Duration(o.Delay)
	}
	return eyeballs.AttemptDelay
}

// Settle fetches a small file in place of a file cell's own.
func (o *Options) Settle(path.Path) (proto.Options, bool) {
	if o.File == "" {
		return nil, true
	}
	s := *o
	s.File = proto.SettleFile
	return &s, true
}

// lookupName is the name the dual path looks up: the URL's host, or with
// aaaa_delay the name the embedded DNS server answers late.
func lookupName(o *Options, u *url.URL) string {
	ask := proto.NameAsk{A: time.Duration(o.ADelay), AAAA: time.Duration(o.AAAADelay), HTTPS: time.Duration(o.HTTPSDelay)}
	if ask.Zero() || u == nil {
		return ""
	}
	return ask.Labels() + u.Hostname()
}

func engine(s string) Engine { return Engine(strings.TrimPrefix(s, "auto")) }

// cellEngine is the engine of a cell's pinned paths: the one asked for, or
// by default, when the cell also races the families with Go's dialer,
// go-dial (its dual path's client dials with Go, then reads on the event
// loop), so that the paths compared differ by the network alone. With
// v6lab's dialer the dual path races on the loop, as the pinned paths
// look up and connect there.
func cellEngine(o *Options, u *url.URL) Engine {
	e := engine(o.Engine)
	if e == EngineAuto && o.RacesFamilies && o.Dialer == "go" && u.Scheme == "http" {
		return EngineGoDial
	}
	return e // auto: https on Go's net everywhere
}

// OverUDP says whether the transactions go over QUIC (proto.Datagrams).
func (o *Options) OverUDP() bool { return o.HTTPVersion == Version3 }

// Fragmented is false: QUIC sets don't-fragment and sizes its packets to
// the path itself (proto.Datagrams).
func (o *Options) Fragmented() bool { return false }

// Target is the page the cell's url names, its host resolved by the
// cell's dns_servers (or the system's).
func (o *Options) Target(p path.Path) (proto.Endpoint, error) {
	u, err := ParseURL(o.URL)
	if err != nil {
		return proto.Endpoint{}, err
	}
	e, err := o.Endpoint(u.Hostname(), p)
	e.Scheme = u.Scheme
	return e, err
}

// Probe fetches the cell's url, or from the server at ep the page with
// its objects (objects: N selects /pages/N) or a generated file.
func (o *Options) Probe(ep proto.Endpoint, p path.Path) (load.Probe, error) {
	var u *url.URL
	objects, expect := !o.NoObjects, content.Unknown
	switch {
	case o.URL != "":
		var err error
		if u, err = ParseURL(o.URL); err != nil {
			return nil, err
		}
	case ep.Host == "":
		return nil, errors.New("no HTTP server to measure")
	case o.File != "":
		// Both the embedded server and the lab's nginx serve generated
		// content (content.Fill).
		u, objects, expect = proto.URLOf(ep, proto.FileResource("/files/", o.File)), false, ep.Content
	case o.Objects != nil:
		u = proto.URLOf(ep, fmt.Sprintf("/pages/%d", *o.Objects))
	default:
		u = proto.URLOf(ep, "/")
	}
	if o.External() {
		var size int64
		if o.URL == "" { // v6lab's own file: its size is its name
			size, _ = proto.FileSize(o.File)
		}
		ch := o.Choice
		// curl's --happy-eyeballs-timeout-ms: client is a file's key, where
		// attempt_delay is 0 unless given (the 250ms default is the flag's).
		ch.EyeballsTimeout = time.Duration(o.Delay)
		return ch.Probe(ep, u, p, lookupName(o, u), size)
	}
	var mb int64
	if o.MaxBody != "" {
		mb, _ = units.ParseSize(o.MaxBody)
	}
	groups, err := TLSGroups(o.TLSGroups)
	if err != nil {
		return nil, err
	}
	c := &Client{URL: u, Path: p, Resolver: ep.Resolver(), Source: ep.Source, Objects: objects, MaxBody: mb, AttemptDelay: time.Duration(o.Delay), GoDialer: o.Dialer == "go", LookupName: lookupName(o, u),
		UserAgent: proto.Or(o.UserAgent, "v6lab"), Engine: cellEngine(o, u), Expect: expect,
		Version: o.HTTPVersion, Phases: o.HTTPVersion != "" || o.Dialer == DialerV3, ZeroRTT: o.ZeroRTT, Keep: o.Keepalive, Shared: o.PerUser(),
		Sum: o.File != "", // a bulk transfer records its body's CRC-32C
		TLS: &tls.Config{InsecureSkipVerify: o.Insecure, CurvePreferences: groups}, V3: o.v3(), WhatIf: o.WhatIf}
	if pin := proto.Or(o.TLSPin, ep.CertSHA256); pin != "" && !o.Insecure {
		c.TLS = proto.Pinned(c.TLS, pin) // a named server's pin, or v6lab's own server's
	}
	if o.TLSResume {
		c.TLS = ResumeTLS(c.TLS)
	}
	if o.File != "" {
		return proto.Bulk(c), nil
	}
	return c, nil
}

// Embedded is the embedded HTTP server: the page of the settings'
// objects, object_size and page_size, over HTTPS with tls.
var Embedded = proto.Server{
	Key:      "http",
	About:    "embedded (v6lab's own HTTP/1.1; HTTP/2 by Go's net/http, h2c in the clear and h2 by ALPN; Go crypto/tls for https; HTTP/3 by quic-go)",
	Settings: func() any { return defaultSettings() },
	Serve:    serve,
	Command: proto.ServeCommand{
		Short: "Serve the test page, its embedded objects, and generated files",
		Long: `serve http serves / (a page linking --objects embedded objects of --object-size bytes),
/obj/N, /files/SIZE (SIZE generated bytes, e.g. /files/1M or /files/2G, never stored)
and /health, until interrupted. Each --listen socket is pinned to its address's family
(an IPv6 socket is IPv6-only). HTTP/1.1 (and 1.0) is served by v6lab's own server:
GET and HEAD, keep-alive, one write per reply up to 64 KiB; a request with a body is
refused (400), a header must end within 10 s of its first byte and 64 KiB, an idle
connection closes after 30 s. HTTP/2 is Go's net/http: in the clear by prior knowledge
(h2c), and over TLS by ALPN. With --tls it serves the same over Go's crypto/tls (TLS 1.2 and
1.3, session tickets on unless --tls-tickets=false) with a certificate it makes for the
listen addresses and localhost, and prints its SHA-256: a client pins it with --tls-pin
(or tls_pin: in an experiment file), or accepts any certificate with --insecure. With --tls
it also serves HTTP/3 over QUIC (quic-go, 0-RTT allowed) on each listen address's UDP, the
same port, one socket per family, and advertises it in an Alt-Svc field (--h3=false: not).`,
		Example: `  v6lab serve http
  v6lab serve http --listen 0.0.0.0:8080 --listen [::]:8080 --objects 0
  v6lab serve http --tls --listen 127.0.0.1:8443   # then: v6lab probe http https://127.0.0.1:8443/ --tls-pin SHA256
  v6lab serve http --tls --listen 127.0.0.1:8443 --listen [::1]:8443   # h1, h2 and h3 (UDP 8443) on both families
  v6lab serve http --keepalive-requests 5          # close each HTTP/1.1 or HTTP/2 connection after 5 requests, as nginx can`,
		Listen: []string{"127.0.0.1:8080", "[::1]:8080"},
	},
}

// ServerSettings are the embedded server's, as v6lab serve http's flags
// give them.
type ServerSettings struct {
	Objects           int         `opt:"objects" usage:"embedded objects linked from the page (0 to 256)"`
	ObjectSize        units.Bytes `opt:"object_size" usage:"size of each embedded object"`
	PageSize          int         `opt:"page_size" usage:"approximate size of the page in bytes"`
	TLS               bool        `opt:"tls" usage:"serve HTTPS with a self-signed certificate"`
	TLSTickets        bool        `opt:"tls_tickets" usage:"with --tls: give clients session tickets to resume with; false: every handshake is full"`
	H3                bool        `opt:"h3" usage:"with --tls: also serve HTTP/3 over QUIC on the same port's UDP, advertised by Alt-Svc"`
	KeepaliveRequests int         `opt:"keepalive_requests" usage:"close each HTTP/1.1 connection after this many requests, the last reply saying Connection: close, and end each HTTP/2 connection after as many with GOAWAY (NO_ERROR), as nginx's keepalive_requests does (HTTP/3 connections are not limited); 0: no limit"`
}

func defaultSettings() *ServerSettings {
	d := DefaultServerConfig
	return &ServerSettings{Objects: d.Objects, ObjectSize: units.Bytes(d.ObjectSize), PageSize: d.PageSize, TLSTickets: true, H3: true}
}

// serve starts the embedded server.
func serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	cfg, err := ServerConfigOf(at)
	if err != nil {
		return nil, err
	}
	s, err := proto.Listen(at, func(addrs []netip.Addr, port int) (*Server, error) { return Listen(ctx, cfg, addrs, port) })
	if err != nil {
		return nil, err
	}
	return running{s, proto.CertSHA256(cfg.TLS)}, nil
}

// ServerConfigOf reads the page and TLS settings of a place.
func ServerConfigOf(at proto.Place) (ServerConfig, error) {
	set, _ := at.Settings.(*ServerSettings)
	if set == nil {
		set = defaultSettings()
	}
	cfg := ServerConfig{Objects: set.Objects, ObjectSize: int64(set.ObjectSize), PageSize: set.PageSize, KeepaliveRequests: set.KeepaliveRequests}
	switch {
	case cfg.Objects < 0 || cfg.Objects > MaxObjects:
		// The page's objects are generated and held: bounded as a cell's.
		return cfg, proto.Errorf("objects", "%d: want 0 to %d embedded objects", cfg.Objects, MaxObjects)
	case cfg.PageSize < 0 || cfg.PageSize > MaxPageSize:
		return cfg, proto.Errorf("page_size", "%d: want 0 to %d bytes", cfg.PageSize, MaxPageSize)
	case cfg.ObjectSize < 0 || cfg.ObjectSize > MaxObjectSize:
		return cfg, proto.Errorf("object_size", "%d: want 0 to %d bytes", cfg.ObjectSize, MaxObjectSize)
	case cfg.KeepaliveRequests < 0:
		return cfg, proto.Errorf("keepalive_requests", "want a count of requests per connection, 0 (no limit) or more")
	}
	if set.TLS {
		var err error
		if cfg.TLS, err = proto.SelfSigned([]string{"localhost", at.Name}, at.Listen()); err != nil {
			return cfg, err
		}
		// No tickets: no client can resume, every handshake is full.
		cfg.TLS.SessionTicketsDisabled = !set.TLSTickets
		cfg.H3 = set.H3
	} else if !set.TLSTickets {
		return cfg, proto.Errorf("tls_tickets", "needs tls")
	}
	return cfg, nil
}

// Bounds of what the embedded server generates and holds in memory.
const (
	MaxPageSize   = 16 << 20
	MaxObjectSize = 64 << 20
)

// running is a started embedded server; pin is its certificate's SHA-256
// (https), what clients pin.
type running struct {
	*Server
	pin string
}

func (r running) Port() int { return r.Server.Port }

// CertSHA256 is the https certificate's SHA-256 (proto.Pinner; "" for
// plain http).
func (r running) CertSHA256() string { return r.pin }

// Label is https with TLS (proto.Labeled).
func (r running) Label() string {
	if r.pin != "" {
		return "https"
	}
	return "http"
}

// Detail says, for https, which certificate clients pin (proto.Detailed).
func (r running) Detail() string {
	if r.pin == "" {
		return ""
	}
	if r.versions != nil && len(r.versions.h3) > 0 {
		return "self-signed certificate, SHA-256 " + r.pin + "; HTTP/3 on the same UDP port"
	}
	return "self-signed certificate, SHA-256 " + r.pin
}

// ALPN is what the https server speaks by ALPN (proto.Advertised, for
// the name server's HTTPS records): h3 too when it serves HTTP/3 on its
// port's UDP; nothing for plain http.
func (r running) ALPN() []string {
	switch {
	case r.pin == "":
		return nil
	case r.versions != nil && len(r.versions.h3) > 0:
		return []string{"h3", "h2"}
	}
	return []string{"h2"}
}

// ServerKeyTLS is the key of the embedded HTTPS server (proto.CellServed):
// a second instance of the embedded server, its traffic on a port of its
// own so the wire check counts it apart.
const ServerKeyTLS = "https"

// EmbeddedTLS is the embedded server over Go's crypto/tls with a
// self-signed certificate that v6lab's clients pin: the lab's and
// loopback's https, a second instance of the embedded server on a port of
// its own so the wire check counts it apart.
var EmbeddedTLS = proto.Server{
	Key:    ServerKeyTLS,
	About:  "embedded (v6lab's own HTTP/1.1, and HTTP/2 by Go's net/http with h2 by ALPN, over Go crypto/tls, TLS 1.2 and 1.3, a self-signed certificate the client pins)",
	Serve:  serveTLS,
	Scheme: "https",
}

// serveTLS starts the embedded server with tls set, whatever the place's
// settings say of it.
func serveTLS(ctx context.Context, at proto.Place) (proto.Running, error) {
	set, _ := at.Settings.(*ServerSettings)
	if set == nil {
		set = defaultSettings()
	}
	tlsSet := *set
	tlsSet.TLS = true
	at.Settings = &tlsSet
	return serve(ctx, at)
}
