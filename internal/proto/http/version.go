package http

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"v6lab/internal/proto"
	"v6lab/internal/result"
)

// The HTTP versions a cell speaks (option http_version).
const (
	// Version11 is HTTP/1.1 on a connection per transaction (the default).
	Version11 = "1.1"
	// Version2 is HTTP/2: over TLS by ALPN h2 (https), or in the clear by
	// prior knowledge (h2c, http://); the page's objects are concurrent
	// streams on the transaction's one connection.
	Version2 = "2"
	// Version3 is HTTP/3 over QUIC (always TLS), on a UDP socket v6lab
	// binds to the path's family.
	Version3 = "3"
)

// Versions lists them, in the order reports show them.
var Versions = []string{Version11, Version2, Version3}

// ParseVersion reads an http_version: 1.1, 2 or 3 (2.0 and 3.0 too).
func ParseVersion(s string) (string, error) {
	switch strings.TrimSpace(s) {
	case "1.1":
		return Version11, nil
	case "2", "2.0":
		return Version2, nil
	case "3", "3.0":
		return Version3, nil
	}
	if strings.Contains(s, ",") {
		// A list is an experiment file's: one cell group per version.
		return "", fmt.Errorf("%q is a list: give one version, 1.1, 2 or 3 (a list, [1.1, 2, 3], is for a cell's http_version in an experiment file, one cell group per version: docs/experiments.md)", s)
	}
	return "", fmt.Errorf("%q is not an HTTP version v6lab speaks: want 1.1, 2 or 3", s)
}

// VersionLabel is what reports call a cell group of version v whose name
// would be base: base for HTTP/1.1, base/2 and base/3 for the others.
func VersionLabel(base, v string) string {
	if v == Version2 || v == Version3 {
		return base + "/" + v
	}
	return base
}

// EngineQUIC names the engine of HTTP/3 transactions: quic-go over a
// socket v6lab binds.
const EngineQUIC Engine = "quic-go"

// versionEngine is the engine of version v's transactions, or why the
// engine asked for cannot run them.
func versionEngine(v string, asked Engine) (Engine, error) {
	switch asked {
	case EngineAuto, EngineGo:
	default:
		return EngineGo, fmt.Errorf("http: the %s engine speaks HTTP/1.1; http_version %s runs on the go engine (HTTP/2: v6lab's own framing; HTTP/3: quic-go): use engine auto or go", asked, v)
	}
	if v == Version3 {
		return EngineQUIC, nil
	}
	return EngineGo, nil
}

// versionOption is the option that names the HTTP version.
const versionOption = "http_version"

// DefaultQUICTimeout bounds a QUIC handshake to which no answer comes:
// the transaction fails with "no QUIC answer over PATH in 3 s".
const DefaultQUICTimeout = 3 * time.Second

// checkVersion applies http_version's, zero_rtt's and keepalive's rules
// (the version normalised; HTTP/2 in the lab and on loopback over TLS
// unless the cell says tls: false).
func (o *Options) checkVersion(where result.Where, u *url.URL, given proto.Given) error {
	if o.HTTPVersion != "" {
		v, err := ParseVersion(o.HTTPVersion)
		if err != nil {
			return proto.Errorf("http_version", "%v", err)
		}
		o.HTTPVersion = v
	}
	v := o.HTTPVersion
	if (v == Version2 || v == Version3) && o.External() {
		return proto.Errorf("http_version", "%s is spoken by v6lab's own client: client: %s fetches with HTTP/1.1 here (leave client out)", v, o.Client)
	}
	if v == Version3 && u != nil && u.Scheme != "https" {
		return proto.Errorf("http_version", "3 runs over QUIC, which is always TLS, but the url is %s: give an https:// url", u.Scheme+"://")
	}
	if v == Version3 && given("tls") && !o.TLS { // it would run over TLS regardless
		return proto.Errorf("tls", "false: HTTP/3 runs over QUIC, which is always TLS; tls: false makes HTTP/2 h2c and HTTP/1.1 plain http: leave tls out of a cell with http_version 3 (in a list of versions, give that version a cell of its own)")
	}
	if v == Version2 && where != result.Hosts && !given("tls") {
		o.TLS = true // h2 by ALPN, as browsers speak it; tls: false for h2c
	}
	if o.Keepalive && v != Version2 && v != Version3 {
		return proto.Needs("keepalive", proto.Give{Option: versionOption, Value: "2 or 3", Why: "HTTP/1.1 transactions open a connection each"}, "keeps each user's HTTP/2 or HTTP/3 connection")
	}
	if err := o.checkStreams(v, given); err != nil {
		return err
	}
	if o.ZeroRTT {
		switch {
		case v != Version3:
			return proto.Needs("zero_rtt", proto.Give{Option: versionOption, Value: Version3}, "sends the first request in QUIC's 0-RTT data")
		case !o.TLSResume:
			return proto.Needs("zero_rtt", proto.Give{Option: "tls_resume", Why: "the first transaction of each user is a full handshake"}, "needs a session to resume")
		}
	}
	return nil
}

