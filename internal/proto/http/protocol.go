package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/input/units"
	"v6lab/internal/proto"
	"v6lab/internal/proto/extclient"
	"v6lab/internal/sock/path"
)

// Protocol is HTTP(S) page and file retrieval (proto.Protocol).
type Protocol struct{}

func (Protocol) Name() string { return "http" }

// Timing: a cell downloading with curl or wget is timed by the program
// (proto.Timed).
func (Protocol) Timing(o *proto.Options) string { return extclient.Timing(o) }

func (Protocol) Options() []string {
	return []string{"objects", "file", extclient.OptClient, proto.OptURL, proto.OptDNSServers, proto.OptTLSPin, "tls", "tls_resume", "tls_groups", "attempt_delay", "dialer", "aaaa_delay", "http_version", "zero_rtt", "keepalive"}
}

// Check applies http's rules: a url only with where: hosts, objects or a
// file (not both), the probe command's TLS and engine settings.
func (Protocol) Check(o *proto.Options, where string, given proto.Given) error {
	hosts := where == "hosts"
	if o.Objects != nil {
		if *o.Objects < 0 || *o.Objects > MaxObjects {
			return proto.Errorf("objects", "%d: want 0 to %d embedded objects", *o.Objects, MaxObjects)
		}
		if hosts {
			return proto.Errorf("objects", "sets the embedded server's page; with where: hosts the real page decides")
		}
	}
	if err := proto.CheckURLWhere(o, where, "the page to fetch", "v6lab chooses the embedded server's URL"); err != nil {
		return err
	}
	if o.URL != "" {
		if _, err := ParseURL(o.URL); err != nil {
			return proto.Errorf(proto.OptURL, "%v (want http:// or https:// and a host)", err)
		}
	}
	if o.File != "" {
		if err := proto.CheckFile(o.File, where); err != nil {
			return err
		}
		if o.Objects != nil {
			return proto.Errorf("objects", "a cell fetches a page with objects or a file, not both")
		}
	}
	if err := checkVersion(o); err != nil {
		return err
	}
	if o.HTTPVersion == Version2 && where != "hosts" && !given("tls") {
		o.TLS = true // h2 by ALPN, as browsers speak it; tls: false for h2c
	}
	ps := o.Probe
	if ps.MaxBody != "" {
		if mb, err := units.ParseSize(ps.MaxBody); err != nil || mb <= 0 {
			return proto.Errorf("max_body", "bad size %q", ps.MaxBody)
		}
	}
	if _, err := TLSGroups(o.TLSGroups); err != nil {
		return proto.Errorf("tls_groups", "%v", err)
	}
	if v := o.HTTPVersion; v == Version2 || v == Version3 {
		if _, err := versionEngine(v, engine(ps.Engine)); err != nil {
			return proto.Errorf("engine", "%v", err)
		}
	} else if o.URL != "" {
		u, _ := ParseURL(o.URL)
		if _, err := (&Client{URL: u, Objects: !ps.NoObjects, Engine: engine(ps.Engine)}).EngineUsed(); err != nil {
			return proto.Errorf("engine", "%v", err)
		}
	}
	if engine(ps.Engine) == EngineEvloop && o.RacesFamilies && o.Dialer == "go" {
		// Every one of its dual transactions would fail with ErrEngine.
		return proto.Errorf("engine", "evloop races the dual path's families with v6lab's dialer, and the cell asks for Go's (dialer: go): use go-dial (what auto picks here) or go")
	}
	if err := extclient.CheckClient(o); err != nil {
		return err
	}
	if err := proto.CheckPin(o, where); err != nil {
		return err
	}
	// TLS settings where nothing is https would be recorded and ignored.
	if !usesTLS(o) {
		for _, s := range []struct {
			option, what string
			set          bool
		}{{"tls_resume", "resumes TLS sessions", o.TLSResume}, {"tls_groups", "chooses the TLS key exchange", o.TLSGroups != ""}} {
			switch {
			case !s.set:
			case where == "hosts":
				return proto.Errorf(s.option, "%s, but the url is not https://", s.what)
			default:
				return proto.Errorf(s.option, "%s: give tls too", s.what)
			}
		}
	}
	if o.TLSGroups != "" && extclient.External(o) {
		return proto.Errorf("tls_groups", "is v6lab's own client's: %s offers its own key exchange", o.Client)
	}
	if o.TLS {
		switch {
		case where == "hosts":
			return proto.Errorf("tls", "asks for v6lab's own https server; with where: hosts the url's scheme says https")
		case extclient.External(o):
			return proto.Errorf("tls", "is v6lab's own client's: %s cannot pin the embedded server's self-signed certificate", o.Client)
		}
	}
	if o.TLSPin != "" {
		switch u, _ := ParseURL(o.URL); {
		case u == nil || u.Scheme != "https":
			return proto.Errorf(proto.OptTLSPin, "pins an https server's certificate: the url is not https://")
		case extclient.External(o):
			return proto.Errorf(proto.OptTLSPin, "is v6lab's own client's: %s verifies certificates its own way", o.Client)
		}
	}
	if _, err := attemptDelay(o.AttemptDelay); err != nil {
		return proto.Errorf("attempt_delay", "%v", err)
	}
	if o.AAAADelay != "" {
		d, err := time.ParseDuration(o.AAAADelay)
		switch {
		case err != nil || d <= 0 || d > proto.MaxAAAADelay:
			return proto.Errorf("aaaa_delay", "%q: want a duration above 0 and at most %v", o.AAAADelay, proto.MaxAAAADelay)
		case where == "hosts":
			return proto.Errorf("aaaa_delay", "the embedded DNS server delays AAAA, but where is hosts")
		}
	}
	if o.Dialer != "" && o.Dialer != "v6lab" && o.Dialer != "go" {
		return proto.Errorf("dialer", "%q: want v6lab (RFC 8305, the default) or go (Go's net.Dialer, RFC 6555)", o.Dialer)
	}
	return proto.CheckDNSServers(o, where)
}

