// Package capture proves on the wire what a path claims: an AF_PACKET
// socket on one interface counts the measured service's packets as IPv4,
// native IPv6, or IPv6 inside IPv4 protocol 41 (6in4).
//
// It reads the socket through a receive ring (pktring), a block of frames
// at a time: it runs in the measuring client's process, and a read per
// frame would take that process's CPU on every packet of the run.
//
// It imports only path, pktring and result.
package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/wire/pktring"
)

// Class is what a frame carried.
type Class int

// Frame classes.
const (
	Ignored Class = iota // not the measured service's traffic
	IPv4
	IPv6
	SixIn4
	NAT64
	// DSLite is IPv4 inside IPv6 (next header 4): a DS-Lite softwire.
	DSLite
)

// Filter selects the measured service's packets: TCP or UDP with Port (or
// Also: the port of the transaction's DNS lookup) at either end, or any
// TCP or UDP packet when Port is 0 (a transport test, whose data ports are
// chosen per test).
type Filter struct {
	Port uint16
	Also uint16
	// UDP counts only UDP packets on Port (HTTP/3's QUIC): a TCP packet
	// there is not the service's.
	UDP bool
	// Nat64 are the prefixes of the lab's nat64 path: a packet from or to
	// one of them is that path's (translated IPv4, and its DNS64 lookups
	// over IPv6).
	Nat64 []netip.Prefix
	// Path is the path of the window's run, and Wire the form its packets
	// must take (path.Kind's Wire, or an access link's form): a QUIC
	// connection opened in the window is Path's, and a kept one of
	// another path is told apart by it (see Capture.kept).
	Path path.Path
	Wire string
}

// nat64 says whether src or dst (raw 4- or 16-byte addresses) lies in
// one of f's nat64 prefixes.
func (f Filter) nat64(src, dst []byte) bool {
	for _, b := range [][]byte{src, dst} {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			continue
		}
		for _, p := range f.Nat64 {
			if p.Contains(a) {
				return true
			}
		}
	}
	return false
}

// Classify reads an Ethernet frame (at least its headers).
func Classify(frame []byte, f Filter) Class {
	return inspect(frame, f).class
}

// flowKey names a TCP connection or a UDP flow the same in both
// directions: protocol, then the lower endpoint's address and port, then
// the higher's (IPv4 addresses mapped into 16 bytes).
type flowKey [1 + 2*(16+2)]byte

// frameInfo is what a window needs of one frame.
type frameInfo struct {
	class Class
	flow  flowKey
	// opens: the frame starts a flow in the window: a TCP SYN without
	// ACK, or a UDP datagram to the service (any UDP datagram when the
	// filter takes every port).
	opens bool
	// mayStray: if its flow was not opened in the window (nor made the
	// run's by the client's new data on it: a kept connection), the
	// frame is a late packet of an earlier run, not this run's: it comes from the
	// service (a server retransmitting to clients whose resets an
	// impaired run lost; a DNS answer after its run gave up), or it is a
	// client's reset of a connection it no longer has, or the FIN or bare
	// ACK of one it closed (from either end when the filter takes every
	// port). Anything else a client sends (data, a SYN) counts, opened or
	// not, so a client's own traffic is always proven.
	mayStray bool
	// udp: a datagram. A UDP flow first seen from the service in the
	// window is an earlier run's (a QUIC server retransmitting to a client
	// whose close a lossy link dropped): what the client answers on it (a
	// closed connection's CONNECTION_CLOSE again) is stray too.
	udp bool
	// quic: a datagram on an HTTP/3 service's port (Filter.UDP). Only a
	// long-header packet from the client (an Initial: a handshake) opens
	// its flow; a kept connection's datagrams (1-RTT, short header) do
	// not.
	quic bool
	// seg is a TCP segment's place in its connection, when one end is the
	// service (which end is the client is known).
	seg segPlace
}

