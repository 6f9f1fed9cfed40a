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
	"sync"
	"syscall"
	"time"

	"v6lab/internal/sock/kstamp"
	"v6lab/internal/sock/resend"
	"v6lab/internal/sock/sockaddr"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// ErrNoAddress is wrapped when a name exists but has no record of the path's type.
var ErrNoAddress = errors.New("no address of the path's family")

// ErrNXDomain is wrapped when the server answered that the name does not
// exist (NXDOMAIN): like ErrNoAddress, an answer, not a failed lookup.
var ErrNXDomain = errors.New("server answered NXDOMAIN")

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
	// Hosts are names given their addresses (--resolve, as curl's): such
	// a name is not looked up; the address of the path's family is used.
	Hosts map[string][]netip.Addr
	// Stub is how an unanswered UDP query is sent again: resolv.conf's
	// options where the servers are its (SystemResolvConf); the zero
	// Stub, v6lab's own schedule, elsewhere.
	Stub Stub
}

// fixed is the address Hosts give host on path p: ok false when host is
// not there, an error when it is without an address of p's family.
func (r *Resolver) fixed(host string, p Path) (netip.Addr, bool, error) {
	addrs, ok := r.Hosts[strings.ToLower(strings.TrimSuffix(host, "."))]
	if !ok {
		return netip.Addr{}, false, nil
	}
	for _, a := range addrs {
		if p.Accepts(a) {
			return a, true, nil
		}
	}
	return netip.Addr{}, true, fmt.Errorf("path: %s: --resolve gives it no %s address (%v): %w", host, p.Family(), addrs, ErrNoAddress)
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
	// Answered is the kernel's receive stamp of its answer (zero where
	// the kernel gives none, or the answer came over TCP).
	Answered time.Time
	// Resent is how many times the UDP query was sent again.
	Resent int
	// TCP says the answer over UDP was truncated and the question asked
	// again over TCP (Query.OverTCP).
	TCP bool
}

// Queries is how many queries the lookup sent: its UDP queries, and one
// more if it asked again over TCP (0: none, the hook's lookup sent none).
func (h *LookupHook) Queries() int {
	if h.Local == "" {
		return 0
	}
	n := 1 + h.Resent
	if h.TCP {
		n++
	}
	return n
}

// LookupFrom is Lookup with a hook (nil: none). A literal has no lookup
// and calls no Start.
func (r *Resolver) LookupFrom(ctx context.Context, host string, p Path, hook *LookupHook) (netip.Addr, error) {
	q, a, err := r.Prepare(host, p)
	if q == nil || err != nil {
		return a, err
	}
	in, err := exchange(ctx, q, hook)
	if err != nil {
		return netip.Addr{}, q.Wrap(err)
	}
	return q.addr(in)
}

// Query is one lookup made ready for a caller that sends it and reads its
// answer itself (an event loop, evloop.Lookup): where it goes and over
// which family, its wire form, and how the answer is read, with the same
// checks and errors as Lookup.
type Query struct {
	Host   string
	Path   Path           // the path the address is for: its record type
	Server netip.AddrPort // the DNS server (an IPv4-mapped address unmapped)
	Over   Path           // the family the query travels over
	Source netip.Addr     // the query's source address (when valid)
	Wire   []byte         // the packed query
	Stub   Stub           // how an unanswered query is sent again
	msg    *dns.Msg
}

// ID is the query's DNS message ID (an answer carries it back).
func (q *Query) ID() uint16 { return q.msg.Id }

// ErrTruncated is returned by Query.Answer for a reply that did not fit in
// a datagram: ask again over TCP (Query.OverTCP).
var ErrTruncated = errors.New("truncated answer")

// Prepare makes host's query for path p. For an IP literal there is none:
// the address is returned (after a family check) with a nil Query.
func (r *Resolver) Prepare(host string, p Path) (*Query, netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return nil, a, p.CheckAddr("target", a)
	}
	if a, ok, err := r.fixed(host, p); ok {
		return nil, a, err
	}
	server, over, err := r.Server(p)
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("%w%s", err, hostsHint(host))
	}
	if r.Source.IsValid() {
		if err := over.CheckAddr("DNS source", r.Source); err != nil {
			return nil, netip.Addr{}, err
		}
	}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), p.RecordType())
	m.RecursionDesired = true
	wire, err := m.Pack()
	if err != nil {
		return nil, netip.Addr{}, fmt.Errorf("path: resolve %s: %w", host, err)
	}
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	return &Query{Host: host, Path: p, Server: server, Over: over, Source: r.Source, Wire: wire, Stub: r.Stub, msg: m}, netip.Addr{}, nil
}

