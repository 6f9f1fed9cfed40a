// Package traffic generates background traffic, as MGEN does for the
// Towson congestion study: flows of TCP or UDP over one path each, at a
// rate, with a payload size and a pattern (periodic, Poisson, on/off
// bursts), and a sink that counts what arrives per flow. It reports what
// each flow offered, what it managed to send, and what got through, so an
// overloaded generator is visible. Every run stops at its deadline and
// when its context ends, and flows go only to the destinations given.
//
// It imports only path.
package traffic

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"v6lab/internal/sock/path"
)

// Patterns of a flow's packets.
const (
	Periodic = "periodic"
	Poisson  = "poisson"
	Burst    = "burst" // on/off: bursts at a higher rate, silences between
)

// Bounds of what a generator accepts.
const (
	MaxRate     = 10e9 // bits per second per flow
	MaxDuration = time.Hour
	MaxFlows    = 1000
	headerLen   = 16         // magic, flow id, sequence number
	magic       = 0x76366c62 // "v6lb"
)

// Flow is one stream of background traffic.
type Flow struct {
	ID     int
	Proto  string // tcp or udp
	Path   path.Path
	Dst    netip.AddrPort
	Source netip.Addr
	// Rate is the mean rate in bits per second of payload; Size the
	// payload of each packet (MGEN: 1460 bytes over IPv4, 1440 over IPv6).
	Rate uint64
	Size int
	// Pattern is periodic, poisson or burst; On and Off are a burst's
	// lengths (default 100 ms each).
	Pattern string
	On, Off time.Duration
	// Count, when above 0, ends the flow after that many packets.
	Count int64
}

// Check bounds a flow.
func (f *Flow) Check() error {
	switch {
	case f.Proto != "tcp" && f.Proto != "udp":
		return fmt.Errorf("traffic: flow %d: protocol %q: want tcp or udp", f.ID, f.Proto)
	case f.Rate == 0 || f.Rate > MaxRate:
		return fmt.Errorf("traffic: flow %d: rate %d bit/s: want more than 0 and at most %g", f.ID, f.Rate, float64(MaxRate))
	case f.Size < headerLen || f.Size > 65000:
		return fmt.Errorf("traffic: flow %d: size %d: want %d to 65000 bytes", f.ID, f.Size, headerLen)
	case f.Pattern != "" && f.Pattern != Periodic && f.Pattern != Poisson && f.Pattern != Burst:
		return fmt.Errorf("traffic: flow %d: pattern %q: want periodic, poisson or burst", f.ID, f.Pattern)
	case f.On < 0 || f.Off < 0:
		return fmt.Errorf("traffic: flow %d: negative burst lengths", f.ID)
	case f.Count < 0:
		return fmt.Errorf("traffic: flow %d: count %d: want 0 (no limit) or more", f.ID, f.Count)
	}
	return f.Path.CheckAddr("flow destination", f.Dst.Addr())
}

// Report is what a flow did.
type Report struct {
	Flow
	// Offered is what the pattern asked to send; Sent what was written.
	OfferedBytes, SentBytes int64
	OfferedPkts, SentPkts   int64
	// Seconds the flow ran.
	Seconds float64
	Err     string
}

// OfferedMbps and SentMbps are the report's rates.
func (r Report) OfferedMbps() float64 { return mbps(r.OfferedBytes, r.Seconds) }

// SentMbps is the rate actually written.
func (r Report) SentMbps() float64 { return mbps(r.SentBytes, r.Seconds) }

func mbps(b int64, s float64) float64 {
	if s <= 0 {
		return 0
	}
	return float64(b) * 8 / s / 1e6
}

// gaps yields the waits between a flow's packets.
func gaps(f Flow) func() time.Duration {
	mean := float64(f.Size*8) / float64(f.Rate) * 1e9 // ns
	rng := rand.New(rand.NewPCG(uint64(f.ID)+1, 0x6d67656e))
	switch f.Pattern {
	case Poisson:
		return func() time.Duration { return time.Duration(rng.ExpFloat64() * mean) }
	case Burst:
		on, off := f.On, f.Off
		if on == 0 {
			on = 100 * time.Millisecond
		}
		if off == 0 {
			off = 100 * time.Millisecond
		}
		// Inside a burst packets go faster, so the mean rate is Rate.
		fast := time.Duration(mean * float64(on) / float64(on+off))
		var inBurst time.Duration
		return func() time.Duration {
			inBurst += fast
			if inBurst >= on {
				inBurst = 0
				return fast + off
			}
			return fast
		}
	}
	return func() time.Duration { return time.Duration(mean) }
}