// segPlace is where a TCP segment lies in its connection's sequence space.
type segPlace struct {
	fromClient bool   // sent by the client (to the service), else by the service
	end        uint32 // the client's: sequence number after its data and FIN
	carries    bool   // the client's: it has data or a FIN (it can be retransmitted)
	ack        uint32 // the service's: what it has received of the client
	hasAck     bool
}

// flowMark is what recent windows saw of a TCP connection's client data:
// the furthest the client sent and the service acknowledged.
type flowMark struct {
	gen          uint64 // the last window that saw the connection
	sent, acked  uint32
	hasSent, has bool
}

// retransmits tells whether a client segment ending at end carries only
// data already seen sent or acknowledged: a retransmission (under loss,
// into the next run), not new data.
func (m flowMark) retransmits(end uint32) bool {
	before := func(a, b uint32) bool { return int32(a-b) <= 0 }
	return (m.hasSent && before(end, m.sent)) || (m.has && before(end, m.acked))
}

// note records s in m.
func (m *flowMark) note(s segPlace, gen uint64) {
	after := func(a, b uint32) bool { return int32(a-b) > 0 }
	m.gen = gen
	switch {
	case s.fromClient && s.carries && (!m.hasSent || after(s.end, m.sent)):
		m.sent, m.hasSent = s.end, true
	case !s.fromClient && s.hasAck && (!m.has || after(s.ack, m.acked)):
		m.acked, m.has = s.ack, true
	}
}

func inspect(frame []byte, f Filter) frameInfo {
	if len(frame) < 14 {
		return frameInfo{}
	}
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case 0x0800:
		return inspect4(frame[14:], f)
	case 0x86DD:
		return inspect6(frame[14:], f)
	}
	return frameInfo{}
}

func inspect4(ip []byte, f Filter) frameInfo {
	if len(ip) < 20 || ip[0]>>4 != 4 {
		return frameInfo{}
	}
	ihl := int(ip[0]&0x0f) * 4
	if ihl < 20 || len(ip) < ihl {
		return frameInfo{}
	}
	if ip[9] == 41 {
		if fi := inspect6(ip[ihl:], Filter{Port: f.Port, Also: f.Also, UDP: f.UDP}); fi.class == IPv6 {
			fi.class = SixIn4
			return fi
		}
		return frameInfo{}
	}
	if fi, ok := transport(ip[9], ip[12:16], ip[16:20], ip[ihl:], int(binary.BigEndian.Uint16(ip[2:4]))-ihl, f); ok {
		fi.class = IPv4
		if f.nat64(ip[12:16], ip[16:20]) {
			fi.class = NAT64
		}
		return fi
	}
	return frameInfo{}
}

func inspect6(ip []byte, f Filter) frameInfo {
	if len(ip) < 40 || ip[0]>>4 != 6 {
		return frameInfo{}
	}
	if ip[6] == 4 { // IPv4 in IPv6: a softwire's, if it carries the service
		if fi := inspect4(ip[40:], Filter{Port: f.Port, Also: f.Also, UDP: f.UDP}); fi.class == IPv4 {
			fi.class = DSLite
			return fi
		}
		return frameInfo{}
	}
	// Extension headers are not followed.
	if fi, ok := transport(ip[6], ip[8:24], ip[24:40], ip[40:], int(binary.BigEndian.Uint16(ip[4:6])), f); ok {
		fi.class = IPv6
		if f.nat64(ip[8:24], ip[24:40]) {
			fi.class = NAT64
		}
		return fi
	}
	return frameInfo{}
}

