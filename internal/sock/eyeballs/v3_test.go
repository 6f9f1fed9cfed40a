package eyeballs

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// The tests of version 3 are named after the sections of
// draft-ietf-happy-happyeyeballs-v3 they check, and run Race3 on a clock
// of their own.

var t0 = time.Unix(2000, 0)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

const host = "www.example.test"

var (
	h3h2 = Service{Priority: 1, ALPN: []string{ALPNH3, ALPNH2}}
	aaaa = Query{host, TypeAAAA}
	aq   = Query{host, TypeA}
	hq   = Query{host, TypeHTTPS}
)

// drive is a race under test.
type drive struct {
	t *testing.T
	r *Race3
}

func start(t *testing.T, c V3) *drive {
	return &drive{t, c.Start(host, 443, t0)}
}

// queries takes the queries the race asks for now.
func (d *drive) queries(ms float64) []Query {
	var out []Query
	for {
		a := d.r.Next(at(ms))
		if a.Query.Type == 0 {
			if a.Start {
				d.t.Fatalf("at %v ms: an attempt (%v) before the queries were all out", ms, a.Attempt)
			}
			return out
		}
		out = append(out, a.Query)
	}
}

// next wants the race to start an attempt to want at ms.
func (d *drive) next(ms float64, want string) int {
	d.t.Helper()
	a := d.r.Next(at(ms))
	if !a.Start || a.Attempt.String() != want {
		d.t.Fatalf("at %v ms: %+v, want an attempt to %s", ms, a, want)
	}
	return a.Index
}

// waits wants the race to wait at ms until wakeMS (<0: no timer).
func (d *drive) waits(ms, wakeMS float64) {
	d.t.Helper()
	a := d.r.Next(at(ms))
	if a.Start || a.Query.Type != 0 || a.Err != nil || (wakeMS < 0) != a.Wake.IsZero() || (wakeMS >= 0 && !a.Wake.Equal(at(wakeMS))) {
		d.t.Fatalf("at %v ms: %+v (wake %v), want to wait until %v ms", ms, a, a.Wake.Sub(t0), wakeMS)
	}
}

func (d *drive) answer(q Query, ms float64, rep Reply) { d.r.Answer(q, rep, at(ms)) }

// healthy answers the three queries at 1, 2 and 3 ms.
func (d *drive) healthy() {
	d.queries(0)
	d.answer(hq, 1, Reply{Services: []Service{h3h2}})
	d.answer(aaaa, 2, Reply{Addrs: []netip.Addr{v6a}})
	d.answer(aq, 3, Reply{Addrs: []netip.Addr{v4a}})
}

// §4.1: HTTPS, AAAA, A, one after the other, before anything else.
func TestSection4_1_SendingDNSQueries(t *testing.T) {
	d := start(t, V3{})
	got := d.queries(0)
	want := []Query{hq, aaaa, aq}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("queries %v, want %v", got, want)
	}
	d.waits(0, -1)
}

// §4.2: the first condition set (an address, the preferred family's
// answer, the service's) starts at once; the second waits the
// Resolution Delay from the first address.
func TestSection4_2_HandlingDNSAnswersAsynchronously(t *testing.T) {
	t.Run("all in: start at once with IPv6 over QUIC", func(t *testing.T) {
		d := start(t, V3{})
		d.queries(0)
		d.answer(hq, 1, Reply{Services: []Service{h3h2}})
		d.waits(1, -1) // no address yet
		d.answer(aaaa, 2, Reply{Addrs: []netip.Addr{v6a}})
		d.next(2, "quic [2001:db8::1]:443")
	})
	t.Run("A first, AAAA within the delay", func(t *testing.T) {
		d := start(t, V3{})
		d.queries(0)
		d.answer(hq, 30, Reply{})
		d.answer(aq, 30, Reply{Addrs: []netip.Addr{v4a}})
		d.waits(30, 80)
		d.answer(aaaa, 40, Reply{Addrs: []netip.Addr{v6a}})
		d.next(40, "tcp [2001:db8::1]:443")
	})
	t.Run("AAAA later than the delay: IPv4 first", func(t *testing.T) {
		d := start(t, V3{})
		d.queries(0)
		d.answer(hq, 30, Reply{Services: []Service{h3h2}})
		d.answer(aq, 30, Reply{Addrs: []netip.Addr{v4a}})
		d.waits(30, 80)
		d.next(80, "quic 192.0.2.1:443")
	})
	t.Run("HTTPS late: the delay, then TCP", func(t *testing.T) {
		d := start(t, V3{})
		d.queries(0)
		d.answer(aaaa, 30, Reply{Addrs: []netip.Addr{v6a}})
		d.answer(aq, 30, Reply{Addrs: []netip.Addr{v4a}})
		d.waits(30, 80)
		d.next(80, "tcp [2001:db8::1]:443")
	})
	t.Run("every answer empty: no address", func(t *testing.T) {
		d := start(t, V3{})
		d.queries(0)
		d.answer(hq, 1, Reply{})
		d.answer(aaaa, 1, Reply{Err: errors.New("NXDOMAIN")})
		d.answer(aq, 1, Reply{})
		a := d.r.Next(at(1))
		if a.Err == nil || !errors.Is(a.Err, ErrNoEndpoint) || !strings.Contains(a.Err.Error(), "AAAA www.example.test: NXDOMAIN") {
			t.Errorf("%+v, want no address, naming the answers", a)
		}
	})
}

