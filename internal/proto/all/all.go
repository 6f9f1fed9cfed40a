// Package all is the explicit list of the protocols v6lab measures and of
// their embedded servers. Adding a protocol is a package under
// internal/proto and a line here (docs/ARCHITECTURE.md has the recipe);
// nothing registers itself.
package all

import (
	"fmt"
	"slices"
	"strings"

	"v6lab/internal/proto"
	"v6lab/internal/proto/dns"
	"v6lab/internal/proto/ftp"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/proto/trial"
)

// List is every protocol, in the order docs and messages name them.
var List = []*proto.Protocol{
	&httpp.Protocol,
	&dns.Protocol,
	&ftp.Protocol,
	&smtp.Protocol,
	&imap.Protocol,
	&trial.TCP,
	&trial.UDP,
}

// Servers are the embedded servers, in the order they start: each
// protocol's own, the https one beside http's (and HTTP/3's, QUIC on its
// port's UDP), and the transport server tcp and udp share.
var Servers = []*proto.Server{
	httpp.Protocol.Server,
	&httpp.EmbeddedTLS,
	&httpp.EmbeddedH3,
	dns.Protocol.Server,
	ftp.Protocol.Server,
	smtp.Protocol.Server,
	imap.Protocol.Server,
	&trial.Server,
}

// NameServer is the key of the embedded server that names the others:
// every transaction that names its server looks the name up there first.
var NameServer = dns.Protocol.Server.Key

// Web is the protocol that fetches web pages and their objects: what a
// survey of sites (run/survey) measures each site with.
var Web = &httpp.Protocol

// Get finds a protocol by name.
func Get(name string) (*proto.Protocol, bool) {
	i := slices.IndexFunc(List, func(p *proto.Protocol) bool { return p.Name == name })
	if i < 0 {
		return nil, false
	}
	return List[i], true
}

// MustGet is Get for a name already checked.
func MustGet(name string) *proto.Protocol {
	p, ok := Get(name)
	if !ok {
		panic(fmt.Sprintf("all: no protocol %q", name))
	}
	return p
}

// Names lists the protocols' names.
func Names() []string {
	var out []string
	for _, p := range List {
		out = append(out, p.Name)
	}
	return out
}

// NameList is Names as prose: "http, dns, …, tcp or udp".
func NameList(last string) string { return prose(Names(), last) }

func prose(n []string, last string) string {
	if len(n) == 1 {
		return n[0]
	}
	return strings.Join(n[:len(n)-1], ", ") + " " + last + " " + n[len(n)-1]
}

// Racing names the protocols whose clients race the families on the dual
// path, as prose ("http").
func Racing() string {
	var n []string
	for _, p := range List {
		if p.Races {
			n = append(n, p.Name)
		}
	}
	return prose(n, "and")
}

// Captured names the protocols whose server-side figures a capture in
// the server host gives, as prose ("http").
func Captured() string {
	var n []string
	for _, p := range List {
		if p.ServerCapture {
			n = append(n, p.Name)
		}
	}
	return prose(n, "and")
}

// ServerKey is the key of the embedded server that answers a protocol.
func ServerKey(name string) string {
	if p, ok := Get(name); ok {
		return p.ServerKey()
	}
	return name
}

// CellServerKey is the key of the embedded server that answers a cell of
// protocol name with options o: ServerKey, or the one its options choose
// (https for http's tls).
func CellServerKey(name string, o proto.Options) string {
	if o != nil {
		if k := o.ServerFor(); k != "" {
			return k
		}
	}
	return ServerKey(name)
}

// Server is the embedded server of key.
func Server(key string) (*proto.Server, bool) {
	i := slices.IndexFunc(Servers, func(s *proto.Server) bool { return s.Key == key })
	if i < 0 {
		return nil, false
	}
	return Servers[i], true
}

// Real lists the protocols with a real Debian server, as "nginx for http".
func Real() []string {
	var have []string
	for _, p := range List {
		if p.Real != nil {
			have = append(have, p.Real.Program+" for "+p.Name)
		}
	}
	return have
}

// RealFit says why a cell of protocol name with options o cannot run
// against its real server.
func RealFit(name string, o proto.Options) error {
	p, ok := Get(name)
	if !ok || p.Real == nil {
		return fmt.Errorf("no real server for %s in this version (real: %s); use servers: embedded", name, strings.Join(Real(), ", "))
	}
	if p.Real.Fit == nil {
		return nil
	}
	return p.Real.Fit(o)
}

// WireUDP reports whether the wire check counts only UDP on the port of
// the server of key (proto.Server.WireUDP: HTTP/3's).
func WireUDP(key string) bool {
	s, ok := Server(strings.TrimPrefix(key, "real/"))
	return ok && s.WireUDP
}

// WireAnyPort reports whether the wire check counts every port for the
// server of key (an embedded server's key, or real/PROTOCOL): its data
// flows on ports chosen per transaction.
func WireAnyPort(key string) bool {
	s, ok := Server(strings.TrimPrefix(key, "real/"))
	return ok && s.WireAnyPort
}

// ProbeNames lists the protocols of v6lab probe, in prose.
func ProbeNames() string {
	var n []string
	for _, p := range List {
		if p.Command.Short != "" && !p.Command.TopLevel {
			n = append(n, p.Name)
		}
	}
	return prose(n, "or")
}

// ServeKeys are the embedded servers with a serve command.
func ServeKeys() []string {
	var out []string
	for _, s := range Servers {
		if s.Command.Short != "" {
			out = append(out, s.Key)
		}
	}
	return out
}

// RedactArgs is a command line as results record it: urls' passwords and
// the values of every protocol's and server's secret options masked.
func RedactArgs(args []string) []string {
	secret := map[string]bool{}
	add := func(o any) {
		for _, f := range proto.Fields(o) {
			if f.Secret && f.Flag != "" {
				secret[f.Flag] = true
			}
		}
	}
	for _, p := range List {
		add(p.New())
	}
	for _, s := range Servers {
		if s.Settings != nil {
			add(s.Settings())
		}
	}
	return proto.RedactArgs(args, secret)
}
