package http

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/http2/hpack"
	"golang.org/x/sys/unix"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/sock/path"
)

// h2conn is an HTTP/2 client connection of v6lab's own, over a connection
// v6lab made pinned to the path (TLS with ALPN h2, or TCP for h2c). A
// transaction's requests are HEADERS frames of blocks encoded once per
// URI (requestBlock), written together; the transaction reads the frames
// itself (h2read.go) until its streams have all ended (or one failed):
// it decodes the replies' headers, takes their bodies, answers SETTINGS
// and PING and keeps both windows open. Between transactions nothing
// reads a kept connection: what the server sent meanwhile (a PING,
// SETTINGS, GOAWAY, its close) is read when it is next used (alive, run).
//
// A shared connection (option streams: several transactions at once on
// one connection, as h2load's -m) is read by a goroutine of its own
// instead (readLoop), from its share on: each transaction writes its
// requests and waits to be woken when its streams have ended; each
// stream's end is stamped when its frame is read, not when its
// transaction wakes.
type h2conn struct {
	conn net.Conn // what the frames go over: *tls.Conn, or the stamped TCP connection
	raw  net.Conn // the TCP connection

	wbuf []byte // the last write's buffer, for the next (h.mu)

	mu          sync.Mutex
	streams     []*h2stream // open
	nextID      uint32
	maxStreams  uint32  // the server's SETTINGS_MAX_CONCURRENT_STREAMS
	maxFrame    int     // the server's SETTINGS_MAX_FRAME_SIZE
	sendInitial int64   // the server's SETTINGS_INITIAL_WINDOW_SIZE
	sendWindow  int64   // the connection's (no DATA is sent: checked only)
	pending     []byte  // frames for the next write: the preface, requests, a SETTINGS ACK
	writing     bool    // a goroutine writes (open): it writes what is pending, in order
	txs         []*h2tx // the transactions under way (one, unless shared)
	shared      int     // transactions at once (share); 0: one, read by it
	retired     bool    // shared, then left by its slot: closed when its last transaction ends
	err         error   // the connection's end: no stream opens after it
	goaway      string  // the server's GOAWAY, when it sent one: no stream opens after it
	goneAs      string  // the GOAWAY with its last stream id, as errors say it
	sendErr     error   // a write failed: no more are made, what the server sent before it closed is read
	answered    int     // streams whose whole reply came
	quiet       bool    // on a kept connection, no byte of the transaction's replies came yet (newTx)

	rd     h2reader        // the reading transaction's
	sock   syscall.RawConn // the TCP socket, asked whether bytes wait (nil: none)
	peek   func(uintptr)   // peekSocket, made once a connection (a method value allocates)
	peeked bool            // what peek found: bytes, the server's close or an error wait
	sealed bool            // TLS: records read off the socket may wait in it, unseen by the socket's peek
	under  *syncStamp      // what TLS reads, which unsealed peeks through without the socket (nil: by deadlines)

	local, remote string // its ends, as a kept connection's samples name them (keptEnds)
	reuse         h2reuse
	ended         error // why a transaction's watch ended the connection (shared: said to the others)
}

// h2reuse is what each transaction of one runner uses again (a
// connection's, as only one at a time runs on it; on a shared connection
// each worker's): nothing of a transaction outlives it but what the trace
// took. A transaction a GOAWAY moved to a new connection keeps its streams
// in the first one's reuse.
type h2reuse struct {
	tx   h2tx
	page h2stream
	one  [1]*h2stream
	objs []h2stream
	ss   []*h2stream
	body []byte        // the page's body (the client parses it before the next transaction)
	wake chan struct{} // on a shared connection, the transaction's end (h2tx.wake)
	// abandoned: a failed transaction left streams open on a shared
	// connection, whose reader may still write them: not used again.
	abandoned bool
	// on is the connection the transaction runs on, once a GOAWAY moved
	// it (watch ends its reads and writes too).
	on atomic.Pointer[h2conn]
	// slot is the user's, when the runner is one of its shared
	// connection's workers (its requests go again on the user's next one).
	slot *sharedSlot
}

// pageStream is a transaction's page stream, s.
func (r *h2reuse) pageStream(s h2stream) []*h2stream {
	r.page = s
	r.one[0] = &r.page
	return r.one[:]
}

