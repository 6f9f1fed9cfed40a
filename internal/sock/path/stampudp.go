package path

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/kstamp"
)

// StampedPacketConn is a UDP socket pinned to one path's family and
// connected to one server (a QUIC client's, handed to a QUIC library as a
// net.PacketConn), whose reads keep the kernel's receive stamps of the
// datagrams they return and whose first datagram out is stamped as it
// leaves. Its reads may run on another goroutine than the one that reads
// its stamps: they are kept atomically.
//
// It offers ReadFrom and WriteTo, not ReadMsgUDP: a library that would
// read with control messages of its own (quic-go's batch reads) reads
// through ReadFrom here, so every datagram's stamp is seen.
type StampedPacketConn struct {
	c  *net.UDPConn
	rc syscall.RawConn
	rx rxRing // messages read, not yet handed over (ReadFrom's alone)
	// recv is rx's read (recvmmsg) as the socket's RawConn takes it, made
	// once: a closure made per read costs three allocations.
	recv func(fd uintptr) bool
	// first, last: receive stamps (UnixNano) of the first and the last
	// datagram read; sent: a datagram was sent (the first one stamped).
	first, last atomic.Int64
	sent        atomic.Bool
	in, out     atomic.Int64
	// refused: the kernel reported an ICMP port unreachable for the
	// server's port (ECONNREFUSED on a read or a send): nothing listened.
	refused atomic.Bool
	remote  net.Addr // the server's
}

// DialStamped opens a UDP socket of d's path's family (udp4, or udp6 that
// is IPv6-only) connected to the server at to, from d's source when set,
// both ends checked against the path (Dialer.Dial), with the kernel's
// stamps on. Connected, it hears no one but the server, and its local
// address is the one the kernel chose for the path.
func DialStamped(ctx context.Context, d Dialer, to netip.AddrPort) (*StampedPacketConn, error) {
	if d.Path.Kind().Dual {
		return nil, fmt.Errorf("path: a QUIC socket is pinned to one family, not %s", d.Path)
	}
	nc, err := d.Dial(ctx, "udp", to)
	if err != nil {
		return nil, err
	}
	c := nc.(*net.UDPConn)
	rc, err := c.SyscallConn()
	if err == nil {
		err = enableStamps(rc, true)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("path: kernel timestamps on a UDP socket: %w", err)
	}
	holdGRO()
	gro := false
	_ = rc.Control(func(fd uintptr) { gro = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1) == nil })
	return newStamped(c, rc, gro), nil
}

// groHold keeps the kernel's UDP encapsulation switches on (holdGRO);
// groFD is its socket (-1: none, the kernel refused UDP_GRO).
var (
	groHold sync.Once
	groFD   = -1
)

// holdGRO opens, once per process, an IPv6 UDP socket with UDP_GRO on and
// keeps it open. The first socket to turn UDP_GRO on flips machine-wide
// switches (static keys, for IPv4 and IPv6 alike from an IPv6 socket) by
// patching the kernel's code, and the last to close flips them back: with
// one QUIC connection at a time, every transaction paid both before its
// first datagram left (55-110 µs of the client's CPU a setsockopt here,
// against 0.3 µs with a socket holding them on), and the patching stops
// the machine's other CPUs, the server's too. On a goroutine of its own,
// as kstamp.Hold's: a thread locked in a lab namespace would be pinned.
func holdGRO() {
	groHold.Do(func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
			if err != nil {
				return
			}
			// Never closed: the socket is the hold (a kernel without
			// UDP_GRO refuses, and then nothing needs holding).
			if unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1) != nil {
				unix.Close(fd)
				return
			}
			groFD = fd
		}()
		<-done
	})
}

// newStamped is the socket c with its receive ring, of messages that may
// hold several datagrams with gro (UDP_GRO is on).
func newStamped(c *net.UDPConn, rc syscall.RawConn, gro bool) *StampedPacketConn {
	s := &StampedPacketConn{c: c, rc: rc, remote: c.RemoteAddr()}
	s.rx.refused = &s.refused
	s.recv = s.rx.recv
	s.rx.gro, s.rx.size = gro, rxSize
	if gro {
		s.rx.size = rxGROSize
	}
	return s
}

