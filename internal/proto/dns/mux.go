package dns

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	mdns "github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/kstamp"
	"v6lab/internal/sock/lag"
	"v6lab/internal/sock/path"
)

// Modes of the DNS client.
const (
	// ModeStub sends each query on a socket of its own, as a stub resolver
	// (glibc's) does: what MITRE's transactions include.
	ModeStub = "stub"
	// ModeLoad keeps a few long-lived UDP sockets per path with many
	// queries in flight on each, replies matched to queries by ID, as
	// dnsperf does: a load generator, every query still timed.
	ModeLoad = "load"
)

// LoadSockets is how many sockets a load-mode client keeps per path.
const LoadSockets = 4

// ErrStray is the reason a reply that matches no query in flight is
// dropped (late after its query timed out, or not an answer to us).
var ErrStray = errors.New("a reply matching no query in flight")

// recvBatch is how many datagrams one recvmmsg takes at most.
const recvBatch = 64

// scanEvery is how often a socket's loop looks for sustained queries past
// their timeout, or cut by their context.
const scanEvery = 10 * time.Millisecond

// mux carries the queries of one client over LoadSockets connected UDP
// sockets of its path. Each socket has a loop of its own (a goroutine)
// that reads every datagram waiting with one recvmmsg, takes the read's
// time as the end of each query it answers (and the kernel's receive
// stamps, for the self-check's lag), and hands each reply to its query:
// a Do's goroutine, or, for the users of a sustained run (Sustain), the
// loop itself records the sample and sends the user's next query at once,
// so a query costs no goroutine hand-off, timer or channel
// (docs/performance-history.md).
type mux struct {
	socks  []*muxSock
	Strays atomic.Int64 // replies that matched no query in flight

	c    *Client
	q    *mdns.Msg // the cell's query; wire is it packed, ID patched per send
	wire []byte
	// good is the last reply that completed a query, less its ID, and
	// its marker: a reply with the same bytes completes its query the
	// same way without being decoded again (the server gives every query
	// of a cell the same answer).
	good atomic.Pointer[verdict]
}

type verdict struct {
	body   []byte
	marker string
}

type muxSock struct {
	m             *mux
	conn          *net.UDPConn
	rc            syscall.RawConn
	local, remote string

	mu      sync.Mutex
	lastID  uint16
	pending map[uint16]*query
	err     error // set when the loop stopped
	// added are sustained users (first queries, or back from a TCP
	// retry) for the loop to send; kicked says the loop has been woken
	// for them.
	added []*query
	// runs are the sustained runs with users on this socket.
	runs []*sustain

	// The loop's own (no lock).
	hdrs     []unix.Mmsghdr
	iovs     []unix.Iovec
	bufs     []byte // recvBatch buffers of maxUDP bytes
	oobs     []byte // recvBatch control buffers
	sendBuf  []byte
	again    []*query // sustained users whose next query goes after the batch
	inflight []*query // sustained queries sent and not answered
	deadline time.Time
	lastScan time.Time
}

const maxUDP = 4096 // a reply larger than this is truncated by the read (EDNS0 answers are smaller here)

// query is one query in flight: a Do's (ch) or a sustained user's (run).
type query struct {
	id    uint16
	user  int
	start time.Time
	ch    chan arrival // Do's
	// run is the sustained run of a user that keeps one query in
	// flight until its end; deadline is its current query's timeout.
	run      *sustain
	deadline time.Time
	// flying: its query is in flight; listed: it is in its socket's
	// inflight list (until the scan after it landed).
	flying, listed bool
}

// arrival is one reply as the loop got it.
type arrival struct {
	msg []byte
	at  time.Time
}

// sustain is one sustained run of users (Client.Sustain).
type sustain struct {
	ctx     context.Context
	end     time.Time
	timeout time.Duration
	emit    func(result.Sample)
	left    atomic.Int64 // users still running
	started atomic.Int64
	done    chan struct{}
}

func (r *sustain) userDone() {
	if r.left.Add(-1) == 0 {
		close(r.done)
	}
}

