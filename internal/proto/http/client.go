package http

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	nethttp "net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"v6lab/internal/sock/evloop"
	"v6lab/internal/sock/eyeballs"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Limits that keep a hostile server from exhausting memory or time.
const (
	// MaxHeaderBytes bounds the status line and headers of one response.
	MaxHeaderBytes = 64 << 10
	// MaxPageParse is how much of an HTML page is scanned for objects.
	MaxPageParse = 4 << 20
	// MaxObjects bounds the embedded objects fetched for one page.
	MaxObjects = 256
	// DefaultMaxBody bounds one response body.
	DefaultMaxBody = 4 << 30
)

// readers recycles the 32 KiB read buffers: thousands of transactions a
// second would otherwise spend a tenth of their CPU allocating and
// collecting them.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}

// ErrTooLarge is wrapped when a reply exceeds a limit.
var ErrTooLarge = errors.New("reply exceeds limit")

// Client is an HTTP probe: each Do is one transaction on a new connection —
// resolve the host with the path's record type, connect pinned to the path,
// (TLS for https), GET the page, then its embedded objects on the same
// connection, and end when every byte has arrived with status 200.
type Client struct {
	URL      *url.URL
	Path     path.Path
	Resolver *path.Resolver
	// Source optionally binds the client's address.
	Source netip.Addr
	// Objects makes the probe fetch the page's embedded objects
	// (same host only: others would need lookups on other paths).
	Objects bool
	// MaxBody bounds each body; 0 means DefaultMaxBody.
	MaxBody int64
	// TLS is the base TLS configuration for https (ServerName is set per
	// URL). With a ClientSessionCache (ResumeTLS), users resume sessions
	// the server gave tickets for; without one, every handshake is full.
	TLS *tls.Config
	// UserAgent is sent with every request.
	UserAgent string
	// Engine picks how connections are made: EngineAuto (the event loop
	// where it applies), EngineGo, EngineEvloop or EngineGoDial.
	Engine Engine
	// Expect is what the body of a fetch without objects holds, when
	// known (a generated file): a body that differs is a failed sample.
	Expect content.Expect
	// Sum records the CRC-32C of the body of a fetch without objects
	// (metric body_crc32c), as bulk transfers do.
	Sum bool
	// AttemptDelay is the dual path's Connection Attempt Delay (0: RFC
	// 8305's 250 ms, or Go's 300 ms fallback delay with GoDialer).
	AttemptDelay time.Duration
	// GoDialer races the dual path's families with Go's standard
	// net.Dialer (RFC 6555) instead of v6lab's RFC 8305.
	GoDialer bool
	// V3, when set, races the dual path by Happy Eyeballs version 3
	// (dialer v3: HTTPS, AAAA and A asked, QUIC and TCP raced; v3.go),
	// whatever Version says: the winner's protocol is spoken.
	V3 *eyeballs.V3
	// WhatIf: after each dual transaction, the families its race did not
	// see through are timed (whatif.go).
	WhatIf bool
	// LookupName, when set, is the name the dual path looks up instead
	// of the URL's host (proto.AAAADelayLabel: an AAAA answered late).
	LookupName string
	// Version is the HTTP version spoken: Version11 (""), Version2 (h2
	// over TLS by ALPN, or h2c by prior knowledge) or Version3 (h3 over
	// QUIC); Phases records handshake_ms and ttfb_ms in every sample's
	// metrics (a cell that names its version, so versions compare).
	Version string
	Phases  bool
	// ZeroRTT sends HTTP/3's first request in 0-RTT when resuming.
	ZeroRTT bool
	// QUICTimeout bounds a QUIC handshake without an answer (0:
	// DefaultQUICTimeout).
	QUICTimeout time.Duration

	// Keep keeps each user's connection for its next transactions
	// (HTTP/2 and HTTP/3; kept.go).
	Keep bool
	// Shared is how many transactions run at once on each user's kept
	// HTTP/2 connection (shared.go; 0 or 1: one at a time): the options'
	// PerUser, which says where streams applies.
	Shared int

	kept   keptConns
	shared sharedConns

	lastPage   atomic.Pointer[parsedPage] // objectsOf's memory
	lastMarker atomic.Pointer[marker]     // done's memory
	// requests are the requests built, by URI (request).
	requests  sync.Map
	nrequests atomic.Int32
	// lastRemote is the last remote address named (remoteName), lastMain
	// the last main request built (mainRequest).
	lastRemote atomic.Pointer[addrName]
	lastMain   atomic.Pointer[mainReq]
}