// ReadFrom returns one datagram and keeps its receive stamp. The socket is
// connected: every datagram is the server's, whose address it returns
// (recvmmsg is asked for none, so nothing is converted or allocated per
// datagram). Datagrams are read up to rxBatch messages at a time, one
// system call for all that wait, and handed over one by one from the
// messages' buffers. With UDP_GRO a message may hold several datagrams of
// one size (a server's GSO send on loopback or a veth arrives whole: one
// buffer in the socket's queue for a reply of three packets, as quinn's
// sockets read them); without it the first datagram of a read lands
// straight in b (quic-go's buffer, warm in the CPU's caches), not first in
// the read's buffers.
//
// The buffers are the socket's only from a read until its last datagram is
// handed over (rxPool): a socket that waits holds none, so the sockets of
// many connections read through the few buffers that are warm in the
// CPU's caches (100 users' rings were 12.5 MiB), and 1,000 users' idle
// sockets hold no memory for their reads.
func (s *StampedPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	r := &s.rx
	if r.next >= r.n {
		if !r.gro {
			r.dst = b
		}
		err := s.fill()
		r.dst = nil
		if err != nil {
			return 0, nil, err
		}
	}
	i := r.next
	size := int(r.msgs[i].Len)
	var n int
	if i == 0 && r.intoDst {
		n = min(size, len(b)) // read into b
		r.next++
	} else {
		seg := size - r.off
		if g := int(r.seg[i]); g > 0 && g < seg {
			seg = g
		}
		n = copy(b, r.slot(i)[r.off:r.off+seg])
		if r.off += seg; r.off >= size {
			r.next, r.off = r.next+1, 0
		}
	}
	if r.next >= r.n {
		r.release() // every datagram of the read handed over
	}
	if at := r.at[i]; at != 0 {
		s.last.Store(at)
		s.first.CompareAndSwap(0, at)
	}
	s.in.Add(int64(n))
	return n, s.remote, nil
}

// rxBatch is how many messages one read takes at most; rxSize the largest
// datagram without UDP_GRO (QUIC's are at most 1452 bytes here), rxGROSize
// with it: the kernel's largest UDP packet, so that a message is never cut
// short.
const (
	rxBatch   = 8
	rxSize    = 2048
	rxGROSize = 1 << 16
)

// rxBufs are a read's message buffers: rxBatch slots of rxGROSize bytes
// (of rxSize without GRO, the first 16 KiB).
type rxBufs [rxBatch * rxGROSize]byte

// rxPool holds the read buffers no socket is reading into: a socket takes
// one for a read (recv) and gives it back once the read's datagrams are
// handed over, or when nothing waited.
var rxPool = sync.Pool{New: func() any { return new(rxBufs) }}

// rxRing holds the messages of the last read not handed over yet.
type rxRing struct {
	msgs    [rxBatch]unix.Mmsghdr
	iovs    [rxBatch]unix.Iovec
	buf     *rxBufs // the read's buffers (nil: none held, rxPool's)
	size    int     // a slot's size: rxSize, or rxGROSize with GRO
	gro     bool    // UDP_GRO is on: a message may hold several datagrams
	oobs    [rxBatch][kstamp.OOBSize]byte
	at      [rxBatch]int64  // receive stamps, UnixNano (0: none)
	seg     [rxBatch]uint16 // each message's datagram size with GRO (0: one datagram)
	n, next int
	off     int        // where the next datagram of message next starts
	dst     []byte     // where recv reads the first message (nil: its slot)
	intoDst bool       // the last recv read its first message into dst
	got     int        // messages the last recv read
	err     unix.Errno // its error (0: none)
	refused *atomic.Bool
}

// slot is message i's buffer.
func (r *rxRing) slot(i int) []byte { return r.buf[i*r.size : (i+1)*r.size] }

// release gives the read's buffers back to rxPool.
func (r *rxRing) release() {
	if r.buf != nil {
		rxPool.Put(r.buf)
		r.buf = nil
	}
}

// recv reads the messages waiting on fd (recvmmsg) into buffers of
// rxPool's: false when none waits (the buffers are given back, and the
// RawConn waits for the socket to be readable).
func (r *rxRing) recv(fd uintptr) bool {
	if r.buf == nil {
		r.buf = rxPool.Get().(*rxBufs)
	}
	r.intoDst = len(r.dst) > 0
	for i := range rxBatch {
		r.iovs[i] = unix.Iovec{Base: &r.buf[i*r.size]}
		r.iovs[i].SetLen(r.size)
		if i == 0 && r.intoDst {
			r.iovs[0] = unix.Iovec{Base: &r.dst[0]}
			r.iovs[0].SetLen(len(r.dst))
		}
		r.msgs[i] = unix.Mmsghdr{Hdr: unix.Msghdr{Iov: &r.iovs[i], Iovlen: 1, Control: &r.oobs[i][0]}}
		r.msgs[i].Hdr.SetControllen(kstamp.OOBSize)
	}
	k, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&r.msgs[0])), rxBatch, 0, 0, 0)
	if e == unix.EAGAIN || icmpError(e) {
		if e == unix.ECONNREFUSED {
			r.refused.Store(true)
		}
		r.release()
		return false // an ICMP error, not a datagram: read on (icmpError)
	}
	r.got, r.err = int(k), e
	return true
}

// fill reads the messages waiting (at least one: it waits for it).
func (s *StampedPacketConn) fill() error {
	r := &s.rx
	r.got, r.err = 0, 0
	err := s.rc.Read(s.recv)
	switch {
	case err != nil:
		r.release()
		return err
	case r.err != 0:
		r.release()
		return &net.OpError{Op: "read", Net: s.c.LocalAddr().Network(), Err: r.err}
	}
	got := r.got
	for i := range got {
		oob := r.oobs[i][:r.msgs[i].Hdr.Controllen]
		r.at[i], r.seg[i] = 0, 0
		if at := kstamp.Parse(oob); !at.IsZero() {
			r.at[i] = at.UnixNano()
		}
		if r.gro {
			r.seg[i] = groSize(oob)
		}
	}
	r.n, r.next, r.off = got, 0, 0
	return nil
}