// §4.2.1: hints are positive answers (for their family: the preferred
// one's too), replaced by the addresses once those come (§7); an
// AliasMode record is followed; a ServiceMode TargetName is asked for its
// addresses.
func TestSection4_2_1_ResolvingSVCBAliasesAndTargets(t *testing.T) {
	t.Run("hints: start before A and AAAA", func(t *testing.T) {
		d := start(t, V3{})
		d.queries(0)
		s := h3h2
		s.IPv6Hint, s.IPv4Hint = []netip.Addr{v6b}, []netip.Addr{v4b}
		d.answer(hq, 5, Reply{Services: []Service{s}})
		e := d.next(5, "quic [2001:db8::2]:443")
		if !d.r.Record().Attempts[e].Hint {
			t.Errorf("the attempt is not marked as from a hint")
		}
		// The AAAA answer replaces the hint (a different address).
		d.answer(aaaa, 20, Reply{Addrs: []netip.Addr{v6a}})
		d.answer(aq, 21, Reply{Addrs: []netip.Addr{v4a}})
		got := d.r.Endpoints()
		if got[0].String() != "quic 192.0.2.1:443" || got[1].String() != "quic [2001:db8::1]:443" || got[1].Hint {
			t.Errorf("after the answers: %v", got)
		}
	})
	t.Run("an alias is followed to its service and target", func(t *testing.T) {
		d := start(t, V3{})
		d.queries(0)
		d.answer(hq, 1, Reply{Services: []Service{{Priority: 0, Target: "cdn.example.test."}}})
		if got := d.queries(1); len(got) != 1 || got[0] != (Query{"cdn.example.test", TypeHTTPS}) {
			t.Fatalf("after the alias: %v", got)
		}
		d.answer(aaaa, 2, Reply{Addrs: []netip.Addr{v6a}})
		d.waits(2, 52) // the service is not known until ServiceMode comes
		d.answer(Query{"cdn.example.test", TypeHTTPS}, 3, Reply{Services: []Service{{Priority: 1, Target: "edge.example.test", ALPN: []string{ALPNH3}}}})
		// The target's addresses are asked for; meanwhile the host's own
		// (no record names it: the last group, over TCP) is tried (§4.2's
		// conditions hold), as the draft's example with an "alt" service.
		for _, want := range []Query{{"edge.example.test", TypeAAAA}, {"edge.example.test", TypeA}} {
			if a := d.r.Next(at(3)); a.Query != want {
				t.Fatalf("after the target: %+v, want %v", a, want)
			}
		}
		if e := d.next(3, "tcp [2001:db8::1]:443"); d.r.Record().Attempts[e].Group != -1 {
			t.Errorf("the host's own address is not in the last group")
		}
		d.answer(Query{"edge.example.test", TypeAAAA}, 4, Reply{Addrs: []netip.Addr{v6b}})
		// alpn=h3 without no-default-alpn: http/1.1 over TCP too.
		if list := d.r.Endpoints(); len(list) != 2 || list[0].String() != "quic [2001:db8::2]:443" || list[1].ALPN[0] != ALPNHTTP11 {
			t.Errorf("endpoints %v: want the target's, QUIC first", list)
		}
		d.waits(4, 253)
		d.next(253, "quic [2001:db8::2]:443")
	})
}