// parsedPage is a page and the objects found in it.
type parsedPage struct {
	page []byte
	refs []string
	// reqs are the event loop's requests for refs, the last with
	// Connection: close (objectRequests), made on first use.
	reqsOnce sync.Once
	reqs     [][]byte
}

// objectRequests is the event loop's request for each of the objects of
// page (from objectsOf), the last one closing: made once per distinct
// page, not looked up per object.
func (c *Client) objectRequests(page []byte) ([]string, [][]byte) {
	p := c.parsed(page)
	p.reqsOnce.Do(func() {
		p.reqs = make([][]byte, len(p.refs))
		for i, ref := range p.refs {
			p.reqs[i] = c.request(ref, i == len(p.refs)-1)
		}
	})
	return p.refs, p.reqs
}

// objectsOf returns Objects(page, c.URL), parsing only a page that differs
// from the last one parsed: a server returns the same page to every user,
// and tokenizing it each time would cost the client more than the fetch.
func (c *Client) objectsOf(page []byte) []string { return c.parsed(page).refs }

// parsed is page parsed, the last one kept (objectsOf).
func (c *Client) parsed(page []byte) *parsedPage {
	if last := c.lastPage.Load(); last != nil && bytes.Equal(last.page, page) {
		return last
	}
	p := &parsedPage{page: bytes.Clone(page), refs: Objects(page, c.URL)}
	c.lastPage.Store(p)
	return p
}

// lookupHost is the name the dual path resolves.
func (c *Client) lookupHost() string {
	if c.LookupName != "" {
		return c.LookupName
	}
	return c.URL.Hostname()
}

// checks says whether a fetch's body goes through a content.Check.
func (c *Client) checks() bool { return !c.Objects && (c.Sum || c.Expect != content.Unknown) }

// Engine names a way of running a transaction's connection.
type Engine string

const (
	// EngineAuto uses the event loop for plain http (go-dial for the
	// dual path with Go's dialer), Go's net package otherwise.
	EngineAuto Engine = ""
	// EngineGo uses Go's dialer and netpoller (any transaction).
	EngineGo Engine = "go"
	// EngineEvloop uses v6lab's own epoll loop (internal/sock/evloop): plain
	// http, the page's objects on the same connection; on the dual path
	// the loop runs v6lab's Happy Eyeballs too (evloop.Race).
	EngineEvloop Engine = "evloop"
	// EngineGoDial connects with Go's dialer (on the dual path, Happy
	// Eyeballs by goroutines: v6lab's, or Go's own with GoDialer), then
	// hands the socket to the event loop for the requests and replies:
	// plain http on any path. Auto picks it for every path of a cell
	// group whose dual path races with Go's dialer, so the paths compared
	// connect the same way and read their replies on the loop.
	EngineGoDial Engine = "go-dial"
)

// ErrEngine is returned when the event loop is asked for a transaction
// it cannot run.
var ErrEngine = errors.New("http: the evloop engine runs plain http with v6lab's own dialer (https needs --engine go; the dual path with dialer go, go-dial or go)")

// ErrGoDialEngine is returned when go-dial is asked for https.
var ErrGoDialEngine = errors.New("http: the go-dial engine runs plain http (https needs --engine go)")

