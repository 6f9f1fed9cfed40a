// Package tcpflow follows TCP connections to one server port in captured
// frames and computes, per connection, the Towson study's server-side
// figures: the delay from the client's request (its first data, the HTTP
// GET) to the client's ACK of the last byte of the server's reply, and the
// bytes of both directions in that time, retransmissions excluded
// (docs/metrics.md).
//
// It imports nothing of v6lab.
package tcpflow

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"
)

// Timeline is one connection as seen at the capture point.
type Timeline struct {
	// SYN is when the client's SYN passed; Request its first data;
	// LastAck the first client segment that acknowledged every byte the
	// server had sent (zero until then).
	SYN, Request, LastAck time.Time
	// Bytes are the IP bytes of both directions from Request to LastAck,
	// retransmitted segments left out; Packets the segments counted.
	// OutBytes are those the server sent, InBytes those it received.
	Bytes             int64
	OutBytes, InBytes int64
	Packets           int
	// Retransmissions are data segments that repeated bytes already seen,
	// in either direction.
	Retransmissions int
	// ServerBytes is the server's data (TCP payload) in that time.
	ServerBytes int64
}

// Complete reports whether the request and the final ACK were both seen.
func (t Timeline) Complete() bool { return !t.Request.IsZero() && !t.LastAck.IsZero() }

// Delay is LastAck - Request.
func (t Timeline) Delay() time.Duration { return t.LastAck.Sub(t.Request) }

// ThroughputMbps is Bytes over Delay in Mbit/s, both directions summed
// (it can exceed a link's rate); 0 when incomplete.
func (t Timeline) ThroughputMbps() float64 { return t.mbps(t.Bytes) }

// OutMbps is the server's sending direction, OutBytes over Delay: the
// study's server throughput, which a link's rate bounds.
func (t Timeline) OutMbps() float64 { return t.mbps(t.OutBytes) }

// InMbps is the direction toward the server (requests and ACKs).
func (t Timeline) InMbps() float64 { return t.mbps(t.InBytes) }

func (t Timeline) mbps(bytes int64) float64 {
	d := t.Delay().Seconds()
	if !t.Complete() || d <= 0 {
		return 0
	}
	return float64(bytes) * 8 / d / 1e6
}

// Tracker follows every connection to its port.
type Tracker struct {
	mu    sync.Mutex
	port  uint16
	conns map[netip.AddrPort]*conn
}

type conn struct {
	tl Timeline
	// Highest sequence end seen with data, per direction (c: client).
	cMax, sMax   uint32
	cSeen, sSeen bool
	// sData is the end of the server's data; acked: LastAck covers it.
	sData    uint32
	hasData  bool
	mss      int
	counting bool
}

// MaxConns bounds the connections followed at once.
const MaxConns = 1 << 20

// New follows connections to server port port.
func New(port uint16) *Tracker {
	return &Tracker{port: port, conns: map[netip.AddrPort]*conn{}}
}

// Reset forgets every connection and follows port from now on.
func (t *Tracker) Reset(port uint16) {
	t.mu.Lock()
	t.port, t.conns = port, map[netip.AddrPort]*conn{}
	t.mu.Unlock()
}

// Take returns and forgets the connection from client.
func (t *Tracker) Take(client netip.AddrPort) (Timeline, bool) {
	key := netip.AddrPortFrom(client.Addr().Unmap(), client.Port())
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.conns[key]
	if !ok {
		return Timeline{}, false
	}
	delete(t.conns, key)
	return c.tl, true
}

// segment is the part of a frame the tracker reads.
type segment struct {
	src, dst      netip.AddrPort
	seq, ack      uint32
	flags         byte
	payload       int
	ipLen, hdrLen int // IP packet length; IP and TCP header lengths
	mss           int // the SYN's MSS option, if any
}

const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagACK = 0x10
)

