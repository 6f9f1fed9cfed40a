package path

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"v6lab/internal/sock/kstamp"
	"v6lab/internal/sock/lag"

	"golang.org/x/sys/unix"
)

// The kernel's own timestamps of a transaction's packets (SO_TIMESTAMPING,
// software stamps): when its first packet left the host, when its last
// needed bytes arrived. They bound the network's share of a response
// time, without v6lab's own work before and after (docs/metrics.md).

// enableStamps turns the stamps on for a socket.
func enableStamps(rc syscall.RawConn) error {
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = kstamp.Enable(int(fd)) }); err != nil {
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
	if err != nil || enableStamps(rc) != nil {
		return nil, false
	}
	return &StampedConn{Conn: c, rc: rc, oob: make([]byte, kstamp.OOBSize), UDP: udp}, true
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
	var n int
	var rerr error
	err := s.rc.Read(func(fd uintptr) bool {
		var oobn int
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), p, s.oob, 0)
		if errors.Is(rerr, unix.EAGAIN) {
			return false
		}
		if n > 0 {
			if at := kstamp.Parse(s.oob[:oobn]); !at.IsZero() {
				lag.Add(time.Since(at)) // the self-check's read lag
				s.LastRx = at
				if s.FirstRx.IsZero() {
					s.FirstRx = at
				}
			}
		}
		return true
	})
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, &net.OpError{Op: "read", Net: s.LocalAddr().Network(), Err: rerr}
	case n == 0 && len(p) > 0 && !s.UDP:
		return 0, io.EOF
	}
	return n, nil
}