// EngineUsed names the engine the client's transactions run on ("go",
// "evloop" or "go-dial"), or says why the choice cannot be made.
func (c *Client) EngineUsed() (Engine, error) {
	if v := c.Version; v == Version2 || v == Version3 {
		return versionEngine(v, c.Engine)
	}
	ev, err := c.useEvloop()
	switch {
	case err != nil:
		return EngineGo, err
	case ev && c.goDial():
		return EngineGoDial, nil
	case ev:
		return EngineEvloop, nil
	}
	return EngineGo, nil
}

// goDial says whether connections are dialled by Go and then run on the
// event loop (EngineGoDial, or the dual path racing with Go's dialer).
func (c *Client) goDial() bool { return c.Engine == EngineGoDial || (c.Path.Kind().Dual && c.GoDialer) }

// Record says which engine the client's transactions run on, for the
// result's record (proto.Recorder).
func (c *Client) Record() map[string]string {
	e, err := c.EngineUsed()
	if err != nil {
		return nil
	}
	return map[string]string{"engine": string(e)}
}

// useEvloop says whether a transaction's requests run on the event loop
// (its connection made there, or by Go and handed over: goDial).
func (c *Client) useEvloop() (bool, error) {
	if v := c.Version; v == Version2 || v == Version3 {
		return false, nil // their own clients: the loop speaks HTTP/1.1 only
	}
	plain := c.URL.Scheme == "http"
	switch c.Engine {
	case EngineGo:
		return false, nil
	case EngineEvloop:
		if !plain || (c.Path.Kind().Dual && c.GoDialer) {
			return false, ErrEngine
		}
		return true, nil
	case EngineGoDial:
		if !plain {
			return false, ErrGoDialEngine
		}
		return true, nil
	case EngineAuto:
		return plain, nil
	}
	return false, fmt.Errorf("http: unknown engine %q (auto, go, evloop, go-dial)", c.Engine)
}

// ParseURL checks a URL for the probe: http or https, a host, no userinfo.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("http: bad URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("http: bad URL %q: scheme must be http or https", raw)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("http: bad URL %q: no host", raw)
	}
	if err := hostName(u.Hostname()); err != nil {
		return nil, fmt.Errorf("http: bad URL %q: %w", raw, err)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("http: bad URL %q: bad port %q", raw, p)
		}
	}
	return u, nil
}

// hostName checks a URL's host that is not an address literal is a name
// DNS can carry as written: a name in another script goes in its xn--
// form (v6lab looks it up itself and does not convert it).
func hostName(host string) error {
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	for i, r := range host {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("host %q holds %q at byte %d, not a DNS name (letters, digits, '-', '_' and dots only; an internationalised name in its xn-- form)", host, r, i)
		}
	}
	return nil
}

func (c *Client) port() uint16 {
	if p := c.URL.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		return uint16(n)
	}
	if c.URL.Scheme == "https" {
		return 443
	}
	return 80
}

// Do performs one transaction (and, with WhatIf, times the families its
// race left unseen, once its figures are taken).
func (c *Client) Do(ctx context.Context, user int) result.Sample {
	s := c.do(ctx, user)
	c.whatIfAfter(ctx, &s)
	return s
}

// do is one transaction.
func (c *Client) do(ctx context.Context, user int) result.Sample {
	tr := c.begin(user)
	if c.V3 != nil && c.Path.Kind().Dual {
		return c.phases(c.doV3(ctx, tr, user))
	}
	switch c.Version {
	case Version2:
		return c.phases(c.doH2(ctx, tr, user))
	case Version3:
		return c.phases(c.doH3(ctx, tr, user))
	}
	if c.Phases {
		s := c.do11(ctx, tr)
		if s.OK() {
			s.Negotiated = "http/1.1"
		}
		return c.phases(s)
	}
	return c.do11(ctx, tr)
}

