// Package evloop runs TCP exchanges (connect, send a request, read until the
// reply is complete, close; or several requests in turn on one connection, as
// a page and its objects), and UDP ones (a datagram out, datagrams back until
// one completes the reply: a DNS query), on raw non-blocking sockets and an
// epoll set of its own, instead of Go's dialer and netpoller.
//
// At thousands of connections per second on loopback the client's own CPU
// decides the request rate. Go's dialer spends about 12 system calls and
// several goroutine wake-ups per connection (getsockopt SO_ERROR,
// getpeername, two epoll_ctl, one park per read); here a connection costs
// socket, setsockopt (SO_LINGER 0, so no TIME_WAIT is left), connect,
// epoll_ctl, getsockname, write, read and close, and the waiting goroutine
// wakes once, when its exchange is over.
//
// The epoll set is itself watched by Go's netpoller (nested epoll), so the
// loops are ordinary goroutines: no locked threads and no blocking system
// calls that would stall the scheduler.
//
// It imports nothing of v6lab but kstamp (the kernel's timestamps), tcpinfo
// and lag (the self-check's count of how long replies waited for the loop).
package evloop

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/kstamp"
	"v6lab/internal/sock/lag"
	"v6lab/internal/sock/resend"
	"v6lab/internal/sock/sockaddr"
	"v6lab/internal/sock/synstamp"
	"v6lab/internal/sock/tcpinfo"
)

// Feeder consumes a reply as it arrives.
type Feeder interface {
	// Feed takes the next bytes of the reply; eof reports that the peer
	// closed its side (b is then empty). It returns done when the reply is
	// complete, or an error that ends the exchange. b is valid only during
	// the call.
	Feed(b []byte, eof bool) (done bool, err error)
}

// Continuer is a Feeder with more than one request: after each complete
// reply the loop asks it for the next, and sends it on the same connection
// without waking the exchange's goroutine.
type Continuer interface {
	Feeder
	// Next returns the next request, or nil when the exchange is over.
	// reconnect asks for a new connection to the same address first (the
	// server said it closes after this reply).
	Next() (request []byte, reconnect bool)
}

// Exchange is one connection's work (a Continuer reply: several requests).
type Exchange struct {
	// Remote is the address to connect to; its family picks the socket's.
	Remote netip.AddrPort
	// Source, when valid, is bound before connecting.
	Source netip.Addr
	// Request is sent once the connection is up.
	Request []byte
	// Reply consumes what comes back.
	Reply Feeder
	// Cookie asks for the kernel's stamp of the first connection's SYN
	// (Result.SYN), which synstamp's stamper keeps.
	Cookie bool
	// UDP makes it a datagram exchange on a connected UDP socket: Request
	// is one datagram, each datagram back is fed whole (never with eof),
	// and Result.FirstTx has the request's transmit stamp. Its Reply may
	// not be a Continuer (Do fails it).
	UDP bool
	// Adopt, when above 0, is the descriptor of a TCP socket already
	// connected to Remote (by a dialer of the caller's: Happy Eyeballs),
	// which becomes the exchange's first connection: the loop owns it
	// from then on and closes it. Connected is then when the request was
	// first accepted for sending; the dial's own time is the caller's.
	Adopt int
	// Lookup, when set, is a DNS query the loop sends before the first
	// connection; its answer gives Remote's address (Remote's port is
	// kept). The connection is made in the loop's thread once the batch
	// that read the answer is read, so no goroutine wakes between the
	// answer and the SYN. Not with Adopt or UDP.
	Lookup *Lookup
	// Deadline, when set, ends an exchange of Sustain's that is not over
	// by then (ErrTimeout); Do takes its context's.
	Deadline time.Time
	// FragSize asks a UDP exchange whether its reply came in IP
	// fragments (IP_RECVFRAGSIZE, IPV6_RECVFRAGSIZE): Result.FragSize.
	FragSize bool
	// Resend, for a UDP exchange, is the wait for the reply before the
	// request is sent again, doubled after each time (0: never), as a
	// stub resolver does; Result.Resent counts the times.
	Resend time.Duration
	// TCPInfo asks for the connection's TCP_INFO as it was when the
	// exchange completed (Result.TCP); a failed TCP exchange has it
	// whatever this says (a stall is told from a slow transfer by it).
	TCPInfo bool
	// Race, when set, is a dual-stack client's way in instead of Lookup:
	// AAAA and A asked on one socket, then connection attempts to the
	// answers' addresses as its Racer decides (Happy Eyeballs), all in
	// the loop; the first to connect carries the exchange. Not with
	// Lookup, Adopt, UDP or Source.
	Race *Race
}

// Race is the queries and the connection attempts of Exchange.Race.
type Race struct {
	Server netip.AddrPort // the DNS server; its family picks the socket's
	Source netip.Addr     // the queries', bound when valid
	// AAAA and A are the two queries, sent in that order.
	AAAA, A []byte
	// Answer reads a datagram back: done when it answers one of the
	// queries (ipv6: the AAAA one), with the address it gives or the
	// error that leaves that family without one; done false for a
	// datagram that answers neither. b is valid only during the call.
	Answer func(b []byte) (ipv6 bool, addr netip.Addr, done bool, err error)
	// Stub is how the queries not answered yet are sent again, together
	// (resend.Stub: the zero Stub is v6lab's own schedule; a Stub's
	// Attempts spent, a family still unanswered has no address);
	// Result.Resent counts the times.
	Stub resend.Stub
	// Start, when set, is called immediately before the first query's
	// first system call.
	Start func()
	// Racer decides the attempts.
	Racer Racer
	// Again, when set, asks a family's question another way when Answer's
	// error wraps ErrAgain (a truncated answer: over TCP). It runs on a
	// goroutine of its own, its context ending with the race, and its
	// answer joins the race when it comes: until then the family counts
	// as unanswered.
	Again func(ctx context.Context, ipv6 bool) (netip.Addr, error)
}

// ErrAgain, wrapped in an error Race.Answer returns, says the question
// is to be asked again by Race.Again.
var ErrAgain = errors.New("ask again")

// Racer decides a race of connection attempts (eyeballs.Race). The loop
// tells it when the race began, each answer and each attempt's outcome,
// with their times, and starts the attempts Step asks for.
type Racer interface {
	Begin(at time.Time)
	Answer(ipv6 bool, addrs []netip.Addr, err error, at time.Time)
	// Step returns an address to attempt now (the attempt's index is the
	// number started before it), or a time to be asked again at (zero:
	// at the next answer or outcome), or the error that loses the race.
	Step(now time.Time) (to netip.Addr, wake time.Time, err error)
	Failed(i int, err error, at time.Time)
	Won(i int, at time.Time)
	Abort(at time.Time)
}

