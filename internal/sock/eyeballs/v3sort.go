package eyeballs

import (
	"cmp"
	"net/netip"
	"slices"
	"time"
)

// Endpoints is the sorted list of endpoints not yet attempted (§5): by
// service group in priority order (records of one priority in the order
// they came), then the addresses no record names; within a group by
// family and protocol (sortGroup). It is rebuilt from every answer so far,
// so a late answer's endpoints take the place sorting gives them (§7), and
// a hint gives way to the addresses of its name once those are answered
// (§7, RFC 9460 §7.3).
func (r *Race3) Endpoints() []Endpoint {
	var out []Endpoint
	svcs := slices.Clone(r.name(r.svcName).services)
	slices.SortStableFunc(svcs, func(a, b Service) int { return cmp.Compare(a.Priority, b.Priority) })
	covered := false
	for g, s := range svcs {
		name := cmp.Or(s.Target, r.svcName) // "." is the owner name
		covered = covered || name == r.host
		tcp, quic := r.protocols(s.alpnSet())
		v6, v4, hint := r.addrsOf(name, s)
		out = append(out, r.sortGroup(g, v6, v4, cmp.Or(s.Port, r.port), tcp, quic, hint)...)
	}
	if !covered {
		// Addresses no service names: a group of their own, last (§5.2),
		// over TCP with the client's TCP protocols (no record said QUIC).
		h := r.name(r.host)
		tcp, _ := r.protocols(r.cfg.Supported)
		out = append(out, r.sortGroup(-1, h.v6, h.v4, r.port, tcp, false, false)...)
	}
	return out
}

// protocols are the client's ALPN ids for TCP (in its order) and whether
// it may use QUIC, of those in set (§6.2: an endpoint with none of the
// client's protocols is not tried).
func (r *Race3) protocols(set []string) (tcp []string, quic bool) {
	for _, p := range r.cfg.Supported {
		if !slices.Contains(set, p) {
			continue
		}
		if p == ALPNH3 {
			quic = true
		} else {
			tcp = append(tcp, p)
		}
	}
	return tcp, quic
}

// addrsOf are name's addresses for service s: those A and AAAA answered,
// else the record's hints.
func (r *Race3) addrsOf(name string, s Service) (v6, v4 []netip.Addr, hint bool) {
	n := r.name(name)
	v6, v4 = n.v6, n.v4
	if !n.got6 && len(s.IPv6Hint) > 0 {
		v6, hint = s.IPv6Hint, true
	}
	if !n.got4 && len(s.IPv4Hint) > 0 {
		v4, hint = s.IPv4Hint, true
	}
	return v6, v4, hint
}

// sortGroup orders one group (§5.3): within each family QUIC before TCP
// and, where the History knows them, lower RTTs first (the rule the draft
// adds between RFC 6724's rules 8 and 9; RFC 6724's own rules reduce here
// to its policy table's precedence, IPv6 before IPv4); then the families
// interleaved, the first PreferredFamilyCount endpoints IPv6.
func (r *Race3) sortGroup(g int, v6, v4 []netip.Addr, port uint16, tcp []string, quic, hint bool) []Endpoint {
	fam := func(addrs []netip.Addr) []Endpoint {
		var out []Endpoint
		for _, t := range []Transport{QUIC, TCP} {
			alpn := tcp
			if t == QUIC {
				if !quic {
					continue
				}
				alpn = []string{ALPNH3}
			} else if len(tcp) == 0 {
				continue
			}
			for _, a := range r.byRTT(addrs) {
				out = append(out, Endpoint{Addr: netip.AddrPortFrom(a, port), Transport: t, ALPN: alpn, Group: g, Hint: hint})
			}
		}
		return out
	}
	first, second := slices.DeleteFunc(fam(v6), r.attempted), slices.DeleteFunc(fam(v4), r.attempted)
	// The interleaving goes on from the attempts made in this group, as
	// if the endpoints had all been known from the start (§7).
	done := 0
	for _, a := range r.rec.Attempts {
		if a.Group == g {
			done++
		}
	}
	return interleave3(first, second, r.cfg.PreferredFamilyCount, done)
}

// byRTT orders addresses by the History's smoothed RTT, those unknown
// after, the order otherwise kept.
func (r *Race3) byRTT(addrs []netip.Addr) []netip.Addr {
	out := slices.Clone(addrs)
	rtt := func(a netip.Addr) time.Duration {
		if s, _, ok := r.cfg.History.RTT(a); ok {
			return s
		}
		return time.Duration(1<<63 - 1)
	}
	slices.SortStableFunc(out, func(a, b netip.Addr) int { return cmp.Compare(rtt(a), rtt(b)) })
	return out
}

// interleave3 orders two families' endpoints (§5.3): count of first, then
// one of second and one of first in turn, either taking the other's turns
// once it runs out. done endpoints of the pattern were taken already: the
// list goes on from there.
func interleave3(first, second []Endpoint, count, done int) []Endpoint {
	var out []Endpoint
	for k := done; len(first) > 0 || len(second) > 0; k++ {
		takeFirst := k < count || (k-count)%2 == 1
		if len(second) == 0 || (takeFirst && len(first) > 0) {
			out, first = append(out, first[0]), first[1:]
		} else {
			out, second = append(out, second[0]), second[1:]
		}
	}
	return out
}

// attempted says whether e was tried already (an address and transport).
func (r *Race3) attempted(e Endpoint) bool {
	return slices.ContainsFunc(r.rec.Attempts, func(a Attempt3) bool {
		return a.Addr == e.Addr && a.Transport == e.Transport
	})
}
