package evloop

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The loop's system calls on its non-blocking sockets, made without telling
// Go's scheduler (RawSyscall): none of them blocks, and each that goes
// through the scheduler's entry and exit lets its monitor (sysmon) see a
// thread in a system call, take its P away when the call runs long (a
// connect or a write on loopback runs the peer's side of TCP too, tens of
// µs) and wake another thread for it: futex and nanosleep calls, and
// thread switches, that cost a loopback transaction more than the calls
// themselves (docs/performance-history.md). The blocking waits stay on Go's
// netpoller.

func errnoErr(e syscall.Errno) error {
	switch e {
	case 0:
		return nil
	case unix.EAGAIN:
		return unix.EAGAIN
	case unix.EINPROGRESS:
		return unix.EINPROGRESS
	case unix.EINTR:
		return unix.EINTR
	}
	return e
}

func rawSocket(family, typ, proto int) (int, error) {
	fd, _, e := unix.RawSyscall(unix.SYS_SOCKET, uintptr(family), uintptr(typ), uintptr(proto))
	if e != 0 {
		return -1, errnoErr(e)
	}
	return int(fd), nil
}

func rawSetsockoptInt(fd, level, opt, v int) error {
	val := int32(v)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&val)), 4, 0)
	return errnoErr(e)
}

func rawSetLinger0(fd int) error {
	l := unix.Linger{Onoff: 1, Linger: 0}
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_LINGER, uintptr(unsafe.Pointer(&l)), unsafe.Sizeof(l), 0)
	return errnoErr(e)
}

// rawConnect connects fd to ap (zone: the interface index, sockaddr.Of's).
func rawConnect(fd int, ap netip.AddrPort, zone uint32) error {
	var e syscall.Errno
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		var sa unix.RawSockaddrInet4
		sa.Family = unix.AF_INET
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], ap.Port())
		sa.Addr = a.Unmap().As4()
		_, _, e = unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
	} else {
		var sa unix.RawSockaddrInet6
		sa.Family = unix.AF_INET6
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], ap.Port())
		sa.Addr = a.As16()
		sa.Scope_id = zone
		_, _, e = unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
	}
	return errnoErr(e)
}

func rawWrite(fd int, b []byte) (int, error) {
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	if e != 0 {
		return 0, errnoErr(e)
	}
	return int(n), nil
}

// rawRecvmsg reads into p with its control messages into oob.
func rawRecvmsg(fd int, p, oob []byte) (n, oobn int, err error) {
	var iov unix.Iovec
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
	}
	var msg unix.Msghdr
	msg.Iov = &iov
	msg.SetIovlen(1)
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	if e != 0 {
		return 0, 0, errnoErr(e)
	}
	return int(r), int(msg.Controllen), nil
}

func rawClose(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

func rawEpollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	return errnoErr(e)
}
