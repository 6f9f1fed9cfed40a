package transport

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/path"
)

// grace is how long past its duration a test may run before the server
// ends it: enough to drain queues, short enough to bound a broken client.
const grace = 10 * time.Second

// Server answers transport tests on control listeners.
type Server struct {
	// Log, when set, gets a line per test.
	Log *slog.Logger
	// In, when set, runs the opening of each test's data socket (for a
	// server inside a network namespace: lab.Do); nil opens it here.
	In func(func() error) error
	// MaxTests bounds the control connections served at once (0:
	// DefaultMaxTests); the excess is refused with a reply saying so.
	MaxTests int
	// RequestTimeout bounds the time a client may take to send its
	// request (0: ctrlDeadline).
	RequestTimeout time.Duration
	wg             sync.WaitGroup
}

// DefaultMaxTests is how many tests a server runs at once unless told.
const DefaultMaxTests = 16

// ErrBusy is the reply to a test beyond the server's MaxTests.
var ErrBusy = errors.New("the server runs as many tests as it may at once")

func (s *Server) in(fn func() error) error {
	if s.In == nil {
		return fn()
	}
	return s.In(fn)
}

// Serve accepts control connections on ln until ctx ends or ln closes.
// Tests run one per control connection, several at once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	slots := make(chan struct{}, cmp.Or(s.MaxTests, DefaultMaxTests))
	for {
		c, err := ln.Accept()
		if err != nil {
			s.wg.Wait()
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		select {
		case slots <- struct{}{}:
		default:
			// Refused at once, without reading: a reply the client's
			// accept reads, and the reason in it.
			go func() {
				c.SetDeadline(time.Now().Add(time.Second))
				newCtrl(c).send(Accept{Magic: Magic, Error: fmt.Sprintf("%v (%d; serve transport --max-tests)", ErrBusy, cap(slots))})
				c.Close()
			}()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-slots }()
			defer c.Close()
			if err := s.handle(ctx, c); err != nil && s.Log != nil {
				s.Log.Info("transport test", "client", c.RemoteAddr().String(), "err", err)
			}
		}()
	}
}

func (s *Server) handle(ctx context.Context, c net.Conn) error {
	cc := newCtrl(c)
	cc.max = maxRequestLine
	c.SetDeadline(time.Now().Add(cmp.Or(s.RequestTimeout, ctrlDeadline)))
	var req Request
	if err := cc.recv(&req); err != nil {
		return err
	}
	if err := req.Check(); err != nil {
		cc.send(Accept{Magic: Magic, Error: err.Error()})
		return err
	}
	local := c.LocalAddr().(*net.TCPAddr).AddrPort()
	ip := local.Addr().Unmap()
	p := path.OfAddr(ip)
	cookie := randomCookie()
	deadline := time.Now().Add(req.length() + grace)
	tctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	switch req.Test {
	case "tcp":
		return s.tcp(tctx, cc, c, &req, p, ip, cookie)
	default:
		return s.udp(tctx, cc, c, &req, p, ip, cookie)
	}
}

func randomCookie() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:]) | 1
}

// Congestion reads the kernel's default TCP congestion control.
func Congestion() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// counter tracks bytes and the times of the first and last of them.
type counter struct {
	bytes       atomic.Int64
	first, last atomic.Int64 // unix ns
}

func (k *counter) add(n int) {
	now := time.Now().UnixNano()
	k.first.CompareAndSwap(0, now)
	k.last.Store(now)
	k.bytes.Add(int64(n))
}

// drain reads c to its end (or an error), counting every byte.
func (k *counter) drain(c net.Conn) {
	buf := make([]byte, 256<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			k.add(n)
		}
		if err != nil {
			return
		}
	}
}

func (k *counter) elapsed() time.Duration {
	if f := k.first.Load(); f != 0 {
		return time.Duration(k.last.Load() - f)
	}
	return 0
}