// Lookup is the query of Exchange.Lookup, on a connected UDP socket of
// its own with the kernel's stamps.
type Lookup struct {
	Server netip.AddrPort // the DNS server; its family picks the socket's
	Source netip.Addr     // bound when valid
	Query  []byte         // one datagram
	// Answer reads a datagram back: the address to connect to, or done
	// false to wait for another (not this query's answer), or an error
	// that ends the exchange in phase "resolve". b is valid only during
	// the call.
	Answer func(b []byte) (addr netip.Addr, done bool, err error)
	// Stub is how the query is sent again while no answer comes
	// (resend.Stub, as path's lookups: the zero Stub is v6lab's own
	// schedule; a Stub's Attempts spent, the exchange fails in phase
	// "resolve" saying so); Result.Resent counts the times.
	Stub resend.Stub
	// Start, when set, is called immediately before the query's first
	// system call.
	Start func()
	// IPv6 says which family the answer's address has (the query's record
	// type), so the connection's socket is made while the answer is
	// awaited.
	IPv6 bool
}

// Result says how an exchange went. Times are on the monotonic clock.
type Result struct {
	Connected time.Time // the handshake was seen over: an accepted write began, or the socket was writable (zero if never)
	FirstByte time.Time // the first reply byte was read (zero if none)
	// LastRead is when the read that brought the reply's last bytes
	// returned; LastRx is the kernel's receive stamp of those bytes, and
	// FirstRx of the first bytes read (zero where the kernel gives none).
	LastRead, LastRx, FirstRx time.Time
	// FirstTx is the kernel's transmit stamp of a UDP exchange's request,
	// or of a Lookup's query (its first sending); zero for TCP alone,
	// whose first packet, the SYN, has none.
	FirstTx time.Time
	// Resolved is when the read that brought a Lookup's answer returned
	// (with a Race: when the first attempt started), AnswerRx that
	// answer's receive stamp, and LookupLocal the query's address.
	Resolved, AnswerRx time.Time
	LookupLocal        netip.AddrPort
	Local              netip.AddrPort // of the first connection
	BytesOut           int64
	BytesIn            int64
	// Reconnects counts the connections opened after the first (a
	// Continuer's reconnect).
	Reconnects int
	// SYN is the kernel's stamp of the first connection's SYN
	// (Exchange.Cookie: synstamp.Stamper.Find, a wall-clock time); zero
	// when the stamper is not attached or did not stamp it.
	SYN time.Time
	// FragSize is, for a UDP exchange with Exchange.FragSize, the size of
	// the largest IP fragment the reply came in (0: it came whole), and
	// Resent how many times its request was sent again (Exchange.Resend),
	// or a Lookup's query (its Stub), or how many of a Race's queries were
	// (each unanswered one, each time: its Stub).
	FragSize, Resent int
	// TCP is the last connection's TCP_INFO when the exchange ended
	// (Exchange.TCPInfo; every failed TCP exchange's), nil otherwise.
	TCP *tcpinfo.Info
	// ClientTurns is the loop's own time inside the exchange: for each
	// request sent after a reply on the same connection (a Continuer's),
	// from the kernel's receive stamp of the bytes that completed the
	// reply to the request's send; and from a Lookup's answer (its
	// stamp) to the connect call; with a Race, from each answer, or
	// Connection Attempt Delay's end, to the attempt it started. Turns
	// whose reply had no stamp, and requests on a new connection, are not
	// in it.
	ClientTurns time.Duration
	// Reordered: a reply had a segment arrive out of order (after a lost
	// one), so the read that completed it carried that segment's earlier
	// stamp: ClientTurns holds the retransmission's wait too, and LastRx
	// may be short of it (checkOrder).
	Reordered bool
	// Phase is where Err happened: "resolve" (the Lookup), "connect",
	// "io" (sending or reading) or "reply" (the Feeder's error).
	Phase string
	Err   error
}

// ErrTimeout is returned when an exchange outlives its context's deadline:
// the context's own error, so callers classify it as they would Go's.
var ErrTimeout = context.DeadlineExceeded

// errCut marks an exchange its caller gave up on; Do replaces it with the
// context's reason.
var errCut = errors.New("cut by the caller")

// Engine is a set of event loops.
type Engine struct {
	loops []*loop
	next  atomic.Uint32
	// inflight counts the exchanges between Do's start and return, in
	// all loops: a loop spins only when it holds the only one.
	inflight atomic.Int64
	spin     atomic.Int64 // the spin window, in ns (SetSpin)
	polls    atomic.Int64 // non-blocking waits while spinning (for tests)
}

// DefaultSpin is the spin window of a new engine on a machine with more
// than one usable CPU (SpinDefault).
//
// Why spin: a loop that parks in the netpoller is woken by the kernel
// when a reply arrives, and on a VM whose idle CPUs halt that wake-up
// cost 20 µs per read in the lab (median; p90 45), against 4 µs
// spinning: v6lab's own time, inside every response time at one
// connection. Measured in docs/performance-history.md.
const DefaultSpin = 250 * time.Microsecond

// SpinDefault is the spin window an engine starts with: DefaultSpin, or
// none on one usable CPU, where the spinning client would take the CPU
// its server needs.
func SpinDefault() time.Duration {
	if runtime.GOMAXPROCS(0) > 1 {
		return DefaultSpin
	}
	return 0
}

// SetSpin sets how long a loop polls its sockets without blocking before
// it parks, when the engine has exactly one exchange in flight (one
// connection at a time: the load where the wake-up's share is the
// largest and a spinning CPU takes nothing from other exchanges). 0 never
// spins.
func (e *Engine) SetSpin(d time.Duration) { e.spin.Store(int64(max(d, 0))) }

// Spin returns the spin window (SetSpin).
func (e *Engine) Spin() time.Duration { return time.Duration(e.spin.Load()) }

var (
	defaultOnce   sync.Once
	defaultEngine *Engine
	defaultErr    error
)

// Default returns the process's engine, one loop per usable CPU, started on
// first use. Its loops idle at no cost when there is no work.
func Default() (*Engine, error) {
	defaultOnce.Do(func() { defaultEngine, defaultErr = New(runtime.GOMAXPROCS(0)) })
	return defaultEngine, defaultErr
}

