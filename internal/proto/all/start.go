package all

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"v6lab/internal/gen/content"
	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// Started are embedded servers started together at one place.
type Started struct {
	At      proto.Place
	Running map[string]proto.Running
	keys    []string
}

// Start starts the embedded servers of keys (server keys: ServerKey of a
// protocol) at place at, in the order of Servers, so a run starts only what
// its cells measure. The DNS server always starts when any other does:
// every transaction that names its server looks the name up first.
// Servers that must run as processes of their own (proto.OwnProcess) are
// left to the caller when the place is another namespace (at.In set).
func Start(ctx context.Context, keys []string, at proto.Place) (*Started, error) {
	st := &Started{At: at, Running: map[string]proto.Running{}}
	if len(keys) > 0 && !slices.Contains(keys, NameServer) {
		keys = append(keys, NameServer)
	}
	for _, s := range Servers {
		if !slices.Contains(keys, s.Key) {
			continue
		}
		if s.OwnProcess && at.In != nil {
			continue
		}
		if s.Key == NameServer {
			at.HTTPS = advertised(st.Running)
		}
		r, err := s.Serve(ctx, at)
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("embedded %s server: %w", s.Key, err)
		}
		st.Running[s.Key] = r
		st.keys = append(st.keys, s.Key)
	}
	return st, nil
}

// advertised are the ports of the running servers that speak TLS, and
// their ALPN ids (proto.Advertised), for the name server's HTTPS records.
func advertised(rs map[string]proto.Running) map[int][]string {
	out := map[int][]string{}
	for _, r := range rs {
		if a, ok := r.(proto.Advertised); ok && len(a.ALPN()) > 0 {
			out[r.Port()] = a.ALPN()
		}
	}
	return out
}

// Close stops every server started.
func (st *Started) Close() error {
	var errs []error
	for i := len(st.keys) - 1; i >= 0; i-- {
		errs = append(errs, st.Running[st.keys[i]].Close())
	}
	st.keys = nil
	return errors.Join(errs...)
}

// Add records a server started elsewhere (a process of its own) on port.
func (st *Started) Add(key string, r proto.Running) {
	st.Running[key] = r
	st.keys = append(st.keys, key)
}

// Endpoints says where each started server answers on each path of the
// place, seen from a client whose address on path p is sources[p] (none:
// the system's choice).
func (st *Started) Endpoints(sources map[path.Path]netip.Addr) proto.Endpoints {
	eps := PlaceEndpoints(st.At, ports(st.Running), sources, content.Generated, "")
	for key, r := range st.Running {
		pin, ok := r.(proto.Pinner)
		if !ok || pin.CertSHA256() == "" {
			continue
		}
		for p, ep := range eps[key] {
			ep.CertSHA256 = pin.CertSHA256()
			eps[key][p] = ep
		}
	}
	return eps
}

func ports(rs map[string]proto.Running) map[string]int {
	out := map[string]int{}
	for k, r := range rs {
		out[k] = r.Port()
	}
	return out
}

// PlaceEndpoints makes the endpoints of servers listening on ports (by
// server key) at a place: a server that is dialled by address (proto.
// ByAddress: dns, transport) is its address on each path; the others are
// the place's name, looked up by the DNS server of the same keys (prefix
// "" for the embedded servers, "real/" for the real ones) on the path.
// files says what their files hold.
func PlaceEndpoints(at proto.Place, ports map[string]int, sources map[path.Path]netip.Addr, files content.Expect, prefix string) proto.Endpoints {
	eps := proto.Endpoints{}
	for key, port := range ports {
		for p, a := range at.Addrs {
			ep := proto.Endpoint{Host: at.Name, Port: port, Source: sources[p], Content: files}
			if dns, ok := ports[prefix+NameServer]; ok {
				ep.DNS = []netip.AddrPort{netip.AddrPortFrom(a, uint16(dns))}
			}
			s, ok := Server(key[len(prefix):])
			if ok {
				ep.Scheme = s.Scheme
			}
			if ok && s.ByAddress {
				to := a
				if c, ok := at.Connect[p]; ok {
					to = c // through the translator, not to its DNS64 view
				}
				ep = proto.Endpoint{Host: to.String(), Port: port, Source: sources[p]}
			}
			eps.Set(key, p, ep)
		}
		// A dual-stack client reaches a server by name, both families
		// answering, its lookups over IPv4 (where a client usually has
		// its resolver, and where an IPv6 impairment cannot reach them).
		v4, ok4 := at.Addrs[path.IPv4]
		_, ok6 := at.Addrs[path.IPv6]
		if s, ok := Server(key[len(prefix):]); ok4 && ok6 && ok && !s.ByAddress {
			ep := proto.Endpoint{Scheme: s.Scheme, Host: at.Name, Port: port, Content: files, DNSOver: path.IPv4}
			if dns, ok := ports[prefix+NameServer]; ok {
				ep.DNS = []netip.AddrPort{netip.AddrPortFrom(v4, uint16(dns))}
			}
			eps.Set(key, path.Dual, ep)
		}
	}
	return eps
}

// Describe names the started servers for a result's header, where is
// where they run ("in the server namespace", empty on loopback).
func (st *Started) Describe(where string) map[string]string {
	out := map[string]string{}
	for key := range st.Running {
		if s, ok := Server(key); ok {
			out[key] = s.Describe(st.At)
			if where != "" {
				out[key] += " " + where
			}
		}
	}
	return out
}
