package inlab

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"v6lab/internal/lab"
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/wire/capture"
)

// NAT is a NAT on a lab path (the stateful PLAT at r1, the AFTR at r2):
// the namespace whose conntrack it is, and its pool in words.
type NAT struct {
	NS    string `json:"ns"`
	About string `json:"about"`
}

// natCheck is the wire check with the NATs of the lab's paths beside it:
// a connection a NAT dropped for want of a free port only times out at
// the client, so a failure in a run in which the path's NAT could not
// insert a connection (conntrack's insert_failed, which a clash of a
// pool with no free port raises) is named for it (pool_exhausted).
type natCheck struct {
	capture.Check
	nats map[path.Path]NAT
	// datapaths are the paths' programs whose counters each run records
	// (result.Wire.Datapath), and before their counts when it began.
	datapaths map[path.Path][]lab.Datapath
	at        map[string]uint64

	mu      sync.Mutex
	p       path.Path
	before  uint64    // insert_failed when the run began
	failed  uint64    // and since, as last read
	readAt  time.Time // when last read
	started bool
}

// natRead is how often a run's failures read the counter again.
const natRead = 100 * time.Millisecond

func (k *natCheck) Start(key string, p path.Path) {
	k.mu.Lock()
	k.p, k.started, k.failed, k.readAt = p, false, 0, time.Time{}
	k.at = countDatapaths(k.datapaths[p])
	if n, ok := k.nats[p]; ok {
		if v, err := lab.ConntrackStat(n.NS, "insert_failed"); err == nil {
			k.before, k.started = v, true
		}
	}
	k.mu.Unlock()
	k.Check.Start(key, p)
}

// Stop adds to the wire's counts what the path's datapaths did in the
// run: their counters' growth, and the NAT's drops for want of a port.
func (k *natCheck) Stop(p path.Path) (result.Wire, error) {
	w, err := k.Check.Stop(p)
	k.mu.Lock()
	defer k.mu.Unlock()
	if dps := k.datapaths[p]; len(dps) > 0 && k.at != nil {
		w.Datapath = map[string]uint64{}
		for name, v := range countDatapaths(dps) {
			if v-k.at[name] == 0 && strings.Contains(name, "_dropped_") {
				continue // a kind of drop the run had none of
			}
			w.Datapath[name] = v - k.at[name]
		}
	}
	if n, ok := k.nats[p]; ok && k.started {
		if v, err := lab.ConntrackStat(n.NS, "insert_failed"); err == nil {
			if w.Datapath == nil {
				w.Datapath = map[string]uint64{}
			}
			w.Datapath["nat_no_port"] = v - k.before
		}
	}
	return w, err
}

// countDatapaths reads every counter of dps (nil when one cannot be read).
func countDatapaths(dps []lab.Datapath) map[string]uint64 {
	out := map[string]uint64{}
	for _, d := range dps {
		c, err := d.Count()
		if err != nil {
			return nil
		}
		for k, v := range c {
			out[k] = v
		}
	}
	return out
}

// Explain names a failure for the NAT's exhausted pool.
func (k *natCheck) Explain(p path.Path, s *result.Sample) {
	// A connection (or a lookup's datagram) the NAT dropped never
	// began: only failures to connect or to resolve are its.
	if s.ErrKind != result.ErrTimeout && s.ErrKind != result.ErrIO || !strings.HasPrefix(s.Err, "connect") && !strings.HasPrefix(s.Err, "resolve") {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	n, ok := k.nats[p]
	if !ok || !k.started || p != k.p {
		return
	}
	if time.Since(k.readAt) > natRead {
		if v, err := lab.ConntrackStat(n.NS, "insert_failed"); err == nil {
			k.failed, k.readAt = v-k.before, time.Now()
		}
	}
	if k.failed == 0 {
		return
	}
	s.ErrKind = result.ErrPoolExhausted
	s.Err = fmt.Sprintf("nat pool exhausted: %s had no free port for %s of new connections in this run; %s", n.About, stats.Count(k.failed, "packet"), s.Err)
}

// describeNat64 is the header's line on the nat64 path's translator.
func describeNat64(l *lab.Lab) string {
	if l.NAT64.Stateful {
		n := l.NAT64
		return fmt.Sprintf("stateful NAT64 (RFC 6146) on r1: the translator (RFC 7915, tc BPF) maps %s to %v, then the kernel's NAT (nftables snat, conntrack with RFC 6146 §4's timeouts) shares the pool %v ports %d-%d by port; prefix %s; DNS64 view (RFC 6147) on %s",
			l.Addr.ClientNat64, l.PLATMapping(l.Addr.ClientNat64), n.Pool, n.Ports[0], n.Ports[1], l.Addr.Pref64, l.Addr.DNS64)
	}
	return fmt.Sprintf("stateless translator (SIIT, RFC 7915) in tc BPF on r1: %s to the prefix %s leaves as IPv4 from %s (explicit mapping, RFC 7757); DNS64 view (RFC 6147) on %s", l.Addr.ClientNat64, l.Addr.Pref64, l.Addr.Mapped4, l.Addr.DNS64)
}

// describeXlat is the header's lines on the 464xlat and dslite paths.
func describeXlat(l *lab.Lab) (xlat, dslite string) {
	xlat = fmt.Sprintf("CLAT (RFC 6877, tc BPF on the client's link): IPv4 from %v leaves as IPv6 from %v to %v (found by %s); PLAT: r1's NAT64 (%s); the server sees %v",
		lab.CLAT4, l.Addr.CLAT6, l.Addr.Pref64, l.Pref64From, l.NAT64, l.Addr.XLATFrom)
	dslite = fmt.Sprintf("B4 (RFC 6333, tc BPF on the client's link): IPv4 from %v in IPv6 from %v to the AFTR %v at r2 (MTU 1460 inside), which takes it out and NATs it (nftables masquerade) to %v",
		lab.B4v4, l.Addr.B4v6, l.Addr.AFTR6, l.Addr.AFTR4)
	return xlat, dslite
}

// labNATs are the NATs of the paths measured: the stateful PLAT's for
// nat64 and 464xlat, the AFTR's for dslite.
func labNATs(l *lab.Lab, paths []path.Path) map[path.Path]NAT {
	out := map[path.Path]NAT{}
	for _, p := range paths {
		switch {
		case (p == path.NAT64 || p == path.XLAT464) && l.NAT64.Stateful:
			out[p] = NAT{NS: lab.NS(l.Name, lab.R1), About: fmt.Sprintf("the PLAT at r1 (pool %v, ports %d-%d)", l.NAT64.Pool, l.NAT64.Ports[0], l.NAT64.Ports[1])}
		case p == path.DSLite:
			out[p] = NAT{NS: lab.NS(l.Name, lab.R2), About: fmt.Sprintf("the AFTR at r2 (masquerade to %v)", l.Addr.AFTR4)}
		}
	}
	return out
}