// do11 is one HTTP/1.1 transaction.
func (c *Client) do11(ctx context.Context, tr *load.Trace) result.Sample {
	conn, raw, addr, done := c.open11(ctx, tr)
	if done != nil {
		return *done
	}
	defer func() { load.CloseAbort(raw) }()
	stop := load.Deadline(ctx, raw)
	defer stop()

	cr := &countReader{r: conn, tr: tr}
	br := readers.Get().(*bufio.Reader)
	br.Reset(cr)
	defer func() { br.Reset(nil); readers.Put(br) }()
	cw := &countWriter{w: conn}

	var check *content.Check
	if c.checks() {
		check = content.NewCheck(c.Expect)
	}
	page, closed, err := c.get(br, cr, cw, c.URL.RequestURI(), c.Objects, !c.Objects, check)
	if err != nil {
		return c.fail(ctx, tr, cr, cw, err)
	}
	objs := 0
	if c.Objects && page != nil {
		refs := c.objectsOf(page)
		for i, ref := range refs {
			if closed {
				// The server closed after the last reply: reconnect
				// to the same address (no new lookup).
				load.CloseAbort(raw)
				if conn, raw, err = c.dial(ctx, tr, addr); err != nil {
					return c.fail(ctx, tr, cr, cw, fmt.Errorf("reconnect for object %s: %w", ref, err))
				}
				stop()
				stop = load.Deadline(ctx, raw)
				cr.r, cw.w = conn, conn
				br.Reset(cr)
			}
			last := i == len(refs)-1
			if _, closed, err = c.get(br, cr, cw, ref, false, last, nil); err != nil {
				return c.fail(ctx, tr, cr, cw, fmt.Errorf("object %s: %w", ref, err))
			}
			objs++
		}
	}
	tr.S.BytesIn, tr.S.BytesOut = cr.n, cw.n
	return c.done11(tr, check, objs)
}

// open11 connects for one HTTP/1.1 transaction: the dual path's race or
// the pinned path's lookup and dial. Where the event loop takes the
// transaction over (or the connection failed), done is its sample.
func (c *Client) open11(ctx context.Context, tr *load.Trace) (conn, raw net.Conn, addr netip.AddrPort, done *result.Sample) {
	finish := func(s result.Sample) (net.Conn, net.Conn, netip.AddrPort, *result.Sample) { return nil, nil, addr, &s }
	ev, err := c.useEvloop()
	if err != nil {
		return finish(tr.Fail(ctx, "connect", err))
	}
	if c.Path.Kind().Dual {
		if ev && !c.goDial() {
			return finish(c.doEvloop(ctx, tr, c.lookupHost(), netip.AddrPort{}, 0)) // the race on the loop
		}
		if conn, raw, err = c.dialEyeballs(ctx, tr); err != nil {
			return finish(tr.Fail(ctx, "connect", err))
		}
		addr = netip.AddrPortFrom(path.AddrOf(raw.RemoteAddr()), c.port())
	} else {
		host := c.URL.Hostname()
		if ev && !c.goDial() {
			return finish(c.doEvloop(ctx, tr, host, netip.AddrPort{}, 0))
		}
		// Every turn is counted here: the lookup's, and each write after
		// a read on the connection (TLS's flights, the objects' requests);
		// or, for go-dial, the event loop counts the conversation's.
		tr.CountTurns()
		ip, err := tr.Lookup(ctx, c.Resolver, host, c.Path)
		if err != nil {
			return finish(tr.Fail(ctx, "resolve", err))
		}
		if _, notLiteral := netip.ParseAddr(strings.Trim(host, "[]")); notLiteral != nil {
			tr.Mark(&tr.S.ResolveNS) // a name was looked up (a literal has no lookup phase)
		}
		addr = netip.AddrPortFrom(ip, c.port())
		if conn, raw, err = c.dial(ctx, tr, addr); err != nil {
			return finish(tr.Fail(ctx, "connect", err))
		}
	}
	if ev {
		return finish(c.handOver(ctx, tr, raw, addr))
	}
	return conn, raw, addr, nil
}

