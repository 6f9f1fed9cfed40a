package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/quic-go/quic-go"

	"v6lab/internal/gen/load"
	"v6lab/internal/sock/eyeballs"
	"v6lab/internal/sock/path"
)

// The dual path with dialer v3: v6lab's Happy Eyeballs version 3 client
// (draft-ietf-happy-happyeyeballs-v3). eyeballs.Race3 decides; raceV3
// drives it: each query it asks for (HTTPS, AAAA, A, then any target's)
// is sent on a goroutine of its own over the endpoint's resolver, each
// attempt it starts (QUIC with ALPN h3, or TCP then TLS with the record's
// TCP protocols) on another, pinned to its address's family; their
// answers and outcomes come back on one channel, and the race's timers
// (Resolution Delay, Connection Attempt Delay) are a timer of the loop's.
// The first attempt through its whole handshake (QUIC's, or TCP's and
// TLS's: §6.1) wins; the others are cancelled and closed.

// v3conn is what a version 3 attempt made: a QUIC connection (its socket
// and transport), or a TCP connection with TLS over it.
type v3conn struct {
	quic *h3Kept
	tls  *tls.Conn
	raw  net.Conn
}

func (v *v3conn) close() {
	if v == nil {
		return
	}
	if v.quic != nil {
		v.quic.close()
	}
	if v.raw != nil {
		load.CloseAbort(v.raw)
	}
}

// v3event is what comes back to the race: a query's answer (q set), an
// attempt's TCP handshake done (progress), or an attempt's end (conn or
// err).
type v3event struct {
	q        eyeballs.Query
	rep      eyeballs.Reply
	i        int
	progress bool
	conn     *v3conn
	err      error
	at       time.Time
	sent     time.Time // a query's transmit stamp
	local    string    // a query's source address
	queries  int       // the queries a lookup sent (path.LookupHook.Queries)
}

// v3drive is one race under way.
type v3drive struct {
	c       *Client
	ctx     context.Context
	res     path.Resolver
	r       *eyeballs.Race3
	ev      chan v3event
	out     int // goroutines whose event has not come back
	cancels []context.CancelFunc
	won     *v3conn
	firstTx time.Time
	local   string
	// queries are the answered lookups' queries, asking the lookups
	// whose answer has not come back.
	queries, asking int
}

// raceV3 races the dual path by version 3. It returns the winning
// connection, the race's record (with an error: the record of a race that
// failed) and how many DNS queries its lookups sent (dns_queries): each
// answered lookup's, resends and TCP included, and one for each lookup
// whose answer had not come when the race ended (the race goes on
// without it: its query went).
func (c *Client) raceV3(ctx context.Context, tr *load.Trace) (*v3conn, eyeballs.Record3, int, error) {
	d := &v3drive{c: c, ctx: ctx, res: c.Resolver.OneFamily(), ev: make(chan v3event, 64)}
	defer d.finish()
	tr.Restart()
	d.r = c.V3.Start(c.lookupHost(), c.port(), time.Now())
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	defer func() {
		if !d.firstTx.IsZero() {
			tr.Sent(d.firstTx) // the first query's: the wire time starts there
		}
		tr.S.DNSLocal = d.local
	}()
	for {
		a := d.step()
		switch {
		case a.Err != nil:
			return nil, d.r.Record(), d.queries + d.asking, a.Err
		case d.won != nil:
			return d.won, d.r.Record(), d.queries + d.asking, nil
		case a.Wake.IsZero():
			timer.Stop()
		default:
			timer.Reset(time.Until(a.Wake))
		}
		select {
		case e := <-d.ev:
			d.take(e)
		case <-timer.C:
		case <-ctx.Done():
			d.r.Abort(time.Now())
			return nil, d.r.Record(), d.queries + d.asking, ctx.Err()
		}
	}
}

// step does what the race asks for now (queries to send, attempts to
// start) and returns what it asks next: to wait, or that it is lost.
func (d *v3drive) step() eyeballs.Action {
	for {
		a := d.r.Next(time.Now())
		switch {
		case a.Query.Type != 0:
			d.out++
			d.asking++
			go d.ask(a.Query)
		case a.Start:
			d.out++
			ctx, cancel := context.WithCancel(d.ctx)
			d.cancels = append(d.cancels, cancel)
			go d.attempt(ctx, a.Index, a.Attempt)
		default:
			return a
		}
	}
}

// take tells the race what came back.
func (d *v3drive) take(e v3event) {
	switch {
	case e.q.Type != 0:
		d.out--
		d.asking--
		d.queries += e.queries
		if !e.sent.IsZero() && (d.firstTx.IsZero() || e.sent.Before(d.firstTx)) {
			d.firstTx, d.local = e.sent, e.local
		}
		d.r.Answer(e.q, e.rep, e.at)
	case e.progress:
		d.r.Progress(e.i, e.at)
	case e.err != nil:
		d.out--
		d.r.Failed(e.i, e.err, e.at)
	default:
		d.out--
		if d.won != nil || d.r.Over() {
			e.conn.close() // a loser that finished after the winner
			return
		}
		d.r.Won(e.i, e.at)
		d.won = e.conn
	}
}