// objectStreams are n streams for a transaction's objects (to be filled).
func (r *h2reuse) objectStreams(n int) ([]h2stream, []*h2stream) {
	if cap(r.objs) < n {
		r.objs, r.ss = make([]h2stream, n), make([]*h2stream, n)
	}
	r.objs, r.ss = r.objs[:n], r.ss[:n]
	for i := range r.objs {
		r.ss[i] = &r.objs[i]
	}
	return r.objs, r.ss
}

// pageBody is where the page's body of n bytes (-1: not said) goes: the
// runner's buffer, which each of its transactions uses again.
func (r *h2reuse) pageBody(n int64) []byte {
	if n > 0 && n < MaxPageParse && int64(cap(r.body)) < n {
		r.body = make([]byte, 0, n)
	}
	return r.body[:0]
}

// h2stream is one request and its reply.
type h2stream struct {
	id     uint32
	uri    string
	block  []byte
	keep   bool           // keep the body, when HTML (the page)
	object bool           // an object of the page
	check  *content.Check // or check it

	status  int
	length  int64 // content-length, -1 without
	html    bool
	body    []byte
	n       int64
	maxBody int64
	recvWin int64 // what the server may still send
	unacked int64 // bytes taken since the last WINDOW_UPDATE
	sendWin int64
	headers bool      // the final headers came
	first   time.Time // when they came (the page's only)
	tx      *h2tx     // its transaction
}

// unsent makes s a request not yet sent, for a new connection.
func (s *h2stream) unsent() {
	s.id, s.status, s.length, s.html, s.n = 0, 0, -1, false, 0
	s.body, s.unacked, s.headers, s.first = s.body[:0], 0, false, time.Time{}
}

// h2tx is a transaction's streams on the connection.
type h2tx struct {
	queue []*h2stream // not yet requested
	left  int         // not yet ended
	err   error
	again *h2Again  // the streams the server did not process (GOAWAY, REFUSED_STREAM)
	last  time.Time // when the last stream ended
	woken bool
	r     *h2reuse      // what it uses again (the page's body buffer)
	wake  chan struct{} // shared connections: a token when it ends (a stale one is harmless: checked again)
}

// newH2Conn starts an HTTP/2 connection over conn (raw beneath it): its
// preface goes with the first requests.
func newH2Conn(conn, raw net.Conn) *h2conn {
	h := &h2conn{conn: conn, raw: raw, nextID: 1, maxStreams: 100, maxFrame: h2MaxFrame,
		sendInitial: 65535, sendWindow: 65535}
	h.pending = appendClientPreface(nil)
	br := readers.Get().(*bufio.Reader) // back in the pool when a read fails
	br.Reset(conn)
	h.rd = h2reader{br: br, recvWin: h2ConnWindow}
	h.rd.dec = hpack.NewDecoder(4096, h.rd.emit)
	h.rd.dec.SetMaxStringLength(MaxHeaderBytes)
	h.sock = socketOf(raw)
	h.peek = h.peekSocket
	if tc, ok := conn.(*tls.Conn); ok {
		h.sealed = true
		h.under, _ = tc.NetConn().(*syncStamp)
	}
	return h
}

// socketOf finds the TCP socket under raw (nil when it has none).
func socketOf(c net.Conn) syscall.RawConn {
	for {
		switch x := c.(type) {
		case *syncStamp:
			c = x.Conn
		case *path.StampedConn:
			c = x.Conn
		case *net.TCPConn:
			rc, err := x.SyscallConn()
			if err != nil {
				return nil
			}
			return rc
		default:
			return nil
		}
	}
}