func openMux(ctx context.Context, c *Client, d path.Dialer) (*mux, error) {
	m := &mux{c: c}
	m.q = new(mdns.Msg)
	m.q.SetQuestion(mdns.Fqdn(c.Name), c.qtype())
	m.q.RecursionDesired = true
	if c.EDNS > 0 {
		m.q.SetEdns0(c.EDNS, false)
	}
	var err error
	if m.wire, err = m.q.Pack(); err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	for range LoadSockets {
		nc, err := d.Dial(ctx, "udp", c.Server)
		if err != nil {
			m.Close()
			return nil, err
		}
		conn := nc.(*net.UDPConn)
		rc, err := conn.SyscallConn()
		if err != nil {
			conn.Close()
			m.Close()
			return nil, err
		}
		// Receive stamps: the self-check's lag, from a reply's arrival
		// to the read that took it (no transmit stamps: their error
		// queue would cost a read per query).
		_ = rc.Control(func(fd uintptr) { _ = kstamp.EnableRx(int(fd)) })
		s := &muxSock{m: m, conn: conn, rc: rc, local: conn.LocalAddr().String(), remote: conn.RemoteAddr().String(),
			pending: map[uint16]*query{}, sendBuf: append([]byte(nil), m.wire...)}
		s.hdrs = make([]unix.Mmsghdr, recvBatch)
		s.iovs = make([]unix.Iovec, recvBatch)
		s.bufs = make([]byte, recvBatch*maxUDP)
		s.oobs = make([]byte, recvBatch*kstamp.OOBSize)
		for i := range s.hdrs {
			s.iovs[i].Base = &s.bufs[i*maxUDP]
			s.iovs[i].SetLen(maxUDP)
			s.hdrs[i].Hdr.Iov = &s.iovs[i]
			s.hdrs[i].Hdr.SetIovlen(1)
			s.hdrs[i].Hdr.Control = &s.oobs[i*kstamp.OOBSize]
		}
		m.socks = append(m.socks, s)
		go s.loop()
	}
	return m, nil
}

// sock is the socket of a user.
func (m *mux) sock(user int) *muxSock { return m.socks[uint(user)%uint(len(m.socks))] }

// Close closes every socket; queries in flight fail.
func (m *mux) Close() error {
	for _, s := range m.socks {
		s.conn.Close()
	}
	return nil
}

// judge decides whether msg, the reply to query id, completes it, and
// its marker.
func (m *mux) judge(msg []byte, id uint16) (mk string, truncated bool, err error) {
	if g := m.good.Load(); g != nil && len(msg) == len(g.body)+2 && bytes.Equal(msg[2:], g.body) {
		return g.marker, false, nil
	}
	reply, err := Parse(msg)
	if err != nil {
		return "", false, err
	}
	if reply.Truncated {
		return "", true, nil
	}
	q := *m.q
	q.Id = id
	if err := check(&q, reply, m.c.Expect); err != nil {
		return "", false, err
	}
	mk = marker(reply, m.c.qtype())
	m.good.Store(&verdict{body: bytes.Clone(msg[2:]), marker: mk})
	return mk, false, nil
}

// register gives q a free ID on the socket (under s.mu).
func (s *muxSock) register(q *query) error {
	if s.err != nil {
		return s.err
	}
	if len(s.pending) >= 1<<16 {
		return fmt.Errorf("65,536 queries in flight on one socket")
	}
	for {
		s.lastID++
		if _, busy := s.pending[s.lastID]; !busy {
			break
		}
	}
	q.id = s.lastID
	s.pending[q.id] = q
	return nil
}

// write sends the query with ID id.
func (s *muxSock) write(b []byte, id uint16) error {
	binary.BigEndian.PutUint16(b[:2], id)
	var werr error
	err := s.rc.Write(func(fd uintptr) bool {
		for {
			_, werr = unix.Write(int(fd), b)
			if werr != unix.EINTR {
				return werr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return fmt.Errorf("send query: %w", os.NewSyscallError("write", err))
	}
	return nil
}

// send registers a Do's query with a free ID and sends it; the reply (or
// a closed channel when the socket failed) arrives on the returned
// channel. cancel forgets the query.
func (s *muxSock) send(q *query, wire []byte) (cancel func(), err error) {
	s.mu.Lock()
	err = s.register(q)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	cancel = func() {
		s.mu.Lock()
		if s.pending[q.id] == q {
			delete(s.pending, q.id)
		}
		s.mu.Unlock()
	}
	if err := s.write(wire, q.id); err != nil {
		cancel()
		return nil, err
	}
	return cancel, nil
}

// add hands sustained users to the loop, which sends their queries.
func (s *muxSock) add(qs []*query, r *sustain) error {
	s.mu.Lock()
	if s.err != nil {
		err := s.err
		s.mu.Unlock()
		return err
	}
	if r != nil {
		s.runs = append(s.runs, r)
	}
	s.added = append(s.added, qs...)
	s.mu.Unlock()
	s.kick()
	return nil
}

// kick wakes the loop from its wait (it then scans and takes what was
// added).
func (s *muxSock) kick() { s.conn.SetReadDeadline(time.Unix(1, 0)) }

// recv reads every datagram waiting (up to recvBatch), waiting in Go's
// netpoller while there is none, until the read deadline.
func (s *muxSock) recv() (int, error) {
	var n int
	var errno syscall.Errno
	err := s.rc.Read(func(fd uintptr) bool {
		for i := range s.hdrs {
			s.hdrs[i].Hdr.SetControllen(kstamp.OOBSize)
			s.hdrs[i].Hdr.Flags = 0
			s.hdrs[i].Len = 0
		}
		for {
			r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.hdrs[0])), uintptr(len(s.hdrs)), unix.MSG_DONTWAIT, 0, 0)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			}
			n, errno = int(r), e
			return true
		}
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", errno)
	}
	return n, nil
}