// DialFunc opens a flow's socket; the default dials from the flow's source
// in this process's network namespace. Background traffic in the lab opens
// each flow inside its generator host's namespace instead.
type DialFunc func(ctx context.Context, f Flow) (net.Conn, error)

// Dial is the default DialFunc.
func Dial(ctx context.Context, f Flow) (net.Conn, error) {
	return path.Dialer{Path: f.Path, Source: f.Source}.Dial(ctx, f.Proto, f.Dst)
}

// Run runs every flow for d (or until ctx ends) and reports each.
func Run(ctx context.Context, flows []Flow, d time.Duration) ([]Report, error) {
	g, err := Start(ctx, flows, d, Dial)
	if err != nil {
		return nil, err
	}
	return g.Wait(), nil
}

// Generator is a set of flows running in the background.
type Generator struct {
	flows  []*flowState
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// flowState is a running flow's live counters, read while it runs.
type flowState struct {
	Flow
	start                   time.Time
	offeredBytes, sentBytes atomic.Int64
	offeredPkts, sentPkts   atomic.Int64
	endNS                   atomic.Int64 // run time once ended
	mu                      sync.Mutex
	err                     string
}

// Start checks the flows and starts them; they stop after d, when ctx
// ends, or at Stop.
func Start(ctx context.Context, flows []Flow, d time.Duration, dial DialFunc) (*Generator, error) {
	if len(flows) == 0 || len(flows) > MaxFlows {
		return nil, fmt.Errorf("traffic: %d flows: want 1 to %d", len(flows), MaxFlows)
	}
	if d <= 0 || d > MaxDuration {
		return nil, fmt.Errorf("traffic: duration %v: want more than 0 and at most %v", d, MaxDuration)
	}
	for i := range flows {
		if err := flows[i].Check(); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	g := &Generator{cancel: cancel}
	for _, f := range flows {
		st := &flowState{Flow: f, start: time.Now()}
		g.flows = append(g.flows, st)
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			st.run(ctx, dial)
		}()
	}
	return g, nil
}

// Reports are the flows' figures so far (while running: up to now).
func (g *Generator) Reports() []Report {
	out := make([]Report, len(g.flows))
	for i, st := range g.flows {
		r := Report{Flow: st.Flow, OfferedBytes: st.offeredBytes.Load(), SentBytes: st.sentBytes.Load(),
			OfferedPkts: st.offeredPkts.Load(), SentPkts: st.sentPkts.Load()}
		r.Seconds = time.Since(st.start).Seconds()
		if ns := st.endNS.Load(); ns > 0 {
			r.Seconds = time.Duration(ns).Seconds()
		}
		st.mu.Lock()
		r.Err = st.err
		st.mu.Unlock()
		out[i] = r
	}
	return out
}

// Wait waits for every flow to end and reports each.
func (g *Generator) Wait() []Report {
	g.wg.Wait()
	g.cancel()
	return g.Reports()
}

// Stop ends every flow now and reports each.
func (g *Generator) Stop() []Report {
	g.cancel()
	return g.Wait()
}

func (st *flowState) fail(err error) {
	st.mu.Lock()
	st.err = err.Error()
	st.mu.Unlock()
}

func (st *flowState) run(ctx context.Context, dial DialFunc) {
	f := st.Flow
	defer func() { st.endNS.Store(max(1, int64(time.Since(st.start)))) }()
	conn, err := dial(ctx, f)
	if err != nil {
		st.fail(err)
		return
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, f.Size)
	binary.BigEndian.PutUint32(buf[0:4], magic)
	binary.BigEndian.PutUint32(buf[4:8], uint32(f.ID))
	next := gaps(f)
	due := time.Now()
	for seq := uint64(0); f.Count == 0 || int64(seq) < f.Count; seq++ {
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		st.offeredBytes.Add(int64(f.Size))
		st.offeredPkts.Add(1)
		binary.BigEndian.PutUint64(buf[8:16], seq)
		n, err := conn.Write(buf)
		if n == f.Size {
			st.sentBytes.Add(int64(n))
			st.sentPkts.Add(1)
		}
		if err != nil && f.Proto == "tcp" {
			if ctx.Err() == nil {
				st.fail(err)
			}
			return
		}
		due = due.Add(next())
		// A TCP flow held back by congestion does not make up the lost
		// time in a burst: what it could not send stays offered, unsent.
		if f.Proto == "tcp" && time.Until(due) < -time.Second {
			skipped := int64(-time.Until(due) / (time.Duration(float64(f.Size*8)/float64(f.Rate)*1e9) + 1))
			st.offeredBytes.Add(skipped * int64(f.Size))
			st.offeredPkts.Add(skipped)
			due = time.Now()
		}
	}
}

// Sink receives flows on TCP and UDP at one port and counts them per flow.
type Sink struct {
	Port    int
	mu      sync.Mutex
	bytes   map[int]*atomic.Int64
	foreign atomic.Int64
	closers []interface{ Close() error }
	wg      sync.WaitGroup
}

// ListenSink starts a sink on every address (TCP and UDP, one port).
func ListenSink(ctx context.Context, addrs []netip.Addr, port int) (*Sink, error) {
	s := &Sink{bytes: map[int]*atomic.Int64{}}
	socks, got, err := path.ListenBothSamePort(ctx, addrs, port)
	if err != nil {
		return nil, fmt.Errorf("traffic: sink: %w", err)
	}
	s.Port = got
	for _, p := range socks {
		s.closers = append(s.closers, p)
		s.wg.Add(2)
		go s.acceptTCP(p.TCP)
		go s.readUDP(p.UDP)
	}
	return s, nil
}

func (s *Sink) counter(id int) *atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.bytes[id]
	if c == nil {
		c = new(atomic.Int64)
		s.bytes[id] = c
	}
	return c
}