// New starts an engine with n loops.
func New(n int) (*Engine, error) {
	e := &Engine{}
	e.SetSpin(SpinDefault())
	for range max(n, 1) {
		l, err := newLoop(e)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.loops = append(e.loops, l)
		go l.run()
	}
	return e, nil
}

// Close stops the loops; exchanges still running fail.
func (e *Engine) Close() {
	for _, l := range e.loops {
		l.stop()
	}
}

// Do runs one exchange and returns when it is over: completed, failed, or
// cut by ctx (a deadline is enforced within a few milliseconds).
func (e *Engine) Do(ctx context.Context, x *Exchange) Result {
	l := e.loops[int(e.next.Add(1))%len(e.loops)]
	c := &conn{x: x, req: x.Request, done: make(chan struct{}), ready: -1, closeFD: -1}
	if dl, ok := ctx.Deadline(); ok {
		c.deadline = dl
	}
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	if err := l.start(c); err != nil {
		return c.res
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		c.cancel.Store(true)
		l.poke()
		<-c.done
	}
	if c.closeFD >= 0 {
		rawClose(c.closeFD)
	}
	if errors.Is(c.res.Err, errCut) {
		c.res.Err = c.cut(ctx.Err()) // context.Canceled, or ErrTimeout
	}
	return c.res
}

// cut is the error of an exchange cut by its caller for reason: a lookup
// (or race) still waiting for its answers says how many queries it sent.
func (c *conn) cut(reason error) error {
	if c.res.Phase == "resolve" && c.sends.Started() {
		return c.sends.Unanswered(reason)
	}
	return reason
}

// conn is an exchange in flight. Until done is closed it belongs to its
// loop (after start has registered it).
type conn struct {
	x        *Exchange
	fd       int
	gen      uint32
	deadline time.Time
	cancel   atomic.Bool
	req      []byte // the request being sent
	sent     int
	up       bool      // this connection's handshake is over
	adopted  bool      // Exchange.Adopt was taken (reconnects dial anew)
	replyRx  time.Time // the receive stamp of the last read (zero if none)
	// lookup: the socket is the Lookup's, waiting for its answer. The
	// query (a Race's queries, a UDP exchange's request) goes again at
	// resendAt (zero: never): a UDP exchange's then resendWait later, a
	// Lookup's and a Race's as sends says.
	lookup     bool
	resendAt   time.Time
	resendWait time.Duration
	sends      resend.Sends
	connectAt  time.Time // the last connect call
	// ready is a socket made for the connection ahead of it (-1: none),
	// of the family ready6 says.
	ready  int
	ready6 bool
	// race: the socket is the Race's queries', and attempts are under
	// way on sockets of their own (nil once one has won). An attempt's
	// conn has its race's exchange as parent.
	race    *race
	parent  *conn
	attempt int            // an attempt's index
	to      netip.AddrPort // an attempt's address
	// stepping: c is in complete for its race's next step, not a reply.
	stepping bool
	res      Result
	done     chan struct{}
	// closeFD is the socket of an exchange that completed, for Do to
	// close (-1: none).
	closeFD int
	// watched: the socket is in the loop's epoll set; out: for
	// writability too (watch).
	watched, out bool
	// sus is the sustained run the exchange belongs to (Sustain; nil:
	// Do's, which waits on done), slot its place in it.
	sus  *sustained
	slot int
}

// race is an Exchange.Race in flight.
type race struct {
	answered [2]bool // by family (1: AAAA)
	attempts []*conn // under way
	started  int     // attempts started
	spare    [2]int  // TCP sockets made ahead, by family (-1: none)
	wake     time.Time
	// winner is the attempt that connected (at wonAt), to take over
	// after the batch.
	winner *conn
	wonAt  time.Time
	// due is when the next step was called for (an answer's receive
	// stamp, or the end of a wait): the client's turn runs from there.
	due time.Time
	// againCtx is the Race.Again calls' context, ended by stopAgain (nil:
	// none began).
	againCtx  context.Context
	stopAgain context.CancelFunc
}

// lateAnswer is a Race.Again answer, handed to the loop from its
// goroutine.
type lateAnswer struct {
	c    *conn
	rs   *race // the race it is for: stale when c's race is over
	ipv6 bool
	addr netip.Addr
	err  error
	at   time.Time
}

func family(ipv6 bool) int {
	if ipv6 {
		return 1
	}
	return 0
}

// scanEvery is how often a loop looks for exchanges past their deadline
// or cancelled.
const scanEvery = 5 * time.Millisecond

type loop struct {
	eng   *Engine
	epfd  int
	file  *os.File // the epoll fd as seen by Go's netpoller
	raw   syscall.RawConn
	wake  int // eventfd to interrupt the loop (cancel, stop)
	mu    sync.Mutex
	conns map[int]*conn
	gen   uint32
	quit  atomic.Bool
	idle  atomic.Bool // waiting with nothing in flight, no deadline set
	// started is when an exchange last started (Unix ns): work, from
	// which the spin window runs as from the loop's own events.
	started atomic.Int64
	buf     []byte
	oob     []byte
	// wakeAt is the earliest time a race asked to be stepped at (zero:
	// none): the loop's wait ends there.
	wakeAt time.Time
	// complete holds the exchanges whose reply completed in this batch
	// of events: their next request (or close) waits until every ready
	// socket of the batch has been read, so one exchange's sending and
	// closing (whose packets the kernel carries through the lab in this
	// thread) is not in another's end mark.
	complete []*conn
	// toClose are sockets done with in this batch (a Lookup's query
	// socket, a race's losers); a goroutine of their own closes them
	// (closing), so the resets' way through the lab is not in the loop's
	// thread. A completed exchange's own socket is closed by Do.
	toClose []int
	closing chan []int
	// late holds Race.Again answers for the loop to take (under mu).
	late []lateAnswer
	// added are sustained slots to start (under mu); ended the sustained
	// exchanges over in this batch, whose next exchange the loop starts
	// after it (Sustain).
	added []sustainSlot
	ended []*conn
	spare []*conn // ended's other buffer
}

