package path

import (
	"fmt"
	"strings"
)

// Kind is everything v6lab knows about a path kind, in one row of Kinds:
// adding a path kind is a row here plus its lab code (addresses and
// datapath in internal/lab, its capture class).
type Kind struct {
	Path Path
	// IPv6: the client's and server's sockets speak IPv6 (dial and listen
	// networks tcp6/udp6, AAAA lookups); false: IPv4.
	IPv6 bool
	// LabOnly: the path exists only between the lab's namespaces (it
	// needs a tunnel or a translator there); loopback and real hosts have
	// only ipv4 and ipv6.
	LabOnly bool
	// Display names the path for readers.
	Display string
	// Rank orders paths in reports (the studies' order).
	Rank int
	// HeaderBytes is the network-layer header each packet carries on the
	// wire between the routers (IPv6 inside IPv4: 20 + 40; NAT64: the
	// translated IPv4 header).
	HeaderBytes int
	// CSSClass styles the path's series in report.html.
	CSSClass string
	// Wire is the form the path's packets take on the lab's checked link
	// between the routers: "ipv4", "ipv6", "6in4" (IPv4 protocol 41) or
	// "nat64" (IPv4 from the translator's mapped address, and the DNS64
	// lookups over IPv6 from the path's own prefix), the classes capture
	// counts.
	Wire string
	// Translated: the client speaks IPv6 to an address that embeds the
	// server's IPv4 one (RFC 6052), and a translator between them turns
	// it into IPv4 (RFC 7915); names are looked up from a DNS64 view.
	Translated bool
	// Access is the form the path's packets take on the client's own
	// link when the client's access network is IPv6-only ("ipv6", or
	// "dslite": IPv4 inside IPv6), counted on r1's link to the client;
	// empty when that link carries the path as Wire says.
	Access string
	// NATed: the server sees an address other than the client's (a
	// translator's or a NAT's), which it cannot connect back to (active
	// FTP's data connection).
	NATed bool
	// Dual: the client is not pinned to a family; it races them as a
	// dual-stack client does (Happy Eyeballs, RFC 8305), and each
	// transaction records which won.
	Dual bool
}

// Kinds lists every path kind, in report order.
var Kinds = []Kind{
	{Path: IPv4, Display: "IPv4", Rank: 0, HeaderBytes: 20, CSSClass: "s-ipv4", Wire: "ipv4"},
	{Path: IPv6, IPv6: true, Display: "IPv6", Rank: 1, HeaderBytes: 40, CSSClass: "s-ipv6", Wire: "ipv6"},
	{Path: SixIn4, IPv6: true, LabOnly: true, Display: "IPv6 in IPv4 (6in4)", Rank: 2, HeaderBytes: 60, CSSClass: "s-sixin4", Wire: "6in4"},
	{Path: NAT64, IPv6: true, LabOnly: true, Translated: true, NATed: true, Display: "IPv6 to IPv4 (NAT64)", Rank: 3, HeaderBytes: 20, CSSClass: "s-nat64", Wire: "nat64", Access: "ipv6"},
	// An IPv4 application on an IPv6-only access network: its host's
	// CLAT translates to IPv6 (RFC 6877), r1's NAT64 back to IPv4.
	{Path: XLAT464, LabOnly: true, NATed: true, Display: "IPv4 via 464XLAT (CLAT + NAT64)", Rank: 4, HeaderBytes: 20, CSSClass: "s-xlat", Wire: "nat64", Access: "ipv6"},
	// An IPv4 application on an IPv6-only access network: its host's B4
	// tunnels IPv4 in IPv6 to the AFTR at r2, a NAT44 (RFC 6333).
	{Path: DSLite, LabOnly: true, NATed: true, Display: "IPv4 in IPv6 via DS-Lite (B4 + AFTR)", Rank: 5, HeaderBytes: 60, CSSClass: "s-dslite", Wire: "dslite", Access: "dslite"},
	{Path: Dual, Dual: true, Display: "dual stack (Happy Eyeballs)", Rank: 6, HeaderBytes: 40, CSSClass: "s-dual", Wire: "dual"},
}

// KindOf returns the row of p; ok is false for a path v6lab does not know.
func KindOf(p Path) (k Kind, ok bool) {
	if r := row(p); r != nil {
		return *r, true
	}
	return Kind{Path: p, Display: string(p), Rank: len(Kinds)}, false
}

// row is p's row of Kinds, nil if none: what the checks made per sample
// read (IsIPv6, Accepts), without a copy of the whole row.
func row(p Path) *Kind {
	for i := range Kinds {
		if Kinds[i].Path == p {
			return &Kinds[i]
		}
	}
	return nil
}

// Kind is the path's row of Kinds.
func (p Path) Kind() Kind {
	k, _ := KindOf(p)
	return k
}

// LabOnly lists the kinds that only the lab has.
func LabOnly() []Path {
	var out []Path
	for _, k := range Kinds {
		if k.LabOnly {
			out = append(out, k.Path)
		}
	}
	return out
}

// OffLab says why p cannot be measured off the lab (on loopback, or
// against hosts a probe or an experiment names), where only the families
// themselves exist: nil when it can. It is the one rule every entry point
// applies, so a lab-only label never names a plain ipv6 measurement.
func (p Path) OffLab(where string) error { return p.OffLabOf(where, true) }

// OffLabOf is OffLab for a measurement that has the dual path (dual) or
// not: the error lists the paths it has.
func (p Path) OffLabOf(where string, dual bool) error {
	if !p.Kind().LabOnly {
		return nil
	}
	has := "ipv4, ipv6 and dual"
	if !dual {
		has = "ipv4 and ipv6"
	}
	return fmt.Errorf("%s needs the lab (its tunnel or translator), but %s has only %s", p, where, has)
}

// Known returns an error unless name is a path v6lab measures: a samples
// file whose sample names another (an edited line, "ipv9") must not enter
// the figures as a path of its own.
func Known(name string) error {
	if _, ok := KindOf(Path(name)); ok {
		return nil
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k.Path)
	}
	return fmt.Errorf("field path: %q is not a path v6lab measures (%s)", name, strings.Join(names, ", "))
}
