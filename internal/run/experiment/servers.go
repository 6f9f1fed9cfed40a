package experiment

import (
	"cmp"
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"v6lab/internal/gen/load"
	"v6lab/internal/lab"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/sock/path"
)

// LocalName is the name the embedded DNS server gives the embedded servers.
const LocalName = proto.LocalName

// Probes makes the probe of a cell group over a path to where its server
// is: eps, the servers a lab or loopback run started (found by the cell's
// WireKey), or, when eps is nil, the server each cell names itself (where:
// hosts, the probe commands).
func Probes(eps proto.Endpoints) func(*CellGroup, path.Path) (load.Probe, error) {
	return func(s *CellGroup, p path.Path) (load.Probe, error) {
		if _, ok := all.Get(s.Protocol); !ok || s.Options == nil {
			return nil, fmt.Errorf("protocol %q is not measured by this version", s.Protocol)
		}
		var ep proto.Endpoint
		if eps == nil {
			var err error
			if ep, err = s.Options.Target(p); err != nil {
				return nil, err
			}
		} else if got, ok := eps.Get(s.WireKey(), p); ok {
			ep = got
		} else {
			return nil, fmt.Errorf("no %s server on path %s", s.WireKey(), p)
		}
		s.Options.Base().RacesFamilies = s.RacesFamilies()
		return s.Options.Probe(ep, p)
	}
}

// EmbeddedServers lists the embedded servers the cells measure (server
// keys, all.ServerKey).
func (e *Experiment) EmbeddedServers() []string {
	var out []string
	for _, c := range e.Groups {
		if k := c.WireKey(); c.Server != "real" && !contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// RealServers are the protocols whose real servers a run starts: the one
// every run against real servers has (the name its cells look up:
// Unbound), and those its cells measure.
func (e *Experiment) RealServers() []*proto.Protocol {
	if !e.Real() {
		return nil
	}
	var out []*proto.Protocol
	for _, p := range all.List {
		if p.Real != nil && (p.Real.Always || slices.Contains(e.RealProtocols(), p.Name)) {
			out = append(out, p)
		}
	}
	return out
}

// ServersStarted says which servers a lab or loopback run starts: the
// embedded ones by key (the name server with any other), the real ones by
// program and protocol.
func (e *Experiment) ServersStarted() string {
	emb := e.EmbeddedServers()
	if len(emb) > 0 && !slices.Contains(emb, all.NameServer) {
		emb = append(emb, all.NameServer)
	}
	var parts []string
	if len(emb) > 0 {
		parts = append(parts, "embedded "+strings.Join(emb, ", "))
	}
	var real []string
	for _, p := range e.RealServers() {
		for _, n := range p.Real.Programs(e.RealCells(p.Name), e.RealPaths()) {
			real = append(real, n.Name+" ("+cmp.Or(n.Role, p.Name)+")") // as the header names it
		}
	}
	if len(real) > 0 {
		parts = append(parts, "real "+strings.Join(real, ", "))
	}
	return strings.Join(parts, "; ")
}

func contains(ss []string, s string) bool {
	for _, t := range ss {
		if t == s {
			return true
		}
	}
	return false
}

// LoopbackPlace is where the embedded servers listen on loopback: the
// loopback address of each path (ipv4 and ipv6 only).
func LoopbackPlace(paths []path.Path) (proto.Place, error) {
	at := proto.Place{Addrs: map[path.Path]netip.Addr{}, Name: LocalName}
	for _, p := range paths {
		if err := p.OffLab("loopback"); err != nil {
			return at, fmt.Errorf("experiment: %w", err)
		}
		if p.Kind().Dual {
			// By name, through both families' addresses.
			at.Addrs[path.IPv4], at.Addrs[path.IPv6] = path.IPv4.Loopback(), path.IPv6.Loopback()
			continue
		}
		at.Addrs[p] = p.Loopback()
	}
	return at, nil
}

// LabPlace is where servers listen in a lab's server namespace: the server's
// address on every path of the lab.
func LabPlace(l *lab.Lab) proto.Place {
	at := proto.Place{Addrs: map[path.Path]netip.Addr{}, Name: LocalName,
		In: func(fn func() error) error { return lab.Do(lab.NS(l.Name, lab.Server), fn) }}
	for _, p := range l.Addr.Paths() {
		at.Addrs[p] = l.Addr.Listen(p)
		if p.Kind().Translated {
			if at.Connect == nil {
				at.Connect = map[path.Path]netip.Addr{}
			}
			at.Connect[p], at.DNS64 = l.Addr.Server(p), l.Addr.Pref64
		}
	}
	return at
}

// LabSources are the client's addresses a lab pins per path (6in4's).
func LabSources(l *lab.Lab) map[path.Path]netip.Addr {
	out := map[path.Path]netip.Addr{}
	for _, p := range l.Addr.Paths() {
		if src := l.Addr.Source(p); src.IsValid() {
			out[p] = src
		}
	}
	return out
}

// StartEmbedded starts the embedded servers an experiment's cells measure
// at a place (loopback, or a lab's server namespace).
func StartEmbedded(ctx context.Context, e *Experiment, at proto.Place) (*all.Started, error) {
	st, err := all.Start(ctx, e.EmbeddedServers(), at)
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	return st, nil
}
