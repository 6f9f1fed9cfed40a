package path

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// ErrNoAddress is wrapped when a name exists but has no record of the path's type.
var ErrNoAddress = errors.New("no address of the path's family")

// Resolver looks a name up with the record type of a path: A for ipv4, AAAA
// for ipv6 and 6in4. It asks one DNS server directly (not the system
// resolver) so the lookup is pinned, timed, and sent over the family chosen in
// Over, like the study's edited resolv.conf.
type Resolver struct {
	// Servers are DNS servers by family; the query goes to the first of the
	// family given by Over (or by the path, when Over is empty).
	Servers []netip.AddrPort
	// Over pins the family that carries the DNS query itself. Empty means
	// the path's own family.
	Over Path
	// Source, when valid, is the address queries are sent from (the lab's
	// 6in4 path sends its lookups through the tunnel this way).
	Source netip.Addr
}

// OneFamily is r with its queries pinned to one family when it pins none:
// its first server's. A client that asks for both A and AAAA (the dual
// path) sends both over the same family, as a stub resolver does.
func (r Resolver) OneFamily() Resolver {
	if r.Over == "" && len(r.Servers) > 0 {
		r.Over = OfAddr(r.Servers[0].Addr())
	}
	return r
}

// RecordType returns the DNS record type a path resolves names with.
func (p Path) RecordType() uint16 {
	if p.IsIPv6() {
		return dns.TypeAAAA
	}
	return dns.TypeA
}

// Server picks the DNS server that a lookup for path p is sent to.
func (r *Resolver) Server(p Path) (netip.AddrPort, Path, error) {
	over := r.Over
	if over == "" {
		over = p
	}
	for _, s := range r.Servers {
		if over.Accepts(s.Addr()) {
			return s, over, nil
		}
	}
	return netip.AddrPort{}, over, fmt.Errorf("path: no %s DNS server to send the query over (have %v); give one of that family", over.Family(), r.Servers)
}

// Lookup resolves host for path p. An IP literal is returned as is after a
// family check. A name without a record of the path's type is an error
// wrapping ErrNoAddress that names the host and the record type.
func (r *Resolver) Lookup(ctx context.Context, host string, p Path) (netip.Addr, error) {
	return r.LookupFrom(ctx, host, p, nil)
}

// LookupHook follows one lookup: Start (when set) is called immediately
// before the query's first system call, once the query is built (a
// transaction's time starts there, docs/metrics.md); Local is set to the
// address the query was sent from, so a packet trace can find it.
type LookupHook struct {
	Start func()
	Local string
	// Sent is the kernel's transmit stamp of the query that was answered
	// (zero where the kernel gives none).
	Sent time.Time
}

// LookupFrom is Lookup with a hook (nil: none). A literal has no lookup
// and calls no Start.
func (r *Resolver) LookupFrom(ctx context.Context, host string, p Path, hook *LookupHook) (netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return a, p.CheckAddr("target", a)
	}
	server, over, err := r.Server(p)
	if err != nil {
		return netip.Addr{}, err
	}
	if r.Source.IsValid() {
		if err := over.CheckAddr("DNS source", r.Source); err != nil {
			return netip.Addr{}, err
		}
	}
	qtype := p.RecordType()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), qtype)
	m.RecursionDesired = true
	in, err := exchange(ctx, m, over, server, r.Source, hook)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("path: resolve %s %s via %s: %w", host, dns.TypeToString[qtype], server, err)
	}
	if in.Rcode != dns.RcodeSuccess {
		return netip.Addr{}, fmt.Errorf("path: resolve %s %s via %s: server answered %s", host, dns.TypeToString[qtype], server, dns.RcodeToString[in.Rcode])
	}
	for _, rr := range in.Answer {
		var a netip.Addr
		switch v := rr.(type) {
		case *dns.A:
			a, _ = netip.AddrFromSlice(v.A.To4())
		case *dns.AAAA:
			a, _ = netip.AddrFromSlice(v.AAAA)
		default:
			continue
		}
		if rr.Header().Rrtype == qtype {
			return a, p.CheckAddr("resolved", a)
		}
	}
	return netip.Addr{}, fmt.Errorf("path: %s has no %s record (needed by path %s): %w", host, dns.TypeToString[qtype], p, ErrNoAddress)
}