// §4.3 and §7: an answer after the attempts began joins the list where
// sorting puts it: the first IPv4 endpoint next, ahead of IPv6's rest.
func TestSection7_DNSAnswerChanges(t *testing.T) {
	d := start(t, V3{})
	d.queries(0)
	d.answer(hq, 1, Reply{Services: []Service{h3h2}})
	d.answer(aaaa, 1, Reply{Addrs: []netip.Addr{v6a, v6b}})
	d.next(1, "quic [2001:db8::1]:443")
	d.answer(aq, 10, Reply{Addrs: []netip.Addr{v4a}})
	if got := d.r.Endpoints(); got[0].String() != "quic 192.0.2.1:443" || got[1].String() != "quic [2001:db8::2]:443" {
		t.Errorf("endpoints %v", got)
	}
	d.waits(10, 251)
	d.next(251, "quic 192.0.2.1:443")
}

// §5.1 and §6.2: a record's ALPN set decides the transports; an endpoint
// whose set has none of the client's protocols is never tried.
func TestSection6_2_HandlingALPN(t *testing.T) {
	onlyH3 := Service{Priority: 1, ALPN: []string{ALPNH3}, NoDefaultALPN: true, IPv6Hint: []netip.Addr{v6b}}
	d := start(t, V3{Supported: []string{ALPNH2, ALPNHTTP11}}) // a client without HTTP/3
	d.queries(0)
	d.answer(hq, 1, Reply{Services: []Service{onlyH3}})
	d.answer(aaaa, 1, Reply{})
	d.answer(aq, 1, Reply{})
	if got := d.r.Endpoints(); len(got) != 0 {
		t.Errorf("endpoints %v: the record allows only h3, which the client does not speak", got)
	}
	if a := d.r.Next(at(1)); a.Err == nil {
		t.Errorf("%+v: want the race lost", a)
	}
	// The default ALPN set is http/1.1: TCP only.
	d = start(t, V3{})
	d.healthy()
	if got := d.r.Endpoints(); got[0].String() != "quic [2001:db8::1]:443" || got[0].ALPN[0] != ALPNH3 || got[2].Transport != TCP || strings.Join(got[2].ALPN, ",") != "h2,http/1.1" {
		t.Errorf("h3,h2: %v", got)
	}
}

// §5.2: the records' priorities order the groups; a record of priority 2
// waits for priority 1's endpoints; addresses no record names come last.
func TestSection5_2_GroupingByServicePriority(t *testing.T) {
	d := start(t, V3{})
	d.queries(0)
	second := Service{Priority: 2, Target: "b.example.test", ALPN: []string{ALPNH2}, IPv6Hint: []netip.Addr{v6b}}
	first := Service{Priority: 1, Target: "a.example.test", ALPN: []string{ALPNH3}, IPv4Hint: []netip.Addr{v4b}}
	d.answer(hq, 1, Reply{Services: []Service{second, first}})
	d.answer(aaaa, 1, Reply{Addrs: []netip.Addr{v6a}})
	var got []string
	for _, e := range d.r.Endpoints() {
		got = append(got, e.String())
	}
	want := "quic 192.0.2.2:443 tcp 192.0.2.2:443 tcp [2001:db8::2]:443 tcp [2001:db8::1]:443"
	if strings.Join(got, " ") != want {
		t.Errorf("endpoints\n %v\nwant\n %v", got, want)
	}
}

