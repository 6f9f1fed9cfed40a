package synstamp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is a BPF ring buffer mapped into this process: its consumer
// position (written here), and its producer position and records (the
// kernel's, read only; the records mapped twice in a row, so that one
// that wraps reads whole).
type ring struct {
	cons, prod []byte
	data       []byte
	mask       uint64
}

// Record headers (BPF_RINGBUF_HDR_SZ bytes): the length, with a bit for a
// record still being written and one for a discarded one.
const (
	ringHdr     = 8
	ringBusy    = 1 << 31
	ringDiscard = 1 << 30
)

func openRing(fd, size int) (*ring, error) {
	page := os.Getpagesize()
	cons, err := unix.Mmap(fd, 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap the consumer page: %w", err)
	}
	prod, err := unix.Mmap(fd, int64(page), page+2*size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Munmap(cons)
		return nil, fmt.Errorf("mmap the records: %w", err)
	}
	return &ring{cons: cons, prod: prod, data: prod[page:], mask: uint64(size - 1)}, nil
}

func (r *ring) close() {
	unix.Munmap(r.cons)
	unix.Munmap(r.prod)
}

// read hands each record written since the last read to fn, in order,
// and frees their space; it stops at a record still being written.
func (r *ring) read(fn func(rec []byte)) {
	consPos := (*uint64)(unsafe.Pointer(&r.cons[0]))
	cons := atomic.LoadUint64(consPos)
	prod := atomic.LoadUint64((*uint64)(unsafe.Pointer(&r.prod[0])))
	for cons < prod {
		at := cons & r.mask
		// Read atomically: the kernel clears the busy bit after writing
		// the record, with a barrier.
		hdr := atomic.LoadUint32((*uint32)(unsafe.Pointer(&r.data[at])))
		if hdr&ringBusy != 0 {
			break
		}
		n := uint64(hdr &^ (ringBusy | ringDiscard))
		if hdr&ringDiscard == 0 {
			fn(r.data[at+ringHdr : at+ringHdr+n])
		}
		cons += (ringHdr + n + 7) &^ 7
	}
	atomic.StoreUint64(consPos, cons)
}

// tuple is a connection's local and remote addresses (IPv4 ones mapped
// into IPv6) and ports: plain bytes, so that the map hashes them as such
// (netip.AddrPort holds a pointer, and hashed 5 times slower).
type tuple struct {
	local, remote [16]byte
	lport, rport  uint16
}

func tupleOf(local, remote netip.AddrPort) tuple {
	return tuple{local.Addr().As16(), remote.Addr().As16(), local.Port(), remote.Port()}
}

// stamp is a connection's SYN and handshake's end, CLOCK_MONOTONIC ns.
type stamp struct{ syn, est int64 }

// drain reads the ring into the stamps kept; s.mu held.
func (s *Stamper) drain() {
	if s.r == nil {
		return
	}
	s.r.read(func(rec []byte) {
		if len(rec) < recSize {
			return
		}
		k, ok := recTuple(rec)
		if !ok {
			return
		}
		ns := int64(binary.NativeEndian.Uint64(rec[recNS:]))
		if binary.NativeEndian.Uint32(rec[recOp:]) == opActiveEstablished {
			if st, ok := s.now[k]; ok {
				st.est = ns
				s.now[k] = st
			} else if st, ok := s.old[k]; ok {
				st.est = ns
				s.old[k] = st
			}
			return
		}
		if len(s.now) >= kept {
			clear(s.old)
			s.old, s.now = s.now, s.old
		}
		s.now[k] = stamp{syn: ns}
	})
}

// recTuple is a record's connection.
func recTuple(rec []byte) (tuple, bool) {
	k := tuple{lport: uint16(binary.NativeEndian.Uint32(rec[recLocalPort:]))}
	// The remote port in network order, in the upper half of the u32 on
	// a little-endian host (the lower on a big-endian one).
	rp := rec[recRemotePort : recRemotePort+4]
	k.rport = uint16(rp[2])<<8 | uint16(rp[3])
	if binary.NativeEndian.Uint32(rp) < 1<<16 {
		k.rport = uint16(rp[0])<<8 | uint16(rp[1])
	}
	switch binary.NativeEndian.Uint32(rec[recFamily:]) {
	case unix.AF_INET:
		k.local, k.remote = v4mapped(rec[recLocal:]), v4mapped(rec[recRemote:])
	case unix.AF_INET6:
		k.local, k.remote = [16]byte(rec[recLocal:]), [16]byte(rec[recRemote:])
	default:
		return tuple{}, false
	}
	return k, true
}

// v4mapped is the IPv4 address in b's first 4 bytes as netip's As16
// gives it (::ffff:a.b.c.d).
func v4mapped(b []byte) (a [16]byte) {
	a[10], a[11] = 0xff, 0xff
	copy(a[12:], b[:4])
	return a
}

// get is the stamps kept of k; s.mu held.
func (s *Stamper) get(k tuple) (stamp, bool) {
	if st, ok := s.now[k]; ok {
		return st, true
	}
	st, ok := s.old[k]
	return st, ok
}

// drainLoop reads the ring every drainEvery until Close, so that records
// of connections nobody asks about do not fill it.
func (s *Stamper) drainLoop() {
	defer close(s.done)
	t := time.NewTicker(drainEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			s.drain()
			s.mu.Unlock()
		}
	}
}