func newLoop(eng *Engine) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("evloop: epoll_create1: %w", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("evloop: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, fmt.Errorf("evloop: epoll_ctl eventfd: %w", err)
	}
	// Non-blocking, so os.NewFile hands it to the netpoller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(wake)
		return nil, fmt.Errorf("evloop: %w", err)
	}
	f := os.NewFile(uintptr(epfd), "evloop-epoll")
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		unix.Close(wake)
		return nil, fmt.Errorf("evloop: %w", err)
	}
	l := &loop{eng: eng, epfd: epfd, file: f, raw: raw, wake: wake, conns: map[int]*conn{}, buf: make([]byte, 64<<10), oob: make([]byte, kstamp.OOBSize),
		closing: make(chan []int, 64)}
	go func() {
		for fds := range l.closing {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}
	}()
	return l, nil
}

// poke wakes the loop so it scans for cancelled exchanges at once.
func (l *loop) poke() {
	var one = [8]byte{1}
	unix.Write(l.wake, one[:])
}

func (l *loop) stop() {
	l.quit.Store(true)
	l.poke()
}

// start opens the socket and connects; the loop takes over from there. On
// an error the result is set and done is closed.
func (l *loop) start(c *conn) error {
	fail := func(phase string, err error) error {
		c.res.Phase, c.res.Err = phase, err
		l.deliver(c)
		return err
	}
	if _, more := c.x.Reply.(Continuer); more && c.x.UDP {
		if c.x.Adopt > 0 {
			unix.Close(c.x.Adopt)
		}
		return fail("connect", errors.New("evloop: a UDP exchange has one request (its Reply is a Continuer)"))
	}
	if c.x.Lookup != nil && (c.x.UDP || c.x.Adopt > 0) {
		if c.x.Adopt > 0 {
			unix.Close(c.x.Adopt)
		}
		return fail("resolve", errors.New("evloop: a Lookup goes only before a TCP connection the loop makes"))
	}
	if c.x.Race != nil && (c.x.Lookup != nil || c.x.UDP || c.x.Adopt > 0 || c.x.Source.IsValid()) {
		if c.x.Adopt > 0 {
			unix.Close(c.x.Adopt)
		}
		return fail("resolve", errors.New("evloop: a Race makes its own connection (no Lookup, Adopt, UDP or Source)"))
	}
	if l.quit.Load() {
		if c.x.Adopt > 0 {
			unix.Close(c.x.Adopt) // the loop owns it: nobody else will
		}
		return fail("connect", errors.New("evloop: engine closed"))
	}
	open := l.open
	switch {
	case c.x.Lookup != nil:
		open = l.openLookup
	case c.x.Race != nil:
		open = l.openRace
	}
	if phase, err := open(c); err != nil {
		return fail(phase, err)
	}
	l.register(c)
	l.started.Store(time.Now().UnixNano()) // work: the spin window begins
	if l.idle.Swap(false) {
		l.poke() // the loop waits without a deadline: have it watch this one
	}
	return nil
}

// open makes the socket, connects and tries to send; on an error nothing
// is left open.
func (l *loop) open(c *conn) (string, error) {
	x := c.x
	c.up = false
	if x.Adopt > 0 && !c.adopted {
		c.adopted = true
		return l.adopt(c)
	}
	fd := c.ready
	c.ready = -1
	if fd >= 0 && x.Remote.Addr().Is6() != c.ready6 {
		unix.Close(fd) // made for the other family
		fd = -1
	}
	if fd < 0 {
		var err error
		if fd, err = newSocket(x.UDP, x.Source, x.Remote.Addr().Is6()); err != nil {
			return "connect", err
		}
	}
	if x.UDP && x.FragSize {
		fragSize(fd, x.Remote.Addr().Is6())
	}
	if x.UDP && x.Resend > 0 {
		c.resendWait = x.Resend
		c.resendAt = time.Now().Add(x.Resend)
	}
	var zone uint32
	if x.Remote.Addr().Zone() != "" {
		to, err := sockaddr.Of(x.Remote)
		if err != nil {
			rawClose(fd)
			return "connect", err
		}
		zone = to.(*unix.SockaddrInet6).ZoneId
	}
	c.connectAt = time.Now()
	err := rawConnect(fd, x.Remote, zone)
	if err != nil && err != unix.EINPROGRESS {
		rawClose(fd)
		return "connect", os.NewSyscallError("connect", err)
	}
	c.fd = fd
	// Send at once: on loopback (and any fast path) the handshake is over
	// by the time connect returns, even when it said EINPROGRESS, and the
	// loop then wakes once, for the reply. A socket still connecting says
	// EAGAIN and the loop sends when it is writable.
	if phase, err := l.sendEarly(c); err != nil {
		unix.Close(fd)
		return phase, err
	}
	return "", nil
}

// newSocket makes a socket (UDP, or TCP) of one family, with the kernel's
// stamps, bound to source when valid, ready to connect.
func newSocket(udp bool, source netip.Addr, ipv6 bool) (int, error) {
	family := unix.AF_INET
	if ipv6 {
		family = unix.AF_INET6
	}
	typ, proto := unix.SOCK_STREAM, unix.IPPROTO_TCP
	if udp {
		typ, proto = unix.SOCK_DGRAM, unix.IPPROTO_UDP
	}
	fd, err := rawSocket(family, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	kstamp.Hold()
	if udp {
		_ = rawSetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, kstamp.Flags) // the request's transmit stamp too (Result.FirstTx)
	} else {
		// Closing resets the connection: no TIME_WAIT is left behind (it
		// is closed only after the reply is complete, so nothing measured
		// is cut).
		if err := rawSetLinger0(fd); err != nil {
			rawClose(fd)
			return -1, os.NewSyscallError("setsockopt", err)
		}
		_ = rawSetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, kstamp.RxFlags) // the receive stamps of the reply (Result.LastRx)
	}
	if err := sockaddr.PinAndBind(fd, source, ipv6); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// ask makes a UDP socket connected to a DNS server, with the stamps on
// (the first query's transmit stamp, the answers' receive stamps), and
// sends the queries in order; on an error nothing is left open.
func ask(server netip.AddrPort, source netip.Addr, queries ...[]byte) (int, error) {
	fd, err := newSocket(true, source, server.Addr().Is6())
	if err != nil {
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
	for _, q := range queries {
		if _, err := unix.Write(fd, q); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("send query: %w", os.NewSyscallError("write", err))
		}
	}
	return fd, nil
}