// §5.3: within a group, IPv6 first, QUIC before TCP, the families
// interleaved after the Preferred Address Family Count; a known RTT
// sorts its address first within its family.
func TestSection5_3_SortingDestinationEndpointsWithinGroups(t *testing.T) {
	order := func(c V3) string {
		d := start(t, c)
		d.queries(0)
		d.answer(hq, 1, Reply{Services: []Service{h3h2}})
		d.answer(aaaa, 1, Reply{Addrs: []netip.Addr{v6a, v6b}})
		d.answer(aq, 1, Reply{Addrs: []netip.Addr{v4a}})
		var got []string
		for _, e := range d.r.Endpoints() {
			got = append(got, e.String())
		}
		return strings.Join(got, " ")
	}
	if got, want := order(V3{}), "quic [2001:db8::1]:443 quic 192.0.2.1:443 quic [2001:db8::2]:443 tcp 192.0.2.1:443 tcp [2001:db8::1]:443 tcp [2001:db8::2]:443"; got != want {
		t.Errorf("count 1:\n %s\nwant\n %s", got, want)
	}
	if got, want := order(V3{PreferredFamilyCount: 2}), "quic [2001:db8::1]:443 quic [2001:db8::2]:443 quic 192.0.2.1:443 tcp [2001:db8::1]:443 tcp 192.0.2.1:443 tcp [2001:db8::2]:443"; got != want {
		t.Errorf("count 2:\n %s\nwant\n %s", got, want)
	}
	h := &History{}
	h.Observe(v6b, 5*time.Millisecond)
	if got := order(V3{History: h}); !strings.HasPrefix(got, "quic [2001:db8::2]:443 ") {
		t.Errorf("with v6b's RTT known: %s", got)
	}
}

// §6: one attempt at a time; the next after the Connection Attempt Delay
// (fixed, or the previous attempt's first retransmission from the RTT
// History, within the minimum and maximum, times the multiplier for each
// attempt still under way); a failure moves on at once but not within
// 10 ms of the previous start; a success cancels the rest.
func TestSection6_ConnectionAttempts(t *testing.T) {
	t.Run("fixed delay", func(t *testing.T) {
		d := start(t, V3{})
		d.healthy()
		d.next(3, "quic [2001:db8::1]:443")
		d.waits(3, 253)
		d.next(253, "quic 192.0.2.1:443")
		d.waits(253, 503)
	})
	t.Run("from the RTT history, within the bounds", func(t *testing.T) {
		h := &History{}
		h.Observe(v6a, 40*time.Millisecond) // SRTT 40, RTTVAR 20: 40 + 80 = 120 ms
		h.Observe(v4a, 2*time.Millisecond)  // 2 + 4 = 6 ms: the minimum, 100 ms
		d := start(t, V3{History: h})
		d.healthy()
		d.next(3, "quic [2001:db8::1]:443")
		d.waits(3, 123)
		d.next(123, "quic 192.0.2.1:443")
		d.waits(123, 223)
		rec := d.r.Record()
		if rec.Attempts[0].Delay != 120*time.Millisecond {
			t.Errorf("the first attempt's delay %v, want 120ms", rec.Attempts[0].Delay)
		}
		slow := &History{}
		slow.Observe(v6a, 3*time.Second)
		d = start(t, V3{History: slow})
		d.healthy()
		d.next(3, "quic [2001:db8::1]:443")
		d.waits(3, 2003) // the maximum
	})
	t.Run("multiplier", func(t *testing.T) {
		d := start(t, V3{AttemptDelay: 100 * time.Millisecond, Multiplier: 2})
		d.healthy()
		d.next(3, "quic [2001:db8::1]:443")
		d.next(103, "quic 192.0.2.1:443")
		d.waits(103, 303) // two under way: twice the delay
	})
	t.Run("a failure moves on, after the floor", func(t *testing.T) {
		d := start(t, V3{})
		d.healthy()
		i := d.next(3, "quic [2001:db8::1]:443")
		d.r.Failed(i, errors.New("refused"), at(5))
		d.waits(5, 13)
		d.next(13, "quic 192.0.2.1:443")
	})
	t.Run("a success cancels the rest", func(t *testing.T) {
		d := start(t, V3{})
		d.healthy()
		d.next(3, "quic [2001:db8::1]:443")
		j := d.next(253, "quic 192.0.2.1:443")
		d.r.Won(j, at(255))
		rec := d.r.Record()
		if rec.Winner != 1 || rec.Connect != 255*time.Millisecond || rec.Attempts[0].Outcome != Cancelled || !d.r.Over() {
			t.Errorf("record %+v", rec)
		}
		if a := d.r.Next(at(300)); a.Start || a.Err != nil {
			t.Errorf("after the win: %+v", a)
		}
	})
	t.Run("every attempt failed", func(t *testing.T) {
		d := start(t, V3{})
		d.queries(0)
		d.answer(hq, 1, Reply{})
		d.answer(aaaa, 1, Reply{Addrs: []netip.Addr{v6a}})
		d.answer(aq, 1, Reply{})
		i := d.next(1, "tcp [2001:db8::1]:443")
		d.r.Failed(i, errors.New("connection refused"), at(2))
		a := d.r.Next(at(20))
		if a.Err == nil || !strings.Contains(a.Err.Error(), "connection refused") {
			t.Errorf("%+v, want the last error", a)
		}
	})
}