// done11 completes a transaction that fetched objs objects, with its
// body's figures when it summed one.
func (c *Client) done11(tr *load.Trace, check *content.Check, objs int) result.Sample {
	if check != nil && c.Sum {
		if tr.S.Metrics == nil {
			tr.S.Metrics = map[string]float64{}
		}
		maps.Copy(tr.S.Metrics, bodyMetrics(check))
	}
	marker := "200 OK, " + strconv.Itoa(objs) + " objects"
	if tr.TLS != "" {
		marker += ", " + tr.TLS
	}
	return tr.Done(marker)
}

// bodyMetrics are the figures of a summed body: its CRC-32C and its
// length (BytesIn counts the reply's headers too).
func bodyMetrics(check *content.Check) map[string]float64 {
	return map[string]float64{"body_crc32c": float64(check.Sum()), "body_bytes": float64(check.Len())}
}

func (c *Client) fail(ctx context.Context, tr *load.Trace, cr *countReader, cw *countWriter, err error) result.Sample {
	tr.S.BytesIn, tr.S.BytesOut = cr.n, cw.n
	phase := "reply"
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		phase = "io"
	}
	return tr.Fail(ctx, phase, err)
}

// ResumeTLS returns base (or a new config) with a session cache shared by
// every user of a probe: returning users resume, as browsers, wrk and
// h2load do. Without it every user is new and every handshake full, as
// MITRE's users were.
func ResumeTLS(base *tls.Config) *tls.Config {
	cfg := &tls.Config{}
	if base != nil {
		cfg = base.Clone()
	}
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4096)
	return cfg
}

