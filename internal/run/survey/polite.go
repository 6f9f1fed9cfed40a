package survey

import (
	"context"
	"sync"
	"time"
)

// pacer spaces connections evenly over every site: at most rate a second,
// each waiting for its turn (no bursts).
type pacer struct {
	mu    sync.Mutex
	every time.Duration
	next  time.Time
}

func newPacer(rate int) *pacer { return &pacer{every: time.Second / time.Duration(rate)} }

// wait waits for the next turn, or returns ctx's error.
func (p *pacer) wait(ctx context.Context) error {
	p.mu.Lock()
	now := time.Now()
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.every)
	p.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// gate lets a site's work open a connection: its turn of the pacer, and
// one of the site's connection slots, which release gives back.
type gate struct {
	p     *pacer
	slots chan struct{}
}

func newGate(p *pacer, conns int) *gate { return &gate{p: p, slots: make(chan struct{}, conns)} }

// open waits for a slot of the site and a turn of the pacer.
func (g *gate) open(ctx context.Context) (release func(), err error) {
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := g.p.wait(ctx); err != nil {
		<-g.slots
		return nil, err
	}
	return func() { <-g.slots }, nil
}