// Answer reads one datagram back: the address (with done), or done false
// for a datagram that is not this query's answer (a late reply to an
// earlier query on a reused port), or an error naming the host, the record
// type and the server (ErrTruncated: ask again over TCP).
func (q *Query) Answer(b []byte) (netip.Addr, bool, error) {
	in := new(dns.Msg)
	if err := in.Unpack(b); err != nil {
		return netip.Addr{}, false, q.Wrap(fmt.Errorf("bad DNS reply: %w", err))
	}
	if in.Id != q.msg.Id {
		return netip.Addr{}, false, nil
	}
	if in.Truncated {
		return netip.Addr{}, false, q.Wrap(ErrTruncated)
	}
	a, err := q.addr(in)
	return a, true, err
}

// OverTCP asks again over TCP, pinned to the query's family, after a
// truncated answer over UDP. As glibc (res_send.c: after a truncated
// answer, one try over TCP per server, no more over UDP), its failure
// fails the lookup: v6lab asks one server, so there is no next one to
// try, and it does not go back to UDP, whose answer would be truncated
// again. It waits until ctx ends (the rest of the lookup's time, or
// tcpWait without a deadline), not a UDP query's timeout: TCP sends its
// own lost segments again (a lost SYN after 1 s), as glibc's TCP query
// is left to the kernel.
func (q *Query) OverTCP(ctx context.Context) (netip.Addr, error) {
	in, err := q.overTCP(ctx)
	if err != nil {
		return netip.Addr{}, q.Wrap(err)
	}
	return q.addr(in)
}

// tcpWait bounds OverTCP when its context has no deadline (the
// transactions' default timeout).
const tcpWait = 30 * time.Second

func (q *Query) overTCP(ctx context.Context) (*dns.Msg, error) {
	wait := tcpWait
	if dl, ok := ctx.Deadline(); ok {
		wait = max(time.Until(dl), time.Millisecond)
	}
	d := &net.Dialer{Timeout: wait, FallbackDelay: -1}
	if q.Source.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(q.Source, 0))
	}
	c := dns.Client{Net: q.Over.Network("tcp"), Timeout: wait, Dialer: d}
	in, _, err := c.ExchangeContext(ctx, q.msg, q.Server.String())
	if err != nil {
		return nil, fmt.Errorf("the answer over UDP was truncated, and asked again over TCP: %w", err)
	}
	return in, nil
}

// Wrap names the lookup in err (an error that names it already, as
// Answer's do, is returned as it is).
func (q *Query) Wrap(err error) error {
	var le *lookupError
	if err == nil || errors.As(err, &le) {
		return err
	}
	return &lookupError{fmt.Errorf("path: resolve %s %s via %s: %w%s", q.Host, dns.TypeToString[q.msg.Question[0].Qtype], q.Server, err, hostsHint(q.Host))}
}

// lookupError is an error that names its lookup.
type lookupError struct{ err error }

func (e *lookupError) Error() string { return e.err.Error() }
func (e *lookupError) Unwrap() error { return e.err }

// addr is the answer's address of the query's type, checked against the
// path.
func (q *Query) addr(in *dns.Msg) (netip.Addr, error) {
	qtype := q.msg.Question[0].Qtype
	switch in.Rcode {
	case dns.RcodeSuccess:
	case dns.RcodeNameError:
		return netip.Addr{}, q.Wrap(ErrNXDomain)
	default:
		return netip.Addr{}, q.Wrap(fmt.Errorf("server answered %s", dns.RcodeToString[in.Rcode]))
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
			if err := q.Path.CheckAddr("resolved", a); err != nil {
				return a, &lookupError{err}
			}
			return a, nil
		}
	}
	return netip.Addr{}, &lookupError{fmt.Errorf("path: %s has no %s record (needed by path %s): %w%s", q.Host, dns.TypeToString[qtype], q.Path, ErrNoAddress, hostsHint(q.Host))}
}