// openLookup makes the Lookup's UDP socket and sends its query; on an
// error nothing is left open.
func (l *loop) openLookup(c *conn) (string, error) {
	lk := c.x.Lookup
	if lk.Start != nil {
		lk.Start()
	}
	fd, err := ask(lk.Server, lk.Source, lk.Query)
	if err != nil {
		return "resolve", err
	}
	c.fd, c.lookup = fd, true
	c.res.LookupLocal = localAddr(fd)
	// The connection's socket is made while the answer is on its way, so
	// only the connect call is left for after it.
	if ready, err := newSocket(c.x.UDP, c.x.Source, lk.IPv6); err == nil {
		c.ready, c.ready6 = ready, lk.IPv6
	}
	c.sends.Start(lk.Stub, time.Now())
	c.resendAt = c.sends.Due
	return "", nil
}

// answer takes a datagram read on the Lookup's socket (in l.buf, its
// control messages in l.oob): it says whether the socket is done with,
// the answer found (the exchange then joins the batch's completed ones, to
// connect after it) or the exchange failed.
func (l *loop) answer(c *conn, n, oobn int, read time.Time) bool {
	addr, done, err := c.x.Lookup.Answer(l.buf[:n])
	switch {
	case err != nil:
		l.finish(c, "resolve", err)
		return true
	case !done:
		return false
	}
	c.res.Resolved, c.res.AnswerRx = read, kstamp.Parse(l.oob[:oobn])
	c.x.Remote = netip.AddrPortFrom(addr, c.x.Remote.Port())
	l.complete = append(l.complete, c)
	return true
}

// connectAfterLookup closes the Lookup's socket and makes the exchange's
// connection to the address it answered.
func (l *loop) connectAfterLookup(c *conn) {
	if !l.unregister(c) {
		return
	}
	query := c.fd
	// Closed after the batch, off the loop, as completed exchanges' are:
	// nothing but the connect call stands between the answer and the SYN.
	l.toClose = append(l.toClose, query)
	c.lookup, c.resendAt = false, time.Time{}
	phase, err := l.open(c)
	c.res.FirstTx = kstamp.Sent(query, l.oob) // the first sending's: long queued by now
	if err != nil {
		c.res.Phase, c.res.Err = phase, err
		l.deliver(c)
		return
	}
	if !c.res.AnswerRx.IsZero() && c.connectAt.After(c.res.AnswerRx) {
		c.res.ClientTurns += c.connectAt.Sub(c.res.AnswerRx)
	}
	l.register(c)
}

// adopt takes the caller's connected socket as c's connection and tries
// to send; on an error it closes it.
func (l *loop) adopt(c *conn) (string, error) {
	fd := c.x.Adopt
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return "connect", os.NewSyscallError("fcntl", err)
	}
	if err := unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0}); err != nil {
		unix.Close(fd)
		return "connect", os.NewSyscallError("setsockopt", err)
	}
	_ = kstamp.EnableRx(fd)
	c.fd = fd
	if phase, err := l.sendEarly(c); err != nil {
		unix.Close(fd)
		return phase, err
	}
	return "", nil
}

// register hands the open connection to the loop. Registered and added
// under the lock, so no scan can close the fd in between.
func (l *loop) register(c *conn) {
	if err := l.watch(c, unix.EPOLL_CTL_ADD); err != nil {
		c.res.Phase, c.res.Err = "connect", err
		unix.Close(c.fd)
		if c.ready >= 0 {
			unix.Close(c.ready)
			c.ready = -1
		}
		l.deliver(c)
	}
}

// watch puts c's socket in the loop's set (op: EPOLL_CTL_ADD, or _MOD for
// a socket there already under another conn); on an error c is not in it.
func (l *loop) watch(c *conn, op int) error {
	fd := c.fd
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	c.gen = l.gen
	l.conns[fd] = c
	// Writability only while it matters: a connection still connecting,
	// or a request not all sent. A socket whose request went out at once
	// (sendEarly: on loopback, always) would otherwise wake the loop for
	// nothing, and a read that finds nothing, per connection.
	c.out = !c.lookup && c.race == nil && (!c.up || c.sent < len(c.req))
	events := uint32(unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET)
	if c.out {
		events |= unix.EPOLLOUT
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(fd), Pad: int32(c.gen)}
	if err := rawEpollCtl(l.epfd, op, fd, &ev); err != nil {
		delete(l.conns, fd)
		return os.NewSyscallError("epoll_ctl", err)
	}
	c.watched = true
	return nil
}

// wantOut has the loop told when c's socket is writable again (a request
// not all sent).
func (l *loop) wantOut(c *conn) error {
	if !c.watched || c.out {
		return nil
	}
	c.out = true
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(c.fd), Pad: int32(c.gen)}
	return os.NewSyscallError("epoll_ctl", rawEpollCtl(l.epfd, unix.EPOLL_CTL_MOD, c.fd, &ev))
}

// sendEarly tries the request's first write from the caller's goroutine;
// on failure it says in which phase.
func (l *loop) sendEarly(c *conn) (string, error) {
	if len(c.req) == 0 {
		return "", nil // nothing to tell connected from connecting: the loop waits
	}
	// The handshake was over when the write began, if it is accepted: the
	// mark is taken before it, as the write may carry the request through
	// the lab and the reply may be stamped in before it returns.
	at := time.Now()
	n, err := rawWrite(c.fd, c.req)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return "", nil // still connecting: the loop takes over
	case err != nil:
		// A refused or unreachable connect surfaces here.
		return "connect", os.NewSyscallError("connect", err)
	}
	connected(c, at)
	c.sent = n
	c.res.BytesOut += int64(n)
	if err := l.send(c); err != nil {
		return "io", err
	}
	addressed(c)
	return "", nil
}

// connected records the end of the handshake and the address it got (of
// the exchange's first connection).
func connected(c *conn, at time.Time) {
	c.up = true
	if c.res.Connected.IsZero() {
		c.res.Connected = at
	}
}

// addressed records the first connection's local address, and its SYN's
// stamp when asked (Exchange.Cookie): called once the request is on its
// way, so that this work is not between the handshake and the request
// (in the wire time).
func addressed(c *conn) {
	if c.res.Local.IsValid() || !c.up {
		return
	}
	c.res.Local = localAddr(c.fd)
	if c.x.Cookie && !c.x.UDP {
		if s := synstamp.Current(); s != nil {
			st, _ := s.Find(c.res.Local, c.x.Remote) // from memory: no system call
			c.res.SYN = st.SYN
		}
	}
}