// got is a datagram of a batch matched to its query.
type got struct {
	q *query
	i int // its index in the batch
}

func (s *muxSock) loop() {
	var matched []got
	s.lastScan = time.Now()
	for {
		s.setDeadline()
		s.mu.Lock()
		added := s.added
		s.added = nil
		s.mu.Unlock()
		if len(added) > 0 {
			s.again = append(s.again, added...)
			s.sendAgain()
			continue
		}
		n, err := s.recv()
		read := time.Now()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				s.deadline = time.Unix(1, 0) // a kick may have set it: set it anew
				s.scan(read)
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				err = errors.New("the client closed")
			}
			s.stop(err)
			return
		}
		s.mu.Lock()
		for i := 0; i < n; i++ {
			if s.hdrs[i].Len < 12 {
				s.m.Strays.Add(1)
				continue
			}
			id := binary.BigEndian.Uint16(s.bufs[i*maxUDP:])
			q, ok := s.pending[id]
			if !ok {
				s.m.Strays.Add(1)
				continue
			}
			delete(s.pending, id)
			matched = append(matched, got{q, i})
		}
		s.mu.Unlock()
		for _, g := range matched {
			msg := s.bufs[g.i*maxUDP : g.i*maxUDP+int(s.hdrs[g.i].Len)]
			oob := s.oobs[g.i*kstamp.OOBSize : g.i*kstamp.OOBSize+int(s.hdrs[g.i].Hdr.Controllen)]
			if rx := kstamp.Parse(oob); !rx.IsZero() {
				lag.Add(read.Sub(rx))
			}
			if g.q.run == nil {
				g.q.ch <- arrival{msg: bytes.Clone(msg), at: read}
				continue
			}
			s.answered(g.q, msg, read)
		}
		clear(matched)
		matched = matched[:0]
		if len(s.again) > 0 {
			s.sendAgain()
		}
		if read.Sub(s.lastScan) >= scanEvery {
			s.scan(read)
		}
	}
}

// setDeadline makes the loop's wait end at the next scan while it has
// sustained queries in flight, or never.
func (s *muxSock) setDeadline() {
	var want time.Time
	if len(s.inflight) > 0 || len(s.again) > 0 {
		want = s.lastScan.Add(scanEvery)
	}
	if !want.Equal(s.deadline) {
		s.conn.SetReadDeadline(want)
		s.deadline = want
	}
}

// sample is a sustained query's sample so far.
func (s *muxSock) sample(q *query) result.Sample {
	return result.Sample{Protocol: "dns", Path: string(s.m.c.Path), User: q.user, Start: q.start.UTC(),
		Local: s.local, Remote: s.remote, BytesOut: int64(len(s.m.wire))}
}

// answered records a sustained query's sample from its reply, read at
// read, and queues the user's next query.
func (s *muxSock) answered(q *query, msg []byte, read time.Time) {
	q.flying = false
	smp := s.sample(q)
	smp.FirstByteNS = int64(read.Sub(q.start))
	smp.TotalNS = smp.FirstByteNS
	smp.BytesIn = int64(len(msg))
	mk, truncated, err := s.m.judge(msg, q.id)
	switch {
	case truncated:
		// Over TCP, as a resolver would: off the loop, and back to it
		// for the user's next query.
		go s.overTCP(q, bytes.Clone(msg))
		return
	case err != nil:
		smp.ErrKind = load.Classify(q.run.ctx, "reply", err)
		smp.Err = "reply: " + err.Error()
	default:
		smp.Marker = mk
	}
	q.run.emit(smp)
	s.next(q, read)
}

