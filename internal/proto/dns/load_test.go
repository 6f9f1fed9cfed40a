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

	"v6lab/internal/gen/load"
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

// runSustained runs the client's users back to back through load.Sustained
// (which hands them to the load engine) and returns every sample.
func runSustained(ctx context.Context, c *Client, users int, d, timeout time.Duration) ([]result.Sample, int64) {
	var mu sync.Mutex
	var out []result.Sample
	n := load.Sustained(ctx, c, load.All(users), d, timeout, func(s result.Sample) {
		mu.Lock()
		out = append(out, s)
		mu.Unlock()
	})
	return out, n
}

// TestSustainKeepsEveryUserBusy: the engine's own sustained mode keeps
// one query per user in flight, back to back, each timed and recorded.
func TestSustainKeepsEveryUserBusy(t *testing.T) {
	s := startServer(t)
	c := &Client{Name: "www.v6lab.test", Server: serverFor(s, path.IPv4), Path: path.IPv4, Mode: ModeLoad}
	defer c.Close()
	const users = 40
	begin := time.Now()
	smps, started := runSustained(context.Background(), c, users, 300*time.Millisecond, 2*time.Second)
	if took := time.Since(begin); took < 300*time.Millisecond || took > 300*time.Millisecond+2*time.Second+time.Second {
		t.Errorf("sustained 300ms took %v (each query's timeout 2s)", took)
	}
	if int64(len(smps)) != started || len(smps) < 2*users {
		t.Fatalf("%d samples for %d queries started", len(smps), started)
	}
	last := map[int]result.Sample{}
	for _, smp := range smps {
		if !smp.OK() || smp.TotalNS <= 0 || smp.TotalNS != smp.FirstByteNS || smp.BytesIn == 0 || smp.Marker != "NOERROR, 1 A" {
			t.Fatalf("%+v", smp)
		}
		if smp.Local == "" || netip.MustParseAddrPort(smp.Remote) != serverFor(s, path.IPv4) {
			t.Fatalf("addresses %q -> %q", smp.Local, smp.Remote)
		}
		if prev, ok := last[smp.User]; ok && smp.Start.Before(prev.Start.Add(time.Duration(prev.TotalNS))) {
			t.Fatalf("user %d's queries overlap: %v+%v then %v", smp.User, prev.Start, prev.TotalNS, smp.Start)
		}
		last[smp.User] = smp
	}
	if len(last) != users {
		t.Errorf("%d of %d users ran", len(last), users)
	}
	if c.Strays() != 0 {
		t.Errorf("%d strays", c.Strays())
	}
	// The sockets stay for Do (a closed run after a sustained one).
	if smps := concurrently(c, 20, 5*time.Second); !smps[0].OK() || !smps[19].OK() {
		t.Errorf("Do after Sustain: %+v", smps[0])
	}
}

// lateServer answers queries with an even ID after delay, the others at
// once.
func lateServer(t *testing.T, delay time.Duration) netip.AddrPort {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
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
			r.Answer = append(r.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: m.Question[0].Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 1)})
			out, _ := r.Pack()
			if m.Id%2 == 0 {
				time.AfterFunc(delay, func() { pc.WriteTo(out, from) })
			} else {
				pc.WriteTo(out, from)
			}
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).AddrPort()
}

// TestSustainTimesOutAndGoesOn: a query unanswered within its timeout is
// a timeout sample, its user sends the next one, and the late reply is a
// stray, never matched to a later query.
func TestSustainTimesOutAndGoesOn(t *testing.T) {
	c := &Client{Name: "x.v6lab.test", Server: lateServer(t, 300*time.Millisecond), Path: path.IPv4, Mode: ModeLoad}
	defer c.Close()
	begin := time.Now()
	smps, started := runSustained(context.Background(), c, 8, 400*time.Millisecond, 100*time.Millisecond)
	// Not a timing bound (a loaded machine schedules the loop late): a
	// run that waited for its late replies' strays would take seconds.
	if took := time.Since(begin); took > 3*time.Second {
		t.Errorf("took %v: the run waited for more than its duration and a timeout", took)
	}
	ok, timeouts := 0, 0
	for _, smp := range smps {
		switch {
		case smp.OK():
			ok++
		case smp.ErrKind == "timeout" && smp.TotalNS >= int64(100*time.Millisecond): // never before its timeout
			timeouts++
		default:
			t.Fatalf("neither answered nor timed out on time: %+v", smp)
		}
	}
	if ok == 0 || timeouts == 0 || int64(ok+timeouts) != started {
		t.Errorf("%d answered, %d timed out, %d started", ok, timeouts, started)
	}
	deadline := time.Now().Add(2 * time.Second)
	for c.Strays() < int64(timeouts) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.Strays() != int64(timeouts) {
		t.Errorf("%d strays, want %d (one per timeout)", c.Strays(), timeouts)
	}
}

// TestSustainStopsWithItsContext: an interrupted run returns at once,
// each query in flight a failed sample, not a missing one.
func TestSustainStopsWithItsContext(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0") // never answers
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	c := &Client{Name: "x.v6lab.test", Server: pc.LocalAddr().(*net.UDPAddr).AddrPort(), Path: path.IPv4, Mode: ModeLoad}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	begin := time.Now()
	smps, started := runSustained(ctx, c, 5, 10*time.Second, 10*time.Second)
	if took := time.Since(begin); took > time.Second {
		t.Errorf("returned %v after a cancel at 100ms", took)
	}
	if len(smps) != 5 || started != 5 {
		t.Fatalf("%d samples, %d started; want one per user", len(smps), started)
	}
	for _, smp := range smps {
		if smp.OK() || smp.ErrKind != "timeout" {
			t.Errorf("%+v", smp)
		}
	}
}

// TestSustainRetriesTruncatedOverTCP: a truncated UDP reply is asked
// again over TCP, as a resolver would, and the user goes on.
func TestSustainRetriesTruncatedOverTCP(t *testing.T) {
	h := mdns.HandlerFunc(func(w mdns.ResponseWriter, m *mdns.Msg) {
		r := new(mdns.Msg)
		r.SetReply(m)
		if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
			r.Truncated = true
		} else {
			r.Answer = append(r.Answer, &mdns.A{Hdr: mdns.RR_Header{Name: m.Question[0].Name, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 1)})
		}
		w.WriteMsg(r)
	})
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, srv := range []*mdns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go srv.ActivateAndServe()
		defer srv.Shutdown()
	}
	c := &Client{Name: "x.v6lab.test", Server: pc.LocalAddr().(*net.UDPAddr).AddrPort(), Path: path.IPv4, Mode: ModeLoad}
	defer c.Close()
	smps, started := runSustained(context.Background(), c, 4, 200*time.Millisecond, 2*time.Second)
	if len(smps) < 8 || int64(len(smps)) != started {
		t.Fatalf("%d samples, %d started", len(smps), started)
	}
	for _, smp := range smps {
		if !smp.OK() || smp.Marker != "NOERROR, 1 A" || smp.BytesIn <= 0 {
			t.Fatalf("%+v", smp)
		}
	}
}
