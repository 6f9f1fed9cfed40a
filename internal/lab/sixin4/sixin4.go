// Package sixin4 is a userspace 6in4 tunnel (RFC 4213) for kernels without
// the sit device: IPv6 packets read from a TUN device are sent inside IPv4
// protocol 41 to the peer, and protocol-41 packets from the peer are written
// back to the TUN device. Packets from any other IPv4 source are dropped, as
// RFC 4213 section 3.6 requires of a decapsulator.
package sixin4

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Protocol is the IPv4 protocol number of IPv6-in-IPv4.
const Protocol = 41

// OpenTUN creates (or attaches to) TUN device name in the calling thread's
// network namespace, without packet information headers.
func OpenTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("sixin4: open /dev/net/tun: %w", err)
	}
	var req [unix.IFNAMSIZ + 64]byte
	copy(req[:unix.IFNAMSIZ-1], name)
	*(*uint16)(unsafe.Pointer(&req[unix.IFNAMSIZ])) = unix.IFF_TUN | unix.IFF_NO_PI
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&req[0]))); errno != 0 {
		unix.Close(fd)
		return nil, fmt.Errorf("sixin4: create TUN %s: %w", name, errno)
	}
	// Non-blocking, so reads and writes go through Go's poller and Close
	// interrupts them.
	return os.NewFile(uintptr(fd), "/dev/net/tun:"+name), nil
}

// Listen opens the raw IPv4 protocol-41 socket on local, in the calling
// thread's network namespace.
func Listen(local netip.Addr) (*net.IPConn, error) {
	c, err := net.ListenIP("ip4:41", &net.IPAddr{IP: local.AsSlice()})
	if err != nil {
		return nil, fmt.Errorf("sixin4: raw protocol-41 socket on %s: %w", local, err)
	}
	return c, nil
}

// Stats counts what the tunnel did.
type Stats struct {
	Encapsulated, Decapsulated atomic.Uint64
	// Dropped counts packets refused: not IPv6 inside, wrong peer, too big.
	Dropped atomic.Uint64
}

// Tunnel moves packets between a TUN device and a protocol-41 socket.
type Tunnel struct {
	tun    *os.File
	conn   *net.IPConn
	remote *net.IPAddr
	peer   netip.Addr
	Stats  Stats
	wg     sync.WaitGroup
	once   sync.Once
	errMu  sync.Mutex
	err    error
}

// New starts a tunnel to remote. It owns tun and conn from now on.
func New(tun *os.File, conn *net.IPConn, remote netip.Addr) *Tunnel {
	t := &Tunnel{tun: tun, conn: conn, remote: &net.IPAddr{IP: remote.AsSlice()}, peer: remote}
	t.wg.Add(2)
	go t.encapsulate()
	go t.decapsulate()
	return t
}

func (t *Tunnel) fail(err error) {
	if errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) {
		return
	}
	t.errMu.Lock()
	if t.err == nil {
		t.err = err
	}
	t.errMu.Unlock()
}

// Err is the first I/O error that stopped a direction, if any.
func (t *Tunnel) Err() error {
	t.errMu.Lock()
	defer t.errMu.Unlock()
	return t.err
}

// encapsulate: IPv6 from TUN -> IPv4 protocol 41 to the peer. The kernel
// adds the IPv4 header (TTL 64, protocol 41).
func (t *Tunnel) encapsulate() {
	defer t.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, err := t.tun.Read(buf)
		if err != nil {
			t.fail(fmt.Errorf("sixin4: read TUN: %w", err))
			return
		}
		if n < 40 || buf[0]>>4 != 6 {
			t.Stats.Dropped.Add(1)
			continue
		}
		if _, err := t.conn.WriteToIP(buf[:n], t.remote); err != nil {
			// A full socket buffer or an unreachable peer drops the
			// packet, as a router would; anything else is fatal.
			if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EMSGSIZE) || errors.Is(err, unix.EHOSTUNREACH) || errors.Is(err, unix.ENETUNREACH) {
				t.Stats.Dropped.Add(1)
				continue
			}
			t.fail(fmt.Errorf("sixin4: send to %s: %w", t.peer, err))
			return
		}
		t.Stats.Encapsulated.Add(1)
	}
}

// decapsulate: IPv4 protocol 41 from the peer -> IPv6 into TUN. Go strips
// the IPv4 header of packets read from an "ip4" socket.
func (t *Tunnel) decapsulate() {
	defer t.wg.Done()
	buf := make([]byte, 65535)
	for {
		n, from, err := t.conn.ReadFromIP(buf)
		if err != nil {
			t.fail(fmt.Errorf("sixin4: receive: %w", err))
			return
		}
		src, _ := netip.AddrFromSlice(from.IP)
		if src.Unmap() != t.peer || n < 40 || buf[0]>>4 != 6 {
			t.Stats.Dropped.Add(1)
			continue
		}
		if _, err := t.tun.Write(buf[:n]); err != nil {
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EIO) {
				t.Stats.Dropped.Add(1)
				continue
			}
			t.fail(fmt.Errorf("sixin4: write TUN: %w", err))
			return
		}
		t.Stats.Decapsulated.Add(1)
	}
}

// Close stops both directions and closes the device and socket.
func (t *Tunnel) Close() error {
	t.once.Do(func() {
		t.tun.Close()
		t.conn.Close()
	})
	t.wg.Wait()
	return t.Err()
}