// transport reads a TCP or UDP header between src and dst (l4, of a
// segment of size bytes, header included, as the IP header says): whether
// it has f.Port (or f.Also) at either end, its flow, and whether it opens
// it.
func transport(proto byte, src, dst, l4 []byte, size int, f Filter) (frameInfo, bool) {
	if (proto != 6 && proto != 17) || len(l4) < 4 {
		return frameInfo{}, false
	}
	sp, dp := binary.BigEndian.Uint16(l4[0:2]), binary.BigEndian.Uint16(l4[2:4])
	service := func(p uint16) bool { return p == f.Port || (f.Also != 0 && p == f.Also) }
	if f.Port != 0 && !service(sp) && !service(dp) {
		return frameInfo{}, false
	}
	if f.UDP && proto != 17 && (sp == f.Port || dp == f.Port) {
		return frameInfo{}, false // TCP on a QUIC service's port
	}
	var fi frameInfo
	fromService := f.Port != 0 && service(sp) && !service(dp)
	if proto == 6 {
		// SYN set, ACK clear; a header cut short opens nothing.
		fi.opens = len(l4) >= 14 && l4[13]&0x12 == 0x02
		toService := f.Port != 0 && service(dp) && len(l4) >= 14
		reset := toService && l4[13]&0x04 != 0
		// A FIN or an ACK alone, without data: an earlier connection's
		// close, which a run that follows at once (pause: 0s) can see.
		bare := len(l4) >= 14 && l4[13]&0x11 != 0 && l4[13]&0x0e == 0 && size == int(l4[12]>>4)*4
		// A FIN with data (TLS's close_notify sent with it) is a close
		// too: retransmitted under loss, it lands in the next run.
		fin := len(l4) >= 14 && l4[13]&0x01 != 0
		closing := toService && (bare || fin)
		// Taking every port (a transport test's data port is chosen per
		// trial), which end is the client is unknown: a FIN, reset or
		// bare ACK from either end is an earlier close (a peer's FIN
		// retransmitted into the next run, and the ACK it gets back).
		anyEnd := f.Port == 0 && len(l4) >= 14 && (bare || l4[13]&0x06 == 0x04)
		fi.mayStray = fromService || reset || closing || anyEnd
		if len(l4) >= 14 && (toService || fromService) {
			fi.seg = segment(l4, size, toService)
		}
	} else {
		fi.quic = f.UDP && (sp == f.Port || dp == f.Port)
		fi.opens = f.Port == 0 || (service(dp) && !fi.quic)
		if fi.quic && dp == f.Port && len(l4) > 8 {
			// RFC 9000 17.2: the header form bit; a client sends long
			// headers only while its handshake is under way.
			fi.opens = l4[8]&0x80 != 0
		}
		fi.mayStray, fi.udp = fromService, true
	}
	a, b := endpoint(src, sp), endpoint(dst, dp)
	if bytes.Compare(a[:], b[:]) > 0 {
		a, b = b, a
	}
	fi.flow[0] = proto
	copy(fi.flow[1:], a[:])
	copy(fi.flow[1+len(a):], b[:])
	return fi, true
}

// segment reads a TCP header's sequence and acknowledgment numbers.
func segment(l4 []byte, size int, fromClient bool) segPlace {
	s := segPlace{fromClient: fromClient}
	if fromClient {
		n := size - int(l4[12]>>4)*4
		if l4[13]&0x01 != 0 { // a FIN takes a sequence number
			n++
		}
		s.carries = n > 0 && l4[13]&0x02 == 0
		s.end = binary.BigEndian.Uint32(l4[4:8]) + uint32(max(n, 0))
		return s
	}
	s.ack, s.hasAck = binary.BigEndian.Uint32(l4[8:12]), l4[13]&0x10 != 0
	return s
}

// endpoint is an address (IPv4 mapped into 16 bytes) and a port.
func endpoint(addr []byte, port uint16) (e [18]byte) {
	if len(addr) == 4 {
		e[10], e[11] = 0xff, 0xff
		copy(e[12:16], addr)
	} else {
		copy(e[:16], addr)
	}
	binary.BigEndian.PutUint16(e[16:], port)
	return e
}

// Counts are packets seen per class.
type Counts struct {
	IPv4   uint64 `json:"ipv4"`
	IPv6   uint64 `json:"ipv6"`
	SixIn4 uint64 `json:"6in4"`
	NAT64  uint64 `json:"nat64"`
	DSLite uint64 `json:"dslite,omitempty"`
	// Stray are packets of the measured service that belong to no flow
	// opened in the window (late packets of an earlier run): not counted
	// in any class, and no reason to fail the run.
	Stray uint64 `json:"stray"`
	// Dropped are frames of any kind the kernel could not put in the
	// ring in the window (the reader fell behind): not seen, so not
	// proven either way.
	Dropped uint64 `json:"dropped,omitempty"`
}