// run requests every stream of ss (as many at once as the server allows,
// the rest as streams end) and waits until all have ended, or until one
// failed, the connection did, or ctx is done (watch ends its reads and
// writes then). It returns when the last stream ended. r is the runner's:
// the transaction's state, its streams', its buffers.
func (h *h2conn) run(ctx context.Context, ss []*h2stream, r *h2reuse) (time.Time, error) {
	tx := r.begin(ss)
	h.mu.Lock()
	if err := h.refuses(ss); err != nil {
		// Not processed: they may go on a new connection. (A shared
		// connection retired after its GOAWAY closes once its last
		// transaction has ended: perhaps after this one took it.)
		gone := h.goaway != "" && (h.err == nil || h.retired)
		if gone && h.err != nil {
			err = fmt.Errorf("HTTP/2: the server sent %s before %s was requested", h.goaway, ss[0].uri)
		}
		h.mu.Unlock()
		if gone {
			return time.Time{}, &h2Again{ss: ss, what: "GOAWAY", why: err.Error()}
		}
		return time.Time{}, err
	}
	h.txs = append(h.txs, tx)
	shared := h.shared > 0
	h.mu.Unlock()
	if ctx.Err() == nil { // else done before: watch may have missed h (moved to after)
		h.open()
		if shared {
			h.await(tx)
		} else {
			h.readFor(ctx, tx, len(ss))
		}
	}
	if err := ctx.Err(); err != nil {
		err = outOfTime(tx.unanswered(&h.mu), len(ss), context.Cause(ctx))
		if shared { // the others' connection: ended by watch if this one's streams were under way
			h.mu.Lock()
			h.endTx(tx, err)
			tx.err = err
			h.mu.Unlock()
		} else {
			h.fail(err)
		}
	}
	return h.leave(tx)
}

// outOfTime is the error of a transaction whose time ran out with left of
// its n streams unanswered.
func outOfTime(left, n int, cause error) error {
	if left == 0 {
		return fmt.Errorf("HTTP/2: its time ran out as its last reply ended: %w", cause)
	}
	return fmt.Errorf("HTTP/2: %d of %d streams unanswered: %w", left, n, cause)
}

// readFor reads the frames of transaction tx (of n streams) on a
// connection it alone uses, until its streams have ended.
func (h *h2conn) readFor(ctx context.Context, tx *h2tx, n int) {
	for h.reading(tx) {
		if err := h.readFrame(); err != nil {
			if ctx.Err() != nil {
				err = outOfTime(tx.left, n, context.Cause(ctx))
			}
			h.readFailed(err)
		}
	}
}

// await waits until transaction tx, on a shared connection, has ended
// (readLoop, or the connection's end, wakes it).
func (h *h2conn) await(tx *h2tx) {
	h.mu.Lock()
	for !tx.woken {
		h.mu.Unlock()
		<-tx.wake
		h.mu.Lock()
	}
	h.mu.Unlock()
}

// leave takes ended transaction tx off the connection: its result, the
// frames pending sent, and on a shared connection its streams still open
// (it failed) cancelled, its runner's reuse then left to them.
func (h *h2conn) leave(tx *h2tx) (time.Time, error) {
	h.mu.Lock()
	err, last := tx.err, tx.last
	if err == nil && tx.again != nil {
		err = tx.again
	}
	h.txs = slices.DeleteFunc(h.txs, func(t *h2tx) bool { return t == tx })
	if h.shared > 0 && err != nil {
		h.abandon(tx)
	}
	flush := err == nil && len(h.pending) > 0 && h.err == nil
	closing := h.retired && len(h.txs) == 0
	h.mu.Unlock()
	if flush {
		h.open() // a SETTINGS ACK that came with the replies
	}
	if closing {
		h.close()
	}
	return last, err
}

// abandon cancels the streams of tx still open on a shared connection
// (h.mu held): RST_STREAM (CANCEL) sent, the frames that still come for
// them read and dropped. Their runner's reuse may still be written by
// readLoop: the runner takes a new one (abandoned).
func (h *h2conn) abandon(tx *h2tx) {
	tx.queue = nil
	gone := false
	h.streams = slices.DeleteFunc(h.streams, func(s *h2stream) bool {
		if s.tx != tx {
			return false
		}
		if h.err == nil && h.sendErr == nil {
			h.pending = appendRSTStream(h.pending, s.id, errCancel)
		}
		gone = true
		return true
	})
	tx.r.abandoned = tx.r.abandoned || gone
}

// unanswered is tx's count of streams not yet ended, read under mu.
func (tx *h2tx) unanswered(mu *sync.Mutex) int {
	mu.Lock()
	defer mu.Unlock()
	return tx.left
}

// begin makes r's transaction the one of streams ss.
func (r *h2reuse) begin(ss []*h2stream) *h2tx {
	if r.wake == nil {
		r.wake = make(chan struct{}, 1)
	}
	tx := &r.tx
	*tx = h2tx{queue: ss, left: len(ss), r: r, wake: r.wake}
	for _, s := range ss {
		s.tx = tx
	}
	return tx
}