// dial connects pinned to the path (a reconnection of the dual path to
// the family that won) and, for https, completes TLS. It returns the
// stream to use and the raw TCP connection beneath it.
func (c *Client) dial(ctx context.Context, tr *load.Trace, addr netip.AddrPort) (net.Conn, net.Conn, error) {
	p := c.Path
	if p.Kind().Dual {
		p = path.OfAddr(addr.Addr())
	}
	d := path.Dialer{Path: p, Source: c.Source}
	var raw net.Conn
	var err error
	if tr.S.ConnectNS == 0 { // the first connection: the lookup's turn
		raw, _, err = tr.Dial(ctx, d, addr, tr.Answered())
	} else {
		if raw, err = d.Dial(ctx, "tcp", addr); err == nil {
			tr.Watch(ctx, raw) // a reconnection carries the rest
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if tr.S.ConnectNS == 0 {
		tr.Mark(&tr.S.ConnectNS)
		tr.Conn(raw)
	}
	return c.secure(ctx, tr, raw)
}

// dialEyeballs connects the dual path as a dual-stack client does (Happy
// Eyeballs, RFC 8305, over the endpoint's resolver, each attempt pinned to
// its address's family). The transaction's time starts with the lookups;
// its sample records which family won (ipv6_won), the attempts made
// (he_attempts) and when the winner connected (he_connect_ms).
func (c *Client) dialEyeballs(ctx context.Context, tr *load.Trace) (net.Conn, net.Conn, error) {
	res := c.Resolver.OneFamily()
	// The first query out starts the wire time, as a pinned path's one
	// query does; its address is the sample's dns_local.
	var mu sync.Mutex
	var firstTx time.Time
	queries := 0 // both lookups' (dns_queries)
	d := eyeballs.Dialer{AttemptDelay: c.AttemptDelay,
		Lookup: func(ctx context.Context, host string, v6 bool) ([]netip.Addr, error) {
			p := path.IPv4
			if v6 {
				p = path.IPv6
			}
			hook := &path.LookupHook{}
			a, err := res.LookupFrom(ctx, host, p, hook)
			mu.Lock()
			queries += hook.Queries()
			if !hook.Sent.IsZero() && (firstTx.IsZero() || hook.Sent.Before(firstTx)) {
				firstTx, tr.S.DNSLocal = hook.Sent, hook.Local
			}
			mu.Unlock()
			if err != nil {
				return nil, err
			}
			return []netip.Addr{a}, nil
		},
		Dial: func(ctx context.Context, to netip.AddrPort) (net.Conn, error) {
			return path.Dialer{Path: path.OfAddr(to.Addr())}.Dial(ctx, "tcp", to)
		}}
	if c.GoDialer {
		return c.dialGo(ctx, tr, res)
	}
	tr.Restart()
	r, err := d.DialContext(ctx, c.lookupHost(), c.port())
	mu.Lock() // the lookups are over: DialContext waits for them
	if !firstTx.IsZero() {
		tr.Sent(firstTx)
	}
	n := queries
	mu.Unlock()
	raceMetrics(tr, r, err == nil)
	tr.AddQueries(n)
	if len(r.Attempts) > 0 {
		tr.S.ResolveNS = int64(r.Attempts[0].Start)
	}
	if err != nil {
		return nil, nil, err
	}
	tr.S.ConnectNS = int64(r.Connect)
	tr.Conn(r.Conn)
	return c.secure(ctx, tr, r.Conn)
}

// dialGo races the families with Go's own net.Dialer, as a Go program
// does: its resolver asks the endpoint's DNS server for A and AAAA, and
// its dialer starts IPv4 300 ms (or AttemptDelay) after IPv6 unless IPv6
// connected first (RFC 6555). Its attempts are not visible: the sample
// records which family won and when (no he_attempts).
func (c *Client) dialGo(ctx context.Context, tr *load.Trace, res path.Resolver) (net.Conn, net.Conn, error) {
	server, over, err := res.Server(res.Over)
	if err != nil {
		return nil, nil, err
	}
	// Go's resolver asks the endpoint's DNS server, over the family the
	// lookups are pinned to (udp4 or udp6; tcp4 or tcp6 when truncated).
	// Its queries' transmit stamps start the wire time, as v6lab's own
	// lookups' do on every other path.
	var queries goQueries
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		proto := "udp"
		if strings.HasPrefix(network, "tcp") {
			proto = "tcp"
		}
		c, err := path.Dialer{Path: over}.Dial(ctx, proto, server)
		if err != nil {
			return nil, err
		}
		return queries.wrap(c), nil
	}}
	delay := c.AttemptDelay
	if delay == 0 {
		delay = 300 * time.Millisecond // Go's default fallback delay
	}
	nd := net.Dialer{FallbackDelay: delay, KeepAlive: -1, Resolver: r}
	tr.Restart()
	raw, err := nd.DialContext(ctx, "tcp", net.JoinHostPort(c.lookupHost(), strconv.Itoa(int(c.port()))))
	if at, local := queries.first(); !at.IsZero() {
		tr.Sent(at)
		tr.S.DNSLocal = local
	}
	if err != nil {
		return nil, nil, err
	}
	tr.Mark(&tr.S.ConnectNS)
	tr.S.Metrics = map[string]float64{"ipv6_won": won(path.AddrOf(raw.RemoteAddr()).Is6()), "he_connect_ms": float64(tr.S.ConnectNS) / 1e6}
	tr.Conn(raw)
	return c.secure(ctx, tr, raw)
}

// goQueries keeps the earliest transmit stamp of the DNS queries Go's
// resolver sends over UDP (each on a socket of its own, closed once
// answered), and the address it left from: the dual path's first packet
// out with dialer go. Without it the wire time would start at the SYN,
// leaving the lookup out, unlike every other path's.
type goQueries struct {
	mu    sync.Mutex
	at    time.Time
	local string
}

// wrap turns on the transmit stamps of a query socket; its Close keeps the
// stamp. A UDP socket stays a net.PacketConn, as Go's resolver needs to
// frame its queries as datagrams.
func (q *goQueries) wrap(c net.Conn) net.Conn {
	u, udp := c.(*net.UDPConn)
	if !udp {
		return c // TCP after a truncated answer: a UDP query went first
	}
	sc, ok := path.Stamped(c)
	if !ok {
		return c
	}
	return &stampedQuery{UDPConn: u, sc: sc, q: q}
}

func (q *goQueries) first() (time.Time, string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.at, q.local
}

type stampedQuery struct {
	*net.UDPConn
	sc *path.StampedConn
	q  *goQueries
}

