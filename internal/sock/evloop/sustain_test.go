package evloop

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// TestSustainRunsSlotsBackToBack: each slot's next exchange starts as
// soon as the last one is over, in the loop, until next ends the slot;
// every exchange's result reaches next, and no socket is left open.
func TestSustainRunsSlotsBackToBack(t *testing.T) {
	e := engine(t)
	leavesNothingOpen(t, "sustain", func(t *testing.T) {
		srv := server(t, "tcp4", "127.0.0.1:0", func(req string) string { return "echo " + req })
		const slots, each = 6, 5
		var mu sync.Mutex
		got := map[int]int{}
		var failed []string
		e.Sustain(context.Background(), slots, func(slot int, prev *Result) *Exchange {
			mu.Lock()
			defer mu.Unlock()
			if prev != nil {
				if prev.Err != nil || prev.LastRead.Before(prev.Connected) || prev.BytesIn != int64(len("echo x")) {
					failed = append(failed, prev.Phase+": "+errString(prev.Err))
				}
				got[slot]++
			}
			if got[slot] == each {
				return nil
			}
			return &Exchange{Remote: srv, Request: []byte("x"), Reply: &untilEOF{}, Deadline: time.Now().Add(5 * time.Second)}
		})
		if len(failed) > 0 {
			t.Fatalf("failed exchanges: %v", failed)
		}
		for s := range slots {
			if got[s] != each {
				t.Errorf("slot %d ran %d exchanges, want %d", s, got[s], each)
			}
		}
	})
}

// TestSustainDeadlinesAndContext: an exchange past its Deadline ends with
// ErrTimeout, and the run's context ends the exchanges in flight with its
// error; Sustain returns once every slot has ended.
func TestSustainDeadlinesAndContext(t *testing.T) {
	e := engine(t)
	srv, _, release := heldServer(t)
	defer close(release)
	var mu sync.Mutex
	var errs []error
	run := func(ctx context.Context, deadline time.Duration) {
		e.Sustain(ctx, 3, func(slot int, prev *Result) *Exchange {
			if prev != nil {
				mu.Lock()
				errs = append(errs, prev.Err)
				mu.Unlock()
				return nil
			}
			return &Exchange{Remote: srv, Request: []byte("x"), Reply: &untilEOF{}, Deadline: time.Now().Add(deadline)}
		})
	}
	begin := time.Now()
	run(context.Background(), 50*time.Millisecond)
	if took := time.Since(begin); took < 50*time.Millisecond || took > 2*time.Second {
		t.Errorf("three exchanges past a 50ms deadline took %v", took)
	}
	for _, err := range errs {
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("past its deadline: %v", err)
		}
	}
	errs = nil
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	begin = time.Now()
	run(ctx, time.Hour)
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("a cancelled run took %v to end", took)
	}
	if len(errs) != 3 {
		t.Fatalf("%d results of 3 exchanges", len(errs))
	}
	for _, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cut by the run's context: %v", err)
		}
	}
}

// TestSustainFailuresGoOn: an exchange that fails at once (nothing
// listens) reaches next like any other, and the slot goes on.
func TestSustainFailuresGoOn(t *testing.T) {
	e := engine(t)
	dead := netip.MustParseAddrPort("127.0.0.1:1")
	n := 0
	e.Sustain(context.Background(), 1, func(slot int, prev *Result) *Exchange {
		if prev != nil {
			if prev.Err == nil || prev.Phase != "connect" {
				t.Errorf("an exchange to a closed port: %s %v", prev.Phase, prev.Err)
			}
			n++
		}
		if n == 3 {
			return nil
		}
		return &Exchange{Remote: dead, Request: []byte("x"), Reply: &untilEOF{}, Deadline: time.Now().Add(time.Second)}
	})
	if n != 3 {
		t.Errorf("%d results, want 3", n)
	}
}
