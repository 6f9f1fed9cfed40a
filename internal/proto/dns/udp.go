package dns

import (
	"errors"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"

	mdns "github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// udpResponder answers DNS over UDP on a thread of its own that sleeps in
// the kernel's recvfrom, as a C server does, instead of Go's netpoller:
// a query after the server idled wakes that thread directly, where the
// netpoller's hand-offs between parked runtime threads added tens of
// microseconds to the measured lookup (docs/performance-history.md).
type udpResponder struct {
	fd      int // a blocking duplicate of the socket, ours alone
	local   net.Addr
	h       mdns.Handler
	closing atomic.Bool
	done    chan struct{}
}

// pollEvery is how often a blocked read checks whether to stop.
const pollEvery = 200 * 1000 // µs

func newUDPResponder(pc *net.UDPConn, h mdns.Handler) (*udpResponder, error) {
	rc, err := pc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.Dup(int(s)) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	tv := unix.Timeval{Usec: pollEvery}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &udpResponder{fd: fd, local: pc.LocalAddr(), h: h, done: make(chan struct{})}, nil
}

func (u *udpResponder) serve() {
	defer close(u.done)
	runtime.LockOSThread()
	buf := make([]byte, 65535)
	for !u.closing.Load() {
		n, from, err := unix.Recvfrom(u.fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		req := new(mdns.Msg)
		if req.Unpack(buf[:n]) != nil {
			continue // not DNS: no answer, as the library's server does
		}
		w := &udpWriter{u: u, to: from}
		if len(req.Question) == 1 {
			q := req.Question[0]
			if _, _, a := asked(q); a.Delay(mdns.TypeToString[q.Qtype]) > 0 {
				go u.h.ServeDNS(w, req) // a late answer must not hold the others
				continue
			}
		}
		u.h.ServeDNS(w, req)
	}
}

func (u *udpResponder) Close() error {
	u.closing.Store(true)
	<-u.done
	return unix.Close(u.fd)
}

// udpWriter answers one query.
type udpWriter struct {
	u  *udpResponder
	to unix.Sockaddr
}

func (w *udpWriter) LocalAddr() net.Addr { return w.u.local }

func (w *udpWriter) RemoteAddr() net.Addr {
	switch a := w.to.(type) {
	case *unix.SockaddrInet4:
		return net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port)))
	case *unix.SockaddrInet6:
		return net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port)))
	}
	return nil
}

func (w *udpWriter) WriteMsg(m *mdns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func (w *udpWriter) Write(b []byte) (int, error) {
	if err := unix.Sendto(w.u.fd, b, 0, w.to); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (w *udpWriter) Close() error        { return nil }
func (w *udpWriter) TsigStatus() error   { return nil }
func (w *udpWriter) TsigTimersOnly(bool) {}
func (w *udpWriter) Hijack()             {}
