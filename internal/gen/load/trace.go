package load

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/sock/tcpinfo"
)

// Trace times one transaction on the monotonic clock. Phase marks are
// durations since Begin, so wall-clock steps cannot distort them.
type Trace struct {
	start time.Time
	// lastRead is when the last read that brought bytes returned (see
	// Read): a completed transaction ends there.
	lastRead time.Time
	// firstTx is the kernel's stamp of the first packet out (the DNS
	// query); conns are the connections whose receive stamps end the
	// wire time (WireNS).
	firstTx time.Time
	// synCookie is the first connection's socket cookie when no lookup
	// stamped the start: its SYN's stamp does (path.SYNSent).
	synCookie uint64
	conns     []*path.StampedConn
	// reply, when set, is the connection whose first bytes are the
	// reply's (StampReply); else the earliest of conns' are.
	reply   *path.StampedConn
	lastRx  time.Time // a receive stamp given by Received
	firstRx time.Time // the first reply bytes' stamp given by FirstReceived
	// answerRx is the kernel's receive stamp of the lookup's answer.
	answerRx time.Time
	// turns: the probe counts its client turns (CountTurns), so Open
	// counts the lookup's.
	turns bool
	// reordered: a reply before a turn arrived out of order
	// (Reordered), so its stamp is not when it was complete and the
	// turns cannot be told from the network's wait.
	reordered bool
	// noLookup: the transaction's lookup sent no query (Lookup), so its
	// resolve_ns is 0.
	noLookup bool
	// handshakes are Dial's connections, their turns counted at Done.
	handshakes []*Handshake
	S          result.Sample
	// watched are the transaction's TCP connections (Watch), tcp their
	// figures as last read (ReadTCP, or an event loop's), wantTCP
	// whether completed samples carry them (WithTCPInfo).
	watched []syscall.RawConn
	tcp     *tcpinfo.Info
	wantTCP bool
	// TLS describes the transaction's TLS (version, cipher, resumed), for
	// its marker.
	TLS string
}

// Begin starts timing a transaction of protocol over p.
func Begin(protocol string, p path.Path) *Trace {
	now := time.Now() // carries both the monotonic and the wall clock
	return &Trace{start: now, S: result.Sample{Protocol: protocol, Path: string(p), Start: now.UTC()}}
}

// Reset readies t for a new transaction of protocol over p, as Begin
// makes one: for an engine that runs a user's transactions one after
// another on the same Trace (no allocation per transaction).
func (t *Trace) Reset(protocol string, p path.Path) {
	now := time.Now()
	*t = Trace{start: now, S: result.Sample{Protocol: protocol, Path: string(p), Start: now.UTC()}}
}

// BeginAt is Begin for a transaction that started at start (its first
// system call, taken by an engine that times many: the DNS load engine).
func BeginAt(protocol string, p path.Path, start time.Time) *Trace {
	return &Trace{start: start, S: result.Sample{Protocol: protocol, Path: string(p), Start: start.UTC()}}
}

// Restart moves the transaction's start to now: called immediately before
// its first system call, so the work of building a request is not timed
// (path.Resolver.LookupFrom calls it).
func (t *Trace) Restart() {
	now := time.Now()
	t.start, t.S.Start = now, now.UTC()
}

// Lookup resolves host for p as the transaction's first step: its time
// starts just before the query's first system call, and the query's
// address is recorded (DNSLocal) for packet traces.
//
// A lookup that sent no query (a literal, a name given by --resolve) has
// no time: the transaction starts after it, at its first system call, and
// its resolve_ns is 0 (Mark), not the client's own moments before it
// (on a loaded machine, milliseconds of the goroutine waiting to run).
func (t *Trace) Lookup(ctx context.Context, res *path.Resolver, host string, p path.Path) (netip.Addr, error) {
	queried := false
	hook := &path.LookupHook{Start: func() { queried = true; t.Restart() }}
	ip, err := res.LookupFrom(ctx, host, p, hook)
	t.S.DNSLocal, t.firstTx, t.answerRx = hook.Local, hook.Sent, hook.Answered
	t.AddQueries(hook.Queries())
	if t.noLookup = !queried; t.noLookup {
		t.Restart()
	}
	return ip, err
}

