// Package wakeread serves a TCP listener's connections whose reads wait in
// the kernel's poll on the reading thread, as a C server's do, instead of
// in Go's netpoller: data arriving after a short idle wakes that thread
// directly. Through the netpoller the same wake-up is a hand-off between
// parked runtime threads, which on a small VM added about 60 µs to every
// request of one user's page (docs/performance-history.md), time the client then
// measured as the network's.
//
// A goroutine waiting in a system call keeps its P (Go's scheduler slot)
// until the runtime's monitor takes it back, 20 µs to 10 ms later: so a
// read waits in poll only while it is the only read waiting (a server with
// one user; under load every read waits in the netpoller as before), and
// at most GOMAXPROCS-1 at once, one P always free for everything else.
// With one P the package changes nothing.
package wakeread

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// slots bounds the waits in poll at once: GOMAXPROCS-1.
var slots = sync.OnceValue(func() int32 { return int32(runtime.GOMAXPROCS(0) - 1) })

// slice bounds one poll, so a read notices its connection closing, or a
// deadline moved while it waits, within it.
const slice = 20 * time.Millisecond

// minPolled is the smallest read that waits in poll. net/http watches an
// idle connection with a one-byte read that it ends by moving the deadline
// into the past when the handler is done: that read waits in the netpoller,
// which notices at once (in poll it would hold the request up to a slice).
const minPolled = 16

// inPoll counts the reads waiting in poll, waiting every read waiting for
// data either way.
var inPoll, waiting atomic.Int32

// Listener wraps a TCP listener: its connections read as the package says.
type Listener struct{ net.Listener }

// Accept returns the next connection, wrapped when it is TCP.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	wc := &Conn{TCPConn: tc, rc: rc}
	wc.rd = newRead(wc)
	return wc, nil
}

// Conn is a TCP connection whose reads may wait in poll.
type Conn struct {
	*net.TCPConn
	rc       syscall.RawConn
	closed   atomic.Bool
	polling  atomic.Bool // a read of this connection waits in poll
	mu       sync.Mutex
	deadline time.Time // the read deadline, as last set
	// rd is a read's state for the descriptor's callback, kept on the
	// connection (a callback capturing the read's variables allocated
	// three objects a read); busy says a Read holds it.
	rd   *read
	busy atomic.Bool
}

// read is one Read's buffer, results and count in waiting, and the
// callback rc.Read runs with them.
type read struct {
	c       *Conn
	b       []byte
	n       int
	err     error
	counted bool // this read is counted in waiting
	fn      func(fd uintptr) bool
}

func newRead(c *Conn) *read {
	r := &read{c: c}
	r.fn = r.once
	return r
}

// Read reads into b. rc.Read holds the descriptor while the callback runs,
// so a concurrent Close cannot let its number be reused under the poll.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r := c.rd
	if r == nil || !c.busy.CompareAndSwap(false, true) {
		r = newRead(c) // another Read at once (or a Conn not from Accept): its own state
	}
	r.b = b
	err := c.rc.Read(r.fn)
	n, rerr := r.n, r.err
	if r.counted {
		waiting.Add(-1)
	}
	r.b, r.n, r.err, r.counted = nil, 0, nil, false
	if r == c.rd {
		c.busy.Store(false)
	}
	switch {
	case err != nil:
		return 0, c.opError(err)
	case rerr != nil:
		return 0, c.opError(rerr)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// once is a Read's callback: it reads, or waits in poll while it may
// (false: the netpoller waits).
func (r *read) once(fd uintptr) bool {
	c, b := r.c, r.b
	for {
		r.n, r.err = unix.Read(int(fd), b)
		if r.err == unix.EINTR {
			continue
		}
		if r.err == nil && r.n == 0 && c.closed.Load() {
			r.err = net.ErrClosed // our own shutdown, not the peer's FIN
		}
		if r.err != unix.EAGAIN {
			return true
		}
		if !r.counted {
			r.counted = true
			waiting.Add(1)
		}
		if c.closed.Load() {
			r.err = net.ErrClosed
			return true
		}
		wait := slice
		if dl := c.readDeadline(); !dl.IsZero() {
			left := time.Until(dl)
			if left <= 0 {
				r.err = os.ErrDeadlineExceeded
				return true
			}
			wait = min(wait, left)
		}
		if waiting.Load() > 1 || len(b) < minPolled {
			return false // others wait too, or a probe read: the netpoller
		}
		c.polling.Store(true)
		if c.closed.Load() { // Close may have looked before polling was set
			c.polling.Store(false)
			r.err = net.ErrClosed
			return true
		}
		polled, _, perr := pollIn(int(fd), wait)
		c.polling.Store(false)
		if !polled {
			return false // the netpoller waits, as for any connection
		} else if perr != nil {
			r.err = perr
			return true
		}
	}
}

// opError is err as Go's net package reports a read's: a timeout is a
// net.Error whose Timeout is true, a closed connection net.ErrClosed.
// pollIn waits up to wait for fd to be readable, in poll, when a slot is
// free (polled false: none was); ready says it is.
func pollIn(fd int, wait time.Duration) (polled, ready bool, err error) {
	if inPoll.Add(1) > slots() {
		inPoll.Add(-1)
		return false, false, nil
	}
	defer inPoll.Add(-1)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(wait/time.Millisecond)+1)
	if err != nil && err != unix.EINTR {
		return true, false, err
	}
	return true, n > 0, nil
}

func (c *Conn) opError(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		err = os.NewSyscallError("read", errno)
	}
	return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

func (c *Conn) readDeadline() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline
}

// SetReadDeadline sets the deadline for both ways of waiting.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.TCPConn.SetReadDeadline(t)
}

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.TCPConn.SetDeadline(t)
}

// Close closes the connection. A read waiting in poll holds the descriptor
// (the socket would stay open, its FIN unsent, until the poll returned), so
// shutting the reading side first wakes that poll at once.
func (c *Conn) Close() error {
	c.closed.Store(true)
	if c.polling.Load() {
		c.rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_RD) })
	}
	return c.TCPConn.Close()
}
