package whatif

import (
	"math"
	"testing"
	"time"

	"v6lab/internal/report/stats"
)

const ms = time.Millisecond

// TestPreferIPv6 checks the rule against times worked by hand: IPv6 at
// once, IPv4 after the delay or at IPv6's failure, the first to complete.
func TestPreferIPv6(t *testing.T) {
	for _, c := range []struct {
		name   string
		s      Sample
		delay  time.Duration
		ipv6   bool
		at     time.Duration
		choice bool
	}{
		{"ipv4 started at once wins", Sample{Completed(10 * ms), Completed(5 * ms)}, 0, false, 5 * ms, true},
		{"ipv4 wins after the delay", Sample{Completed(10 * ms), Completed(5 * ms)}, 3 * ms, false, 8 * ms, true},
		{"a tie goes to the first started", Sample{Completed(10 * ms), Completed(5 * ms)}, 5 * ms, true, 10 * ms, true},
		{"the delay outlasts ipv6", Sample{Completed(10 * ms), Completed(5 * ms)}, 250 * ms, true, 10 * ms, true},
		{"ipv6 silent: ipv4 after the delay", Sample{SilentFor(time.Second), Completed(2 * ms)}, 250 * ms, false, 252 * ms, true},
		{"ipv6 refused: ipv4 at once", Sample{FailedAfter(1 * ms), Completed(2 * ms)}, 250 * ms, false, 3 * ms, true},
		{"ipv4 silent", Sample{Completed(400 * ms), SilentFor(time.Second)}, 100 * ms, true, 400 * ms, true},
		{"neither completes", Sample{SilentFor(time.Second), FailedAfter(ms)}, 100 * ms, false, 0, false},
	} {
		ipv6, at, ok := PreferIPv6(c.s, c.delay)
		if ipv6 != c.ipv6 || at != c.at || ok != c.choice {
			t.Errorf("%s: got ipv6=%v at %v ok=%v, want %v at %v ok=%v", c.name, ipv6, at, ok, c.ipv6, c.at, c.choice)
		}
	}
	// PreferIPv4 is the mirror image.
	if ipv6, at, _ := PreferIPv4(Sample{Completed(5 * ms), Completed(10 * ms)}, 3*ms); !ipv6 || at != 8*ms {
		t.Errorf("PreferIPv4: got ipv6=%v at %v, want IPv6 at 8ms", ipv6, at)
	}
}

// TestSweep: twenty samples, IPv6 slower than IPv4 in ten of them by
// 1..10 ms and faster in the rest; at 300 ms Happy Eyeballs ends on IPv6
// every time, so it picks the slower family in exactly the ten (Bajpai's
// "IPv6 picked when slower" is 100%), losing their differences; at 0 ms
// it ends on the faster family every time.
func TestSweep(t *testing.T) {
	w := New(PreferIPv6, []time.Duration{0, 300 * ms})
	for i := 1; i <= 10; i++ {
		w.Add(Sample{IPv6: Completed(time.Duration(20+i) * ms), IPv4: Completed(20 * ms)})
		w.Add(Sample{IPv6: Completed(20 * ms), IPv4: Completed(time.Duration(20+i) * ms)})
	}
	w.Add(Sample{IPv6: Completed(ms)}) // no IPv4 time: left out
	if w.N() != 20 || w.Missing() != 1 {
		t.Fatalf("N %d missing %d, want 20 and 1", w.N(), w.Missing())
	}
	p0, p300 := w.Points()[0], w.Points()[1]
	if p0.Slower != 0 || *p0.LostMeanMS != 0 || *p0.IPv6PickedWhenSlower != 0 {
		t.Errorf("at 0 ms: %+v, want the faster family every time", p0)
	}
	if p300.Slower != 10 || *p300.SlowerShare != 0.5 || p300.IPv6Slower != 10 || *p300.IPv6PickedWhenSlower != 1 {
		t.Errorf("at 300 ms: %+v", p300)
	}
	// Lost: 1..10 ms in the ten slower picks, 0 in the rest.
	if got := *p300.LostMeanMS; math.Abs(got-55.0/20) > 1e-9 {
		t.Errorf("mean lost %v ms, want 2.75", got)
	}
	if got := *p300.LostWhenSlowerMS; math.Abs(got-5.5) > 1e-9 {
		t.Errorf("lost when slower %v ms, want 5.5", got)
	}
	want, _ := stats.Wilson(10, 20)
	if *p300.SlowerCI95 != want {
		t.Errorf("CI %v, want Wilson(10, 20) %v", *p300.SlowerCI95, want)
	}
	if p, ok := w.At(300 * ms); !ok || p.Slower != 10 {
		t.Errorf("At(300ms) = %+v, %v", p, ok)
	}
}