// send writes what is left of the request; EAGAIN leaves the rest for
// when the socket is writable again.
func (l *loop) send(c *conn) error {
	for c.sent < len(c.req) {
		n, err := rawWrite(c.fd, c.req[c.sent:])
		if err == unix.EAGAIN {
			return l.wantOut(c)
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("send request: %w", os.NewSyscallError("write", err))
		}
		c.sent += n
		c.res.BytesOut += int64(n)
	}
	return nil
}

// finish closes the connection and hands the result back.
func (l *loop) finish(c *conn, phase string, err error) {
	if c.parent != nil || !l.unregister(c) {
		return // an attempt (its race's exchange finishes), or finished already
	}
	l.endRace(c)
	if err != nil || c.x.TCPInfo {
		c.readTCP()
	}
	unix.Close(c.fd)
	if c.ready >= 0 {
		unix.Close(c.ready)
		c.ready = -1
	}
	if err != nil {
		c.res.Phase, c.res.Err = phase, err
	}
	l.deliver(c)
}

// checkOrder marks an exchange Reordered when its connection received a
// segment out of order: a segment after a lost one came first and left
// its early stamp on a reply, so a turn from it would hold the
// retransmission's wait, the network's time, and the wire's end (LastRx)
// would be short of it. Asked when the exchange counted turns, or when its
// last read returned late after its stamp (tcpinfo.LateRead). The
// kernel's count is the connection's whole life's, so one question at the
// end answers for every turn (a question a turn cost a page's four
// objects four system calls); a reorder in the last reply, after the last
// turn, unsets the turns too: unset rather than wrong.
func (c *conn) checkOrder() {
	late := !c.res.LastRx.IsZero() && c.res.LastRead.Sub(c.res.LastRx) > tcpinfo.LateRead
	if (c.res.ClientTurns == 0 && !late) || c.res.Reordered || c.x.UDP || c.lookup || c.race != nil {
		return
	}
	if c.res.TCP != nil {
		c.res.Reordered = c.res.TCP.OutOfOrder > 0
		return
	}
	if n, ok := tcpinfo.OutOfOrder(c.fd); ok && n > 0 {
		c.res.Reordered = true
	}
}

// readTCP keeps the TCP_INFO of c's connection in its result (nothing
// while its socket is a lookup's or a race's, or UDP).
func (c *conn) readTCP() {
	if c.x.UDP || c.lookup || c.race != nil {
		return
	}
	if ti, ok := tcpinfo.Read(c.fd); ok {
		c.res.TCP = &ti
	}
}

// unregister takes c's connection out of the loop's set; false when it
// was no longer there (finished already).
func (l *loop) unregister(c *conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns[c.fd] != c {
		return false
	}
	delete(l.conns, c.fd)
	return true
}

// completed hands back an exchange that ended well; its socket is closed
// after the batch, by the closing goroutine. Called in the loop only.
func (l *loop) completed(c *conn) {
	if !l.unregister(c) {
		return
	}
	if c.x.UDP { // read before the socket closes; it is long queued by now
		c.res.FirstTx = kstamp.Sent(c.fd, l.oob)
	}
	if c.x.TCPInfo {
		c.readTCP()
	}
	c.checkOrder()
	// Closed by the exchange's own goroutine (Do), which wakes now
	// anyway: not in the loop, whose thread would carry the reset
	// through the lab ahead of the batch's other exchanges, and with no
	// goroutine to wake for it.
	c.closeFD = c.fd
	l.deliver(c)
}

func (l *loop) run() {
	events := make([]unix.EpollEvent, 256)
	lastScan := time.Now()
	var deadline time.Time // of the epoll file, as last set
	var worked time.Time   // when a wait last brought events (zero: never)
	// The wait's results and its callback, made once (a closure made per
	// wait, and the variables it captures, were three allocations per
	// wake-up).
	var n int
	var werr error
	wait := func(uintptr) bool {
		n, werr = unix.EpollWait(l.epfd, events, 0)
		return n != 0 || (werr != nil && werr != unix.EINTR)
	}
	for {
		n, werr = 0, nil
		// Wait in Go's netpoller until the epoll set has events (or the
		// scan is due), then take them without blocking.
		idle, want := l.waitUntil(lastScan, &deadline)
		var err error
		if s := time.Unix(0, l.started.Load()); s.After(worked) {
			worked = s
		}
		if !worked.IsZero() && !idle {
			// Only within the spin window after the last wait that
			// brought events (a request or query sent, a connect begun):
			// a reply later than that is a slow one, which spinning
			// would not catch sooner. A scan in between (the
			// netpoller's deadline) does not end the window.
			n, werr = l.spinWait(events, worked, want)
		}
		if n == 0 {
			err = l.raw.Read(wait)
		}
		if l.quit.Load() {
			l.shutdown()
			return
		}
		if werr != nil && werr != unix.EINTR {
			l.failAll(os.NewSyscallError("epoll_wait", werr))
			continue
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			l.failAll(fmt.Errorf("evloop: %w", err))
			continue
		}
		if n > 0 {
			worked = time.Now()
		}
		l.batch(events[:n], &lastScan)
	}
}

// waitUntil sets the epoll file's deadline for the next wait, and says
// whether the loop is idle and the deadline it wants. With nothing in
// flight the loop sleeps without a deadline (start pokes it when work
// arrives); otherwise the deadline is the next scan's, set when it
// changes, not at every wake-up (a timer reset each time costs the loop).
func (l *loop) waitUntil(lastScan time.Time, deadline *time.Time) (idle bool, want time.Time) {
	l.mu.Lock()
	idle = len(l.conns) == 0 && len(l.added) == 0
	l.idle.Store(idle)
	l.mu.Unlock()
	want = lastScan.Add(scanEvery)
	if !l.wakeAt.IsZero() && l.wakeAt.Before(want) {
		want = l.wakeAt // a race's wait ends before the next scan
	}
	if idle {
		want = time.Time{}
	}
	if !want.Equal(*deadline) {
		l.file.SetReadDeadline(want)
		*deadline = want
	}
	return idle, want
}