// overTCP asks a truncated reply's query again over TCP and hands the
// user back to the loop.
func (s *muxSock) overTCP(q *query, udpReply []byte) {
	ctx, cancel := context.WithDeadline(q.run.ctx, q.start.Add(q.run.timeout))
	defer cancel()
	tr := load.BeginAt("dns", s.m.c.Path, q.start)
	tr.S.Local, tr.S.Remote = s.local, s.remote
	tr.S.BytesOut, tr.S.BytesIn = int64(len(s.m.wire)), int64(len(udpReply))
	wire := append([]byte(nil), s.m.wire...)
	binary.BigEndian.PutUint16(wire, q.id)
	reply, err := s.m.c.exchange(ctx, tr, wire, true, &answerWire{})
	qq := *s.m.q
	qq.Id = q.id
	if err == nil {
		err = check(&qq, reply, s.m.c.Expect)
	}
	var smp result.Sample
	if err != nil {
		smp = tr.Fail(ctx, "reply", err)
	} else {
		smp = tr.Done(marker(reply, s.m.c.qtype()))
	}
	smp.User = q.user
	q.run.emit(smp)
	if !s.more(q, time.Now()) {
		return
	}
	if s.add([]*query{q}, nil) != nil {
		q.run.userDone()
	}
}

// more says whether a sustained user goes on after a query that ended
// at now; when not, the user is done.
func (s *muxSock) more(q *query, now time.Time) bool {
	if q.run.ctx.Err() != nil || !now.Before(q.run.end) {
		q.run.userDone()
		return false
	}
	return true
}

// next queues a sustained user's next query, or ends the user.
func (s *muxSock) next(q *query, now time.Time) {
	if s.more(q, now) {
		s.again = append(s.again, q)
	}
}

// sendAgain registers the queued users' next queries, then sends each,
// its start taken just before its write.
func (s *muxSock) sendAgain() {
	s.mu.Lock()
	err := s.err
	for _, q := range s.again {
		if err == nil {
			err = s.register(q)
		}
	}
	s.mu.Unlock()
	for _, q := range s.again {
		if err != nil {
			s.failUser(q, "io", err)
			continue
		}
		q.start = time.Now()
		q.deadline = q.start.Add(q.run.timeout)
		q.run.started.Add(1)
		if werr := s.write(s.sendBuf, q.id); werr != nil {
			s.mu.Lock()
			delete(s.pending, q.id)
			s.mu.Unlock()
			smp := s.sample(q)
			smp.TotalNS = int64(time.Since(q.start))
			smp.ErrKind = load.Classify(q.run.ctx, "io", werr)
			smp.Err = "io: " + werr.Error()
			q.run.emit(smp)
			s.next(q, time.Now())
			continue
		}
		q.flying = true
		if !q.listed {
			q.listed = true
			s.inflight = append(s.inflight, q)
		}
	}
	clear(s.again)
	s.again = s.again[:0]
}

// failUser ends a sustained user whose query could not be sent.
func (s *muxSock) failUser(q *query, phase string, err error) {
	smp := s.sample(q)
	if smp.Start.IsZero() {
		smp.Start = time.Now().UTC()
	}
	smp.ErrKind = load.Classify(q.run.ctx, phase, err)
	smp.Err = phase + ": " + err.Error()
	q.run.emit(smp)
	q.run.userDone()
}

// scan fails the sustained queries past their timeout or whose run's
// context ended (a late reply is then a stray), and sends the users'
// next queries.
func (s *muxSock) scan(now time.Time) {
	s.lastScan = now
	keep := s.inflight[:0]
	var over []*query
	for _, q := range s.inflight {
		switch {
		case !q.flying:
			q.listed = false
		case q.run.ctx.Err() != nil || now.After(q.deadline):
			over = append(over, q)
		default:
			keep = append(keep, q)
		}
	}
	clear(s.inflight[len(keep):])
	s.inflight = keep
	if len(over) == 0 {
		return
	}
	s.mu.Lock()
	for _, q := range over {
		if s.pending[q.id] == q {
			delete(s.pending, q.id)
		}
	}
	s.mu.Unlock()
	for _, q := range over {
		q.flying, q.listed = false, false
		err := q.run.ctx.Err()
		if err == nil {
			err = context.DeadlineExceeded
		}
		smp := s.sample(q)
		smp.TotalNS = int64(now.Sub(q.start))
		smp.ErrKind = load.Classify(q.run.ctx, "io", err)
		if smp.ErrKind == "timeout" {
			err = fmt.Errorf("timed out after %v: %w", time.Duration(smp.TotalNS).Round(time.Millisecond), err)
		}
		smp.Err = "io: " + err.Error()
		q.run.emit(smp)
		s.next(q, now)
	}
	if len(s.again) > 0 {
		s.sendAgain()
	}
}