// Retransmission schedule of UDP queries, like a stub resolver's: wait
// FirstRetry for an answer, then twice as long each time, until ctx ends.
const FirstRetry = time.Second

// exchange sends m over UDP with retransmissions (a lost datagram is
// normal under load and resolvers resend), then over TCP if truncated. The
// UDP socket is made directly from addresses (no string to parse, no
// dialer), so the query leaves soon after the lookup starts.
func exchange(ctx context.Context, m *dns.Msg, over Path, server netip.AddrPort, source netip.Addr, hook *LookupHook) (*dns.Msg, error) {
	wire, err := m.Pack()
	if err != nil {
		return nil, err
	}
	if hook == nil {
		hook = &LookupHook{}
	}
	if hook.Start != nil {
		hook.Start()
	}
	wait := FirstRetry
	for {
		in, err := exchangeUDP(ctx, m.Id, wire, over, server, source, wait, hook)
		if err == nil && in.Truncated {
			d := &net.Dialer{Timeout: wait, FallbackDelay: -1}
			if source.IsValid() {
				d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(source, 0))
			}
			c := dns.Client{Net: over.Network("tcp"), Timeout: wait, Dialer: d}
			in, _, err = c.ExchangeContext(ctx, m, server.String())
		}
		var ne net.Error
		if err == nil || ctx.Err() != nil || !errors.As(err, &ne) || !ne.Timeout() {
			return in, err
		}
		wait *= 2
	}
}

// exchangeUDP sends the packed query once and waits up to wait (or ctx) for its reply.
func exchangeUDP(ctx context.Context, id uint16, wire []byte, over Path, server netip.AddrPort, source netip.Addr, wait time.Duration, hook *LookupHook) (*dns.Msg, error) {
	var laddr *net.UDPAddr
	if source.IsValid() {
		laddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(source, 0))
	}
	uc, err := net.DialUDP(over.Network("udp"), laddr, net.UDPAddrFromAddrPort(server))
	if err != nil {
		return nil, err
	}
	defer uc.Close()
	hook.Local = uc.LocalAddr().String()
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	stamped := enableStamps(rc) == nil
	deadline := time.Now().Add(wait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = uc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = uc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := uc.Write(wire); err != nil {
		return nil, err
	}
	co := &dns.Conn{Conn: uc}
	for {
		in, err := co.ReadMsg()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		if in.Id == id { // a late reply to an earlier try is not this one's
			if stamped { // read now, not while the reply is on its way
				hook.Sent = txStamp(rc)
			}
			return in, nil
		}
	}
}

// SystemServers reads the nameservers of /etc/resolv.conf.
func SystemServers() ([]netip.AddrPort, error) {
	f, err := os.Open("/etc/resolv.conf")
	if err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	defer f.Close()
	return ParseResolvConf(f)
}

// ParseResolvConf returns the nameserver lines of a resolv.conf, port 53.
func ParseResolvConf(r io.Reader) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		// Zones (fe80::1%eth0) are kept: link-local servers need them.
		a, err := netip.ParseAddr(f[1])
		if err != nil {
			continue
		}
		out = append(out, netip.AddrPortFrom(a, 53))
	}
	return out, sc.Err()
}

// ParseServer accepts "ADDR", "ADDR:PORT" or "[V6]:PORT" (port 53 by default).
func ParseServer(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return netip.AddrPortFrom(a, 53), nil
	}
	return netip.AddrPort{}, fmt.Errorf("path: bad DNS server %q (want ADDR, ADDR:PORT or [IPV6]:PORT)", s)
}