// ServerKeyH3 is the key of the embedded server that answers HTTP/3: the
// https server with QUIC on its port's UDP as well (Alt-Svc advertised
// over TCP), its traffic on a port of its own so the wire check counts a
// cell's UDP apart.
const ServerKeyH3 = "h3"

// EmbeddedH3 is the embedded https server answering HTTP/3 over QUIC on
// the same port's UDP, beside HTTP/1.1 and HTTP/2 over TLS; the wire check
// counts only UDP on its port.
var EmbeddedH3 = proto.Server{
	Key:     ServerKeyH3,
	About:   "embedded (HTTP/3 over quic-go on UDP, and HTTP/1.1 and HTTP/2 over Go crypto/tls on TCP, one port; a self-signed certificate the client pins)",
	Serve:   serveH3,
	Scheme:  "https",
	WireUDP: true,
}

// serveH3 starts the embedded server with tls and h3 set.
func serveH3(ctx context.Context, at proto.Place) (proto.Running, error) {
	set, _ := at.Settings.(*ServerSettings)
	if set == nil {
		set = defaultSettings()
	}
	h3 := *set
	h3.TLS, h3.H3 = true, true
	at.Settings = &h3
	return serve(ctx, at)
}

// phases adds to a sample of a cell that names its version the figures
// that compare versions: the handshake (TCP and TLS, or QUIC) and the
// first byte since the start (docs/metrics.md).
func (c *Client) phases(s result.Sample) result.Sample {
	if !c.Phases || !s.OK() {
		return s
	}
	if s.Metrics == nil {
		s.Metrics = map[string]float64{}
	}
	if end := max(s.ConnectNS, s.TLSNS); end > 0 {
		start := s.ResolveNS
		if c.Path.Kind().Dual {
			start = 0 // the race's lookups and attempts overlap: all of it
		}
		s.Metrics["handshake_ms"] = float64(end-start) / 1e6
	}
	if s.FirstByteNS > 0 {
		s.Metrics["ttfb_ms"] = float64(s.FirstByteNS) / 1e6
	}
	return s
}

// checkStreams checks option streams: HTTP/2 on kept connections, v6lab's
// own dialer.
func (o *Options) checkStreams(v string, given proto.Given) error {
	switch n := o.Streams; {
	case n == 0 && !given("streams") || n == 1:
		return nil
	case n < 1 || n > MaxStreams:
		return proto.Errorf("streams", "%d: want 1 to %d transactions at once on a connection", n, MaxStreams)
	case v != Version2:
		return proto.Needs("streams", proto.Give{Option: versionOption, Value: Version2}, "%d runs transactions at once as streams of one HTTP/2 connection", n)
	case !o.Keepalive:
		return proto.Needs("streams", proto.Give{Option: "keepalive"}, "%d shares each user's connection among its transactions", n)
	case o.Dialer == DialerV3:
		return proto.Errorf("streams", "%d: dialer v3 keeps the connection each user's race won for that user's transactions one at a time (its connections are not shared): leave streams out, or the dialer", n)
	case o.File != "":
		return proto.Errorf("streams", "%d: a file cell measures a transfer's throughput, which %d transactions at once on one connection would share (each sample a part of the connection's): leave streams out (more connections: conns)", n, n)
	}
	return nil
}

// PerUser is how many transactions each user runs at once: streams, on
// the kept HTTP/2 connections it applies to (Client.Streams).
func (o *Options) PerUser() int {
	if o.HTTPVersion == Version2 && o.Keepalive && o.Streams > 1 {
		return o.Streams
	}
	return 1
}

// MaxStreams bounds option streams: the streams at once RFC 9113 §6.5.2
// asks a server to allow at least (nginx allows 128, Go 250); a
// transaction's streams beyond the server's limit wait their turn (open).
const MaxStreams = 100
