// Package sixin4 is a userspace 6in4 tunnel (RFC 4213) for kernels without
// the sit device: IPv6 packets read from a TUN device are sent inside IPv4
// protocol 41 to the peer, and protocol-41 packets from the peer are written
// back to the TUN device. Packets from any other IPv4 source are dropped, as
// RFC 4213 section 3.6 requires of a decapsulator.
//
// It moves packets in batches so it is not the bottleneck of a lab: the TUN
// device uses the kernel's segmentation offload (one read returns a batch of
// MTU-sized segments cut from a 64 KiB TCP super-packet, and writes coalesce
// them again), and the raw socket uses sendmmsg/recvmmsg.
//
// It imports nothing of v6lab.
package sixin4

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
	wgtun "golang.zx2c4.com/wireguard/tun"
)

// Protocol is the IPv4 protocol number of IPv6-in-IPv4.
const Protocol = 41

// offset is the headroom before each packet in a buffer: the TUN device
// needs 10 bytes for its virtio header, and received IPv4 headers (20
// bytes) sit just before it so decapsulation copies nothing.
const (
	offset   = 32
	ipv4Head = 20
	bufSize  = offset + 65535
)

// OpenTUN creates TUN device name with the given MTU in the calling thread's
// network namespace.
func OpenTUN(name string, mtu int) (wgtun.Device, error) {
	d, err := wgtun.CreateTUN(name, mtu)
	if err != nil {
		return nil, fmt.Errorf("sixin4: create TUN %s: %w", name, err)
	}
	return d, nil
}

// Listen opens the raw IPv4 protocol-41 socket on local, in the calling
// thread's network namespace.
func Listen(local netip.Addr) (*net.IPConn, error) {
	c, err := net.ListenIP("ip4:41", &net.IPAddr{IP: local.AsSlice()})
	if err != nil {
		return nil, fmt.Errorf("sixin4: raw protocol-41 socket on %s: %w", local, err)
	}
	// Deep socket buffers absorb the bursts a batch makes.
	_ = c.SetReadBuffer(8 << 20)
	_ = c.SetWriteBuffer(8 << 20)
	return c, nil
}

// Stats counts what the tunnel did.
type Stats struct {
	Encapsulated, Decapsulated atomic.Uint64
	// Dropped counts packets refused: not IPv6 inside, wrong peer, or
	// refused by the device or socket.
	Dropped atomic.Uint64
}

// Tunnel moves packets between a TUN device and a protocol-41 socket.
type Tunnel struct {
	dev    wgtun.Device
	conn   *net.IPConn
	pc     *ipv4.PacketConn
	remote *net.IPAddr
	peer   netip.Addr
	Stats  Stats
	wg     sync.WaitGroup
	once   sync.Once
	errMu  sync.Mutex
	err    error
}

// New starts a tunnel to remote. It owns dev and conn from now on.
func New(dev wgtun.Device, conn *net.IPConn, remote netip.Addr) *Tunnel {
	t := &Tunnel{dev: dev, conn: conn, pc: ipv4.NewPacketConn(conn), remote: &net.IPAddr{IP: remote.AsSlice()}, peer: remote}
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

func buffers(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, bufSize)
	}
	return out
}

// transient errors drop a packet, as a router would, without stopping.
func transient(err error) bool {
	return errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EMSGSIZE) || errors.Is(err, unix.EHOSTUNREACH) ||
		errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.EAGAIN)
}

// encapsulate: IPv6 from TUN -> IPv4 protocol 41 to the peer. The kernel
// adds the IPv4 header (TTL 64, protocol 41).
func (t *Tunnel) encapsulate() {
	defer t.wg.Done()
	batch := t.dev.BatchSize()
	bufs := buffers(batch)
	sizes := make([]int, batch)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = make([][]byte, 1)
		msgs[i].Addr = t.remote
	}
	for {
		n, err := t.dev.Read(bufs, sizes, offset)
		if err != nil && !errors.Is(err, wgtun.ErrTooManySegments) {
			t.fail(fmt.Errorf("sixin4: read TUN: %w", err))
			return
		}
		out := 0
		for i := 0; i < n; i++ {
			p := bufs[i][offset : offset+sizes[i]]
			if len(p) < 40 || p[0]>>4 != 6 {
				t.Stats.Dropped.Add(1)
				continue
			}
			msgs[out].Buffers[0] = p
			out++
		}
		for sent := 0; sent < out; {
			k, err := t.pc.WriteBatch(msgs[sent:out], 0)
			if err != nil {
				if transient(err) {
					t.Stats.Dropped.Add(1)
					sent++ // drop the packet the kernel refused
					continue
				}
				t.fail(fmt.Errorf("sixin4: send to %s: %w", t.peer, err))
				return
			}
			sent += k
			t.Stats.Encapsulated.Add(uint64(k))
		}
	}
}

// decapsulate: IPv4 protocol 41 from the peer -> IPv6 into TUN. A raw
// socket hands over the IPv4 header too; it is checked and skipped.
func (t *Tunnel) decapsulate() {
	defer t.wg.Done()
	batch := t.dev.BatchSize()
	bufs := buffers(batch)
	msgs := make([]ipv4.Message, batch)
	for i := range msgs {
		msgs[i].Buffers = [][]byte{bufs[i][offset-ipv4Head:]}
	}
	out := make([][]byte, 0, batch)
	for {
		n, err := t.pc.ReadBatch(msgs, 0)
		if err != nil {
			t.fail(fmt.Errorf("sixin4: receive: %w", err))
			return
		}
		out = out[:0]
		for i := 0; i < n; i++ {
			pkt, ok := t.inner(bufs[i], msgs[i].N)
			if !ok {
				t.Stats.Dropped.Add(1)
				continue
			}
			out = append(out, pkt)
		}
		if len(out) == 0 {
			continue
		}
		if _, err := t.dev.Write(out, offset); err != nil {
			if transient(err) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EIO) {
				t.Stats.Dropped.Add(uint64(len(out)))
				continue
			}
			t.fail(fmt.Errorf("sixin4: write TUN: %w", err))
			return
		}
		t.Stats.Decapsulated.Add(uint64(len(out)))
	}
}

// inner checks one received IPv4 datagram (n bytes at buf[offset-20:])
// and returns the buffer with the inner IPv6 packet at offset.
func (t *Tunnel) inner(buf []byte, n int) ([]byte, bool) {
	d := buf[offset-ipv4Head : offset-ipv4Head+n]
	if n < ipv4Head || d[0]>>4 != 4 || d[9] != Protocol {
		return nil, false
	}
	ihl := int(d[0]&0x0f) * 4
	if ihl < ipv4Head || n < ihl+40 {
		return nil, false
	}
	src, _ := netip.AddrFromSlice(d[12:16])
	if src != t.peer {
		return nil, false
	}
	if ihl != ipv4Head { // IPv4 options: move the packet to the offset
		copy(buf[offset:], d[ihl:])
	}
	end := offset + n - ihl
	if buf[offset]>>4 != 6 {
		return nil, false
	}
	return buf[:end], true
}

// Close stops both directions and closes the device and socket.
func (t *Tunnel) Close() error {
	t.once.Do(func() {
		t.dev.Close()
		t.conn.Close()
	})
	t.wg.Wait()
	return t.Err()
}