// stop ends the loop after a read error: every query in flight fails.
func (s *muxSock) stop(err error) {
	s.mu.Lock()
	s.err = err
	var ended []*query
	for id, q := range s.pending {
		delete(s.pending, id)
		if q.run == nil {
			close(q.ch)
		} else {
			ended = append(ended, q)
		}
	}
	ended = append(ended, s.added...)
	s.added = nil
	s.mu.Unlock()
	ended = append(ended, s.again...)
	s.again = nil
	for _, q := range ended {
		q.flying = false
		s.failUser(q, "io", err)
	}
	s.inflight = nil
}

// Sustain runs the users back to back for duration on the load engine's
// sockets (load.Sustainer): each user keeps one query in flight, and the
// socket's loop, which reads its reply, records its sample and sends its
// next query, until duration has passed; a query sent before the end may
// finish within timeout. It returns the number of queries sent.
func (c *Client) Sustain(ctx context.Context, us load.Users, duration, timeout time.Duration, emit func(result.Sample)) (int64, bool) {
	if c.Mode != ModeLoad || c.TCP {
		return 0, false // a goroutine per user (load.Sustained)
	}
	if err := c.openLoad(); err != nil {
		for i := range us.N {
			tr := load.Begin("dns", c.Path)
			s := tr.Fail(ctx, "connect", err)
			s.User = us.First + i
			emit(s)
		}
		return int64(us.N), true
	}
	if us.N == 0 {
		return 0, true
	}
	r := &sustain{ctx: ctx, end: time.Now().Add(duration), timeout: timeout, emit: emit, done: make(chan struct{})}
	r.left.Store(int64(us.N))
	bySock := make([][]*query, len(c.mux.socks))
	for i := range us.N {
		u := us.First + i
		k := uint(u) % uint(len(c.mux.socks))
		bySock[k] = append(bySock[k], &query{user: u, run: r})
	}
	for k, qs := range bySock {
		if len(qs) == 0 {
			continue
		}
		if err := c.mux.socks[k].add(qs, r); err != nil {
			for _, q := range qs {
				q.start = time.Now()
				c.mux.socks[k].failUser(q, "io", err)
			}
		}
	}
	stop := context.AfterFunc(ctx, func() {
		for _, s := range c.mux.socks {
			s.kick()
		}
	})
	<-r.done
	stop()
	return r.started.Load(), true
}

// openLoad opens the load engine's sockets once.
func (c *Client) openLoad() error {
	c.once.Do(func() {
		c.mux, c.muxErr = openMux(context.Background(), c, path.Dialer{Path: c.Path, Source: c.Source})
	})
	return c.muxErr
}

// doLoad sends one query on the user's long-lived socket and waits for
// the reply with its ID. The response time ends at the read that received
// the reply (in the socket's loop), not when this goroutine woke.
func (c *Client) doLoad(ctx context.Context, user int) result.Sample {
	tr := load.Begin("dns", c.Path)
	if err := c.openLoad(); err != nil {
		return tr.Fail(ctx, "connect", err)
	}
	s := c.mux.sock(user)
	wire := append([]byte(nil), c.mux.wire...)
	tr.S.Local, tr.S.Remote = s.local, s.remote
	q := &query{user: user, ch: make(chan arrival, 1)}
	cancel, err := s.send(q, wire)
	if err != nil {
		return tr.Fail(ctx, "io", err)
	}
	tr.S.BytesOut = int64(len(wire))
	select {
	case a, ok := <-q.ch:
		if !ok {
			return tr.Fail(ctx, "io", errors.New("the socket failed with the query in flight"))
		}
		tr.At(&tr.S.FirstByteNS, a.at)
		tr.S.BytesIn = int64(len(a.msg))
		mk, truncated, err := c.mux.judge(a.msg, q.id)
		if truncated {
			qq := *c.mux.q
			qq.Id = q.id
			var reply *mdns.Msg
			reply, err = c.exchange(ctx, tr, wire, true, &answerWire{}) // over TCP, as a resolver would
			if err == nil {
				err = check(&qq, reply, c.Expect)
			}
			if err == nil {
				return tr.Done(marker(reply, c.qtype()))
			}
		}
		if err != nil {
			return tr.Fail(ctx, "reply", err)
		}
		smp := tr.Done(mk)
		smp.TotalNS = smp.FirstByteNS
		return smp
	case <-ctx.Done():
		cancel()
		return tr.Fail(ctx, "io", ctx.Err())
	}
}
