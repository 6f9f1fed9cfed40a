package eyeballs

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Happy Eyeballs version 3 (draft-ietf-happy-happyeyeballs-v3, the
// working group's copy of 2026) adds to version 2 the HTTPS/SVCB query
// (RFC 9460): the queries go HTTPS, AAAA, A (§4.1); attempts start once an
// address and the preferred family's and the service's answers are in, or
// a Resolution Delay after the first address (§4.2); endpoints are grouped
// by service priority, sorted by family (IPv6 first, the families
// interleaved after the Preferred Address Family Count) and protocol
// (QUIC before TCP) (§5); one attempt starts at a time, the next after a
// Connection Attempt Delay that follows the previous attempt's first
// retransmission when its RTT is known, between a minimum and a maximum
// (§6); a TCP attempt succeeds after TLS, a QUIC one after its handshake
// (§6.1), an endpoint whose ALPN set the client does not speak is never
// tried (§6.2), and answers that come late join the list where its
// sorting puts them (§4.3, §7).
//
// Race3 is its decisions without its waiting, as Race is version 2's: a
// driver sends the queries and makes the attempts it asks for, and tells
// it the answers and the attempts' progress as they come.

// Version 3's recommended values (§9, Summary of Configurable Values).
const (
	// MinAttemptDelay is the Minimum Connection Attempt Delay.
	MinAttemptDelay = 100 * time.Millisecond
	// MaxAttemptDelay is the Maximum Connection Attempt Delay.
	MaxAttemptDelay = 2 * time.Second
	// FloorAttemptDelay is the hard lower bound: a subsequent attempt
	// MUST NOT start within 10 ms of the previous one (§6).
	FloorAttemptDelay = 10 * time.Millisecond
	// PreferredFamilyCount is how many endpoints of the preferred family
	// are tried before the other family's first (§5.3).
	PreferredFamilyCount = 1
)

// The DNS record types a version 3 client asks for.
const (
	TypeA     uint16 = 1
	TypeAAAA  uint16 = 28
	TypeHTTPS uint16 = 65
)

// TypeName names a record type in records.
func TypeName(t uint16) string {
	switch t {
	case TypeA:
		return "A"
	case TypeAAAA:
		return "AAAA"
	case TypeHTTPS:
		return "HTTPS"
	}
	return fmt.Sprint("TYPE", t)
}

// Transport is how an attempt connects: TCP (then TLS) or QUIC.
type Transport string

const (
	TCP  Transport = "tcp"
	QUIC Transport = "quic"
)

// Application protocols (ALPN ids) of HTTP.
const (
	ALPNH3     = "h3"
	ALPNH2     = "h2"
	ALPNHTTP11 = "http/1.1"
)

// Service is an HTTPS or SVCB record (RFC 9460): ServiceMode when
// Priority is above 0, AliasMode (Target names another name to ask) at 0.
type Service struct {
	Priority uint16
	// Target is the TargetName, lower case without its final dot; "" is
	// "." (the owner name).
	Target string
	// ALPN and NoDefaultALPN make the record's SVCB ALPN set (RFC 9460
	// §7.1.2: alpn, and http/1.1 unless no-default-alpn).
	ALPN          []string
	NoDefaultALPN bool
	// Port is the record's port (0: the origin's).
	Port               uint16
	IPv4Hint, IPv6Hint []netip.Addr
}

// alpnSet is the record's SVCB ALPN set.
func (s Service) alpnSet() []string {
	out := slices.Clone(s.ALPN)
	if !s.NoDefaultALPN && !slices.Contains(out, ALPNHTTP11) {
		out = append(out, ALPNHTTP11)
	}
	return out
}

// Query is a question the race asks: a name and a record type.
type Query struct {
	Name string
	Type uint16
}

// Reply is a query's answer: addresses (A, AAAA) or records (HTTPS); both
// empty with no Err is a negative (empty) answer.
type Reply struct {
	Addrs    []netip.Addr
	Services []Service
	Err      error
}

// Endpoint is where an attempt connects: an address and port, over a
// transport, offering ALPN in its TLS (or QUIC) handshake.
type Endpoint struct {
	Addr      netip.AddrPort
	Transport Transport
	ALPN      []string
	// Group is the endpoint's service group in priority order (-1: the
	// addresses no record names, tried last, §5.2).
	Group int
	// Hint: the address came from an ipv4hint or ipv6hint (§4.2.1).
	Hint bool
}

func (e Endpoint) String() string {
	return fmt.Sprintf("%s %s", e.Transport, e.Addr)
}

// Outcome is what became of an attempt.
type Outcome string

const (
	Running   Outcome = ""
	Won       Outcome = "won"
	Lost      Outcome = "failed"
	Cancelled Outcome = "cancelled" // still under way when another won, or the race ended
)

// Attempt3 is one version 3 attempt, its times from the race's start.
type Attempt3 struct {
	Endpoint
	Start time.Duration
	// Progress is when its transport handshake completed (TCP's, before
	// TLS; 0: not yet, or QUIC, whose one handshake is the whole).
	Progress time.Duration
	End      time.Duration
	Outcome  Outcome
	Err      string
	// Delay is the Connection Attempt Delay that followed it: how long
	// the race waited before its next attempt (0: none followed).
	Delay time.Duration
}

// Answered is one query's answer, its time from the race's start.
type Answered struct {
	Query
	At       time.Duration
	Addrs    int
	Services int
	Err      string
}

// Record3 is what a version 3 race did.
type Record3 struct {
	Answers  []Answered
	Attempts []Attempt3
	// Began is when the attempts could start (§4.2's conditions met).
	Began time.Duration
	// Winner is the index of the attempt that won (-1: none); Connect is
	// when it succeeded.
	Winner  int
	Connect time.Duration
}

// Winning is the attempt that won, if one did.
func (r Record3) Winning() (Attempt3, bool) {
	if r.Winner < 0 || r.Winner >= len(r.Attempts) {
		return Attempt3{}, false
	}
	return r.Attempts[r.Winner], true
}

// ErrNoEndpoint is wrapped when a race has nothing left to try.
var ErrNoEndpoint = errors.New("no endpoint to try")

// lower is a DNS name as the race compares them.
func lower(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }
