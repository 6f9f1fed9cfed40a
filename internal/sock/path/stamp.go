package path

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"v6lab/internal/sock/kstamp"
	"v6lab/internal/sock/lag"

	"golang.org/x/sys/unix"
)

// The kernel's own timestamps of a transaction's packets (SO_TIMESTAMPING,
// software stamps): when its first packet left the host, when its last
// needed bytes arrived. They bound the network's share of a response
// time, without v6lab's own work before and after (docs/metrics.md).

// enableStamps turns the stamps on for a socket: transmit and receive
// stamps for UDP, receive stamps alone for TCP (udp false), whose first
// packet is its SYN (unstamped) and whose every send would otherwise leave
// a stamp on the error queue: charged to the socket's receive buffer, a
// long connection's stamps (HTTP/2's hundreds of requests) fill it until
// the kernel drops the data arriving, and the connection stalls.
func enableStamps(rc syscall.RawConn, udp bool) error {
	enable := kstamp.EnableRx
	if udp {
		enable = kstamp.Enable
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = enable(int(fd)) }); err != nil {
		return err
	}
	return serr
}

// txStamp reads the transmit stamp of the socket's first send from its
// error queue, waiting up to a millisecond for it (the stamp is taken as
// the packet leaves, often before the send returns).
func txStamp(rc syscall.RawConn) time.Time {
	oob := make([]byte, kstamp.OOBSize)
	var at time.Time
	for deadline := time.Now().Add(time.Millisecond); at.IsZero() && time.Now().Before(deadline); {
		_ = rc.Control(func(fd uintptr) { at = kstamp.Sent(int(fd), oob) })
		if at.IsZero() {
			time.Sleep(10 * time.Microsecond)
		}
	}
	return at
}

// StampedConn is a TCP or connected UDP socket read with recvmsg, keeping
// the kernel's receive stamp of the last bytes read (LastRx).
type StampedConn struct {
	net.Conn
	rc     syscall.RawConn
	oob    []byte
	LastRx time.Time
	// FirstRx is the receive stamp of the first bytes read.
	FirstRx time.Time
	// UDP: FirstSent reads the stamp of the first datagram sent.
	UDP bool
	// rd is a read's state for the descriptor's callback, kept on the
	// connection (a callback capturing the read's variables allocated
	// three objects a read); busy says a Read holds it.
	rd   *stampRead
	busy atomic.Bool
	// plain: stamps off (Unstamp), reads are the connection's own.
	plain atomic.Bool
}

// Unstamp turns the stamps off for the rest of the connection: a
// connection no figure reads the stamps of any more (a shared HTTP/2
// connection's, whose transactions are kept: they record no wire time)
// saves the kernel's stamps and the control messages' reading. LastRx
// and FirstRx keep what they had.
func (s *StampedConn) Unstamp() {
	_ = s.rc.Control(func(fd uintptr) { _ = kstamp.Disable(int(fd)) })
	s.plain.Store(true)
}

// stampRead is one Read's buffer and results, and the callback rc.Read
// runs with them.
type stampRead struct {
	s   *StampedConn
	p   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

func newStampRead(s *StampedConn) *stampRead {
	r := &stampRead{s: s}
	r.fn = r.recv
	return r
}

// Stamped turns the kernel's timestamps on for a TCP or UDP connection
// (ok false: it cannot have them, use it as it is).
func Stamped(c net.Conn) (*StampedConn, bool) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, false
	}
	_, udp := c.(*net.UDPConn)
	if _, tcp := c.(*net.TCPConn); !tcp && !udp {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil || enableStamps(rc, udp) != nil {
		return nil, false
	}
	s := &StampedConn{Conn: c, rc: rc, oob: make([]byte, kstamp.OOBSize), UDP: udp}
	s.rd = newStampRead(s)
	return s, true
}

// FirstSent is the kernel's transmit stamp of the first datagram sent on
// a UDP connection (zero if none, or for TCP, whose first packet is its
// SYN and is not stamped).
func (s *StampedConn) FirstSent() time.Time {
	if !s.UDP {
		return time.Time{}
	}
	return txStamp(s.rc)
}

// Read reads as net.Conn's Read does (deadlines included), and records the
// receive stamp of the bytes it returns.
func (s *StampedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.plain.Load() {
		return s.Conn.Read(p)
	}
	r := s.rd
	if !s.busy.CompareAndSwap(false, true) {
		r = newStampRead(s) // another Read at once: its own state (and stamps raced, as ever)
	}
	r.p = p
	err := s.rc.Read(r.fn)
	n, rerr := r.n, r.err
	r.p, r.n, r.err = nil, 0, nil
	if r == s.rd {
		s.busy.Store(false)
	}
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, &net.OpError{Op: "read", Net: s.LocalAddr().Network(), Err: rerr}
	case n == 0 && !s.UDP:
		return 0, io.EOF
	}
	return n, nil
}

// Reordered says whether a TCP connection has received a segment out of
// order so far (TCP_INFO's tcpi_rcv_ooopack). Its receive stamps are then
// not the reply's end: a segment that came after a lost one keeps its own
// arrival's stamp while it waits for the retransmission, and the read that
// finally returns it carries that earlier stamp. False for UDP and for a
// closed socket.
func (s *StampedConn) Reordered() bool {
	if s.UDP {
		return false
	}
	reordered := false
	_ = s.rc.Control(func(fd uintptr) {
		ti, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
		reordered = err == nil && ti.Rcv_ooopack > 0
	})
	return reordered
}

// recv is a Read's recvmsg on the descriptor (false: nothing waits yet).
func (r *stampRead) recv(fd uintptr) bool {
	s, p := r.s, r.p
	// recvmsg without a name: a connected socket's peer is known, and
	// x/sys's Recvmsg would convert and allocate it on every read.
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	msg := unix.Msghdr{Iov: &iov, Iovlen: 1, Control: &s.oob[0]}
	msg.SetControllen(len(s.oob))
	n, _, e := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&msg)), 0)
	if e == unix.EAGAIN {
		return false
	}
	r.n, r.err = int(n), nil
	if e != 0 {
		r.n, r.err = 0, e
	}
	if r.n > 0 {
		if at := kstamp.Parse(s.oob[:int(msg.Controllen)]); !at.IsZero() {
			lag.Add(time.Since(at)) // the self-check's read lag
			s.LastRx = at
			if s.FirstRx.IsZero() {
				s.FirstRx = at
			}
		}
	}
	return true
}