// FirstRetry is v6lab's own wait before an unanswered UDP query goes
// again (resend.FirstRetry).
const FirstRetry = resend.FirstRetry

// Stub is how a lookup sends an unanswered UDP query again, as a stub
// resolver does (resend.Stub: the one rule the event loop's lookups
// follow too). The zero Stub is v6lab's own schedule.
type Stub = resend.Stub

// GlibcStub is glibc's default (resolv.conf(5): timeout:5 attempts:2),
// what a resolv.conf that sets only one of the two gets for the other.
var GlibcStub = resend.Glibc

// exchange sends the query over UDP, again on the same socket while no
// answer comes (as q's Stub says: a lost datagram is normal under loss,
// and stub resolvers resend), then over TCP if the answer is truncated
// (OverTCP: its failure is the lookup's).
// The UDP socket is made directly from addresses (no string to parse, no
// dialer), so the query leaves soon after the lookup starts.
func exchange(ctx context.Context, q *Query, hook *LookupHook) (*dns.Msg, error) {
	if hook == nil {
		hook = &LookupHook{}
	}
	if hook.Start != nil {
		hook.Start()
	}
	in, err := exchangeUDP(ctx, q.msg.Id, q.Wire, q.Over, q.Server, q.Source, q.Stub, hook)
	if err == nil && in.Truncated {
		hook.TCP = true
		in, err = q.overTCP(ctx)
	}
	return in, err
}

// exchangeUDP sends the packed query and waits for its reply (or ctx),
// sending it again on the same socket, with the same ID, as stub says: an
// answer to any of the queries is the answer, as glibc takes it, and
// the kernel's transmit stamp read is the first query's (the lookup's time
// includes its resends: that is what a user waits). The socket is made
// with raw system calls (socket, setsockopt for the kernel's stamps, bind
// when a source is pinned, connect, write), so the query leaves a few
// microseconds after the lookup starts; only then is the socket handed to
// Go's poller to wait for the reply. (Go's DialUDP adds about ten system
// calls and the poller's registration first.)
func exchangeUDP(ctx context.Context, id uint16, wire []byte, over Path, server netip.AddrPort, source netip.Addr, stub Stub, hook *LookupHook) (*dns.Msg, error) {
	network := over.Network("udp")
	if !over.Accepts(server.Addr()) {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: net.UDPAddrFromAddrPort(server),
			Err: fmt.Errorf("DNS server %s is not %s: %w", server.Addr(), over.Family(), ErrFamily)}
	}
	server = netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
	fd, err := sendUDP(wire, server, source)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: net.UDPAddrFromAddrPort(server), Err: err}
	}
	f := os.NewFile(uintptr(fd), "dns-query") // non-blocking: Go's poller waits for it
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	local := localAddrPort(fd)
	hook.Local = local.String()
	opErr := func(op string, err error) error {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return &net.OpError{Op: op, Net: network, Source: net.UDPAddrFromAddrPort(local), Addr: net.UDPAddrFromAddrPort(server), Err: err}
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	rs := resender{f: f, rc: rc, wire: wire, hook: hook}
	rs.sends.Start(stub, time.Now())
	buf := udpBuffers.Get().(*[]byte)
	defer udpBuffers.Put(buf)
	var oob [kstamp.OOBSize]byte
	for {
		if err := rs.arm(ctx); err != nil {
			return nil, err
		}
		n, rx, err := readStamped(f, rc, *buf, oob[:])
		if err != nil {
			if se := rs.again(ctx, err); se != nil && se.op == "" {
				return nil, se.err
			} else if se != nil {
				return nil, opErr(se.op, se.err)
			}
			continue
		}
		if n == 0 {
			continue // an empty datagram is no reply
		}
		in := new(dns.Msg)
		if err := in.Unpack((*buf)[:n]); err != nil {
			return nil, opErr("read", fmt.Errorf("bad DNS reply: %w", err))
		}
		if in.Id == id { // a late reply to an earlier lookup's query is not this one's
			hook.Sent = txStamp(rc) // read now, not while the reply is on its way
			hook.Answered = rx
			return in, nil
		}
	}
}