// lookupName is the name the dual path looks up: the URL's host, or with
// aaaa_delay the name the embedded DNS server answers late.
func lookupName(o *proto.Options, u *url.URL) string {
	if o.AAAADelay == "" || u == nil {
		return ""
	}
	return proto.AAAADelayLabel + o.AAAADelay + "." + u.Hostname()
}

// attemptDelay reads the dual path's Connection Attempt Delay: RFC 8305
// recommends 250 ms, allows 10 ms to 2 s (§5), and so does v6lab.
func attemptDelay(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 250ms", s)
	}
	if d < 10*time.Millisecond || d > 2*time.Second {
		return 0, fmt.Errorf("%v: want 10ms to 2s (RFC 8305 §5)", d)
	}
	return d, nil
}

func engine(s string) Engine { return Engine(strings.TrimPrefix(s, "auto")) }

// cellEngine is the engine of a cell's pinned paths: the one asked for, or
// by default, when the cell also races the families with Go's dialer,
// go-dial (its dual path's client dials with Go, then reads on the event
// loop), so that the paths compared differ by the network alone. With
// v6lab's dialer the dual path races on the loop, as the pinned paths
// look up and connect there.
func cellEngine(o *proto.Options, u *url.URL) Engine {
	e := engine(o.Probe.Engine)
	if e == EngineAuto && o.RacesFamilies && o.Dialer == "go" && u.Scheme == "http" {
		return EngineGoDial
	}
	return e // auto: https on Go's net everywhere
}

// Target is the page the cell's url names, its host resolved by the
// cell's dns_servers (or the system's).
func (Protocol) Target(o *proto.Options, p path.Path) (proto.Endpoint, error) {
	u, err := ParseURL(o.URL)
	if err != nil {
		return proto.Endpoint{}, err
	}
	dns, err := proto.HostResolver(u.Hostname(), o.DNSServers)
	if err != nil {
		return proto.Endpoint{}, err
	}
	return proto.Endpoint{Scheme: u.Scheme, Host: u.Hostname(), DNS: dns, DNSOver: path.Path(strings.TrimPrefix(o.Probe.DNSOver, "path"))}, nil
}