// tcp runs a TCP test: a data listener on the control connection's
// address, the client's streams accepted on it, then either the server
// sends (reverse) or it reads every stream and reports what arrived.
func (s *Server) tcp(ctx context.Context, cc *ctrl, c net.Conn, req *Request, p path.Path, ip netip.Addr, cookie uint64) error {
	ln, err := s.dataListener(ctx, req, p, ip)
	if err != nil {
		cc.send(Accept{Magic: Magic, Error: "data listener: " + err.Error()})
		return err
	}
	defer ln.Close()
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	if err := cc.send(Accept{Magic: Magic, Port: ln.Addr().(*net.TCPAddr).Port, Cookie: cookie, Congestion: Congestion()}); err != nil {
		return err
	}
	var k counter
	var wg sync.WaitGroup
	var streams connSet
	defer streams.closeAll()
	acceptStreams(ln, req, cookie, func(d net.Conn) {
		streams.add(d)
		if req.Reverse {
			return // sent on below, once all are here
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.drain(d)
		}()
	})
	ln.Close()
	if req.Reverse {
		return s.sendBack(ctx, cc, c, req, streams.conns)
	}
	go func() {
		<-ctx.Done() // past the test's bound: stop reading
		streams.closeAll()
	}()
	c.SetDeadline(time.Now().Add(req.length() + grace))
	var done Done
	if err := cc.recv(&done); err != nil {
		return err
	}
	wg.Wait() // every stream read to its end (or the bound)
	return cc.send(Report{Magic: Magic, Received: k.bytes.Load(), Elapsed: k.elapsed()})
}

// dataListener opens the test's data listener on the control
// connection's address and family, in the server's namespace. The
// receive buffer is set on it so accepted sockets inherit it before the
// handshake sets the window scale; a window without a buffer sizes the
// buffer too, as iperf's -w does.
func (s *Server) dataListener(ctx context.Context, req *Request, p path.Path, ip netip.Addr) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) {
			if buf := cmp.Or(req.RcvBuf, req.Window); buf > 0 {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, buf)
			}
		})
		return serr
	}}
	var ln net.Listener
	err := s.in(func() error {
		var err error
		ln, err = lc.Listen(ctx, p.Network("tcp"), netip.AddrPortFrom(ip, 0).String())
		return err
	})
	return ln, err
}

// acceptStreams accepts up to req.Streams data connections that carry
// the test's cookie (until ctrlDeadline or the listener's close; the
// client reports what arrived) and hands each to got. A connection
// without the cookie is not this test's: it is closed.
func acceptStreams(ln net.Listener, req *Request, cookie uint64, got func(net.Conn)) {
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(ctrlDeadline))
	for accepted := 0; accepted < req.Streams; {
		d, err := ln.Accept()
		if err != nil {
			return
		}
		var b [8]byte
		d.SetReadDeadline(time.Now().Add(ctrlDeadline))
		if _, err := io.ReadFull(d, b[:]); err != nil || binary.BigEndian.Uint64(b[:]) != cookie {
			d.Close()
			continue
		}
		d.SetReadDeadline(time.Time{})
		if req.Window > 0 {
			if rc, err := d.(*net.TCPConn).SyscallConn(); err == nil {
				rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_WINDOW_CLAMP, req.Window) })
			}
		}
		accepted++
		got(d)
	}
}