// resender keeps one lookup's UDP queries (resend.Sends: when the next
// goes, how many went).
type resender struct {
	f     *os.File
	rc    syscall.RawConn
	wire  []byte
	hook  *LookupHook
	sends resend.Sends
}

// arm sets the socket's read deadline to the next resend or ctx's end,
// whichever is first; it returns ctx's end (saying how many queries went
// unanswered) if that has come.
func (r *resender) arm(ctx context.Context) error {
	deadline := r.sends.Due
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = r.f.SetReadDeadline(deadline)
	if ctx.Err() != nil { // after the deadline was set: AfterFunc may have run before
		return r.sends.Unanswered(ctx.Err())
	}
	return nil
}

// stepErr is again's error: the operation that failed (none: the error
// says it all) and why.
type stepErr struct {
	op  string
	err error
}

// again handles a failed read: the lookup's end when ctx has ended or the
// error is not the wait's end; the query sent again when its wait is over
// and the stub has attempts left; the lookup failed when it has none.
func (r *resender) again(ctx context.Context, err error) *stepErr {
	now := time.Now()
	if dl, ok := ctx.Deadline(); ctx.Err() != nil || ok && !now.Before(dl) {
		end := ctx.Err()
		if end == nil { // the socket's deadline came before ctx's timer
			end = context.DeadlineExceeded
		}
		return &stepErr{"", r.sends.Unanswered(end)}
	}
	switch {
	case !errors.Is(err, os.ErrDeadlineExceeded) || now.Before(r.sends.Due):
		return &stepErr{"read", err}
	case !r.sends.Again():
		return &stepErr{"", r.sends.Exhausted()}
	}
	var werr error
	if cerr := r.rc.Control(func(fd uintptr) { _, werr = unix.Write(int(fd), r.wire) }); cerr != nil {
		werr = cerr
	}
	if werr != nil {
		return &stepErr{"write", fmt.Errorf("send the query again: %w", os.NewSyscallError("write", werr))}
	}
	r.sends.Sent(time.Now())
	r.hook.Resent++
	return nil
}

// readStamped reads one datagram from the query's socket with recvmsg,
// waiting in Go's poller until f's read deadline, and returns it with the
// kernel's receive stamp (zero if none).
func readStamped(f *os.File, rc syscall.RawConn, buf, oob []byte) (int, time.Time, error) {
	var n, oobn int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, 0)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	return n, kstamp.Parse(oob[:oobn]), nil
}

// udpBuffers hold replies up to the largest UDP payload.
var udpBuffers = sync.Pool{New: func() any { b := make([]byte, 65535); return &b }}

// sendUDP makes a non-blocking UDP socket of server's family with the
// kernel's timestamps on, connected to server (from source when valid),
// and sends wire on it.
func sendUDP(wire []byte, server netip.AddrPort, source netip.Addr) (int, error) {
	family := unix.AF_INET
	if server.Addr().Is6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	_ = kstamp.Enable(fd) // without stamps the lookup has no wire time, nothing worse
	if err := sockaddr.PinAndBind(fd, source, family == unix.AF_INET6); err != nil {
		unix.Close(fd)
		return -1, err
	}
	sa, err := sockaddr.Of(server)
	if err == nil {
		err = os.NewSyscallError("connect", unix.Connect(fd, sa))
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	if _, err := unix.Write(fd, wire); err != nil {
		unix.Close(fd)
		return -1, os.NewSyscallError("write", err)
	}
	return fd, nil
}

// SystemServers reads the nameservers of /etc/resolv.conf.
func SystemServers() ([]netip.AddrPort, error) {
	rc, err := SystemResolvConf()
	return rc.Servers, err
}

// SystemResolvConf reads /etc/resolv.conf's nameservers and options, and
// the options of the environment's RES_OPTIONS, which glibc lets override
// the file's (resolv.conf(5)).
func SystemResolvConf() (ResolvConf, error) {
	f, err := os.Open("/etc/resolv.conf")
	if err != nil {
		return ResolvConf{}, fmt.Errorf("path: %w", err)
	}
	defer f.Close()
	rc, err := ReadResolvConf(f)
	rc.Stub = WithOptions(rc.Stub, os.Getenv("RES_OPTIONS"))
	return rc, err
}

// WithOptions is stub with an options line's words (RES_OPTIONS's:
// "timeout:2 attempts:3") read over it, as glibc reads them.
func WithOptions(stub Stub, words string) Stub {
	for _, w := range strings.Fields(words) {
		stub.Option(w)
	}
	return stub
}

// hostsFile is /etc/hosts as names and their addresses, read once, for
// the hint of a failed lookup.
var hostsFile = sync.OnceValue(func() map[string][]netip.Addr {
	f, err := os.Open("/etc/hosts")
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseHosts(f)
})

// parseHosts reads a hosts file: names (lower case) and their addresses.
func parseHosts(r io.Reader) map[string][]netip.Addr {
	m := map[string][]netip.Addr{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			continue
		}
		for _, name := range f[1:] {
			m[strings.ToLower(name)] = append(m[strings.ToLower(name)], a)
		}
	}
	return m
}