// MetricQueries is the sample's figure of how many DNS queries its own
// lookup sent (docs/metrics.md): 1 when the first was answered, more when
// one was lost (or its answer) and sent again, or asked over TCP after a
// truncated answer; absent when no query went (a literal, --resolve).
const MetricQueries = "dns_queries"

// AddQueries adds n queries of the transaction's lookups to its
// MetricQueries (nothing when n is 0).
func (t *Trace) AddQueries(n int) {
	if n <= 0 {
		return
	}
	if t.S.Metrics == nil {
		t.S.Metrics = map[string]float64{}
	}
	t.S.Metrics[MetricQueries] += float64(n)
}

// CountTurns says the probe counts every client turn of its
// conversation (Turn, Dial, Turns): Turn counts nothing without it, so a
// probe that could count only some leaves client_turn_ns unset rather
// than short.
func (t *Trace) CountTurns() { t.turns = true }

// Turn adds to the sample's client turns the client's own time from a
// reply's arrival (its kernel receive stamp) to the next request's send
// at; nothing when either is unknown or the probe does not count turns.
func (t *Trace) Turn(rx, at time.Time) {
	if !t.turns || rx.IsZero() || at.IsZero() || !at.After(rx) {
		return
	}
	t.S.ClientTurnNS += int64(at.Sub(rx))
}

// Answered is the kernel's receive stamp of the lookup's answer (zero:
// none, or no lookup).
func (t *Trace) Answered() time.Time { return t.answerRx }

// Turns wraps c, a connection of the transaction whose reads carry the
// kernel's stamps (Stamp's, or a stream over one such as TLS's), so that
// each write after bytes were read counts the client's turn: from the
// last bytes' receive stamp to the write (a request after its reply, a
// TLS flight after the server's). c as it is unless the probe counts
// turns (CountTurns).
func (t *Trace) Turns(c net.Conn) net.Conn {
	if !t.turns {
		return c
	}
	return &turnConn{Conn: c, t: t}
}

// turnConn is Turns' connection.
type turnConn struct {
	net.Conn
	t *Trace
	// replied: bytes were read since the last write.
	replied bool
}

func (c *turnConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.replied = true
	}
	return n, err
}

func (c *turnConn) Write(p []byte) (int, error) {
	turned := c.replied
	if turned {
		c.t.Turn(c.t.LastRx(), time.Now())
		c.replied = false
	}
	n, err := c.Conn.Write(p)
	if turned {
		c.t.CheckOrder() // c may wrap the stamped connection: the trace knows it
	}
	return n, err
}

// Reordered records that a reply before one of the transaction's turns
// arrived out of order (a segment after a lost one came first): the read
// that completed it carries the early segment's stamp, so the turn from
// it would hold the retransmission's wait, the network's time. The
// sample's client_turn_ns is then left unset (CountTurns' rule: unset
// rather than wrong).
func (t *Trace) Reordered() { t.reordered = true }

// CheckOrder asks the kernel, for a probe that counts its turns itself
// (Turn), whether any of the transaction's stamped connections received a
// segment out of order (path.StampedConn.Reordered), and records it
// (Reordered). Called after a turn's send: the system call is then not
// inside the client's turn.
func (t *Trace) CheckOrder() {
	if !t.turns || t.reordered {
		return
	}
	for _, c := range t.conns {
		if c.Reordered() {
			t.reordered = true
			return
		}
	}
}

// LastRx is the kernel's receive stamp of the last bytes the
// transaction's stamped connections have read so far (zero: none).
func (t *Trace) LastRx() time.Time {
	last := t.lastRx
	for _, c := range t.conns {
		if c.LastRx.After(last) {
			last = c.LastRx
		}
	}
	return last
}