// groSize is the datagram size of a message the kernel coalesced
// (UDP_GRO's control message), 0 when it holds one datagram.
func groSize(oob []byte) uint16 {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < unix.SizeofCmsghdr || n > len(oob) {
			return 0
		}
		if data := oob[unix.CmsgLen(0):n]; h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && len(data) >= 2 {
			if len(data) >= 4 {
				return uint16(*(*int32)(unsafe.Pointer(&data[0])))
			}
			return *(*uint16)(unsafe.Pointer(&data[0]))
		}
		next := unix.CmsgSpace(n - unix.CmsgLen(0))
		if next > len(oob) {
			break
		}
		oob = oob[next:]
	}
	return 0
}

// WriteTo sends one datagram. Only the first is stamped: the socket then
// asks for receive stamps alone, so the error queue holds one stamp, read
// by FirstSent.
func (s *StampedPacketConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	n, err := s.c.Write(b) // to the server it is connected to
	// An ICMP error looked for only after a failure: errors.As allocates.
	if err != nil && icmpErrorOf(err) {
		if errors.Is(err, unix.ECONNREFUSED) {
			s.refused.Store(true)
		}
		n, err = len(b), nil // lost on the way, as for a socket not connected (icmpError)
	}
	s.out.Add(int64(n))
	if err == nil && s.sent.CompareAndSwap(false, true) {
		_ = s.rc.Control(func(fd uintptr) { _ = kstamp.EnableRx(int(fd)) })
	}
	return n, err
}

// icmpError says whether a socket error is an ICMP error the kernel
// reports on a connected UDP socket (a Packet Too Big from a tunnel's
// router for a path MTU probe, a port or host unreachable): a socket not
// connected never sees them, and a QUIC library would close its connection
// on them. The datagram was lost, as any other: QUIC's loss recovery and
// its path MTU discovery (DPLPMTUD) deal with it, and a server that never
// answers is a handshake that times out ("no QUIC answer over PATH").
func icmpError(e unix.Errno) bool {
	switch e {
	case unix.EMSGSIZE, unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH, unix.EHOSTDOWN:
		return true
	}
	return false
}

func icmpErrorOf(err error) bool {
	var e unix.Errno
	return errors.As(err, &e) && icmpError(e)
}

// FirstSent is the kernel's transmit stamp of the first datagram sent
// (zero: none, or not yet).
func (s *StampedPacketConn) FirstSent() time.Time {
	if !s.sent.Load() {
		return time.Time{}
	}
	return txStamp(s.rc)
}

// Refused says whether the kernel reported the server's port unreachable
// (ICMP): an answer that nothing listens there, which the socket's reads
// and sends otherwise pass over as a lost datagram (icmpError).
func (s *StampedPacketConn) Refused() bool { return s.refused.Load() }

// Received are the receive stamps of the first and the last datagram read
// so far (zero: none).
func (s *StampedPacketConn) Received() (first, last time.Time) {
	return unixNano(s.first.Load()), unixNano(s.last.Load())
}

func unixNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Bytes are the UDP payload bytes read and sent so far.
func (s *StampedPacketConn) Bytes() (in, out int64) { return s.in.Load(), s.out.Load() }

// Close closes the socket.
func (s *StampedPacketConn) Close() error { return s.c.Close() }

// LocalAddr is the socket's address; RemoteAddr the server's.
func (s *StampedPacketConn) LocalAddr() net.Addr  { return s.c.LocalAddr() }
func (s *StampedPacketConn) RemoteAddr() net.Addr { return s.c.RemoteAddr() }

// SetDeadline, SetReadDeadline and SetWriteDeadline are the socket's.
func (s *StampedPacketConn) SetDeadline(t time.Time) error      { return s.c.SetDeadline(t) }
func (s *StampedPacketConn) SetReadDeadline(t time.Time) error  { return s.c.SetReadDeadline(t) }
func (s *StampedPacketConn) SetWriteDeadline(t time.Time) error { return s.c.SetWriteDeadline(t) }

// SetReadBuffer and SetWriteBuffer size the socket's buffers (a QUIC
// library asks for large ones).
func (s *StampedPacketConn) SetReadBuffer(n int) error  { return s.c.SetReadBuffer(n) }
func (s *StampedPacketConn) SetWriteBuffer(n int) error { return s.c.SetWriteBuffer(n) }

// SyscallConn is the socket's, for options a QUIC library sets (the
// don't-fragment bit of its path MTU discovery).
func (s *StampedPacketConn) SyscallConn() (syscall.RawConn, error) { return s.rc, nil }