// TestSweepTolerance: a difference within the tolerance is no slower
// family at all.
func TestSweepTolerance(t *testing.T) {
	w := New(PreferIPv6, []time.Duration{250 * ms})
	w.Tolerance = ms
	w.Add(Sample{IPv6: Completed(1500 * time.Microsecond), IPv4: Completed(ms)})
	w.Add(Sample{IPv6: Completed(3 * ms), IPv4: Completed(ms)})
	p := w.Points()[0]
	if p.Slower != 1 || p.IPv6Slower != 1 {
		t.Errorf("%+v: want one slower pick (the 2 ms one)", p)
	}
}

// TestSweepBlackhole: IPv6 never answers; every delay ends on IPv4, the
// faster family, and loses the delay itself.
func TestSweepBlackhole(t *testing.T) {
	w := New(PreferIPv6, Delays(0, 500*ms, 250*ms))
	for range 5 {
		w.Add(Sample{IPv6: SilentFor(time.Second), IPv4: Completed(2 * ms)})
	}
	w.Add(Sample{IPv6: SilentFor(time.Second), IPv4: SilentFor(time.Second)})
	for i, p := range w.Points() {
		d := float64(i * 250)
		if p.Slower != 0 || p.None != 1 || *p.IPv6Share != 0 || math.Abs(*p.LostMeanMS-d) > 1e-9 || p.IPv6Slower != 5 {
			t.Errorf("delay %v: %+v, want IPv4 each time, %v ms lost", d, p, d)
		}
		if p.IPv6PickedWhenSlower == nil || *p.IPv6PickedWhenSlower != 0 {
			t.Errorf("delay %v: IPv6 picked when slower %v, want 0", d, p.IPv6PickedWhenSlower)
		}
	}
}

// TestSweepMerge: sweeping parts and merging them gives the sweep of the
// whole.
func TestSweepMerge(t *testing.T) {
	delays := Delays(0, 100*ms, 25*ms)
	whole, a, b := New(PreferIPv6, delays), New(PreferIPv6, delays), New(PreferIPv6, delays)
	for i := range 40 {
		s := Sample{IPv6: Completed(time.Duration(i*3) * ms), IPv4: Completed(time.Duration(60-i) * ms)}
		if i%7 == 0 {
			s.IPv6 = SilentFor(time.Second)
		}
		whole.Add(s)
		if i%2 == 0 {
			a.Add(s)
		} else {
			b.Add(s)
		}
	}
	a.Merge(b)
	for i, p := range whole.Points() {
		q := a.Points()[i]
		if p.Slower != q.Slower || p.N != q.N || math.Abs(*p.LostMeanMS-*q.LostMeanMS) > 1e-9 || p.IPv6Slower != q.IPv6Slower {
			t.Errorf("delay %v: whole %+v, merged %+v", p.DelayMS, p, q)
		}
	}
}

func TestDelays(t *testing.T) {
	if d := Delays(0, 500*ms, 10*ms); len(d) != 51 || d[50] != 500*ms {
		t.Errorf("Delays(0, 500ms, 10ms) = %d delays ending %v", len(d), d[len(d)-1])
	}
	if d := Delays(0, ms, 0); d != nil {
		t.Errorf("a zero step: %v", d)
	}
}