// ErrWrongWire is wrapped when the wire did not carry what the path claims.
var ErrWrongWire = errors.New("the wire did not carry the path's traffic")

// Proves checks that every counted packet was of p's kind, and there was one.
func (c Counts) Proves(p path.Path) error {
	// A dual-stack client's run may carry either family, or both (its
	// attempts race), but nothing tunnelled or translated.
	return c.proves(p, p.Kind().Wire, "the wire")
}

// proves checks that every counted packet was of the form wire, and there
// was one; where names the link in the error.
func (c Counts) proves(p path.Path, wire, where string) error {
	own := map[string]uint64{"ipv4": c.IPv4, "ipv6": c.IPv6, "6in4": c.SixIn4, "nat64": c.NAT64, "dslite": c.DSLite, "dual": c.IPv4 + c.IPv6}[wire]
	if own == 0 || c.IPv4+c.IPv6+c.SixIn4+c.NAT64+c.DSLite != own {
		return fmt.Errorf("capture: path %s, but %s carried %d IPv4, %d IPv6, %d 6in4, %d nat64 and %d dslite packets: %w", p, where, c.IPv4, c.IPv6, c.SixIn4, c.NAT64, c.DSLite, ErrWrongWire)
	}
	return nil
}

// Capture counts frames on one interface. Each frame carries the kernel's
// receive time, and only frames received inside the current window count,
// so a frame of the previous run that is read late never lands in the next.
type Capture struct {
	ring    *pktring.Ring
	ringErr error      // why FromFD could not set up the ring (then nothing counts)
	mu      sync.Mutex // guards filter, window, counts and the ring's position
	filter  Filter
	from    time.Time // window start; zero: counting from the first frame
	counts  Counts
	flows   map[flowKey]bool     // flows opened in the window or kept connections its client sent new data on (false), or UDP flows an earlier run left (true)
	marks   map[flowKey]flowMark // TCP connections' client data seen in recent windows
	kept    map[flowKey]keptFlow // QUIC connections' paths, over every window (quic)
	gen     uint64               // the window's number, for marks
	last    time.Time            // receive time of the last frame processed
	wg      sync.WaitGroup
	closing atomic.Bool
	pcap    *pcapgo.Writer // counted frames are also written here, if set
	pcapErr error
	tap     func(at time.Time, frame []byte, wireLen int)
}

// ringConfig sizes the capture's ring. Snap is enough for every header
// used. A block not full is handed over after Retire, so a frame is read
// at most about 2×Retire after it passed (Drain waits that long at a
// run's end); 32 blocks of 256 KiB hold about 30,000 frames.
var ringConfig = pktring.Config{Snap: snap, Retire: retire, BlockSize: 256 << 10, Blocks: 32}

// markWindows is how many windows a connection's marks outlive it: a
// retransmission backs off (0.2, 0.4, 0.8 s...) past a short run or two.
const markWindows = 4

const (
	snap   = 160
	retire = 4 * time.Millisecond
)

// Open starts counting on interface ifname. It must run in the interface's
// network namespace (see lab.Do); the socket stays there.
func Open(ifname string, f Filter) (*Capture, error) {
	fd, err := OpenSocket(ifname)
	if err != nil {
		return nil, err
	}
	c := FromFD(fd, f)
	if c.ringErr != nil {
		return nil, c.ringErr
	}
	return c, nil
}

// OpenSocket opens the packet socket on ifname, taking no frame yet, to
// hand to another process (which uses FromFD).
func OpenSocket(ifname string) (int, error) {
	fd, err := pktring.Socket(ifname)
	if err != nil {
		return -1, fmt.Errorf("capture: %w", err)
	}
	return fd, nil
}