func (s *stampedQuery) Close() error {
	if at := s.sc.FirstSent(); !at.IsZero() {
		s.q.mu.Lock()
		if s.q.at.IsZero() || at.Before(s.q.at) {
			s.q.at, s.q.local = at, s.LocalAddr().String()
		}
		s.q.mu.Unlock()
	}
	return s.UDPConn.Close()
}

// secure reads raw with the kernel's receive stamps and, for https,
// completes TLS over it.
func (c *Client) secure(ctx context.Context, tr *load.Trace, raw net.Conn) (net.Conn, net.Conn, error) {
	return c.tlsOver(ctx, tr, c.stampRaw(tr, raw), raw) // read with the kernel's receive stamps
}

// tlsOver completes TLS over conn (raw beneath it) for https.
func (c *Client) tlsOver(ctx context.Context, tr *load.Trace, conn, raw net.Conn) (net.Conn, net.Conn, error) {
	if c.URL.Scheme != "https" {
		return conn, raw, nil
	}
	cfg := &tls.Config{}
	if c.TLS != nil {
		cfg = c.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = c.URL.Hostname()
	}
	if c.Version == Version2 {
		cfg.NextProtos = []string{"h2"} // and nothing else: a fallback to HTTP/1.1 is an error
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
			// A plain HTTP server reads the ClientHello as a request line
			// that never ends, and closes at its own timeout.
			return nil, nil, fmt.Errorf("tls handshake: the server closed the connection without answering TLS: does it speak TLS on this port? (an http:// url for a plain HTTP server) (%w)", err)
		}
		return nil, nil, fmt.Errorf("tls handshake: %w", err)
	}
	if tr.S.TLSNS == 0 {
		tr.Mark(&tr.S.TLSNS)
		setTLS(tr, tc.ConnectionState())
	}
	return tc, raw, nil
}

// get sends one GET and reads the whole reply. It returns the body when
// keepBody is set and the reply is HTML, and whether the server will close.
// A body not kept goes through check when there is one.
func (c *Client) get(br *bufio.Reader, cr *countReader, cw *countWriter, uri string, keepBody, closeAfter bool, check *content.Check) ([]byte, bool, error) {
	req := c.request(uri, closeAfter)
	if _, err := cw.Write(req); err != nil {
		return nil, false, fmt.Errorf("send request: %w", err)
	}
	cr.limit = cr.n + int64(br.Buffered()) + MaxHeaderBytes + int64(br.Size())
	// A reply that cannot begin "HTTP/" fails at its first bytes, not when
	// a status line that never comes times out.
	if _, err := br.Peek(1); err == nil {
		if first, _ := br.Peek(br.Buffered()); !startsHTTP(nil, first) {
			return nil, false, notHTTP(first)
		}
	}
	resp, err := nethttp.ReadResponse(br, nil)
	if err != nil {
		if cr.hit || errors.Is(err, ErrTooLarge) {
			return nil, false, fmt.Errorf("response header larger than %d bytes: %w", MaxHeaderBytes, ErrTooLarge)
		}
		return nil, false, fmt.Errorf("bad response: %w", err)
	}
	cr.limit = -1
	page, err := c.readReply(resp, uri, keepBody, check)
	return page, resp.Close || err != nil, err
}

