package dns

import (
	"context"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// concurrently runs n users' queries at once, as the closed load model does.
func concurrently(c *Client, n int, timeout time.Duration) []result.Sample {
	out := make([]result.Sample, n)
	var wg sync.WaitGroup
	for u := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			out[u] = c.Do(ctx, u)
		}()
	}
	wg.Wait()
	return out
}

// TestLoadModeOverEachPath: 300 queries in flight at once over 4 sockets
// of each family, every one answered, timed and pinned to its family.
func TestLoadModeOverEachPath(t *testing.T) {
	s := startServer(t)
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		t.Run(string(p), func(t *testing.T) {
			c := &Client{Name: "www.v6lab.test", Server: serverFor(s, p), Path: p, Mode: ModeLoad}
			defer c.Close()
			for round := range 3 { // the sockets are kept between rounds
				for _, smp := range concurrently(c, 300, 5*time.Second) {
					if !smp.OK() || smp.TotalNS <= 0 || smp.TotalNS != smp.FirstByteNS || smp.BytesIn == 0 {
						t.Fatalf("round %d: %+v", round, smp)
					}
					l, r := netip.MustParseAddrPort(smp.Local), netip.MustParseAddrPort(smp.Remote)
					if !p.Accepts(l.Addr()) || !p.Accepts(r.Addr()) {
						t.Fatalf("sample went %s -> %s over %s", smp.Local, smp.Remote, p)
					}
				}
			}
			if len(c.mux.socks) != LoadSockets || c.Strays() != 0 {
				t.Errorf("%d sockets, %d strays", len(c.mux.socks), c.Strays())
			}
		})
	}
}

// TestLoadModeMatchesRepliesByID: a server that answers a batch of
// queries in reverse order, each reply naming the address it was asked
// with in its TTL: every user gets its own answer.
func TestLoadModeMatchesRepliesByID(t *testing.T) {
	const n = 64
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		type q struct {
			m    *mdns.Msg
			from net.Addr
		}
		var batch []q
		buf := make([]byte, 65535)
		for {
			pc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			k, from, err := pc.ReadFrom(buf)
			if err == nil {
				m := new(mdns.Msg)
				if m.Unpack(buf[:k]) == nil {
					batch = append(batch, q{m, from})
				}
			}
			if len(batch) == n || (err != nil && len(batch) > 0) {
				for i := len(batch) - 1; i >= 0; i-- { // newest first
					r := new(mdns.Msg)
					r.SetReply(batch[i].m)
					r.Answer = append(r.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: batch[i].m.Question[0].Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: uint32(batch[i].m.Id)}, A: net.IPv4(192, 0, 2, 1)})
					b, _ := r.Pack()
					pc.WriteTo(b, batch[i].from)
				}
				batch = nil
			}
			if err != nil && !isTimeout(err) {
				return
			}
		}
	}()
	c := &Client{Name: "x.v6lab.test", Server: pc.LocalAddr().(*net.UDPAddr).AddrPort(), Path: path.IPv4, Mode: ModeLoad}
	defer c.Close()
	for _, smp := range concurrently(c, n, 5*time.Second) {
		if !smp.OK() {
			t.Fatalf("a reordered reply was not matched: %+v", smp)
		}
	}
	if c.Strays() != 0 {
		t.Errorf("%d strays", c.Strays())
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestLoadModeCountsTimeoutsAndLateReplies: a server that answers every
// other query, and those late: the unanswered ones fail as timeouts, the
// late replies to them are counted as strays and never matched to another
// query.
func TestLoadModeCountsTimeoutsAndLateReplies(t *testing.T) {
	pc, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			m := new(mdns.Msg)
			if m.Unpack(buf[:n]) != nil {
				continue
			}
			r := new(mdns.Msg)
			r.SetReply(m)
			r.Answer = append(r.Answer, &mdns.AAAA{Hdr: mdns.RR_Header{Name: m.Question[0].Name, Rrtype: mdns.TypeAAAA, Class: mdns.ClassINET, Ttl: 60}, AAAA: net.ParseIP("2001:db8::1")})
			out, _ := r.Pack()
			delay := time.Duration(0)
			if m.Id%2 == 0 {
				delay = 300 * time.Millisecond // after the client's timeout: a stray
			}
			time.AfterFunc(delay, func() { pc.WriteTo(out, from) })
		}
	}()
	addr := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	c := &Client{Name: "x.v6lab.test", Server: addr, Path: path.IPv6, Mode: ModeLoad}
	defer c.Close()
	ok, timeouts := 0, 0
	for _, smp := range concurrently(c, 40, 100*time.Millisecond) {
		switch {
		case smp.OK():
			ok++
		case smp.ErrKind == "timeout":
			timeouts++
		default:
			t.Errorf("neither answered nor timed out: %+v", smp)
		}
	}
	if ok == 0 || timeouts == 0 || ok+timeouts != 40 {
		t.Errorf("%d answered, %d timed out", ok, timeouts)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.Strays() < int64(timeouts) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if c.Strays() != int64(timeouts) {
		t.Errorf("%d late replies counted as strays, want %d", c.Strays(), timeouts)
	}
}

// TestLoadModeCloseLeaksNothing: Close ends every reader goroutine, and a
// query after Close fails instead of hanging.
func TestLoadModeCloseLeaksNothing(t *testing.T) {
	s := startServer(t)
	before := runtime.NumGoroutine()
	c := &Client{Name: "www.v6lab.test", Server: serverFor(s, path.IPv4), Path: path.IPv4, Mode: ModeLoad}
	concurrently(c, 10, time.Second)
	c.Close()
	for i := 0; i < 100 && runtime.NumGoroutine() > before; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after Close, %d before", g, before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if smp := c.Do(ctx, 1); smp.OK() || smp.ErrKind == "timeout" {
		t.Errorf("a query after Close: %+v", smp)
	}
}