// FromFD counts on a socket from OpenSocket, opened elsewhere (for
// instance by a parent process in another namespace). If its ring cannot
// be set up, nothing is counted and every run fails its check with why.
func FromFD(fd int, f Filter) *Capture {
	c := &Capture{filter: f, flows: make(map[flowKey]bool), marks: make(map[flowKey]flowMark)}
	if c.ring, c.ringErr = pktring.New(fd, ringConfig); c.ringErr != nil {
		c.ringErr = fmt.Errorf("capture: %w", c.ringErr)
		return c
	}
	c.wg.Add(1)
	go c.loop()
	return c
}

// Check adapts a Capture to a per-run wire check: counts start at zero for
// each run and must prove its path at the end.
type Check struct {
	C *Capture
	// Ports gives each protocol's service port; UDP says which count
	// only UDP there (Filter.UDP).
	Ports map[string]uint16
	UDP   map[string]bool
	// Lookups gives, per server key, the port of the DNS server whose
	// lookups its transactions make first (none for the DNS server).
	Lookups map[string]uint16
	// Nat64 are the lab's nat64 prefixes (Filter.Nat64), if it has the path.
	Nat64 []netip.Prefix
	// ClientSide, when set, counts on r1's link to the client: a nat64
	// run must show IPv6 there, and no IPv4, as it shows the translated
	// IPv4 between the routers.
	ClientSide *Capture
}

// Quiet is the gap left before a run's window opens and after it closes:
// the last packets of a connection (its RST, a crossing FIN) follow its end
// by microseconds; this lets them pass so no run sees another's.
const Quiet = 20 * time.Millisecond

// Start opens the window for a run, after a quiet gap. A transaction's
// DNS lookup is counted with it: its packets must carry the path too.
func (k Check) Start(protocol string, p path.Path) {
	time.Sleep(Quiet)
	kind := p.Kind()
	f := Filter{Port: k.Ports[protocol], Nat64: k.Nat64, Also: k.Lookups[protocol], UDP: k.UDP[protocol], Path: p, Wire: kind.Wire}
	k.C.Reset(f)
	if k.ClientSide != nil {
		access := kind.Access
		if access == "" {
			access = kind.Wire
		}
		k.ClientSide.Reset(Filter{Port: f.Port, Also: f.Also, UDP: f.UDP, Path: p, Wire: access})
	}
}

// Stop returns the run's counts and whether they prove p.
func (k Check) Stop(p path.Path) (result.Wire, error) {
	time.Sleep(Quiet) // the run's own last packets
	k.C.Drain()
	c := k.C.Counts()
	w := result.Wire{IPv4: c.IPv4, IPv6: c.IPv6, SixIn4: c.SixIn4, NAT64: c.NAT64, DSLite: c.DSLite, Stray: c.Stray, Dropped: c.Dropped}
	err := c.Proves(p)
	if k.C.Err() != nil {
		return w, k.C.Err()
	}
	if access := p.Kind().Access; k.ClientSide != nil && access != "" {
		k.ClientSide.Drain()
		cs := k.ClientSide.Counts()
		w.ClientSide = &result.Wire{IPv4: cs.IPv4, IPv6: cs.IPv6, SixIn4: cs.SixIn4, DSLite: cs.DSLite, Stray: cs.Stray, Dropped: cs.Dropped}
		if err == nil {
			// The client's access link is IPv6 only.
			err = cs.proves(p, access, "r1's link to the client (IPv6 only)")
		}
	}
	return w, err
}

func (c *Capture) loop() {
	defer c.wg.Done()
	for !c.closing.Load() {
		// The timeout lets Close stop the reader.
		if !c.ring.Wait(100 * time.Millisecond) {
			continue
		}
		c.mu.Lock()
		c.ring.Read(c.frame)
		c.mu.Unlock()
	}
}