// Probe fetches the cell's url, or from the server at ep the page with
// its objects (objects: N selects /pages/N) or a generated file.
func (Protocol) Probe(o *proto.Options, ep proto.Endpoint, p path.Path) (load.Probe, error) {
	var u *url.URL
	objects, expect := !o.Probe.NoObjects, content.Unknown
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
	if extclient.External(o) {
		return extclient.ExternalProbe(o, ep, u, p)
	}
	var mb int64
	if o.Probe.MaxBody != "" {
		mb, _ = units.ParseSize(o.Probe.MaxBody)
	}
	groups, err := TLSGroups(o.TLSGroups)
	if err != nil {
		return nil, err
	}
	delay, _ := attemptDelay(o.AttemptDelay) // checked by Check
	c := &Client{URL: u, Path: p, Resolver: ep.Resolver(), Source: ep.Source, Objects: objects, MaxBody: mb, AttemptDelay: delay, GoDialer: o.Dialer == "go", LookupName: lookupName(o, u),
		UserAgent: "v6lab", Engine: cellEngine(o, u), Expect: expect,
		Version: o.HTTPVersion, Phases: o.HTTPVersion != "", ZeroRTT: o.ZeroRTT, Keep: o.Keepalive,
		Sum: o.File != "", // a bulk transfer records its body's CRC-32C
		TLS: &tls.Config{InsecureSkipVerify: o.Probe.Insecure, CurvePreferences: groups}}
	if pin := proto.Or(o.TLSPin, ep.CertSHA256); pin != "" && !o.Probe.Insecure {
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

// RealServer is the lab's real HTTP server.
func (Protocol) RealServer() string { return "nginx" }

// RealFiles are the page and objects nginx serves so that a cell sees
// what the embedded server gives.
func (Protocol) RealFiles() map[string][]byte {
	cfg := DefaultServerConfig
	files := map[string][]byte{"/index.html": Page(cfg)}
	for i := range cfg.Objects {
		files[fmt.Sprintf("/obj/%d", i)] = content.Bytes(cfg.ObjectSize)
	}
	return files
}

// FileDir is where a file cell's file is, under the server's root:
// /files/SIZE, as the embedded server serves it.
func (Protocol) FileDir() string { return "/files/" }

// RealFit says why a cell cannot fetch from nginx.
func (Protocol) RealFit(o *proto.Options) error {
	if v := o.HTTPVersion; v == Version2 || v == Version3 {
		return fmt.Errorf("http_version %s: the lab's real servers speak HTTP/1.1 in this version (nginx for h2 and Caddy for h3 are to come): use the embedded server", v)
	}
	if o.TLS {
		return fmt.Errorf("the lab's nginx serves plain http: tls needs the embedded server")
	}
	if o.Objects != nil || o.Client != "" {
		return fmt.Errorf("with real servers an http cell fetches nginx's page or a file: objects and client need the embedded server")
	}
	// A file is written once to nginx's root, in chunks, whatever its
	// size (servers.Generated); CheckFile bounded its size.
	return nil
}

// About describes the embedded server.
func (Protocol) About() string {
	return "embedded (v6lab's own HTTP/1.1; HTTP/2 by Go's net/http, h2c in the clear and h2 by ALPN; Go crypto/tls for https; HTTP/3 by quic-go)"
}

// Serve starts the embedded server: the page of the settings objects,
// object_size and page_size, over HTTPS with tls.
func (Protocol) Serve(ctx context.Context, at proto.Place) (proto.Running, error) {
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
	cfg := DefaultServerConfig
	var err error
	if _, err = fmt.Sscan(at.Setting("objects", fmt.Sprint(cfg.Objects)), &cfg.Objects); err != nil || cfg.Objects < 0 {
		return cfg, proto.Errorf("objects", "want a count of 0 or more")
	}
	if _, err = fmt.Sscan(at.Setting("page_size", fmt.Sprint(cfg.PageSize)), &cfg.PageSize); err != nil || cfg.PageSize < 0 {
		return cfg, proto.Errorf("page_size", "want bytes, 0 or more")
	}
	if cfg.ObjectSize, err = units.ParseSize(at.Setting("object_size", "8K")); err != nil {
		return cfg, proto.Errorf("object_size", "%v", err)
	}
	if _, err = fmt.Sscan(at.Setting("keepalive_requests", "0"), &cfg.KeepaliveRequests); err != nil || cfg.KeepaliveRequests < 0 {
		return cfg, proto.Errorf("keepalive_requests", "want a count of requests per connection, 0 (no limit) or more")
	}
	if at.Setting("tls", "false") == "true" {
		if cfg.TLS, err = proto.SelfSigned([]string{"localhost", at.Name}, at.Listen()); err != nil {
			return cfg, err
		}
		// No tickets: no client can resume, every handshake is full.
		cfg.TLS.SessionTicketsDisabled = at.Setting("tls_tickets", "true") == "false"
		cfg.H3 = at.Setting("h3", "true") == "true"
	} else if at.Setting("tls_tickets", "true") == "false" {
		return cfg, proto.Errorf("tls_tickets", "needs tls")
	}
	return cfg, nil
}

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

// Detail says, for https, which certificate clients pin (proto.Detailed).
func (r running) Detail() string {
	if r.pin == "" {
		return ""
	}
	return "self-signed certificate, SHA-256 " + r.pin
}

// ServerKeyTLS is the key of the embedded HTTPS server (proto.CellServed):
// a second instance of the embedded server, its traffic on a port of its
// own so the wire check counts it apart.
const ServerKeyTLS = "https"

// ServerFor names the https server for a cell with tls (proto.CellServed).
func (Protocol) ServerFor(o *proto.Options) string {
	if o.HTTPVersion == Version3 {
		return ServerKeyH3
	}
	if o.TLS {
		return ServerKeyTLS
	}
	return ""
}

// TLSServer is the embedded server over Go's crypto/tls with a
// self-signed certificate that v6lab's clients pin: the lab's and
// loopback's https (proto.Server, proto.Schemed).
type TLSServer struct{}

// About describes the server.
func (TLSServer) About() string {
	return "embedded (v6lab's own HTTP/1.1 over Go crypto/tls, TLS 1.2 and 1.3, a self-signed certificate the client pins)"
}

// Scheme is https (proto.Schemed).
func (TLSServer) Scheme() string { return "https" }

// Serve starts the embedded server with tls set, whatever the place's
// settings say of it.
func (TLSServer) Serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	settings := maps.Clone(at.Settings)
	if settings == nil {
		settings = map[string][]string{}
	}
	settings["tls"] = []string{"true"}
	at.Settings = settings
	return Protocol{}.Serve(ctx, at)
}