// batch handles a wait's events, the exchanges they completed, the scan
// when due, the sustained runs' next exchanges and the sockets to close.
func (l *loop) batch(events []unix.EpollEvent, lastScan *time.Time) {
	for i := range events {
		l.handle(&events[i])
	}
	for len(l.complete) > 0 {
		done := l.complete
		l.complete = nil // read may add to it
		for _, c := range done {
			if l.next(c) {
				l.read(c)
			}
		}
		if l.complete == nil {
			l.complete = done[:0]
		}
	}
	if now := time.Now(); now.Sub(*lastScan) >= scanEvery || len(events) == 0 || (!l.wakeAt.IsZero() && !now.Before(l.wakeAt)) {
		*lastScan = now
		l.scan(now)
	}
	l.sustain()
	if len(l.toClose) > 0 {
		l.closing <- l.toClose
		l.toClose = nil
	}
}

// spinWait polls the epoll set without blocking while the engine's only
// exchange in flight is this loop's, until the spin window after worked
// (the loop's last events) ends, and not past until (the next scan or
// race step, zero: none). It returns the events, or 0 when the caller is
// to scan or park in the netpoller.
func (l *loop) spinWait(events []unix.EpollEvent, worked, until time.Time) (int, error) {
	spin := l.eng.Spin()
	if spin <= 0 || l.eng.inflight.Load() != 1 {
		return 0, nil
	}
	end := worked.Add(spin)
	if !until.IsZero() && until.Before(end) {
		end = until
	}
	if !time.Now().Before(end) {
		return 0, nil
	}
	for {
		l.eng.polls.Add(1)
		n, err := unix.EpollWait(l.epfd, events, 0)
		if n != 0 || (err != nil && err != unix.EINTR) {
			return n, err
		}
		if !time.Now().Before(end) || l.eng.inflight.Load() != 1 {
			return 0, nil
		}
	}
}

func (l *loop) handle(ev *unix.EpollEvent) {
	if ev.Fd < 0 { // the eventfd: a cancel, a stop or a late answer
		var b [8]byte
		unix.Read(l.wake, b[:])
		l.takeLate()
		l.scan(time.Now())
		return
	}
	l.mu.Lock()
	c := l.conns[int(ev.Fd)]
	l.mu.Unlock()
	if c == nil || c.gen != uint32(ev.Pad) {
		return // a connection closed since; its fd may be reused
	}
	if c.parent != nil {
		l.attemptEvent(c, ev)
		return
	}
	if c.lookup || c.race != nil {
		if ev.Events&(unix.EPOLLIN|unix.EPOLLERR) != 0 {
			l.read(c)
		}
		return
	}
	if !c.up {
		switch {
		case ev.Events&(unix.EPOLLERR|unix.EPOLLHUP) != 0:
			l.finish(c, "connect", handshakeError(c.fd))
			return
		case ev.Events&unix.EPOLLOUT == 0:
			return
		}
		connected(c, time.Now())
	}
	if ev.Events&unix.EPOLLOUT != 0 && c.sent < len(c.req) {
		if err := l.send(c); err != nil {
			l.finish(c, "io", err)
			return
		}
	}
	addressed(c)
	if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
		l.read(c)
	}
}

// handshakeError is why a connecting socket that reported an error or a
// hang-up failed.
func handshakeError(fd int) error {
	soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil {
		err = syscall.Errno(soerr)
		if soerr == 0 {
			err = errors.New("connection closed during the handshake")
		}
	}
	return os.NewSyscallError("connect", err)
}

// read takes what the socket holds (edge-triggered: until EAGAIN or the
// reply, or the Lookup's answer, is complete).
func (l *loop) read(c *conn) {
	for {
		n, oobn, err := rawRecvmsg(c.fd, l.buf, l.oob)
		switch {
		case err == unix.EAGAIN:
			return
		case err == unix.EINTR:
			continue
		case err != nil && c.lookup: // ECONNREFUSED: nothing listens at the server's port
			l.finish(c, "resolve", fmt.Errorf("read answer: %w", os.NewSyscallError("read", err)))
			return
		case err != nil && c.race != nil:
			l.raceUnanswered(c, fmt.Errorf("read answer: %w", os.NewSyscallError("read", err)))
			return
		case n == 0 && c.race != nil:
			continue
		case c.race != nil:
			l.raceAnswer(c, n, oobn)
			continue
		case err != nil:
			l.finish(c, "io", fmt.Errorf("read reply: %w", os.NewSyscallError("read", err)))
			return
		case n == 0 && (c.x.UDP || c.lookup):
			continue // an empty datagram is no reply (and no end of anything)
		case c.lookup:
			if l.answer(c, n, oobn, time.Now()) {
				return
			}
			continue
		}
		c.replyRx = time.Time{}
		if n > 0 {
			c.res.LastRead = time.Now()
			if c.res.FirstByte.IsZero() {
				c.res.FirstByte = c.res.LastRead
			}
			if at := kstamp.Parse(l.oob[:oobn]); !at.IsZero() {
				lag.Add(c.res.LastRead.Sub(at)) // the self-check's read lag
				c.res.LastRx, c.replyRx = at, at
				if c.res.FirstRx.IsZero() {
					c.res.FirstRx = at
				}
			}
			if c.x.UDP && c.x.FragSize {
				c.res.FragSize = parseFragSize(l.oob[:oobn])
			}
		}
		c.res.BytesIn += int64(n)
		done, ferr := c.x.Reply.Feed(l.buf[:n], n == 0)
		if ferr != nil {
			l.finish(c, "reply", ferr)
			return
		}
		if done {
			l.complete = append(l.complete, c)
			return
		}
		if n == 0 {
			l.finish(c, "reply", errors.New("the reply ended early (the feeder wanted more after EOF)"))
			return
		}
	}
}

// next starts a Continuer's next request after a complete reply, or
// finishes the exchange. It says whether the caller keeps reading this
// connection.
func (l *loop) next(c *conn) bool {
	if c.stepping {
		c.stepping = false
		switch {
		case c.race == nil:
		case c.race.winner != nil:
			l.win(c, c.race.winner, c.race.wonAt, 0, true)
		default:
			l.step(c, time.Now())
		}
		return false
	}
	if c.lookup {
		l.connectAfterLookup(c)
		return false
	}
	cont, ok := c.x.Reply.(Continuer)
	if !ok {
		l.completed(c)
		return false
	}
	req, reconnect := cont.Next()
	if req == nil {
		l.completed(c)
		return false
	}
	c.req, c.sent = req, 0
	if reconnect {
		l.reopen(c)
		return false
	}
	turned := !c.replyRx.IsZero()
	if turned {
		c.res.ClientTurns += time.Since(c.replyRx)
	}
	if err := l.send(c); err != nil {
		l.finish(c, "io", err)
		return false
	}
	return true
}