// frame counts one frame the kernel received at at (with c.mu held).
func (c *Capture) frame(at time.Time, frame []byte, n int) {
	c.last = at
	if at.Before(c.from) {
		// The last window's tail, read late: only its marks matter.
		if fi := inspect(frame, c.filter); fi.class != Ignored {
			c.note(fi)
		}
		return
	}
	fi := inspect(frame, c.filter)
	if fi.class == Ignored {
		return
	}
	class := fi.class
	stale, seen := c.flows[fi.flow]
	switch {
	case fi.quic:
		class = c.quic(at, fi, seen, stale)
	case seen && stale: // a UDP flow an earlier run left
		c.counts.Stray++
		class = Ignored
	case fi.opens:
		c.flows[fi.flow] = false
	case !seen && fi.mayStray:
		if fi.udp {
			c.flows[fi.flow] = true
		}
		c.counts.Stray++
		class = Ignored
	case !seen && fi.seg.fromClient && fi.seg.carries && c.retransmitted(fi):
		// A client's data an earlier run already carried, sent again
		// under loss after its run ended: new data on a connection kept
		// from an earlier run still counts.
		c.counts.Stray++
		class = Ignored
	case !seen && fi.seg.fromClient && fi.seg.carries:
		// New data on a connection kept from an earlier run (keepalive):
		// it carries this run's request, so the server's replies on it
		// are this run's too, not stray.
		c.flows[fi.flow] = false
	}
	c.note(fi)
	switch class {
	case IPv4:
		c.counts.IPv4++
	case IPv6:
		c.counts.IPv6++
	case SixIn4:
		c.counts.SixIn4++
	case NAT64:
		c.counts.NAT64++
	case DSLite:
		c.counts.DSLite++
	}
	if c.tap != nil {
		c.tap(at, frame, n)
	}
	if c.pcap != nil && c.pcapErr == nil {
		c.pcapErr = c.pcap.WritePacket(gopacket.CaptureInfo{Timestamp: at, CaptureLength: len(frame), Length: n}, frame)
	}
}

// quic counts a datagram of an HTTP/3 service's QUIC port and returns its
// class, or Ignored when it is stray. A connection is its window's path's
// from its first long-header packet on (Capture.kept), in every later
// window too. A datagram of a flow not opened in the window counts if the
// flow is the running path's own (a kept connection: a leak over another
// form still fails the run); else, of another form than the running
// path's, it is another path's kept connection (quic-go's path MTU probes
// and ACKs, the server's datagrams) or settling's: stray. Of the path's
// own form, it is taken as the run's, as a client's datagram on an unknown
// flow is; a flow the service sent first on is an earlier run's.
func (c *Capture) quic(at time.Time, fi frameInfo, seen, stale bool) Class {
	if fi.opens {
		c.flows[fi.flow] = false
		c.keep(fi.flow, keptFlow{path: c.filter.Path, last: at})
		return fi.class
	}
	o, known := c.kept[fi.flow]
	if known {
		o.last = at
		c.kept[fi.flow] = o
	}
	own := known && c.filter.Path != "" && o.path == c.filter.Path
	switch {
	case seen && !stale || own:
		c.flows[fi.flow] = false
		return fi.class
	case c.filter.Wire != "" && !ofForm(fi.class, c.filter.Wire), seen && stale:
		c.counts.Stray++
		return Ignored
	case !seen && fi.mayStray:
		c.flows[fi.flow] = true
		c.counts.Stray++
		return Ignored
	}
	c.flows[fi.flow] = false
	return fi.class
}

// keptFlow is a QUIC connection's path (that of the window its first
// long-header packet was seen in) and when it was last seen.
type keptFlow struct {
	path path.Path
	last time.Time
}

// keptFor is how long a QUIC connection is remembered after its last
// datagram: far past quic-go's 30 s idle timeout, after which a
// connection sends nothing more.
const keptFor = 5 * time.Minute

// keep records f's path.
func (c *Capture) keep(f flowKey, k keptFlow) {
	if c.kept == nil {
		c.kept = make(map[flowKey]keptFlow)
	}
	c.kept[f] = k
}