// connSet is a test's data connections; the test's bound may close them
// from another goroutine while the test waits.
type connSet struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (s *connSet) add(c net.Conn) {
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

// sendBack runs a reverse test: the server sends on the streams the
// client opened (never anywhere else), then answers the client's Done
// with its sending figures.
func (s *Server) sendBack(ctx context.Context, cc *ctrl, c net.Conn, req *Request, conns []net.Conn) error {
	rep := Report{Magic: Magic}
	if len(conns) < req.Streams {
		rep.Error = fmt.Sprintf("%d of %d streams connected", len(conns), req.Streams)
	}
	var streams []*tcpStream
	for _, d := range conns {
		st := newStream(d.(*net.TCPConn))
		if req.SndBuf > 0 {
			unix.SetsockoptInt(st.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, req.SndBuf)
		}
		if req.Congestion != "" && rep.Error == "" {
			if err := unix.SetsockoptString(st.fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, req.Congestion); err != nil {
				rep.Error = fmt.Sprintf("congestion control %q on the server: %v", req.Congestion, err)
			}
		}
		streams = append(streams, st)
	}
	if rep.Error == "" {
		snd, err := send(ctx, streams, sendSpec{Bytes: req.Bytes, Duration: req.Duration, Omit: req.Omit, Interval: req.Interval})
		if err != nil {
			rep.Error = err.Error()
		}
		rep.Sender = &snd
	}
	for _, st := range streams {
		st.c.CloseWrite() // a refused test ends the client's reading too
	}
	c.SetDeadline(time.Now().Add(grace))
	var done Done // the client has read every stream to its end
	if err := cc.recv(&done); err != nil {
		return err
	}
	return cc.send(rep)
}

// udpHeader is the start of every test datagram: cookie, sequence number,
// and the sender's clock in unix nanoseconds.
const udpHeader = 24

func (s *Server) udp(ctx context.Context, cc *ctrl, c net.Conn, req *Request, p path.Path, ip netip.Addr, cookie uint64) error {
	var pc *net.UDPConn
	err := s.in(func() error {
		var err error
		pc, err = net.ListenUDP(p.Network("udp"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
		return err
	})
	if err != nil {
		cc.send(Accept{Magic: Magic, Error: "data socket: " + err.Error()})
		return err
	}
	defer pc.Close()
	if req.RcvBuf > 0 {
		pc.SetReadBuffer(req.RcvBuf)
	}
	rcvEff := sockBuf(pc, unix.SO_RCVBUF)
	kernelStamps(pc)
	go func() {
		<-ctx.Done()
		pc.Close()
	}()
	if err := cc.send(Accept{Magic: Magic, Port: pc.LocalAddr().(*net.UDPAddr).Port, Cookie: cookie}); err != nil {
		return err
	}
	if req.Reverse {
		return s.udpBack(ctx, cc, c, req, pc, cookie)
	}
	rx := newReceiver(cookie, time.Second, warmupDatagrams(req.Omit, req.Size, req.Rate))
	stop := make(chan struct{})
	recvDone := readDatagrams(pc, rx, stop, nil)
	c.SetDeadline(time.Now().Add(req.length() + grace))
	var done Done
	if err := cc.recv(&done); err != nil {
		return err
	}
	// Datagrams still in flight get a moment to land.
	time.Sleep(200 * time.Millisecond)
	stopReading(pc, stop, recvDone)
	st := rx.stats(done.Datagrams)
	st.RcvBuf = rcvEff
	return cc.send(Report{Magic: Magic, Received: rx.bytes, Elapsed: time.Duration(rx.last - rx.first), UDP: &st})
}

// helloWait bounds the wait for a reverse UDP client's hello (a variable
// for the tests).
var helloWait = ctrlDeadline

// udpBack runs a reverse UDP test: it waits for the client's hello from
// the control connection's own host, sends the datagrams there at the
// asked rate, reports what it sent, and waits for the client's Done.
func (s *Server) udpBack(ctx context.Context, cc *ctrl, c net.Conn, req *Request, pc *net.UDPConn, cookie uint64) error {
	client := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	rep := Report{Magic: Magic}
	var to netip.AddrPort
	buf := make([]byte, 64)
	pc.SetReadDeadline(time.Now().Add(helloWait))
	for {
		n, from, err := pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			rep.Error = "no hello from the client's data socket: " + err.Error()
			break
		}
		// Only the control connection's host is sent to, whatever port
		// its hello came from: never a third host.
		if isHello(buf[:n], cookie) && from.Addr().Unmap() == client {
			to = from
			break
		}
	}
	if rep.Error == "" {
		if req.SndBuf > 0 {
			pc.SetWriteBuffer(req.SndBuf)
		}
		sndEff := sockBuf(pc, unix.SO_SNDBUF)
		pd := pace(ctx, func(b []byte) error { _, err := pc.WriteToUDPAddrPort(b, to); return err }, cookie, req.Size, req.Rate, req.length(),
			warmupDatagrams(req.Omit, req.Size, req.Rate))
		rep.UDPSent = &UDPSent{Datagrams: pd.sent, SendErrors: pd.errs, Elapsed: pd.elapsed, Late: &pd.late, SndBuf: sndEff}
	}
	c.SetDeadline(time.Now().Add(grace))
	if err := cc.send(rep); err != nil {
		return err
	}
	var done Done
	return cc.recv(&done)
}

// kernelStamps asks for the kernel's receive time of each datagram: it,
// not the moment a goroutine ran, is what jitter and delay variation are
// computed from.
func kernelStamps(pc *net.UDPConn) {
	if rc, err := pc.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
	}
}

// readDatagrams feeds pc's datagrams to rx, with their kernel receive
// times, until stop is closed (stopReading) or pc is; first (when given)
// is closed at the first datagram of the test. Once stop is closed it
// takes what is still queued in the socket, every datagram that arrived
// before then, and stops: a reader that ran late on a loaded machine
// does not leave datagrams that arrived in time to be counted lost. The
// returned channel closes when it has stopped, after which rx may be
// read.
func readDatagrams(pc *net.UDPConn, rx *receiver, stop <-chan struct{}, first chan<- struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, MaxDatagram)
		oob := make([]byte, 128)
		for {
			n, oobn, _, _, err := pc.ReadMsgUDP(buf, oob)
			if err == nil {
				rx.datagram(buf[:n], kernelTime(oob[:oobn]))
				if first != nil && rx.received+rx.warmup > 0 {
					close(first)
					first = nil
				}
			}
			select {
			case <-stop:
				takeQueued(pc, rx, buf, oob, time.Now().UnixNano())
				return
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return done
}

// stopReading ends readDatagrams: it closes stop and wakes the reader
// from its wait, then waits until it has taken what was queued.
func stopReading(pc *net.UDPConn, stop chan<- struct{}, done <-chan struct{}) {
	close(stop)
	pc.SetReadDeadline(time.Now())
	<-done
}

// takeQueued feeds rx the datagrams queued in pc that arrived by until
// (unix ns), without waiting for more.
func takeQueued(pc *net.UDPConn, rx *receiver, buf, oob []byte, until int64) {
	rc, err := pc.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		for {
			n, oobn, _, _, err := unix.Recvmsg(int(fd), buf, oob, unix.MSG_DONTWAIT)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return
			}
			at := kernelTime(oob[:oobn])
			if at > until {
				return // arrived after the end: not the test's to count
			}
			rx.datagram(buf[:n], at)
		}
	})
}

