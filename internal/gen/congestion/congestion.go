// Package congestion runs the Towson study's background traffic in the lab:
// an IPv4 and an IPv6 generator pair across the routers' bottleneck, as the
// study's two MGEN pairs, where one host of a pair is a TCP source and UDP
// sink and its peer a TCP sink and UDP source. Here TCP flows go from the
// server-side hosts to the client-side hosts, the direction of the web
// server's data, and UDP flows the other way. Sockets are opened inside the
// generator hosts' namespaces; nothing is sent anywhere else.
//
// It imports lab and traffic, never the experiment.
package congestion

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"v6lab/internal/gen/traffic"
	"v6lab/internal/lab"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Host is a generator host: its namespace and its two addresses.
type Host struct {
	NS string     `json:"ns"`
	V4 netip.Addr `json:"v4"`
	V6 netip.Addr `json:"v6"`
}

// Hosts are the four generator hosts by role (lab.GenHosts).
type Hosts map[string]Host

// LabHosts are the generator hosts of a lab built with Generators.
func LabHosts(l *lab.Lab) (Hosts, error) {
	hs := Hosts{}
	for _, role := range lab.GenHosts {
		a, ok := l.Addr.Gen[role]
		if !ok {
			return nil, fmt.Errorf("congestion: the lab %s has no generator host %s (build it with generators)", l.Name, role)
		}
		hs[role] = Host{NS: lab.NS(l.Name, role), V4: a[0], V6: a[1]}
	}
	return hs, nil
}

// Ramp is how long background traffic runs before the first measured run,
// so queues at the bottleneck are built when measuring starts.
const Ramp = 2 * time.Second

// Background keeps the sinks up for a whole experiment and runs one
// congestion level at a time.
type Background struct {
	hosts Hosts
	sinks map[string]*traffic.Sink
	// Ramp is the wait after a level starts (default Ramp).
	Ramp time.Duration

	mu      sync.Mutex
	level   string
	started time.Time
	gen     *traffic.Generator
	cancel  context.CancelFunc
	mark    []flowMark // counters when the current run began
}

type flowMark struct {
	sent, offered, delivered int64
	at                       time.Time
}

