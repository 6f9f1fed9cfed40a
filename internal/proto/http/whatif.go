package http

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/eyeballs"
	"v6lab/internal/sock/path"
)

// The timer what-if's data. Every dual sample of dialer v2 or v3 carries
// each family's first attempt's fate as its race saw it
// (eyeballs.Fates): done or failed after how long, or silent for as long
// as it ran before another won. A race stops at its winner, so the
// loser's time is often unknown: never tried (the winner finished before
// the attempt delay), or cancelled. With whatif: true the client then
// times both families itself, after the transaction's figures are taken,
// side by side (both addresses looked up again over the pinned resolver,
// then both handshakes started at once, as a race at delay 0 would, so
// that each meets the same machine and path): a fresh handshake each, of
// the race's kind (TCP's for v2; for v3 QUIC's when the race's first
// attempt was QUIC, else TCP's and TLS's), given WhatIfHorizon to answer.
// Their fates replace the race's in the sample, and he_whatif_after
// counts the families so timed. It costs the run, not the transaction: a
// user's next transaction waits for it (up to WhatIfHorizon where a family
// never answers).

// WhatIfHorizon is how long a family timed after the transaction is given
// to complete its handshake: a silent family is then silent for at least
// this long, which decides every attempt delay up to 500 ms exactly
// while the other family's handshake takes under 500 ms.
const WhatIfHorizon = time.Second

// checkWhatIf: whatif times the families of v6lab's own race.
func (o *Options) checkWhatIf() error {
	switch {
	case !o.WhatIf:
	case !o.RacesFamilies:
		return proto.Errorf("whatif", "times the dual path's families, and the cell's paths have no dual")
	case o.External():
		return proto.Errorf("whatif", "times v6lab's own race (dialer v2 or v3): %s's attempts are not visible", o.Client)
	case o.Dialer == "go":
		return proto.Errorf("whatif", "times v6lab's own race (dialer v2 or v3): Go's dialer's attempts are not visible")
	}
	return nil
}

// putFates writes a race's two fates in a sample's metrics.
func putFates(m map[string]float64, v6, v4 eyeballs.Fate) {
	for i, f := range []eyeballs.Fate{v6, v4} {
		state := map[eyeballs.FateState]string{eyeballs.Completed: result.FateDone, eyeballs.Refused: result.FateFailed, eyeballs.Silent: result.FateSilent}[f.State]
		result.PutFate(m, i == 0, result.Fate{State: state, Time: f.Time, QUIC: f.QUIC})
	}
}

// whatIfAfter times both families of s's race after it.
func (c *Client) whatIfAfter(ctx context.Context, s *result.Sample) {
	if !c.WhatIf || !c.Path.Kind().Dual || c.GoDialer || s.Metrics == nil {
		return
	}
	if _, raced := s.Metrics["he_attempts"]; !raced {
		return
	}
	v6, _ := result.FateOf(s.Metrics, true)
	v4, _ := result.FateOf(s.Metrics, false)
	quic := v6.QUIC || v4.QUIC // the race's first attempts' kind
	// Both families' addresses first, then both handshakes at once.
	var addrs [2]netip.Addr
	var wg sync.WaitGroup
	for i := range addrs {
		wg.Go(func() { addrs[i] = c.lookupFamily(ctx, i == 0) })
	}
	wg.Wait()
	var fates [2]result.Fate
	var timed [2]bool
	for i, a := range addrs {
		if a.IsValid() {
			wg.Go(func() { fates[i], timed[i] = c.timeFamily(ctx, a, quic) })
		}
	}
	wg.Wait()
	n := 0
	for i, ok := range timed {
		if ok {
			n++
			result.PutFate(s.Metrics, i == 0, fates[i])
		}
	}
	s.Metrics["he_whatif_after"] = float64(n)
}

// lookupFamily is the host's address of the family (ipv6 or not), over
// the pinned resolver; not valid when it has none.
func (c *Client) lookupFamily(ctx context.Context, ipv6 bool) netip.Addr {
	p := path.IPv4
	if ipv6 {
		p = path.IPv6
	}
	a, err := c.Resolver.LookupFrom(ctx, c.lookupHost(), p, &path.LookupHook{})
	if err != nil {
		return netip.Addr{}
	}
	return a
}

// timeFamily makes one handshake to a and says its fate; false when the
// run ended before it did.
func (c *Client) timeFamily(ctx context.Context, a netip.Addr, quic bool) (result.Fate, bool) {
	hctx, cancel := context.WithTimeout(ctx, WhatIfHorizon)
	defer cancel()
	start := time.Now()
	err := c.handshake(hctx, netip.AddrPortFrom(a, c.port()), quic)
	f := result.Fate{Time: time.Since(start), QUIC: quic && c.V3 != nil, State: result.FateDone}
	switch {
	case ctx.Err() != nil:
		return result.Fate{}, false // the run ended, not the horizon
	case err == nil:
	case errors.Is(hctx.Err(), context.DeadlineExceeded) || noAnswer(err):
		f.State = result.FateSilent
	default:
		f.State = result.FateFailed
	}
	return f, true
}

// noAnswer: QUIC gave up for want of any answer.
func noAnswer(err error) bool {
	var idle *quic.IdleTimeoutError
	var hs *quic.HandshakeTimeoutError
	return errors.As(err, &idle) || errors.As(err, &hs)
}

// handshake is one attempt of the race's kind to the address, closed
// once done: v2's TCP connection; v3's QUIC (ALPN h3) or TCP and TLS.
func (c *Client) handshake(ctx context.Context, to netip.AddrPort, quic bool) error {
	if c.V3 == nil {
		conn, err := path.Dialer{Path: path.OfAddr(to.Addr())}.Dial(ctx, "tcp", to)
		if err == nil {
			load.CloseAbort(conn)
		}
		return err
	}
	var conn *v3conn
	var err error
	if quic {
		conn, err = c.dialQUIC(ctx, eyeballs.Endpoint{Addr: to, Transport: eyeballs.QUIC, ALPN: []string{eyeballs.ALPNH3}})
	} else {
		conn, err = c.dialTLS(ctx, eyeballs.Endpoint{Addr: to, Transport: eyeballs.TCP, ALPN: []string{eyeballs.ALPNH2, eyeballs.ALPNHTTP11}}, func(time.Time) {})
	}
	conn.close()
	return err
}