// kernelTime reads SCM_TIMESTAMPNS from a datagram's control data, in unix
// nanoseconds; without it, now.
func kernelTime(oob []byte) int64 {
	if msgs, err := unix.ParseSocketControlMessage(oob); err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				return int64(binary.NativeEndian.Uint64(m.Data[0:8]))*1e9 + int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			}
		}
	}
	return time.Now().UnixNano()
}

// receiver keeps a UDP test's receive-side figures.
type receiver struct {
	cookie       uint64
	bytes        int64
	received     int64
	dups, reord  int64
	highest      int64
	seen         []uint64 // ring of the last seenBits sequence numbers
	jitter       float64
	prevTransit  int64
	haveTransit  bool
	minT, maxT   int64
	first, last  int64
	interval     int64
	perInterval  []int64
	foreign      int64
	maxIntervals int
	// Datagrams numbered below omitBelow were sent in the warm-up: they
	// are counted in warmup and left out of every figure.
	omitBelow, warmup int64
}

const seenBits = 1 << 22

func newReceiver(cookie uint64, interval time.Duration, omitBelow int64) *receiver {
	return &receiver{cookie: cookie, highest: -1, seen: make([]uint64, seenBits/64), interval: int64(interval),
		maxIntervals: int(MaxDuration/interval) + 60, omitBelow: omitBelow}
}

func (r *receiver) bit(seq int64) (word int, mask uint64) {
	i := seq % seenBits
	return int(i / 64), 1 << (i % 64)
}

