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
var List = []proto.Protocol{
	httpp.Protocol{},
	dns.Protocol{},
	ftp.Protocol{},
	smtp.Protocol{},
	imap.Protocol{},
	trial.TCP,
	trial.UDP,
}

// Servers are the embedded servers by key, in the order they start: a
// protocol's own (its name), or one several share (transport: tcp, udp).
var Servers = []struct {
	Key    string
	Server proto.Server
}{
	{"http", httpp.Protocol{}},
	{httpp.ServerKeyTLS, httpp.TLSServer{}},
	{httpp.ServerKeyH3, httpp.H3Server{}},
	{"dns", dns.Protocol{}},
	{"ftp", ftp.Protocol{}},
	{"smtp", smtp.Protocol{}},
	{"imap", imap.Protocol{}},
	{trial.ServerKey, trial.Server{}},
}

// Get finds a protocol by name.
func Get(name string) (proto.Protocol, bool) {
	i := slices.IndexFunc(List, func(p proto.Protocol) bool { return p.Name() == name })
	if i < 0 {
		return nil, false
	}
	return List[i], true
}

// MustGet is Get for a name already checked.
func MustGet(name string) proto.Protocol {
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
		out = append(out, p.Name())
	}
	return out
}

// NameList is Names as prose: "http, dns, …, tcp or udp".
func NameList(last string) string {
	n := Names()
	return strings.Join(n[:len(n)-1], ", ") + " " + last + " " + n[len(n)-1]
}

// ServerKey is the key of the embedded server that answers a protocol.
func ServerKey(name string) string {
	if p, ok := Get(name); ok {
		if s, ok := p.(interface{ ServedBy() string }); ok {
			return s.ServedBy()
		}
	}
	return name
}

// CellServerKey is the key of the embedded server that answers a cell of
// protocol name with options o: ServerKey, or the one its options choose
// (proto.CellServed).
func CellServerKey(name string, o *proto.Options) string {
	if p, ok := Get(name); ok {
		if c, ok := p.(proto.CellServed); ok {
			if k := c.ServerFor(o); k != "" {
				return k
			}
		}
	}
	return ServerKey(name)
}

// Server is the embedded server of key.
func Server(key string) (proto.Server, bool) {
	for _, s := range Servers {
		if s.Key == key {
			return s.Server, true
		}
	}
	return nil, false
}

// Real lists, per protocol with one, its real Debian server.
func Real() map[string]string {
	out := map[string]string{}
	for _, p := range List {
		if r, ok := p.(proto.Real); ok {
			out[p.Name()] = r.RealServer()
		}
	}
	return out
}

// RealFit says why a cell of protocol name cannot run against the real
// servers.
func RealFit(name string, o *proto.Options) error {
	p, ok := Get(name)
	r, real := p.(proto.Real)
	if !ok || !real {
		var have []string
		for _, q := range List {
			if r, ok := q.(proto.Real); ok {
				have = append(have, r.RealServer()+" for "+q.Name())
			}
		}
		return fmt.Errorf("no real server for %s in this version (real: %s); use servers: embedded", name, strings.Join(have, ", "))
	}
	return r.RealFit(o)
}

// WireUDP reports whether the wire check counts only UDP on the port of
// the server of key (proto.WireUDP: HTTP/3's).
func WireUDP(key string) bool {
	s, ok := Server(strings.TrimPrefix(key, "real/"))
	if !ok {
		return false
	}
	w, ok := s.(proto.WireUDP)
	return ok && w.WireUDP()
}

// WireAnyPort reports whether the wire check counts every port for the
// server of key (an embedded server's key, or real/PROTOCOL): its data
// flows on ports chosen per transaction.
func WireAnyPort(key string) bool {
	s, ok := Server(strings.TrimPrefix(key, "real/"))
	if !ok {
		return false
	}
	w, ok := s.(proto.WireAnyPort)
	return ok && w.WireAnyPort()
}
