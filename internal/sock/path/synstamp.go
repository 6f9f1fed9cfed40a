package path

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/synstamp"
)

// A transaction that starts with a connection, not a DNS query (an IP
// literal, DNS over TCP), starts its wire time at its SYN, which
// SO_TIMESTAMPING does not stamp: synstamp's program does, and its
// stamper keeps the stamps by connection (local and remote addresses). A
// probe that holds the socket finds them there (evloop); one that only
// keeps the socket's cookie (a Go connection, its stamps read once the
// transaction is done, its socket closed by then) has them kept here under
// the cookie when it takes it (SocketCookie).

// SYNReady attaches the SYN stamper on first use (in the calling thread's
// network namespace), so that connections made after it have their SYN
// stamped; false when this host cannot (not root, no cgroup v2).
func SYNReady() bool {
	_, err := synstamp.Default()
	return err == nil
}

// SocketCookie is the kernel's cookie of the socket fd (0: unknown). With
// the SYN stamper attached, the connection's stamps so far (its SYN, and
// its handshake's end if over) are kept for Handshake and SYNSent under
// it.
func SocketCookie(fd int) uint64 {
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return 0
	}
	if s := synstamp.Current(); s != nil {
		local, lerr := unix.Getsockname(fd)
		remote, rerr := unix.Getpeername(fd)
		if lerr == nil && rerr == nil {
			if st, ok := s.Find(addrPortOf(local), addrPortOf(remote)); ok {
				kept.put(c, [2]time.Time{st.SYN, st.Established})
			}
		}
	}
	return c
}

// addrPortOf is a TCP socket address's address and port.
func addrPortOf(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
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
	st := kept.get(cookie)
	return st[0], st[1]
}

// Cookie is the connection's socket cookie (0: unknown), its stamps kept
// (SocketCookie).
func (c *StampedConn) Cookie() uint64 {
	var cookie uint64
	_ = c.rc.Control(func(fd uintptr) { cookie = SocketCookie(int(fd)) })
	return cookie
}

// keptStamps holds stamps by socket cookie: the newest keptMax and up to as
// many before them (two generations, the older dropped whole).
type keptStamps struct {
	mu       sync.Mutex
	now, old map[uint64][2]time.Time
}

const keptMax = 1 << 16

var kept keptStamps

func (k *keptStamps) put(cookie uint64, st [2]time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.now == nil || len(k.now) >= keptMax {
		k.old, k.now = k.now, make(map[uint64][2]time.Time)
	}
	k.now[cookie] = st
}

func (k *keptStamps) get(cookie uint64) [2]time.Time {
	if cookie == 0 {
		return [2]time.Time{}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if st, ok := k.now[cookie]; ok {
		return st
	}
	return k.old[cookie]
}
