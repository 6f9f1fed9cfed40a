package resend

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestSendsFollowTheStub: v6lab's schedule doubles its wait and has no
// limit; a resolv.conf Stub waits the same each time and stops at its
// attempts; the failure says how many went and when, and keeps what it
// wraps.
func TestSendsFollowTheStub(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var s Sends
	if s.Started() {
		t.Fatal("the zero Sends is started")
	}
	s.Start(Stub{}, t0)
	for i, want := range []time.Duration{1, 3, 7, 15, 31, 63, 127, 255, 511} {
		if !s.Again() {
			t.Fatalf("query %d: v6lab's schedule stopped", i+2)
		}
		if got := s.Due.Sub(t0); got != want*time.Second {
			t.Fatalf("query %d due at %v, want %vs", i+2, got, want)
		}
		s.Sent(s.Due)
	}
	err := s.Unanswered(context.DeadlineExceeded)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer to 10 queries (sent at 0s, 1s, 3s, 7s, 15s, 31s, 1m3s, 2m7s, …)") {
		t.Errorf("%v", err)
	}

	s.Start(Glibc, t0)
	if !s.Again() || s.Due != t0.Add(5*time.Second) {
		t.Fatalf("glibc's second query: again %v, due %v", s.Again(), s.Due.Sub(t0))
	}
	s.Sent(s.Due)
	if s.Again() || s.Count() != 2 || s.Due != t0.Add(10*time.Second) {
		t.Fatalf("glibc's after two: again %v, %d sent, due %v", s.Again(), s.Count(), s.Due.Sub(t0))
	}
	err = s.Exhausted()
	if !errors.Is(err, ErrExhausted) || err.Error() != "no answer to 2 queries (sent at 0s, 5s): the last waited 5s (options timeout:5s attempts:2): no attempts left" {
		t.Errorf("%v", err)
	}
	s.StartPair(Stub{}, t0)
	if err := s.Unanswered(context.Canceled); err.Error() != "no answer to its AAAA and A queries, sent once: context canceled" {
		t.Errorf("%v", err)
	}
}

// TestOptionReadsAsGlibc: timeout and attempts capped as glibc caps them,
// the other filled with glibc's default, other words skipped.
func TestOptionReadsAsGlibc(t *testing.T) {
	for words, want := range map[string]Stub{
		"timeout:1":             {Timeout: time.Second, Attempts: 2},
		"attempts:4":            {Timeout: 5 * time.Second, Attempts: 4},
		"timeout:99 attempts:9": {Timeout: 30 * time.Second, Attempts: 5},
		"timeout:0 attempts:0":  {Timeout: time.Second, Attempts: 1},
		"ndots:2 rotate":        {},
		"timeout:x":             {},
	} {
		var s Stub
		for _, w := range strings.Fields(words) {
			s.Option(w)
		}
		if s != want {
			t.Errorf("%q: %+v, want %+v", words, s, want)
		}
	}
}