// share makes h, which carried its first transaction alone, a connection
// n transactions use at once: from now on a goroutine of its own reads
// it (readLoop), until it ends.
func (h *h2conn) share(n int) {
	if local, remote := h.conn.LocalAddr(), h.conn.RemoteAddr(); local != nil && remote != nil {
		h.local, h.remote = local.String(), remote.String() // keptEnds's: written before any other worker takes h
	}
	if st := stampsOf(h.conn); st != nil && st.sc != nil {
		st.sc.Unstamp() // its transactions are kept: no wire time (kept.go)
	}
	h.mu.Lock()
	h.shared = n
	dead := h.err != nil
	h.mu.Unlock()
	if !dead {
		go h.readLoop()
	}
}

// isShared says whether transactions share h (share).
func (h *h2conn) isShared() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.shared > 0
}

// readLoop reads a shared connection's frames until it ends.
func (h *h2conn) readLoop() {
	for {
		if err := h.readFrame(); err != nil {
			h.readFailed(err)
			return
		}
	}
}

// retire closes a shared connection its slot left (it took a GOAWAY, or
// failed) once its last transaction has ended.
func (h *h2conn) retire() {
	h.mu.Lock()
	h.retired = true
	idle := len(h.txs) == 0
	h.mu.Unlock()
	if idle {
		h.close()
	}
}

// watch ends the reads and writes of a transaction begun on h when ctx
// is done (run then fails it), on h or on the connection a GOAWAY moved
// it to (r.on): one AfterFunc a transaction (load.AfterFunc), whichever
// connections it runs on. A connection moved to after ctx was done is not
// ended by it, but run finds ctx done before it reads or writes. On a
// shared connection this ends every transaction on it (ended says why).
func (h *h2conn) watch(ctx context.Context, r *h2reuse) (stop func() bool) {
	r.on.Store(nil)
	return load.AfterFunc(ctx, func() {
		c := r.on.Load()
		if c == nil {
			c = h
		}
		c.mu.Lock()
		if c.ended == nil {
			c.ended = context.Cause(ctx)
		}
		c.mu.Unlock()
		_ = c.raw.SetDeadline(time.Unix(1, 0))
	})
}

// reading says whether tx still waits for frames.
func (h *h2conn) reading(tx *h2tx) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !tx.woken && h.err == nil
}

// drain reads the frames that came while the connection was idle, as
// long as bytes wait (a frame cut short waits at most drainWait).
func (h *h2conn) drain() {
	if h.rd.br == nil || !h.waiting() {
		return
	}
	for h.failed() == nil && h.waiting() {
		_ = h.raw.SetReadDeadline(time.Now().Add(drainWait)) // after waiting's, over TLS
		if err := h.readFrame(); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				h.readFailed(err)
			}
			break
		}
	}
	_ = h.raw.SetReadDeadline(time.Time{})
	h.open() // a SETTINGS ACK, when one is pending
}

// failed is the connection's end, or nil.
func (h *h2conn) failed() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// drainWait is how long reading what came while idle may wait for the
// rest of a frame (or, without a socket to ask, for any byte).
const drainWait = 10 * time.Millisecond

// waiting says whether bytes wait to be read, or the server's close: in
// the buffer, or the socket's, peeked at (without a socket to ask,
// perhaps: a read with a deadline tells), or in the TLS layer's.
func (h *h2conn) waiting() bool {
	if h.rd.br.Buffered() > 0 {
		return true
	}
	if h.sock == nil {
		return true
	}
	if err := h.sock.Control(h.peek); err != nil {
		return true // the socket closed: the read says so
	}
	return h.peeked || h.sealed && h.unsealed()
}

// peekSocket peeks at socket fd without waiting: peeked says whether a
// byte, the server's close (0 bytes) or its reset (an error: the read
// ends the connection) waits. Not through Go's scheduler (RawSyscall, as
// evloop's calls): a peek that may not wait never blocks, and the
// scheduler's entry and exit cost as much as the call (~0.1 µs of ~0.6).
// Nothing cheaper is as certain: whatever the server sent since the last
// read is only in the socket.
func (h *h2conn) peekSocket(fd uintptr) {
	var b [1]byte
	_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	h.peeked = e != unix.EAGAIN
}