// parse reads an Ethernet frame's IPv4 or IPv6 TCP segment. wireLen is
// the frame's length on the wire (the capture may hold less).
func parse(frame []byte, wireLen int) (segment, bool) {
	var s segment
	if len(frame) < 14 {
		return s, false
	}
	ip := frame[14:]
	var l4 []byte
	var src, dst netip.Addr
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case 0x0800:
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != 6 {
			return s, false
		}
		ihl := int(ip[0]&0x0f) * 4
		if ihl < 20 || len(ip) < ihl {
			return s, false
		}
		s.ipLen = int(binary.BigEndian.Uint16(ip[2:4]))
		src, dst = netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		l4, s.hdrLen = ip[ihl:], ihl
	case 0x86dd:
		if len(ip) < 40 || ip[0]>>4 != 6 || ip[6] != 6 {
			return s, false
		}
		s.ipLen = 40 + int(binary.BigEndian.Uint16(ip[4:6]))
		src, dst = netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		l4, s.hdrLen = ip[40:], 40
	default:
		return s, false
	}
	if s.ipLen == 0 { // a large offloaded packet may leave it unset
		s.ipLen = wireLen - 14
	}
	if len(l4) < 20 {
		return s, false
	}
	off := int(l4[12]>>4) * 4
	if off < 20 || s.ipLen < s.hdrLen+off {
		return s, false
	}
	s.src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(l4[0:2]))
	s.dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(l4[2:4]))
	s.seq, s.ack, s.flags = binary.BigEndian.Uint32(l4[4:8]), binary.BigEndian.Uint32(l4[8:12]), l4[13]
	s.payload = s.ipLen - s.hdrLen - off
	s.hdrLen += off
	if s.flags&flagSYN != 0 {
		opts := l4[20:min(off, len(l4))]
		for len(opts) > 0 {
			kind := opts[0]
			if kind == 0 {
				break
			}
			if kind == 1 {
				opts = opts[1:]
				continue
			}
			if len(opts) < 2 || int(opts[1]) < 2 || int(opts[1]) > len(opts) {
				break
			}
			if kind == 2 && opts[1] == 4 {
				s.mss = int(binary.BigEndian.Uint16(opts[2:4]))
			}
			opts = opts[opts[1]:]
		}
	}
	return s, true
}

// after reports whether sequence number a is after b (RFC 1982).
func after(a, b uint32) bool { return int32(a-b) > 0 }

// Frame reads one captured frame: at is its capture time, wireLen its
// length on the wire. Frames not to or from the port are ignored.
func (t *Tracker) Frame(at time.Time, frame []byte, wireLen int) {
	s, ok := parse(frame, wireLen)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var client netip.AddrPort
	fromClient := s.dst.Port() == t.port
	switch {
	case fromClient:
		client = s.src
	case s.src.Port() == t.port:
		client = s.dst
	default:
		return
	}
	c := t.conns[client]
	if c == nil {
		if len(t.conns) >= MaxConns {
			return
		}
		c = &conn{}
		t.conns[client] = c
	}
	if s.flags&flagSYN != 0 && fromClient && c.tl.SYN.IsZero() {
		c.tl.SYN = at
	}
	if s.mss > 0 && (c.mss == 0 || s.mss < c.mss) {
		c.mss = s.mss
	}
	end := s.seq + uint32(s.payload)
	if s.payload > 0 {
		max, seen := &c.sMax, &c.sSeen
		if fromClient {
			max, seen = &c.cMax, &c.cSeen
		}
		if *seen && !after(end, *max) {
			c.tl.Retransmissions++
			return // repeated bytes: not counted
		}
		*max, *seen = end, true
		if fromClient && c.tl.Request.IsZero() {
			c.tl.Request, c.counting = at, true
		}
		if !fromClient {
			c.sData, c.hasData = end, true
			if !c.tl.LastAck.IsZero() {
				// More data after the final ACK: the transfer goes on.
				c.tl.LastAck, c.counting = time.Time{}, true
			}
			if c.counting {
				c.tl.ServerBytes += int64(s.payload)
			}
		}
	}
	if c.counting {
		n := int64(s.ipLen)
		c.tl.Packets++
		// An offloaded packet leaves as several segments, each with its
		// own headers.
		if c.mss > 0 && s.payload > c.mss {
			segs := (s.payload + c.mss - 1) / c.mss
			n += int64((segs - 1) * s.hdrLen)
			c.tl.Packets += segs - 1
		}
		c.tl.Bytes += n
		if fromClient {
			c.tl.InBytes += n
		} else {
			c.tl.OutBytes += n
		}
	}
	if fromClient && c.counting && c.hasData && s.flags&flagACK != 0 && !after(c.sData, s.ack) {
		c.tl.LastAck, c.counting = at, false
	}
}