// datagram accounts one datagram received at now (unix ns).
func (r *receiver) datagram(b []byte, now int64) {
	if len(b) < udpHeader || binary.BigEndian.Uint64(b[0:8]) != r.cookie {
		r.foreign++
		return
	}
	seq := int64(binary.BigEndian.Uint64(b[8:16]) & (1<<62 - 1))
	sent := int64(binary.BigEndian.Uint64(b[16:24]))
	if seq < r.omitBelow {
		r.warmup++
		return
	}
	switch {
	case seq > r.highest:
		// Forget the ring positions the new highest passes over.
		from := r.highest + 1
		if seq-from >= seenBits {
			clear(r.seen)
		} else {
			for q := from; q < seq; q++ {
				w, m := r.bit(q)
				r.seen[w] &^= m
			}
		}
		w, m := r.bit(seq)
		r.seen[w] |= m
		r.highest = seq
	case r.highest-seq >= seenBits:
		r.reord++ // too old to tell a duplicate from a late one
	default:
		w, m := r.bit(seq)
		if r.seen[w]&m != 0 {
			r.dups++
			return
		}
		r.seen[w] |= m
		r.reord++
	}
	r.received++
	r.bytes += int64(len(b))
	if r.first == 0 {
		r.first = now
	}
	r.last = now
	if i := int((now - r.first) / r.interval); i < r.maxIntervals {
		for len(r.perInterval) <= i {
			r.perInterval = append(r.perInterval, 0)
		}
		r.perInterval[i] += int64(len(b))
	}
	// RFC 3550, 6.4.1: J += (|D(i-1,i)| - J) / 16, in arrival order.
	transit := now - sent
	if r.haveTransit {
		d := transit - r.prevTransit
		if d < 0 {
			d = -d
		}
		r.jitter += (float64(d) - r.jitter) / 16
		r.minT, r.maxT = min(r.minT, transit), max(r.maxT, transit)
	} else {
		r.minT, r.maxT = transit, transit
	}
	r.prevTransit, r.haveTransit = transit, true
}

// stats are the figures once the sender said it sent `sent` datagrams,
// the warm-up's included.
func (r *receiver) stats(sent int64) UDPStats {
	st := UDPStats{Received: r.received, Duplicates: r.dups, Reordered: r.reord, HighestSeq: r.highest,
		JitterNS: r.jitter, DelayVarNS: r.maxT - r.minT, Intervals: r.perInterval, IntervalNS: r.interval, Omitted: r.warmup, LastNS: r.last - r.first}
	expected := max(sent, r.highest+1) - r.omitBelow
	st.Lost = max(expected-r.received, 0)
	return st
}

// ListenAndServe runs a server on every address, one port for all of
// them, until ctx ends.
func ListenAndServe(ctx context.Context, addrs []netip.Addr, port int, log *slog.Logger) (*Running, error) {
	return ListenAndServeIn(ctx, nil, addrs, port, log)
}

// ListenAndServeIn is ListenAndServe with every socket opened through in
// (see Server.In), for a server inside a network namespace.
func ListenAndServeIn(ctx context.Context, in func(func() error) error, addrs []netip.Addr, port int, log *slog.Logger) (*Running, error) {
	return (&Server{Log: log, In: in}).ListenAndServe(ctx, addrs, port)
}

// ListenAndServe runs s on every address, one port for all of them (0:
// one chosen), until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context, addrs []netip.Addr, port int) (*Running, error) {
	var lns []net.Listener
	var got int
	err := s.in(func() error {
		var err error
		lns, got, err = path.ListenSamePort(ctx, addrs, port)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("transport: %w", err)
	}
	r := &Running{Port: got, done: make(chan struct{})}
	ctx, r.cancel = context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Serve(ctx, ln)
		}()
	}
	go func() {
		wg.Wait()
		close(r.done)
	}()
	return r, nil
}

// Running is a server started by ListenAndServe.
type Running struct {
	Port   int
	cancel context.CancelFunc
	done   chan struct{}
}

// Close stops the server and waits for its tests to end.
func (r *Running) Close() {
	r.cancel()
	<-r.done
}