// unsealed says whether the TLS layer holds a record it read off the
// socket with the last reply's (a GOAWAY sent right after it, in the same
// TCP segment): a read that may not wait takes it into the buffer. No
// system call: TLS's read of the socket fails at once, through the
// syncStamp under it (peekSealed), or without one, at an expired deadline
// (two deadlines set: a timer each).
func (h *h2conn) unsealed() bool {
	if h.under != nil {
		return h.under.peekSealed(h.rd.br)
	}
	_ = h.raw.SetReadDeadline(time.Unix(1, 0))
	_, err := h.rd.br.Peek(1)
	_ = h.raw.SetReadDeadline(time.Time{})
	return !errors.Is(err, os.ErrDeadlineExceeded)
}

// readFailed ends the connection after a read failed (the server's close
// among them), and gives its buffer back.
func (h *h2conn) readFailed(err error) {
	h.mu.Lock()
	if h.shared > 0 && h.ended != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("HTTP/2: the connection these transactions shared was ended as one on it ended (%w)", h.ended)
	}
	if h.err == nil {
		h.err = eofClosed(err)
	}
	for _, tx := range h.txs {
		h.endTx(tx, h.cutOff(tx, err))
	}
	h.streams = nil
	h.mu.Unlock()
	h.rd.br.Reset(nil)
	readers.Put(h.rd.br)
	h.rd = h2reader{}
}