// readReply reads a reply's body whole (its status 200) and closes it. It
// returns the body when keepBody is set and the reply is HTML; a body not
// kept goes through check when there is one.
func (c *Client) readReply(resp *nethttp.Response, uri string, keepBody bool, check *content.Check) ([]byte, error) {
	defer resp.Body.Close()
	maxBody := c.MaxBody
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	if resp.StatusCode != nethttp.StatusOK {
		// Drain a little for the record, then fail with the status.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("status %s for %s", resp.Status, uri)
	}
	if resp.ContentLength > maxBody {
		return nil, fmt.Errorf("body of %d bytes for %s exceeds the %d-byte limit: %w", resp.ContentLength, uri, maxBody, ErrTooLarge)
	}
	body := func() io.Reader { return io.LimitReader(resp.Body, maxBody+1) }
	var page []byte
	var n int64
	var err error
	if keepBody && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		var buf bytes.Buffer
		if cl := resp.ContentLength; cl > 0 && cl < MaxPageParse {
			buf.Grow(int(cl) + 1) // one allocation, and room to see the end
		}
		b := body()
		n, err = io.Copy(&buf, io.LimitReader(b, MaxPageParse))
		if err == nil {
			var rest int64
			rest, err = io.Copy(io.Discard, b)
			n += rest
		}
		page = buf.Bytes()
	} else if check != nil {
		n, err = io.Copy(check, body())
		if errors.Is(err, content.ErrCorrupt) {
			return nil, fmt.Errorf("body of %s: %w", uri, err)
		}
	} else if d, ok := resp.Body.(bodyDiscarder); ok {
		n, err = d.discard(maxBody)
	} else {
		n, err = io.Copy(io.Discard, body())
	}
	if err != nil {
		return nil, fmt.Errorf("body of %s after %d bytes: %w", uri, n, err)
	}
	if n > maxBody {
		return nil, fmt.Errorf("body of %s exceeds the %d-byte limit: %w", uri, maxBody, ErrTooLarge)
	}
	return page, nil
}

// bodyDiscarder is a reply's body that can be read to its end without
// being copied anywhere (HTTP/3's h3Reply): discard returns its length
// so far, stopping once that is over limit.
type bodyDiscarder interface {
	discard(limit int64) (int64, error)
}

// request is the GET for uri: built once per URI and kept (a page's
// objects' requests are the same for every transaction; at most
// maxRequests are kept), never changed once made.
func (c *Client) request(uri string, closeAfter bool) []byte {
	k := reqKey{uri, closeAfter}
	if b, ok := c.requests.Load(k); ok {
		return b.([]byte)
	}
	b := c.buildRequest(uri, closeAfter)
	if c.nrequests.Add(1) <= maxRequests {
		c.requests.Store(k, b)
	}
	return b
}

// maxRequests bounds the requests a client keeps.
const maxRequests = 1024

type reqKey struct {
	uri        string
	closeAfter bool
}

// buildRequest makes the GET for uri.
func (c *Client) buildRequest(uri string, closeAfter bool) []byte {
	ua := c.UserAgent
	if ua == "" {
		ua = "v6lab"
	}
	req := make([]byte, 0, 64+len(uri)+len(c.URL.Host)+len(ua))
	req = append(req, "GET "...)
	req = append(req, uri...)
	req = append(req, " HTTP/1.1\r\nHost: "...)
	req = append(req, c.URL.Host...)
	req = append(req, "\r\nUser-Agent: "...)
	req = append(req, ua...)
	req = append(req, "\r\nAccept: */*\r\n"...)
	if closeAfter {
		req = append(req, "Connection: close\r\n"...)
	}
	return append(req, "\r\n"...)
}

// countReader counts bytes in, marks the first byte, and enforces a limit
// while headers are read (limit < 0: none).
type countReader struct {
	r     io.Reader
	tr    *load.Trace
	n     int64
	limit int64
	hit   bool // the limit was reached
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.tr.Read(n)
	if n > 0 && c.tr.S.FirstByteNS == 0 {
		c.tr.MarkRead(&c.tr.S.FirstByteNS)
	}
	c.n += int64(n)
	if c.limit >= 0 && c.n > c.limit {
		c.hit = true
		return n, ErrTooLarge
	}
	return n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Warm warms the lookup and the connection of a first transaction before
// the barrier (load.Warmer).
func (c *Client) Warm(int) {
	c.Resolver.Warm(c.Path)
	path.Warm(c.Path, netip.AddrPort{}, c.Source)
	if ev, _ := c.useEvloop(); ev && (c.Version == "" || c.Version == Version11) {
		_, _ = evloop.Default() // started before the first transaction, not in it
	}
}