// Dial connects with d. When the probe counts turns, the connection's
// Handshake counts, once the transaction is done (Done), the client's turn
// from rx (the receive stamp of the reply that led to it) to the SYN's
// departure by the kernel's stamp, or else to the call; and, when the next
// request is sent (TurnAfter), the turn from the handshake's end (the
// SYN-ACK's stamp, or else Dial's return). The stamps are looked up at
// Done, not here: between the handshake and the next request they would
// be v6lab's own work inside the wire time.
func (t *Trace) Dial(ctx context.Context, d path.Dialer, to netip.AddrPort, rx time.Time) (net.Conn, *Handshake, error) {
	called := time.Now()
	c, err := d.Dial(ctx, "tcp", to)
	returned := time.Now()
	if err == nil {
		t.Watch(ctx, c)
	}
	if err != nil || !t.turns {
		return c, nil, err
	}
	h := &Handshake{rx: rx, called: called, returned: returned}
	if rc, ok := c.(syscall.Conn); ok && path.SYNReady() {
		if raw, err := rc.SyscallConn(); err == nil {
			_ = raw.Control(func(fd uintptr) { h.cookie = path.SocketCookie(int(fd)) })
		}
	}
	t.handshakes = append(t.handshakes, h)
	return c, h, nil
}

// Handshake is a connection made by Dial whose turns are counted at Done.
type Handshake struct {
	cookie               uint64
	rx, called, returned time.Time
	next                 time.Time // the next request's send (TurnAfter)
}

// TurnAfter records that the request after h's handshake was sent at at
// (nothing for a nil h).
func (t *Trace) TurnAfter(h *Handshake, at time.Time) {
	if h != nil {
		h.next = at
	}
}

// handshakeTurns counts the turns of Dial's connections by the kernel's
// stamps, looked up now that the transaction is over.
func (t *Trace) handshakeTurns() {
	for _, h := range t.handshakes {
		syn, established := path.Handshake(h.cookie)
		if syn.IsZero() {
			syn = h.called
		}
		if established.IsZero() {
			established = h.returned
		}
		t.Turn(h.rx, syn)
		if !h.next.IsZero() {
			t.Turn(established, h.next)
		}
	}
	t.handshakes = nil
}

// Stamp reads c with the kernel's receive stamps (path.Stamped): the wire
// time ends at the last bytes any such connection received. A connection
// that cannot be stamped is returned as it is.
func (t *Trace) Stamp(c net.Conn) net.Conn {
	sc, ok := path.Stamped(c)
	if !ok {
		return c
	}
	if !sc.UDP && t.WantsSYN() && len(t.conns) == 0 && path.SYNReady() {
		t.synCookie = sc.Cookie()
	}
	t.conns = append(t.conns, sc)
	return sc
}

// StampReply is Stamp for a connection whose first bytes are the reply's
// first byte although another connection of the transaction received
// bytes before it (FTP's data connection, after the control
// connection's greeting and replies): the wire's first byte is then this
// connection's, as first_byte_ns is its first read.
func (t *Trace) StampReply(c net.Conn) net.Conn {
	out := t.Stamp(c)
	if sc, ok := out.(*path.StampedConn); ok {
		t.reply = sc
	}
	return out
}

// WantsSYN says whether the wire time has no start yet (no lookup sent a
// query): the first connection's SYN then starts it (SYN).
func (t *Trace) WantsSYN() bool { return t.firstTx.IsZero() && t.synCookie == 0 }

// SYN records the socket cookie of the transaction's first connection,
// made by the probe itself (an event loop), when WantsSYN.
func (t *Trace) SYN(cookie uint64) {
	if t.WantsSYN() {
		t.synCookie = cookie
	}
}

// SYNAt records the kernel's stamp of the transaction's first
// connection's SYN, read by the probe itself (an event loop: evloop.Result.
// SYN), when WantsSYN; a zero time records nothing.
func (t *Trace) SYNAt(at time.Time) {
	if !at.IsZero() && t.WantsSYN() {
		t.firstTx = at
	}
}

// Received records reads a probe did itself (an event loop): when the one
// that brought the last bytes returned, and the kernel's receive stamp of
// those bytes (either may be zero).
func (t *Trace) Received(read, rx time.Time) {
	if !read.IsZero() {
		t.lastRead = read
	}
	if rx.After(t.lastRx) {
		t.lastRx = rx
	}
}