// eofClosed says a read's EOF is the server's close.
func eofClosed(err error) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("HTTP/2: the server closed the connection: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// cutOff is the error of transaction tx, whose connection's read failed
// with err (h.mu held), saying what happened when the server closed the
// connection: a stream its GOAWAY counted as processed but whose reply
// the close cut short fails, naming it (it was processed: it is not sent
// again); on a kept connection closed without a GOAWAY before a byte of
// tx's replies came (closed idle under the transaction: browsers and
// net/http send again then, on a reused connection), every stream of tx
// goes again on a new connection (nil: none failed).
func (h *h2conn) cutOff(tx *h2tx, err error) error {
	if !closedByPeer(err) && !closedByPeer(h.sendErr) {
		return eofClosed(err)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	wrote := ""
	if h.sendErr != nil {
		wrote = fmt.Sprintf("; writing to it had failed (%v)", h.sendErr)
	}
	open := h.openOf(tx)
	switch {
	case h.goaway != "" && len(open) > 0:
		s := open[0]
		return fmt.Errorf("HTTP/2: stream %d of %s: the server closed the connection after %s before this reply ended (%s)%s: %w", s.id, s.uri, h.goneAs, s.got(), wrote, err)
	case h.goaway == "" && h.quiet:
		why := fmt.Sprintf("HTTP/2: the server closed the kept connection, idle, before any reply to this transaction's requests (no GOAWAY)%s: %v", wrote, err)
		for _, s := range slices.Concat(open, tx.queue) {
			h.unprocessed(s, closedIdle, why)
		}
		tx.queue = nil
		return nil
	case h.goaway == "":
		return fmt.Errorf("HTTP/2: the server closed the connection without a GOAWAY, %d of the transaction's requests unanswered%s: %w", tx.left, wrote, err)
	}
	return fmt.Errorf("HTTP/2: the server closed the connection after %s%s: %w", h.goneAs, wrote, err)
}

// openOf are tx's streams open on the connection (h.mu held).
func (h *h2conn) openOf(tx *h2tx) []*h2stream {
	if h.shared == 0 {
		return h.streams // tx's alone
	}
	var open []*h2stream
	for _, s := range h.streams {
		if s.tx == tx {
			open = append(open, s)
		}
	}
	return open
}

// refuses says why the connection takes no new streams (h.mu held).
func (h *h2conn) refuses(ss []*h2stream) error {
	switch {
	case h.err != nil:
		return h.err
	case h.goaway != "" && len(ss) > 0:
		return fmt.Errorf("HTTP/2: the server sent %s before %s was requested", h.goaway, ss[0].uri)
	}
	return nil
}

// open writes the requests of the transactions' queues the server allows
// now (in the order the transactions began), with any frame pending. One
// goroutine writes at a time: what others add while it writes goes in its
// next write, so on a shared connection the requests of the transactions
// one read woke go out together, as a load generator's event loop writes
// them (a write each cost a third of the client's CPU at 4 at once).
func (h *h2conn) open() {
	h.mu.Lock()
	h.admit()
	if h.writing {
		h.mu.Unlock()
		return // the writer takes them in its next write
	}
	h.writing = true
	if h.shared > 0 {
		// The transactions the same read woke are runnable now, after
		// this one: let them add their requests first, to go in this
		// write (they wait no longer than they would for the socket).
		h.mu.Unlock()
		runtime.Gosched()
		h.mu.Lock()
	}
	for len(h.pending) > 0 && h.sendErr == nil {
		b := h.pending
		h.pending, h.wbuf = h.wbuf[:0], nil
		h.mu.Unlock()
		if _, err := h.conn.Write(b); err != nil {
			h.sendFailed(err)
		}
		h.mu.Lock()
		h.wbuf = b[:0]
	}
	h.pending = h.pending[:0] // after a failed write, nothing more is written
	h.writing = false
	h.mu.Unlock()
}

// admit adds to what is pending the requests of the transactions' queues
// the server allows now (h.mu held).
func (h *h2conn) admit() {
	for _, tx := range h.txs {
		if h.err != nil {
			break
		}
		if tx.woken {
			continue // ended (failed): its queue is not requested
		}
		if len(tx.queue) > 0 && len(h.streams) == 0 && h.maxStreams == 0 {
			h.endTx(tx, errors.New("HTTP/2: the server allows no stream (SETTINGS_MAX_CONCURRENT_STREAMS 0)"))
		}
		for len(tx.queue) > 0 && uint32(len(h.streams)) < h.maxStreams && h.goaway == "" && h.sendErr == nil {
			s := tx.queue[0]
			tx.queue = tx.queue[1:]
			s.id, s.length, s.recvWin, s.sendWin = h.nextID, -1, h2StreamWindow, h.sendInitial
			h.nextID += 2
			h.streams = append(h.streams, s)
			h.pending = appendHeaders(h.pending, s.id, s.block, h.maxFrame)
		}
	}
}

// sendFailed takes a write's failure. Between transactions it ends the
// connection. During one, the server has most likely closed the
// connection after a GOAWAY the client had not read yet: no more is
// written, and the transaction reads on (for at most afterSendWait: the
// socket's receive queue) what the server sent before its close, which
// says what it did not process (readFailed).
func (h *h2conn) sendFailed(err error) {
	err = fmt.Errorf("HTTP/2: send: %w", err)
	h.mu.Lock()
	if h.sendErr == nil {
		h.sendErr = err
	}
	idle := len(h.txs) == 0
	h.mu.Unlock()
	if idle {
		h.fail(err)
		return
	}
	_ = h.raw.SetReadDeadline(time.Now().Add(afterSendWait))
}

// afterSendWait bounds the reads after a write failed: what the server
// sent before its close is in the socket already.
const afterSendWait = 100 * time.Millisecond

// send writes frames at once (a PING's answer, a WINDOW_UPDATE), with
// what is pending.
func (h *h2conn) send(frames []byte) {
	h.mu.Lock()
	h.pending = append(h.pending, frames...)
	h.mu.Unlock()
	h.open()
}

// fail ends the connection with err: every stream of it fails.
func (h *h2conn) fail(err error) {
	h.mu.Lock()
	if h.err == nil {
		h.err = err
	}
	for _, tx := range h.txs {
		h.endTx(tx, err)
	}
	h.streams = nil
	h.mu.Unlock()
}

// endTx wakes the transaction (h.mu held), failed when err is not nil.
func (h *h2conn) endTx(tx *h2tx, err error) {
	if err != nil && tx.err == nil {
		tx.err = err
	}
	if !tx.woken {
		tx.woken = true
		tx.last = time.Now()
		if h.shared > 0 {
			select {
			case tx.wake <- struct{}{}:
			default: // a token waits: it wakes the runner all the same
			}
		}
	}
}

// endStream removes a stream that ended (failed with err, when not nil)
// and wakes its transaction when it was its last, or failed.
func (h *h2conn) endStream(s *h2stream, err error) {
	if err != nil && s.object {
		err = fmt.Errorf("object %s: %w", s.uri, err)
	}
	h.mu.Lock()
	for i, o := range h.streams {
		if o == s {
			h.streams = append(h.streams[:i], h.streams[i+1:]...)
			break
		}
	}
	tx := s.tx
	more := false
	if err == nil {
		h.answered++
	}
	if tx != nil {
		tx.left--
		if err != nil || tx.left == 0 {
			h.endTx(tx, err)
		}
		more = h.queued()
	}
	h.mu.Unlock()
	if more {
		h.open()
	}
}

// queued says whether a transaction's request waits for a stream (h.mu
// held).
func (h *h2conn) queued() bool {
	for _, tx := range h.txs {
		if len(tx.queue) > 0 && !tx.woken {
			return true
		}
	}
	return false
}

// unprocessed takes stream s, which the server says it did not process,
// off the connection: it goes again on a new one (h.mu held; why says
// what the server said, kept for the first).
func (h *h2conn) unprocessed(s *h2stream, what, why string) {
	for i, o := range h.streams {
		if o == s {
			h.streams = append(h.streams[:i], h.streams[i+1:]...)
			break
		}
	}
	tx := s.tx
	if tx == nil {
		return
	}
	if tx.again == nil {
		tx.again = &h2Again{what: what, why: why}
	}
	tx.again.ss = append(tx.again.ss, s)
	if tx.left--; tx.left == 0 {
		h.endTx(tx, nil)
	}
}

// got says how much of s's reply came, for an error.
func (s *h2stream) got() string {
	switch {
	case !s.headers:
		return "its headers had not come"
	case s.length >= 0:
		return fmt.Sprintf("%d of its %d bytes had come", s.n, s.length)
	}
	return fmt.Sprintf("%d bytes of its body had come", s.n)
}

// closedIdle is why the streams of a kept connection the server closed
// while it was idle go again (the marker's "after ...").
const closedIdle = "the server closed the idle kept connection"

// closedByPeer says whether err is the server's close of the connection
// (its FIN or its RST, as a read or a write found it).
func closedByPeer(err error) bool {
	return err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED))
}

