package evloop

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"v6lab/internal/sock/eyeballs"
	"v6lab/internal/sock/resend"
)

// TestLookupFollowsItsStub: the loop's lookup sends its query as its
// Stub says, as path's lookups do (resend.Sends, one rule): a Stub's
// attempts spent end it in phase "resolve" with how many queries went and
// their wait (resend.ErrExhausted), each resend counted in Result.Resent;
// a lookup whose context ends first says how many went unanswered and
// stays a timeout.
func TestLookupFollowsItsStub(t *testing.T) {
	e := engine(t)
	srv := server(t, "tcp4", "127.0.0.1:0", func(string) string { return "reply" })
	silent, queries := answerer(t, "udp4", "127.0.0.1:0", "", 1000)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	r := e.Do(ctx, &Exchange{Remote: srv, Request: []byte("GET\n"), Reply: &untilEOF{},
		Lookup: &Lookup{Server: silent, Query: []byte("name"), Answer: answer, Stub: resend.Stub{Timeout: 30 * time.Millisecond, Attempts: 3}}})
	took := time.Since(start)
	if r.Phase != "resolve" || !errors.Is(r.Err, resend.ErrExhausted) || r.Resent != 2 || queries() != 3 {
		t.Fatalf("%s: %v; %d resent, the server got %d; want resolve, attempts spent, 2 and 3", r.Phase, r.Err, r.Resent, queries())
	}
	if took < 90*time.Millisecond || took > 4*time.Second {
		t.Errorf("gave up after %v; want three waits of 30ms", took)
	}
	if msg := r.Err.Error(); !strings.Contains(msg, "no answer to 3 queries (sent at 0s, ") || !strings.Contains(msg, "options timeout:30ms attempts:3") {
		t.Errorf("error %q does not say the queries and the stub", msg)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	r = e.Do(ctx, &Exchange{Remote: srv, Request: []byte("GET\n"), Reply: &untilEOF{},
		Lookup: &Lookup{Server: silent, Query: []byte("name"), Answer: answer, Stub: resend.Stub{Timeout: 40 * time.Millisecond}}})
	want := fmt.Sprintf("no answer to %d queries", r.Resent+1)
	if r.Phase != "resolve" || !errors.Is(r.Err, ErrTimeout) || r.Resent < 1 || !strings.Contains(r.Err.Error(), want) {
		t.Errorf("at the deadline: %s: %v, %d resent; want a timeout saying %q", r.Phase, r.Err, r.Resent, want)
	}
}

// TestRaceFollowsItsStub: a race's queries, never answered, are sent
// again together as its Stub says, and with its attempts spent each
// family has no address (the racer is told why) and the race is lost:
// phase "resolve", both queries sent twice.
func TestRaceFollowsItsStub(t *testing.T) {
	e := engine(t)
	dns, queries := dualDNS(t, 0, 0, 1000)
	racer := eyeballs.Dialer{}.Race("h", time.Now())
	x := &Exchange{Remote: netip.AddrPortFrom(netip.Addr{}, dualServer(t, "serve")), Request: []byte("GET\n"), Reply: &untilEOF{},
		Race: &Race{Server: dns, AAAA: []byte("AAAA"), A: []byte("A"), Answer: raceAnswer, Stub: resend.Stub{Timeout: 30 * time.Millisecond, Attempts: 2}, Racer: racer}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := e.Do(ctx, x)
	if r.Phase != "resolve" || r.Err == nil || r.Resent != 2 || queries() != 4 {
		t.Fatalf("%s: %v; %d resent, the server got %d; want resolve, 2 (AAAA and A) and 4", r.Phase, r.Err, r.Resent, queries())
	}
	if msg := r.Err.Error(); !strings.Contains(msg, "AAAA: no answer to 2 queries (sent at 0s, ") || !strings.Contains(msg, "attempts:2)") {
		t.Errorf("error %q does not say each query went twice, unanswered", msg)
	}

	racer = eyeballs.Dialer{}.Race("h", time.Now())
	x.Race = &Race{Server: dns, AAAA: []byte("AAAA"), A: []byte("A"), Answer: raceAnswer, Racer: racer}
	short, stop := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer stop()
	r = e.Do(short, x)
	if r.Phase != "resolve" || !errors.Is(r.Err, ErrTimeout) || !strings.Contains(r.Err.Error(), "no answer to its AAAA and A queries, sent once") {
		t.Errorf("at the deadline, before the first resend (1 s): %s: %v", r.Phase, r.Err)
	}
}

// TestRaceGoesOnWhenOneFamilysAttemptsAreSpent: an AAAA query never
// answered, its Stub's attempts spent, leaves IPv6 without an address:
// IPv4 (answered at once) starts then, not at the end of a Resolution
// Delay (1 s) that waits for the AAAA answer.
func TestRaceGoesOnWhenOneFamilysAttemptsAreSpent(t *testing.T) {
	e := engine(t)
	dns, queries := udpServer(t, "udp4", "127.0.0.1:0", 0, func(q string, reply func(string)) {
		if q == "A" {
			reply("4:127.0.0.1")
		}
	})
	racer := eyeballs.Dialer{ResolutionDelay: time.Second}.Race("h", time.Now())
	reply := &untilEOF{}
	x := &Exchange{Remote: netip.AddrPortFrom(netip.Addr{}, dualServer(t, "serve")), Request: []byte("GET\n"), Reply: reply,
		Race: &Race{Server: dns, AAAA: []byte("AAAA"), A: []byte("A"), Answer: raceAnswer, Stub: resend.Stub{Timeout: 30 * time.Millisecond, Attempts: 2}, Racer: racer}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r := e.Do(ctx, x)
	hr := racer.Result()
	if r.Err != nil || reply.got.String() != "v4" || len(hr.Attempts) != 1 || r.Resent != 1 || queries() != 3 {
		t.Fatalf("%s: %v; reply %q, %d resent, %d queries, race %+v", r.Phase, r.Err, reply.got.String(), r.Resent, queries(), hr)
	}
	near(t, "the IPv4 attempt", hr.Attempts[0].Start, 60*time.Millisecond, time.Second)
}