// hostsHint says, for a name /etc/hosts holds, why that did not answer a
// failed lookup: v6lab asks a DNS server itself, to time the lookup and pin
// its record type and family, where a system resolver would have read the
// file. "" for other names.
func hostsHint(host string) string {
	addrs := hostsFile()[strings.ToLower(strings.TrimSuffix(host, "."))]
	if len(addrs) == 0 {
		return ""
	}
	var list []string
	for _, a := range addrs {
		list = append(list, a.String())
	}
	return fmt.Sprintf(" (%s is in /etc/hosts as %v, which v6lab does not read: it asks a DNS server, to time the lookup and pin its family; give --resolve %s=%s to use those addresses with the name kept, the address in place of the name, or a DNS server that knows the name)", host, addrs, host, strings.Join(list, ","))
}

// ParseResolvConf returns the nameserver lines of a resolv.conf, port 53.
func ParseResolvConf(r io.Reader) ([]netip.AddrPort, error) {
	rc, err := ReadResolvConf(r)
	return rc.Servers, err
}

// ResolvConf is what v6lab takes of a resolv.conf: its nameservers (port
// 53) and how a stub sends a lost query again (its options timeout:N and
// attempts:N; the zero Stub when it sets neither).
type ResolvConf struct {
	Servers []netip.AddrPort
	Stub    Stub
}

// ReadResolvConf reads a resolv.conf's nameservers and options. The
// options are read as glibc reads them (resolv.conf(5)): timeout in
// seconds, at most 30, attempts at most 5, the later line winning; a
// file that sets one of the two gets glibc's default for the other
// (GlibcStub). Other options, and lines v6lab cannot read, are skipped.
func ReadResolvConf(r io.Reader) (ResolvConf, error) {
	var out ResolvConf
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 2 && f[0] == "nameserver":
			// Zones (fe80::1%eth0) are kept: link-local servers need them.
			if a, err := netip.ParseAddr(f[1]); err == nil {
				out.Servers = append(out.Servers, netip.AddrPortFrom(a, 53))
			}
		case len(f) >= 2 && f[0] == "options":
			out.Stub = WithOptions(out.Stub, strings.Join(f[1:], " "))
		}
	}
	return out, sc.Err()
}

// ParseServer accepts "ADDR", "ADDR:PORT" or "[V6]:PORT" (port 53 by default).
func ParseServer(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		if a, aerr := netip.ParseAddr(strings.Trim(s, "[]")); aerr == nil {
			ap, err = netip.AddrPortFrom(a, 53), nil
		}
	}
	if err == nil && ap.Addr().Is4In6() {
		// Taken as IPv4 by the family checks, sent from an IPv6 socket:
		// every query would fail (EAFNOSUPPORT on an IPv6-only socket).
		return netip.AddrPort{}, fmt.Errorf("path: DNS server %q is an IPv4-mapped IPv6 address, which is IPv4: give %s", s, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	}
	if err == nil {
		return ap, nil
	}
	return netip.AddrPort{}, fmt.Errorf("path: bad DNS server %q (want ADDR, ADDR:PORT or [IPV6]:PORT)", s)
}

// localAddrPort is a socket's own address (invalid if unknown).
func localAddrPort(fd int) netip.AddrPort {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
	}
	return netip.AddrPort{}
}