// h2Again is the error of a transaction whose streams the server did not
// process (RFC 9113 §6.8, §8.7): they may go again on a new connection.
type h2Again struct {
	ss   []*h2stream
	what string // GOAWAY or REFUSED_STREAM
	why  string // the first stream's error, should they fail
}

func (e *h2Again) Error() string { return e.why }

// stream finds an open stream.
func (h *h2conn) stream(id uint32) *h2stream {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.streams {
		if s.id == id {
			return s
		}
	}
	return nil
}

// opened says whether the client opened a stream of id (open or ended).
func (h *h2conn) opened(id uint32) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return id%2 == 1 && id < h.nextID
}

// alive says whether the connection takes new streams (and has stream
// ids left for a transaction of MaxObjects objects), once what the server
// sent while it was idle was read.
func (h *h2conn) alive() bool {
	h.mu.Lock()
	shared := h.shared > 0
	h.mu.Unlock()
	if !shared { // a shared connection's readLoop reads all the time
		h.drain()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err == nil && h.goaway == "" && h.sendErr == nil && !h.retired &&
		h.nextID < 1<<31-2*(MaxObjects+1)*uint32(max(h.shared, 1))
}

// newTx begins a transaction on h. On a kept connection (one that
// carried a transaction before), until a byte of its replies comes, the
// server's close without a GOAWAY is a close of the idle connection
// under it: its requests were not processed (cutOff).
//
// Not on a shared connection: other transactions' replies come on it, and
// its reader alone keeps quiet.
func (h *h2conn) newTx() {
	h.mu.Lock()
	if h.shared == 0 {
		h.quiet = h.nextID > 1
	}
	h.mu.Unlock()
}

// close closes the connection.
func (h *h2conn) close() {
	h.fail(net.ErrClosed)
	load.CloseAbort(h.raw)
}

// readFrame reads one frame and does what it says.
func (h *h2conn) readFrame() error {
	br := h.rd.br
	hdr, err := br.Peek(9)
	if err != nil {
		if len(hdr) > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
			h.quiet = false // a frame's first bytes: perhaps a reply's
		}
		return err
	}
	length := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	typ, flags := hdr[3], hdr[4]
	id := binary.BigEndian.Uint32(hdr[5:]) & (1<<31 - 1)
	if length > h2MaxFrame {
		return h2Errorf(errFrameSize, "a frame of %d bytes (type %d), over the %d allowed", length, typ, h2MaxFrame)
	}
	if !h.rd.settings && typ != frameSettings {
		return h2Errorf(errProtocol, "the server's first frame is of type %d, not SETTINGS", typ)
	}
	br.Discard(9)
	p, err := br.Peek(length)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		h.quiet = h.quiet && id == 0
		return err
	}
	err = h.frame(typ, flags, id, p)
	br.Discard(length)
	return err
}