// FirstReceived records the kernel's receive stamp of the reply's first
// bytes, for reads a probe did itself (an event loop).
func (t *Trace) FirstReceived(rx time.Time) {
	if !rx.IsZero() && (t.firstRx.IsZero() || rx.Before(t.firstRx)) {
		t.firstRx = rx
	}
}

// ClientTurns adds the client's own time between replies and the next
// requests, by an event loop's count (evloop.Result.ClientTurns), to the
// turns counted before the loop took the connection (a go-dial lookup's).
func (t *Trace) ClientTurns(d time.Duration) { t.S.ClientTurnNS += int64(d) }

// Sent records the kernel's stamp of the transaction's first packet out
// when no lookup gave one (a DNS query's own socket: path.StampedConn.
// FirstSent, read before the socket closes).
func (t *Trace) Sent(at time.Time) {
	if t.firstTx.IsZero() {
		t.firstTx = at
	}
}

// wire is the network's share of a completed transaction by the kernel's
// stamps: from its first packet out to its last bytes in (0: unknown).
func (t *Trace) wire() int64 {
	last := t.wireEnd()
	if t.firstTx.IsZero() && t.synCookie != 0 {
		t.firstTx = path.SYNSent(t.synCookie)
	}
	if t.firstTx.IsZero() || last.IsZero() || last.Before(t.firstTx) {
		return 0
	}
	return int64(last.Sub(t.firstTx))
}

// wireEnd is when the transaction's last bytes arrived: their receive
// stamp (LastRx), or, when the read that took them returned late after it
// (tcpinfo.LateRead) and a segment came out of order, the read's own
// time. A read that completed a reply after a lost segment carries the
// stamp of a segment that came before the retransmission, and ended the
// wire time short of the retransmission's wait; the read returns as the
// retransmission arrives, a wake-up later.
func (t *Trace) wireEnd() time.Time {
	last := t.LastRx()
	if last.IsZero() || t.lastRead.Sub(last) <= tcpinfo.LateRead {
		return last
	}
	for _, c := range t.conns {
		if !t.reordered && c.Reordered() {
			t.reordered = true
		}
	}
	if t.reordered {
		return t.lastRead
	}
	return last
}

// wireFirstByte is, by the kernel's stamps, the first packet out to the
// first reply bytes in (0: unknown); called after wire.
func (t *Trace) wireFirstByte() int64 {
	first := t.firstRx
	if t.reply != nil {
		first = t.reply.FirstRx
	} else {
		for _, c := range t.conns {
			if !c.FirstRx.IsZero() && (first.IsZero() || c.FirstRx.Before(first)) {
				first = c.FirstRx
			}
		}
	}
	if t.firstTx.IsZero() || first.IsZero() || first.Before(t.firstTx) {
		return 0
	}
	return int64(first.Sub(t.firstTx))
}

// Since is the time elapsed since Begin.
func (t *Trace) Since() int64 { return int64(time.Since(t.start)) }

// Mark stores the time since Begin in *field (a phase end).
func (t *Trace) Mark(field *int64) {
	if field == &t.S.ResolveNS && t.noLookup {
		*field = 0 // no query was sent (Lookup)
		return
	}
	*field = t.Since()
}

// Conn records the addresses a connection used.
func (t *Trace) Conn(c net.Conn) {
	t.S.Local, t.S.Remote = c.LocalAddr().String(), c.RemoteAddr().String()
}

// Open is the start every connection-per-transaction probe shares: look
// host up with the path's record type (the resolve phase), dial it pinned
// with d (the connect phase), record the addresses, and tie the connection
// to ctx (see Deadline). On failure it returns the failed sample; otherwise
// release must be called when the transaction is over (it closes the
// connection with SO_LINGER 0, see CloseAbort).
func (t *Trace) Open(ctx context.Context, res *path.Resolver, host string, port int, d path.Dialer) (conn net.Conn, release func(), failed *result.Sample) {
	ip, err := t.Lookup(ctx, res, host, d.Path)
	t.Mark(&t.S.ResolveNS)
	if err != nil {
		s := t.Fail(ctx, "resolve", err)
		return nil, nil, &s
	}
	conn, _, err = t.Dial(ctx, d, netip.AddrPortFrom(ip, uint16(port)), t.answerRx)
	t.Mark(&t.S.ConnectNS)
	if err != nil {
		s := t.Fail(ctx, "connect", err)
		return nil, nil, &s
	}
	t.Conn(conn)
	stop := Deadline(ctx, conn)
	raw := conn
	return timedConn{t.Stamp(conn), t}, func() { stop(); CloseAbort(raw) }, nil
}

