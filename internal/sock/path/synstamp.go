package path

import (
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/synstamp"
)

// A transaction that starts with a connection, not a DNS query (an IP
// literal, DNS over TCP), starts its wire time at its SYN, which
// SO_TIMESTAMPING does not stamp: synstamp's program does, keyed by the
// socket's cookie.

// SYNReady attaches the SYN stamper on first use (in the calling thread's
// network namespace), so that connections made after it have their SYN
// stamped; false when this host cannot (not root, no cgroup v2).
func SYNReady() bool {
	_, err := synstamp.Default()
	return err == nil
}

// SocketCookie is the kernel's cookie of the socket fd (0: unknown).
func SocketCookie(fd int) uint64 {
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return 0
	}
	return c
}

// SYNSent is the kernel's stamp of the SYN sent by the socket whose cookie
// is given, comparable with the software stamps (zero: none).
func SYNSent(cookie uint64) time.Time {
	syn, _ := Handshake(cookie)
	return syn
}

// Handshake is the kernel's stamps of the SYN sent by the socket whose
// cookie is given and of its handshake's end (the SYN-ACK's arrival), as
// SYNSent's (zero: none).
func Handshake(cookie uint64) (syn, established time.Time) {
	s, err := synstamp.Default()
	if err != nil || cookie == 0 {
		return time.Time{}, time.Time{}
	}
	syn, established, _ = s.LookupCookie(cookie)
	return syn, established
}

// Cookie is the connection's socket cookie (0: unknown).
func (c *StampedConn) Cookie() uint64 {
	var cookie uint64
	_ = c.rc.Control(func(fd uintptr) { cookie = SocketCookie(int(fd)) })
	return cookie
}