// §6.1: a TCP attempt's TCP handshake is progress, not success: the timer
// is extended by twice what it took (TLS to come).
func TestSection6_1_DeterminingSuccessfulConnectionEstablishment(t *testing.T) {
	d := start(t, V3{})
	d.queries(0)
	d.answer(hq, 1, Reply{})
	d.answer(aaaa, 1, Reply{Addrs: []netip.Addr{v6a}})
	d.answer(aq, 1, Reply{Addrs: []netip.Addr{v4a}})
	i := d.next(1, "tcp [2001:db8::1]:443")
	d.r.Progress(i, at(241)) // TCP after 240 ms: TLS may take as long again, twice
	d.waits(241, 721)
	d.r.Won(i, at(300))
	if rec := d.r.Record(); rec.Attempts[0].Progress != 241*time.Millisecond || rec.Connect != 300*time.Millisecond {
		t.Errorf("record %+v", rec)
	}
}

// §9: the recommended values, and the bounds a configuration may not
// cross.
func TestSection9_SummaryOfConfigurableValues(t *testing.T) {
	d := V3{}.defaults()
	if d.ResolutionDelay != 50*time.Millisecond || d.AttemptDelay != 250*time.Millisecond || d.MinAttemptDelay != 100*time.Millisecond ||
		d.MaxAttemptDelay != 2*time.Second || d.PreferredFamilyCount != 1 || d.Multiplier != 1 {
		t.Errorf("defaults %+v", d)
	}
	for _, c := range []struct {
		v3   V3
		want string
	}{
		{V3{MinAttemptDelay: 5 * time.Millisecond, AttemptDelay: 20 * time.Millisecond}, "min_attempt_delay 5ms: a subsequent attempt MUST NOT start within 10ms"},
		{V3{AttemptDelay: 50 * time.Millisecond}, "attempt_delay 50ms: want min_attempt_delay 100ms to max_attempt_delay 2s"},
		{V3{MaxAttemptDelay: 50 * time.Millisecond, MinAttemptDelay: 60 * time.Millisecond}, "max_attempt_delay 50ms is below min_attempt_delay 60ms"},
		{V3{PreferredFamilyCount: -1}, "preferred_family_count -1"},
		{V3{Multiplier: 0.5}, "attempt_delay_multiplier 0.5"},
	} {
		if err := c.v3.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.v3, err, c.want)
		}
	}
	if err := (V3{MinAttemptDelay: 10 * time.Millisecond, AttemptDelay: 10 * time.Millisecond}).Check(); err != nil {
		t.Errorf("the floor itself: %v", err)
	}
}

// The retransmission timers agree: RFC 6298's RTO and RFC 9002's PTO.
func TestRetransmit(t *testing.T) {
	if got := Retransmit(100*time.Millisecond, 50*time.Millisecond); got != 300*time.Millisecond {
		t.Errorf("Retransmit(100ms, 50ms) = %v, want 300ms", got)
	}
	if got := Retransmit(100*time.Microsecond, 0); got != 1100*time.Microsecond {
		t.Errorf("the granularity: %v", got)
	}
	h := &History{}
	h.Observe(v4a, 100*time.Millisecond)
	h.Observe(v4a, 20*time.Millisecond) // RTTVAR 3/4·50 + 1/4·80 = 57.5; SRTT 90
	if s, v, _ := h.RTT(v4a); s != 90*time.Millisecond || v != 57500*time.Microsecond {
		t.Errorf("SRTT %v RTTVAR %v", s, v)
	}
}