// ofForm says whether a frame of class is of the form wire (a path.Kind's
// Wire or Access).
func ofForm(class Class, wire string) bool {
	switch wire {
	case "ipv4":
		return class == IPv4
	case "ipv6":
		return class == IPv6
	case "6in4":
		return class == SixIn4
	case "nat64":
		return class == NAT64
	case "dslite":
		return class == DSLite
	case "dual":
		return class == IPv4 || class == IPv6
	}
	return false
}

// note keeps what a TCP segment says of its connection's client data.
func (c *Capture) note(fi frameInfo) {
	if !fi.seg.carries && !fi.seg.hasAck {
		return
	}
	if c.marks == nil {
		c.marks = make(map[flowKey]flowMark)
	}
	m := c.marks[fi.flow]
	m.note(fi.seg, c.gen)
	c.marks[fi.flow] = m
}

// retransmitted tells whether fi, a client's segment, carries only data
// already seen sent or acknowledged on r1's link (counted where it first
// passed).
func (c *Capture) retransmitted(fi frameInfo) bool {
	m, ok := c.marks[fi.flow]
	return ok && m.retransmits(fi.seg.end)
}

// Record writes every frame of the measured service from now on, counted
// or stray (its first 160 bytes, all the headers), to w in pcap format.
// Flush or close w after Close.
func (c *Capture) Record(w io.Writer) error {
	pw := pcapgo.NewWriter(w)
	if err := pw.WriteFileHeader(snap, layers.LinkTypeEthernet); err != nil {
		return fmt.Errorf("capture: pcap: %w", err)
	}
	c.mu.Lock()
	c.pcap = pw
	c.mu.Unlock()
	return nil
}

// Tap hands every frame of the measured service, counted or stray, to fn
// as it is read (fn must not keep the frame; it reads at most the first
// 160 bytes of each).
func (c *Capture) Tap(fn func(at time.Time, frame []byte, wireLen int)) {
	c.mu.Lock()
	c.tap = fn
	c.mu.Unlock()
}

// RecordErr is the first error writing the pcap, if any.
func (c *Capture) RecordErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pcapErr != nil {
		return fmt.Errorf("capture: pcap: %w", c.pcapErr)
	}
	return nil
}

// Reset opens a new window from now with filter f (between runs).
func (c *Capture) Reset(f Filter) {
	c.mu.Lock()
	c.filter, c.from, c.counts = f, time.Now(), Counts{}
	c.flows = make(map[flowKey]bool)
	c.gen++
	for k, m := range c.marks {
		if m.gen+markWindows < c.gen {
			delete(c.marks, k) // a connection quiet for that long sends nothing late
		}
	}
	for k, o := range c.kept {
		if c.from.Sub(o.last) > keptFor {
			delete(c.kept, k)
		}
	}
	if c.ring != nil {
		c.ring.Stats() // the kernel's drop count restarts with the window
	}
	c.mu.Unlock()
}

// Counts returns the counts of the current window so far.
func (c *Capture) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ring != nil {
		if _, drops, err := c.ring.Stats(); err == nil {
			c.counts.Dropped += uint64(drops)
		}
	}
	return c.counts
}

// Err says why the capture counts nothing, if it does not.
func (c *Capture) Err() error { return c.ringErr }

// Drain waits until every frame received before now has been processed
// (at most a second), so Counts covers the window up to now: until a
// later frame is read, or, on a quiet link, until the kernel has handed
// over every block that could hold an earlier one and all are read.
func (c *Capture) Drain() {
	if c.ring == nil {
		return
	}
	now := time.Now()
	handedOver := now.Add(2*retire + time.Millisecond)
	for deadline := now.Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		caughtUp := !c.last.Before(now) || (!time.Now().Before(handedOver) && !c.ring.Ready())
		c.mu.Unlock()
		if caughtUp {
			return
		}
	}
}

// Close stops counting.
func (c *Capture) Close() error {
	if c.closing.Swap(true) || c.ring == nil {
		return nil
	}
	c.wg.Wait()
	return c.ring.Close()
}
