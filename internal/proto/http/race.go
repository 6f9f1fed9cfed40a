package http

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto/converse"
	"v6lab/internal/sock/evloop"
	"v6lab/internal/sock/eyeballs"
	"v6lab/internal/sock/path"
)

// race runs x on the event loop as a dual-stack client does (Happy
// Eyeballs, RFC 8305, evloop.Race): host's AAAA and A asked of the
// endpoint's DNS server on one socket, the attempts started, timed and
// ended in the loop's thread, the first to connect carrying x. The
// trace's start, DNS address, first packet out and resolve mark are the
// queries'; its sample records which family won (ipv6_won), the attempts
// (he_attempts) and when the winner connected (he_connect_ms). A literal
// host is connected to as it is. A truncated answer is asked for again
// over TCP, pinned to the queries' family, while the race goes on.
func (c *Client) race(ctx context.Context, eng *evloop.Engine, tr *load.Trace, host string, x *evloop.Exchange) evloop.Result {
	fail := func(phase string, err error) evloop.Result { return evloop.Result{Phase: phase, Err: err} }
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		x.Remote = netip.AddrPortFrom(a, x.Remote.Port())
		r := converse.Direct(ctx, eng, tr, path.OfAddr(a), x)
		tr.S.Metrics = map[string]float64{"he_attempts": 1}
		if r.Err == nil {
			tr.S.Metrics["ipv6_won"] = won(a.Is6())
		}
		return r
	}
	res := c.Resolver.OneFamily() // both queries over one family, as a stub resolver sends them
	q6, _, err := res.Prepare(host, path.IPv6)
	if err != nil {
		return fail("resolve", err)
	}
	q4, _, err := res.Prepare(host, path.IPv4)
	for err == nil && q4.ID() == q6.ID() { // the ID tells the answers apart
		q4, _, err = res.Prepare(host, path.IPv4)
	}
	if err != nil {
		return fail("resolve", err)
	}
	racer := eyeballs.Dialer{AttemptDelay: c.AttemptDelay}.Race(host, time.Now())
	var overTCP atomic.Int64 // the questions asked again over TCP
	x.Race = &evloop.Race{Server: q6.Server, Source: q6.Source, AAAA: q6.Wire, A: q4.Wire, Stub: q6.Stub, Start: tr.Restart, Racer: racer,
		Answer: func(b []byte) (bool, netip.Addr, bool, error) {
			if len(b) < 2 {
				return false, netip.Addr{}, false, nil
			}
			q := q4
			if binary.BigEndian.Uint16(b) == q6.ID() {
				q = q6
			}
			a, done, err := q.Answer(b)
			switch {
			case errors.Is(err, path.ErrTruncated):
				return q == q6, netip.Addr{}, true, fmt.Errorf("%w: %w", err, evloop.ErrAgain)
			case err != nil:
				return q == q6, netip.Addr{}, true, err
			}
			return q == q6, a, done, nil
		},
		Again: func(ctx context.Context, ipv6 bool) (netip.Addr, error) {
			q := q4
			if ipv6 {
				q = q6
			}
			overTCP.Add(1)
			return q.OverTCP(ctx)
		}}
	x.Cookie = tr.WantsSYN() && path.SYNReady()
	r := eng.Do(ctx, x)
	x.Race = nil
	if r.LookupLocal.IsValid() {
		tr.S.DNSLocal = r.LookupLocal.String()
	}
	tr.Sent(r.FirstTx) // the first query's: the wire time starts there
	hr := racer.Result()
	raceMetrics(tr, hr, r.Err == nil)
	if r.LookupLocal.IsValid() { // both queries went, and Resent again
		tr.AddQueries(2 + r.Resent + int(overTCP.Load()))
	}
	if len(hr.Attempts) > 0 {
		tr.At(&tr.S.ResolveNS, r.Resolved)
	}
	return r
}

// raceMetrics records a race in the sample: the attempts, when each
// answer came (he_aaaa_ms, he_a_ms: absent when none did), when it
// succeeded, which family won and when it connected, and each family's
// first attempt's fate (eyeballs.Fates: the timer what-if's).
func raceMetrics(tr *load.Trace, hr eyeballs.Result, ok bool) {
	tr.S.Metrics = map[string]float64{"he_attempts": float64(len(hr.Attempts))}
	if hr.AAAA > 0 {
		tr.S.Metrics["he_aaaa_ms"] = float64(hr.AAAA) / 1e6
	}
	if hr.A > 0 {
		tr.S.Metrics["he_a_ms"] = float64(hr.A) / 1e6
	}
	if ok {
		tr.S.Metrics["ipv6_won"], tr.S.Metrics["he_connect_ms"] = won(hr.IPv6), float64(hr.Connect)/1e6
	}
	v6, v4 := hr.Fates()
	putFates(tr.S.Metrics, v6, v4)
}

func won(ipv6 bool) float64 {
	if ipv6 {
		return 1
	}
	return 0
}
