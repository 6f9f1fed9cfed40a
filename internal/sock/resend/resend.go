// Package resend is the one rule by which every lookup of v6lab sends an
// unanswered UDP query again, as a stub resolver does: the path package's
// (a lookup on a goroutine) and the event loop's (a lookup or a dual-stack
// race in the loop's thread) both follow a Stub through a Sends, so the
// schedule, its limit and the failure's words are the same for both.
//
// It imports nothing of v6lab.
package resend

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FirstRetry is v6lab's own wait before an unanswered UDP query goes
// again (a Stub with no Timeout): then twice as long after each query,
// until the lookup's time (the transaction's timeout) is up.
const FirstRetry = time.Second

// Stub is how a lookup sends an unanswered UDP query again, as a stub
// resolver does: resolv.conf's `options timeout:N attempts:N`. The zero
// Stub is v6lab's own schedule (FirstRetry, doubled each time, as many
// queries as the lookup's time allows).
type Stub struct {
	// Timeout is the wait for an answer after each query, the same every
	// time (glibc's, with one server). Zero: FirstRetry, doubled.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Attempts is how many queries are sent at most: the lookup fails when
	// the last one's wait ends without an answer. Zero: no limit but the
	// lookup's time.
	Attempts int `json:"attempts,omitempty"`
}

// Glibc is glibc's default (resolv.conf(5): timeout:5 attempts:2), what a
// resolv.conf that sets only one of the two gets for the other.
var Glibc = Stub{Timeout: 5 * time.Second, Attempts: 2}

// First is the wait after the first query.
func (s Stub) First() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return FirstRetry
}

// next is the wait after a query sent again, wait the one before it.
func (s Stub) next(wait time.Duration) time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return 2 * wait
}

// String says the schedule in resolv.conf's words, or v6lab's.
func (s Stub) String() string {
	if s.Timeout == 0 && s.Attempts == 0 {
		return fmt.Sprintf("sent again after %v, the wait doubled each time", FirstRetry)
	}
	return fmt.Sprintf("options timeout:%v attempts:%d", s.First(), s.Attempts)
}

// Option takes one word of a resolv.conf options line (timeout:N or
// attempts:N; others are skipped) as glibc reads it: timeout in seconds,
// at most 30, attempts at most 5, both at least 1; glibc's defaults
// (Glibc) fill the other on the first.
func (s *Stub) Option(word string) {
	name, v, ok := strings.Cut(word, ":")
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 0 || (name != "timeout" && name != "attempts") {
		return
	}
	if *s == (Stub{}) {
		*s = Glibc
	}
	if name == "timeout" {
		s.Timeout = time.Duration(max(1, min(n, 30))) * time.Second
	} else {
		s.Attempts = max(1, min(n, 5))
	}
}

// kept is how many sending times a Sends keeps for its failure's words
// (Stub's attempts are at most 5; v6lab's doubling sends 5 in 30 s).
const kept = 8

// Sends follows one lookup's UDP queries as its Stub says: when the next
// goes (Due), how many went and when. The zero Sends is not started; it
// allocates nothing.
type Sends struct {
	stub  Stub
	pair  bool // AAAA and A sent together (StartPair)
	first time.Time
	// Due is when the query goes again if no answer has come by then.
	Due  time.Time
	wait time.Duration
	n    int
	at   [kept]time.Duration // each query's time after the first
}

// Start records the first query, sent at now.
func (s *Sends) Start(stub Stub, now time.Time) {
	*s = Sends{stub: stub, first: now, wait: stub.First(), n: 1}
	s.Due = now.Add(s.wait)
}

// StartPair is Start for a pair of queries sent together (a dual-stack
// client's AAAA and A), sent again together while either is unanswered.
func (s *Sends) StartPair(stub Stub, now time.Time) {
	s.Start(stub, now)
	s.pair = true
}

// Started says whether a first query was recorded.
func (s *Sends) Started() bool { return s.n > 0 }

// Count is how many queries were sent (0: not started).
func (s *Sends) Count() int { return s.n }

// Again is called when Due has passed without an answer: true, the query
// is to be sent again now (and Sent called once it has gone); false, the
// Stub has no attempts left and the lookup fails with Exhausted.
func (s *Sends) Again() bool {
	return s.stub.Attempts == 0 || s.n < s.stub.Attempts
}

// Sent records a query sent again at now, and when the next is due.
func (s *Sends) Sent(now time.Time) {
	if s.n < kept {
		s.at[s.n] = now.Sub(s.first)
	}
	s.n++
	s.wait = s.stub.next(s.wait)
	s.Due = now.Add(s.wait)
}

// ErrExhausted is wrapped by Exhausted's error: the Stub's attempts are
// spent, every one unanswered.
var ErrExhausted = errors.New("no attempts left")

// Exhausted is the failure of a lookup whose every attempt went
// unanswered: how many queries went, when, and the last one's wait. For
// a pair it is each unanswered query's own (each went as many times).
func (s *Sends) Exhausted() error {
	return s.one(fmt.Errorf("the last waited %v (%s): %w", s.wait, s.stub, ErrExhausted))
}

// Unanswered is err with how many queries were sent and when.
func (s *Sends) Unanswered(err error) error {
	switch {
	case s.pair && s.n <= 1:
		return fmt.Errorf("no answer to its AAAA and A queries, sent once: %w", err)
	case s.pair:
		return fmt.Errorf("no answer to its AAAA and A queries, sent %d times (at %s): %w", s.n, s.times(), err)
	}
	return s.one(err)
}

// one is Unanswered for one query.
func (s *Sends) one(err error) error {
	if s.n <= 1 {
		return fmt.Errorf("no answer to its one query: %w", err)
	}
	return fmt.Errorf("no answer to %d queries (sent at %s): %w", s.n, s.times(), err)
}

// times are the sending times kept, "0s, 1s, 3s".
func (s *Sends) times() string {
	at := make([]string, 0, min(s.n, kept))
	for i := range min(s.n, kept) {
		at = append(at, s.at[i].Round(time.Millisecond).String())
	}
	if s.n > kept {
		at = append(at, "…")
	}
	return strings.Join(at, ", ")
}