// finish cancels the attempts still under way and closes whatever they
// make after the race (in the background: the transaction goes on).
func (d *v3drive) finish() {
	for _, cancel := range d.cancels {
		cancel()
	}
	if d.out == 0 {
		return
	}
	go func(n int) {
		for n > 0 {
			if e := <-d.ev; !e.progress { // a progress is not an end
				n--
				e.conn.close()
			}
		}
	}(d.out)
}

// ask sends one query and reports its answer: an address (A, AAAA), the
// records (HTTPS), a negative answer (no address of the type: no error),
// or an error.
func (d *v3drive) ask(q eyeballs.Query) {
	hook := &path.LookupHook{}
	var rep eyeballs.Reply
	if q.Type == eyeballs.TypeHTTPS {
		var svcs []path.Service
		name := q.Name // an alias's target is asked as it is (RFC 9460 §2.4.2)
		if strings.EqualFold(name, d.c.lookupHost()) {
			name = path.ServiceName(name, d.c.port()) // _PORT._https.NAME (§9.1)
		}
		svcs, rep.Err = d.res.Services(d.ctx, name, hook)
		for _, s := range svcs {
			rep.Services = append(rep.Services, eyeballs.Service(s))
		}
	} else {
		p := path.IPv4
		if q.Type == eyeballs.TypeAAAA {
			p = path.IPv6
		}
		a, err := d.res.LookupFrom(d.ctx, q.Name, p, hook)
		switch {
		case err == nil:
			rep.Addrs = []netip.Addr{a}
		case !errors.Is(err, path.ErrNoAddress):
			rep.Err = err
		}
	}
	d.ev <- v3event{q: q, rep: rep, at: time.Now(), sent: hook.Sent, local: hook.Local, queries: hook.Queries()}
}

// attempt makes attempt i to e and reports its end.
func (d *v3drive) attempt(ctx context.Context, i int, e eyeballs.Endpoint) {
	var conn *v3conn
	var err error
	start := time.Now()
	if e.Transport == eyeballs.QUIC {
		conn, err = d.c.dialQUIC(ctx, e)
	} else {
		conn, err = d.c.dialTLS(ctx, e, func(at time.Time) {
			d.c.V3.History.Observe(e.Addr.Addr(), at.Sub(start)) // the SYN's round trip
			d.ev <- v3event{i: i, progress: true, at: at}
		})
	}
	if err == nil && e.Transport == eyeballs.QUIC {
		d.c.V3.History.Observe(e.Addr.Addr(), time.Since(start)) // about one round trip
	}
	d.ev <- v3event{i: i, conn: conn, err: err, at: time.Now()}
}

// dialQUIC makes a QUIC attempt: a UDP socket pinned to the address's
// family, its handshake with ALPN h3.
func (c *Client) dialQUIC(ctx context.Context, e eyeballs.Endpoint) (*v3conn, error) {
	pc, err := path.DialStamped(ctx, path.Dialer{Path: path.OfAddr(e.Addr.Addr())}, e.Addr)
	if err != nil {
		return nil, err
	}
	k := &h3Kept{pc: pc, qt: &quic.Transport{Conn: pc}}
	conn, err := k.qt.Dial(ctx, pc.RemoteAddr(), c.tlsFor(e.ALPN), c.quicConfig())
	if err != nil {
		k.close()
		var idle *quic.IdleTimeoutError
		var hs *quic.HandshakeTimeoutError
		if errors.As(err, &idle) || errors.As(err, &hs) {
			return nil, fmt.Errorf("quic %s: no answer in %s (%w)", e.Addr, seconds(c.quicConfig().HandshakeIdleTimeout), err)
		}
		return nil, fmt.Errorf("quic %s: %w", e.Addr, err)
	}
	k.conn = conn
	return &v3conn{quic: k}, nil
}

// dialTLS makes a TCP attempt: a connection pinned to the address's
// family (progress called when it is up), then TLS offering e's ALPN ids.
func (c *Client) dialTLS(ctx context.Context, e eyeballs.Endpoint, progress func(time.Time)) (*v3conn, error) {
	raw, err := path.Dialer{Path: path.OfAddr(e.Addr.Addr())}.Dial(ctx, "tcp", e.Addr)
	if err != nil {
		return nil, fmt.Errorf("tcp %s: %w", e.Addr, err)
	}
	progress(time.Now())
	conn := net.Conn(&syncStamp{Conn: raw})
	if sc, ok := path.Stamped(raw); ok {
		conn = &syncStamp{Conn: sc, sc: sc}
	}
	tc := tls.Client(conn, c.tlsFor(e.ALPN))
	if err := tc.HandshakeContext(ctx); err != nil {
		load.CloseAbort(raw)
		return nil, fmt.Errorf("tls over tcp %s: %w", e.Addr, err)
	}
	return &v3conn{tls: tc, raw: raw}, nil
}

// tlsFor is the client's TLS configuration offering alpn.
func (c *Client) tlsFor(alpn []string) *tls.Config {
	cfg := &tls.Config{}
	if c.TLS != nil {
		cfg = c.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = c.URL.Hostname()
	}
	cfg.NextProtos = alpn
	return cfg
}
