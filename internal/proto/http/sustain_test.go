package http

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// TestSustainOnTheLoopIsDo: the event loop's own sustained mode
// (load.Sustained hands it the users) gives the samples Do gives: pages
// with their objects after a lookup, and a literal address without one,
// each user's transactions back to back, every one recorded.
func TestSustainOnTheLoopIsDo(t *testing.T) {
	r := newRig(t, DefaultServerConfig)
	for _, c := range []struct {
		name, url string
		objects   bool
		marker    string
	}{
		{"page, lookup", "http://www.v6lab.test:%d/", true, "200 OK, 4 objects"},
		{"close, literal", "http://127.0.0.1:%d/", false, "200 OK, 0 objects"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := r.client(t, path.IPv4, c.url)
			cl.Objects = c.objects
			if _, ok := cl.Sustain(context.Background(), load.All(0), 0, 0, nil); !ok {
				t.Fatal("the event loop's client does not sustain on the loop")
			}
			var mu sync.Mutex
			var smps []result.Sample
			const users = 8
			started := load.Sustained(context.Background(), cl, load.All(users), 300*time.Millisecond, 5*time.Second, func(s result.Sample) {
				mu.Lock()
				smps = append(smps, s)
				mu.Unlock()
			})
			if int64(len(smps)) != started || len(smps) < users {
				t.Fatalf("%d samples of %d transactions", len(smps), started)
			}
			last := map[int]result.Sample{}
			for _, s := range smps {
				if !s.OK() || s.Marker != c.marker || s.TotalNS <= 0 || s.ConnectNS <= 0 || s.FirstByteNS < s.ConnectNS || s.TotalNS < s.FirstByteNS {
					t.Fatalf("%+v", s)
				}
				if (s.ResolveNS > 0) != (c.name == "page, lookup") || (s.DNSLocal != "") != (c.name == "page, lookup") {
					t.Errorf("lookup phase %d from %q", s.ResolveNS, s.DNSLocal)
				}
				if !path.IPv4.Accepts(netip.MustParseAddrPort(s.Local).Addr()) {
					t.Errorf("local %s", s.Local)
				}
				if p, ok := last[s.User]; ok && s.Start.Before(p.Start.Add(time.Duration(p.TotalNS))) {
					t.Errorf("user %d's transactions overlap", s.User)
				}
				last[s.User] = s
			}
			if len(last) != users {
				t.Errorf("%d of %d users", len(last), users)
			}
		})
	}
}

// TestSustainFailsOnTimeAndStops: a server that never answers makes
// every transaction a timeout after its timeout, and the run ends with
// its duration; an interrupted run ends at once, its transactions failed
// samples.
func TestSustainFailsOnTimeAndStops(t *testing.T) {
	port := rawServer(t, func(net.Conn) { time.Sleep(400 * time.Millisecond) })
	u, _ := ParseURL(fmt.Sprintf("http://[::1]:%d/", port))
	cl := &Client{URL: u, Path: path.IPv6, Resolver: &path.Resolver{}}
	var mu sync.Mutex
	var smps []result.Sample
	emit := func(s result.Sample) { mu.Lock(); smps = append(smps, s); mu.Unlock() }
	begin := time.Now()
	load.Sustained(context.Background(), cl, load.All(2), 150*time.Millisecond, 100*time.Millisecond, emit)
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	if len(smps) < 2 {
		t.Fatalf("%d samples", len(smps))
	}
	for _, s := range smps {
		if s.OK() || s.ErrKind != "timeout" || s.TotalNS < int64(100*time.Millisecond) {
			t.Errorf("%+v", s)
		}
	}
	smps = nil
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	begin = time.Now()
	load.Sustained(ctx, cl, load.All(2), time.Hour, time.Hour, emit)
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("an interrupted run took %v", took)
	}
	if len(smps) != 2 || smps[0].OK() || smps[1].OK() {
		t.Errorf("interrupted: %+v", smps)
	}
}