func (s *Sink) acceptTCP(ln net.Listener) {
	defer s.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			var h [headerLen]byte
			if _, err := ioReadFull(c, h[:]); err != nil || binary.BigEndian.Uint32(h[0:4]) != magic {
				s.foreign.Add(1)
				return
			}
			cnt := s.counter(int(binary.BigEndian.Uint32(h[4:8])))
			cnt.Add(headerLen)
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				cnt.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
}

func ioReadFull(c net.Conn, b []byte) (int, error) {
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *Sink) readUDP(pc net.PacketConn) {
	defer s.wg.Done()
	buf := make([]byte, 65536)
	for {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if n < headerLen || binary.BigEndian.Uint32(buf[0:4]) != magic {
			s.foreign.Add(1)
			continue
		}
		s.counter(int(binary.BigEndian.Uint32(buf[4:8]))).Add(int64(n))
	}
}

// Delivered is the payload bytes received for flow id.
func (s *Sink) Delivered(id int) int64 { return s.counter(id).Load() }

// Close stops the sink.
func (s *Sink) Close() {
	for _, c := range s.closers {
		c.Close()
	}
	s.wg.Wait()
}

// Level is a congestion level of the Towson study (Table I): a total rate
// split 90% TCP / 10% UDP, and between IPv4 and IPv6 by V6Share.
type Level struct {
	Name    string
	Rate    uint64 // bits per second
	V6Share float64
}

// Levels are C1B–C6B: 75 Mbit/s (C1B–C3B) and 100 Mbit/s (C4B–C6B), with
// IPv4:IPv6 at 50:50, 25:75 and 75:25.
var Levels = []Level{
	{"C1B", 75e6, 0.50}, {"C2B", 75e6, 0.75}, {"C3B", 75e6, 0.25},
	{"C4B", 100e6, 0.50}, {"C5B", 100e6, 0.75}, {"C6B", 100e6, 0.25},
}

// LevelByName finds a level.
func LevelByName(name string) (Level, error) {
	for _, l := range Levels {
		if l.Name == name {
			return l, nil
		}
	}
	return Level{}, fmt.Errorf("traffic: no congestion level %q (C1B to C6B)", name)
}

// Flows lays a level out as the study's 10 flows: per family, four TCP
// flows sharing that family's TCP rate and one UDP flow, with payloads of
// 1460 bytes over IPv4 and 1440 over IPv6, to the sinks v4 and v6.
func (l Level) Flows(v4, v6 netip.AddrPort, sources map[path.Path]netip.Addr) []Flow {
	var out []Flow
	for _, fam := range []struct {
		p     path.Path
		dst   netip.AddrPort
		share float64
		size  int
	}{{path.IPv4, v4, 1 - l.V6Share, 1460}, {path.IPv6, v6, l.V6Share, 1440}} {
		rate := float64(l.Rate) * fam.share
		for i := 0; i < 4; i++ {
			out = append(out, Flow{ID: len(out) + 1, Proto: "tcp", Path: fam.p, Dst: fam.dst, Source: sources[fam.p],
				Rate: uint64(math.Round(rate * 0.9 / 4)), Size: fam.size, Pattern: Poisson})
		}
		out = append(out, Flow{ID: len(out) + 1, Proto: "udp", Path: fam.p, Dst: fam.dst, Source: sources[fam.p],
			Rate: uint64(math.Round(rate * 0.1)), Size: fam.size, Pattern: Periodic})
	}
	return out
}
