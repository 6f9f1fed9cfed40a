package traffic

import (
	"context"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"v6lab/internal/sock/path"
)

func sink(t *testing.T) (*Sink, netip.AddrPort, netip.AddrPort) {
	t.Helper()
	s, err := ListenSink(context.Background(), []netip.Addr{path.IPv4.Loopback(), path.IPv6.Loopback()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, netip.AddrPortFrom(path.IPv4.Loopback(), uint16(s.Port)), netip.AddrPortFrom(path.IPv6.Loopback(), uint16(s.Port))
}

func TestFlowsOfferSendAndDeliver(t *testing.T) {
	s, v4, v6 := sink(t)
	flows := []Flow{
		{ID: 1, Proto: "udp", Path: path.IPv4, Dst: v4, Rate: 8e6, Size: 1000, Pattern: Periodic},
		{ID: 2, Proto: "tcp", Path: path.IPv6, Dst: v6, Rate: 20e6, Size: 1440, Pattern: Poisson},
		{ID: 3, Proto: "udp", Path: path.IPv6, Dst: v6, Rate: 8e6, Size: 1000, Pattern: Burst, On: 50 * time.Millisecond, Off: 50 * time.Millisecond},
	}
	start := time.Now()
	reps, err := Run(context.Background(), flows, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a 1 s run took %v: it did not stop at its end", took)
	}
	// The last packets land (on a loaded machine the sink reads late).
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !slices.ContainsFunc(reps, func(r Report) bool { return s.Delivered(r.ID) < r.SentBytes }) {
			break
		}
	}
	for _, r := range reps {
		want := float64(r.Rate) / 1e6
		if r.Err != "" || math.Abs(r.OfferedMbps()-want) > want*0.25 {
			t.Errorf("flow %d (%s %s): offered %.2f Mbit/s, want %.0f (%s)", r.ID, r.Proto, r.Pattern, r.OfferedMbps(), want, r.Err)
		}
		// (the packet due as the deadline fell may be offered, not sent)
		if r.OfferedBytes-r.SentBytes > int64(r.Size) {
			t.Errorf("flow %d: sent %d of %d offered bytes on an idle loopback", r.ID, r.SentBytes, r.OfferedBytes)
		}
		if got := s.Delivered(r.ID); got != r.SentBytes {
			t.Errorf("flow %d: %d bytes delivered of %d sent", r.ID, got, r.SentBytes)
		}
	}
}

func TestLevelsFollowTableI(t *testing.T) {
	v4 := netip.MustParseAddrPort("192.0.2.1:9")
	v6 := netip.MustParseAddrPort("[2001:db8::1]:9")
	for _, l := range Levels {
		fs := l.Flows(v4, v6, nil)
		if len(fs) != 10 {
			t.Fatalf("%s: %d flows", l.Name, len(fs))
		}
		rate := map[string]float64{}
		for _, f := range fs {
			if err := f.Check(); err != nil {
				t.Fatal(err)
			}
			rate[string(f.Path)+"/"+f.Proto] += float64(f.Rate)
			if (f.Path == path.IPv4) != (f.Size == 1460) {
				t.Errorf("%s flow %d: %s with %d-byte payload", l.Name, f.ID, f.Path, f.Size)
			}
		}
		total := rate["ipv4/tcp"] + rate["ipv4/udp"] + rate["ipv6/tcp"] + rate["ipv6/udp"]
		tcp := rate["ipv4/tcp"] + rate["ipv6/tcp"]
		v6share := (rate["ipv6/tcp"] + rate["ipv6/udp"]) / total
		if math.Abs(total-float64(l.Rate)) > 10 || math.Abs(tcp/total-0.9) > 1e-6 || math.Abs(v6share-l.V6Share) > 1e-6 {
			t.Errorf("%s: total %g, tcp share %g, ipv6 share %g", l.Name, total, tcp/total, v6share)
		}
	}
	if l, _ := LevelByName("C2B"); l.V6Share != 0.75 || l.Rate != 75e6 {
		t.Errorf("C2B %+v", l)
	}
	if _, err := LevelByName("C9B"); err == nil {
		t.Error("C9B accepted")
	}
}

func TestBoundsAndStops(t *testing.T) {
	dst := netip.MustParseAddrPort("127.0.0.1:9")
	for want, f := range map[string]Flow{
		"protocol \"sctp\"":             {Proto: "sctp", Path: path.IPv4, Dst: dst, Rate: 1e6, Size: 100},
		"rate 0 bit/s":                  {Proto: "udp", Path: path.IPv4, Dst: dst, Size: 100},
		"size 8":                        {Proto: "udp", Path: path.IPv4, Dst: dst, Rate: 1e6, Size: 8},
		"pattern \"random\"":            {Proto: "udp", Path: path.IPv4, Dst: dst, Rate: 1e6, Size: 100, Pattern: "random"},
		"is IPv4, path ipv6 needs IPv6": {Proto: "udp", Path: path.IPv6, Dst: dst, Rate: 1e6, Size: 100},
	} {
		if _, err := Run(context.Background(), []Flow{f}, time.Second); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", f, err, want)
		}
	}
	ok := Flow{ID: 1, Proto: "udp", Path: path.IPv4, Dst: dst, Rate: 1e6, Size: 100}
	if _, err := Run(context.Background(), []Flow{ok}, 2*time.Hour); err == nil {
		t.Error("a 2 h run accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	if _, err := Run(ctx, []Flow{ok}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > time.Second {
		t.Errorf("cancelled run went on for %v", time.Since(start))
	}
}

// TestCountEndsAFlow: a flow of 50 packets ends after them, before the run's
// deadline, with all 50 delivered.
func TestCountEndsAFlow(t *testing.T) {
	s, v4, _ := sink(t)
	start := time.Now()
	reps, err := Run(context.Background(), []Flow{{ID: 7, Proto: "tcp", Path: path.IPv4, Dst: v4, Rate: 8e6, Size: 1000, Count: 50}}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if r := reps[0]; r.SentPkts != 50 || r.OfferedPkts != 50 || s.Delivered(7) != 50*1000 || time.Since(start) > 2*time.Second {
		t.Errorf("sent %d, offered %d, delivered %d bytes, took %v", r.SentPkts, r.OfferedPkts, s.Delivered(7), time.Since(start))
	}
	if _, err := Run(context.Background(), []Flow{{ID: 1, Proto: "udp", Path: path.IPv4, Dst: v4, Rate: 1e6, Size: 100, Count: -1}}, time.Second); err == nil {
		t.Error("negative count accepted")
	}
}