// Start opens a sink (TCP and UDP) in every generator host.
func Start(ctx context.Context, hosts Hosts) (*Background, error) {
	b := &Background{hosts: hosts, sinks: map[string]*traffic.Sink{}, Ramp: Ramp}
	for _, role := range lab.GenHosts {
		h, ok := hosts[role]
		if !ok {
			b.Close()
			return nil, fmt.Errorf("congestion: no generator host %s", role)
		}
		err := lab.Do(h.NS, func() error {
			s, err := traffic.ListenSink(ctx, []netip.Addr{h.V4, h.V6}, 0)
			b.sinks[role] = s
			return err
		})
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("congestion: sink in %s: %w", role, err)
		}
	}
	if err := b.warm(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// warm connects every generator pair once in both directions, so neighbour
// discovery along the way is done before traffic starts: otherwise a UDP
// flow fills the kernel's queue of packets awaiting a neighbour and the
// TCP flows' SYNs are dropped, starting them a second late.
func (b *Background) warm(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, p := range [][2]string{{lab.Gen4C, lab.Gen4S}, {lab.Gen6C, lab.Gen6S}} {
		for _, dir := range [][2]string{{p[0], p[1]}, {p[1], p[0]}} {
			from, to := b.hosts[dir[0]], b.hosts[dir[1]]
			fam, src, dst := path.IPv4, from.V4, to.V4
			if dir[0] == lab.Gen6C || dir[0] == lab.Gen6S {
				fam, src, dst = path.IPv6, from.V6, to.V6
			}
			f := traffic.Flow{ID: 0, Proto: "tcp", Path: fam, Source: src, Dst: netip.AddrPortFrom(dst, uint16(b.sinks[dir[1]].Port))}
			c, err := b.dial(ctx, f)
			if err != nil {
				return fmt.Errorf("congestion: %s cannot reach %s: %w", dir[0], dir[1], err)
			}
			c.Close()
		}
	}
	return nil
}

// Flows lays out level l between the hosts: the level's TCP flows from
// gen4s/gen6s to gen4c/gen6c, its UDP flows from gen4c/gen6c to gen4s/gen6s.
func (b *Background) Flows(l traffic.Level) []traffic.Flow {
	at := func(role string, fam path.Path) netip.AddrPort {
		h := b.hosts[role]
		a := h.V4
		if fam == path.IPv6 {
			a = h.V6
		}
		return netip.AddrPortFrom(a, uint16(b.sinks[role].Port))
	}
	near := map[path.Path]string{path.IPv4: lab.Gen4C, path.IPv6: lab.Gen6C}
	far := map[path.Path]string{path.IPv4: lab.Gen4S, path.IPv6: lab.Gen6S}
	flows := l.Flows(at(near[path.IPv4], path.IPv4), at(near[path.IPv6], path.IPv6),
		map[path.Path]netip.Addr{path.IPv4: at(far[path.IPv4], path.IPv4).Addr(), path.IPv6: at(far[path.IPv6], path.IPv6).Addr()})
	for i := range flows {
		f := &flows[i]
		if f.Proto == "udp" {
			f.Source, f.Dst = at(near[f.Path], f.Path).Addr(), at(far[f.Path], f.Path)
		}
	}
	return flows
}

// roleOf finds the host that holds addr.
func (b *Background) roleOf(a netip.Addr) string {
	for role, h := range b.hosts {
		if h.V4 == a || h.V6 == a {
			return role
		}
	}
	return ""
}

// dial opens a flow's socket inside its source host's namespace.
func (b *Background) dial(ctx context.Context, f traffic.Flow) (net.Conn, error) {
	role := b.roleOf(f.Source)
	if role == "" {
		return nil, fmt.Errorf("congestion: flow %d: source %s is no generator host", f.ID, f.Source)
	}
	var c net.Conn
	err := lab.Do(b.hosts[role].NS, func() error {
		var err error
		c, err = traffic.Dial(ctx, f)
		return err
	})
	return c, err
}

// Set runs level name ("" or "none": no background) from now on. A new
// level waits Ramp before returning; the same level keeps running.
func (b *Background) Set(ctx context.Context, name string) error {
	if name == "none" {
		name = ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// A generator lives at most traffic.MaxDuration: renew it in time.
	if name == b.level && (name == "" || time.Since(b.started) < traffic.MaxDuration-10*time.Minute) {
		return nil
	}
	b.stopLocked()
	if name == "" {
		return nil
	}
	l, err := traffic.LevelByName(name)
	if err != nil {
		return err
	}
	gctx, cancel := context.WithCancel(context.Background())
	g, err := traffic.Start(gctx, b.Flows(l), traffic.MaxDuration, b.dial)
	if err != nil {
		cancel()
		return err
	}
	b.level, b.started, b.gen, b.cancel = name, time.Now(), g, cancel
	select {
	case <-ctx.Done():
		b.stopLocked()
		return ctx.Err()
	case <-time.After(b.Ramp):
	}
	// A flow that could not even connect fails the level now.
	for _, r := range g.Reports() {
		if r.Err != "" {
			b.stopLocked()
			return fmt.Errorf("congestion: %s flow %d (%s %s %s → %s): %s", name, r.ID, r.Proto, r.Path, r.Source, r.Dst, r.Err)
		}
	}
	return nil
}

func (b *Background) stopLocked() {
	if b.gen != nil {
		b.cancel()
		b.gen.Wait()
	}
	b.level, b.gen, b.cancel, b.mark = "", nil, nil, nil
}

// Level is the level running, "" for none.
func (b *Background) Level() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.level
}

// delivered is what the sink at a flow's destination has received of it.
func (b *Background) delivered(f traffic.Flow) int64 {
	if s := b.sinks[b.roleOf(f.Dst.Addr())]; s != nil {
		return s.Delivered(f.ID)
	}
	return 0
}

// Mark starts a run's window.
func (b *Background) Mark() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mark = nil
	if b.gen == nil {
		return
	}
	now := time.Now()
	for _, r := range b.gen.Reports() {
		b.mark = append(b.mark, flowMark{sent: r.SentBytes, offered: r.OfferedBytes, delivered: b.delivered(r.Flow), at: now})
	}
}

// Since reports each flow's rates since Mark; nil when no level runs.
func (b *Background) Since() *result.Background {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gen == nil || b.mark == nil {
		return nil
	}
	out := &result.Background{Level: b.level}
	now := time.Now()
	for i, r := range b.gen.Reports() {
		m := b.mark[i]
		secs := now.Sub(m.at).Seconds()
		rate := func(n int64) float64 {
			if secs <= 0 {
				return 0
			}
			return float64(n) * 8 / secs / 1e6
		}
		out.Flows = append(out.Flows, result.BackgroundFlow{ID: r.ID, Proto: r.Proto, Path: string(r.Path),
			From: b.roleOf(r.Source), To: b.roleOf(r.Dst.Addr()),
			OfferedMbps: rate(r.OfferedBytes - m.offered), SentMbps: rate(r.SentBytes - m.sent),
			DeliveredMbps: rate(b.delivered(r.Flow) - m.delivered), Err: r.Err})
	}
	return out
}

// Close stops the traffic and the sinks.
func (b *Background) Close() {
	b.mu.Lock()
	b.stopLocked()
	b.mu.Unlock()
	for _, s := range b.sinks {
		s.Close()
	}
}