// reopen replaces the exchange's connection with a new one to the same
// address, which sends c.req.
func (l *loop) reopen(c *conn) {
	if !l.unregister(c) {
		return
	}
	unix.Close(c.fd)
	c.res.Reconnects++
	if phase, err := l.open(c); err != nil {
		c.res.Phase, c.res.Err = phase, err
		l.deliver(c)
		return
	}
	l.register(c)
}

// scan ends exchanges that are past their deadline or cancelled, sends
// again the queries whose answer is late, and steps the races whose wait
// is over.
func (l *loop) scan(now time.Time) {
	var over, resend, due []*conn
	l.wakeAt = time.Time{}
	l.mu.Lock()
	for _, c := range l.conns {
		switch {
		case c.parent != nil: // an attempt: its race's exchange is in the set
		case c.cancel.Load() || (!c.deadline.IsZero() && now.After(c.deadline)) || (c.sus != nil && c.sus.ctx.Err() != nil):
			over = append(over, c)
		default:
			if (c.lookup || c.race != nil || c.x.UDP) && !c.resendAt.IsZero() && now.After(c.resendAt) {
				resend = append(resend, c)
			}
			if c.race != nil && !c.race.wake.IsZero() {
				if now.Before(c.race.wake) {
					if l.wakeAt.IsZero() || c.race.wake.Before(l.wakeAt) {
						l.wakeAt = c.race.wake
					}
				} else {
					due = append(due, c)
				}
			}
		}
	}
	l.mu.Unlock()
	for _, c := range resend {
		l.resend(c, now)
	}
	for _, c := range due {
		if c.race == nil {
			continue // ended since (a resend failed)
		}
		c.race.due, c.race.wake = c.race.wake, time.Time{}
		l.step(c, now)
	}
	for _, c := range over {
		phase := "io"
		switch {
		case c.lookup:
			phase = "resolve"
		case c.race != nil && c.race.started == 0:
			phase = "resolve"
		case !c.up:
			phase = "connect"
		}
		err := errCut
		if !c.cancel.Load() && (c.sus == nil || c.sus.ctx.Err() == nil) {
			err = ErrTimeout
			if phase == "resolve" && c.sends.Started() {
				err = c.sends.Unanswered(err) // how many queries went
			}
		}
		l.finish(c, phase, err)
	}
}

// resend sends again a query whose answer is late (a Lookup's, a Race's
// unanswered ones) or a UDP exchange's request; a Lookup or Race whose
// Stub has no attempts left ends its resending (exhausted).
func (l *loop) resend(c *conn, now time.Time) {
	var err error
	phase, n := "resolve", 1
	switch {
	case c.race != nil && c.race.answered[0] && c.race.answered[1]:
		c.resendAt = time.Time{} // nothing left to ask: the attempts go on
		return
	case (c.race != nil || c.lookup) && !c.sends.Again():
		l.exhausted(c, now)
		return
	case c.race != nil:
		n, err = l.resendRace(c)
	case c.lookup:
		if _, werr := unix.Write(c.fd, c.x.Lookup.Query); werr != nil {
			err = fmt.Errorf("send query again: %w", os.NewSyscallError("write", werr))
		}
	default: // a UDP exchange's request
		phase = "io"
		if n, werr := unix.Write(c.fd, c.x.Request); werr != nil {
			err = fmt.Errorf("send again: %w", os.NewSyscallError("write", werr))
		} else {
			c.res.BytesOut += int64(n)
			c.res.Resent++
		}
	}
	if err != nil {
		l.finish(c, phase, err)
		return
	}
	if c.race != nil || c.lookup {
		c.sends.Sent(now)
		c.res.Resent += n
		c.resendAt = c.sends.Due
		return
	}
	c.resendWait *= 2
	c.resendAt = now.Add(c.resendWait)
}

// exhausted ends a Lookup whose Stub's attempts are spent, unanswered;
// a Race's families still unanswered are told the race they have no
// address, and the race goes on with what it has.
func (l *loop) exhausted(c *conn, now time.Time) {
	c.resendAt = time.Time{}
	err := c.sends.Exhausted()
	if c.lookup {
		l.finish(c, "resolve", err)
		return
	}
	for _, v6 := range []bool{true, false} {
		if !c.race.answered[family(v6)] {
			c.race.answered[family(v6)] = true
			c.x.Race.Racer.Answer(v6, nil, err, now)
		}
	}
	c.race.due = now // the step it calls for is the loop's turn from here
	l.step(c, now)
}

func (l *loop) failAll(err error) {
	l.mu.Lock()
	all := make([]*conn, 0, len(l.conns))
	for _, c := range l.conns {
		if c.parent == nil { // an attempt ends with its race's exchange
			all = append(all, c)
		}
	}
	l.mu.Unlock()
	for _, c := range all {
		l.finish(c, "io", err)
	}
	time.Sleep(time.Millisecond) // no hot loop on a persistent error
}

func (l *loop) shutdown() {
	l.failAll(errors.New("evloop: engine closed"))
	l.endSustained()
	for _, fd := range l.toClose {
		unix.Close(fd)
	}
	close(l.closing)
	l.file.Close()
	unix.Close(l.wake)
}

// localAddr is the socket's own address. (unix.Getsockname would add a
// getsockopt(SO_PROTOCOL) per call to tell IPv4 sockets apart.)
func localAddr(fd int) netip.AddrPort {
	var rsa unix.RawSockaddrAny
	size := uint32(unsafe.Sizeof(rsa))
	if _, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&size))); e != 0 {
		return netip.AddrPort{}
	}
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(&rsa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), port(sa.Port))
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(&rsa))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), port(sa.Port))
	}
	return netip.AddrPort{}
}

// port reads a port stored in network byte order.
func port(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}

// fragSize asks the kernel to say, with each datagram it reassembled on
// UDP socket fd, the size of its largest fragment.
func fragSize(fd int, ipv6 bool) {
	if ipv6 {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVFRAGSIZE, 1)
		return
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVFRAGSIZE, 1)
}

// parseFragSize finds the largest fragment's size in a datagram's control
// messages (0: it came whole).
func parseFragSize(oob []byte) int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if len(m.Data) >= 4 && (m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_RECVFRAGSIZE ||
			m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_RECVFRAGSIZE) {
			return int(*(*int32)(unsafe.Pointer(&m.Data[0])))
		}
	}
	return 0
}