// timedConn records every read's time in its Trace (Read), so the
// transaction ends at the read that brought its last reply.
type timedConn struct {
	net.Conn
	t *Trace
}

func (c timedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.t.Read(n)
	return n, err
}

// Read records that a read returned n bytes of the transaction now.
func (t *Trace) Read(n int) {
	if n > 0 {
		t.lastRead = time.Now()
	}
}

// MarkRead stores in *field the time of the last read that brought bytes
// (Read), the first byte's phase end when it is the first.
func (t *Trace) MarkRead(field *int64) { *field = int64(t.lastRead.Sub(t.start)) }

// Done ends a completed transaction at its marker: at the read that
// brought its last bytes when reads were recorded (Read), so checking the
// reply and building the marker are not timed; else now.
func (t *Trace) Done(marker string) result.Sample {
	t.S.TotalNS = t.Since()
	t.handshakeTurns()
	if t.reordered {
		t.S.ClientTurnNS = 0
	}
	if !t.lastRead.IsZero() {
		t.S.TotalNS = int64(t.lastRead.Sub(t.start))
	}
	t.S.WireNS = t.wire()
	if t.S.WireNS > 0 {
		t.S.WireFirstByteNS = min(t.wireFirstByte(), t.S.WireNS)
	}
	t.S.Marker = marker
	t.doneTCP()
	return t.S
}

// Fail ends a failed transaction. phase says where it failed ("resolve",
// "connect", …) and prefixes the message; ctx gives the timeout cause.
func (t *Trace) Fail(ctx context.Context, phase string, err error) result.Sample {
	t.S.TotalNS = t.Since()
	if WantsTCPInfo(ctx) {
		t.wantTCP = true
	}
	t.S.ErrKind, err = t.stall(Classify(ctx, phase, err), err)
	if t.S.ErrKind == result.ErrTimeout {
		err = fmt.Errorf("timed out after %v: %w", time.Duration(t.S.TotalNS).Round(time.Millisecond), err)
	}
	// The phase names the step, once: a system call's error may already
	// begin with it ("connect: connection refused").
	if msg := err.Error(); strings.HasPrefix(msg, phase+": ") {
		t.S.Err = msg
	} else {
		t.S.Err = phase + ": " + msg
	}
	return t.S
}

// Classify groups an error for the completion report: timeout, refused,
// reset, family, resolve, protocol or io.
func Classify(ctx context.Context, phase string, err error) result.ErrKind {
	var ne net.Error
	switch {
	case errors.Is(err, path.ErrFamily):
		return result.ErrFamily
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return result.ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return result.ErrRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return result.ErrReset
	case phase == "resolve":
		return result.ErrResolve
	case ctx.Err() != nil && phase != "reply":
		return result.ErrTimeout
	case errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return result.ErrResource
	case phase == "reply" || phase == "protocol":
		return result.ErrProtocol
	}
	return result.ErrIO
}

// Deadline applies ctx's deadline to conn and makes cancellation of ctx
// interrupt blocked I/O at once. The returned stop must be called.
func Deadline(ctx context.Context, conn net.Conn) (stop func() bool) {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	return AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
}

// CloseAbort closes a TCP connection with SO_LINGER 0 so it leaves no
// TIME_WAIT behind: a new connection per transaction at thousands of users
// would otherwise exhaust the client's ephemeral ports. It is used only after
// the completion marker, so it never shortens what is measured.
func CloseAbort(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// At stores the time from Begin to at in *field (a phase end seen by
// someone else, such as an event loop).
func (t *Trace) At(field *int64, at time.Time) { *field = int64(at.Sub(t.start)) }
