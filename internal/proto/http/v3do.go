package http

import (
	"context"
	"errors"
	"fmt"
	"net"
	nethttp "net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/eyeballs"
	"v6lab/internal/sock/path"
)

// doV3 is one transaction of the dual path with dialer v3: the race
// (raceV3), then the page and its objects over the winner, HTTP/3 when
// QUIC won, else h2 or HTTP/1.1 as TLS chose. Its sample records the race
// (v3Metrics) and its marker each attempt and its fate. With keepalive
// the user keeps the winner's connection (HTTP/3 or h2) for its next
// transactions, which race nothing.
func (c *Client) doV3(ctx context.Context, tr *load.Trace, user int) result.Sample {
	if s, ok := c.onKept(ctx, tr, user, ""); ok {
		return s
	}
	won, rec, queries, err := c.raceV3(ctx, tr)
	tr.S.Metrics = v3Metrics(rec)
	tr.AddQueries(queries)
	if err != nil {
		if errors.Is(err, eyeballs.ErrNoEndpoint) && c.Version == Version3 {
			err = fmt.Errorf("%w: http_version 3 races QUIC alone, and QUIC is offered only by the name's HTTPS record (alpn h3; for a port other than 443 the record of _PORT._https.NAME)", err)
		}
		return tr.Fail(ctx, "connect", fmt.Errorf("%w (%s)", err, raceText(rec)))
	}
	w, _ := rec.Winning()
	if len(rec.Attempts) > 0 {
		tr.S.ResolveNS = int64(rec.Attempts[0].Start)
	}
	tr.S.ConnectNS, tr.S.TLSNS = int64(w.End), int64(w.End)
	if w.Progress > 0 {
		tr.S.ConnectNS = int64(w.Progress)
	}
	if won.quic != nil {
		return c.v3QUIC(ctx, tr, won, raceText(rec), user)
	}
	return c.v3TCP(ctx, tr, won, raceText(rec), user)
}

// v3QUIC fetches over the QUIC connection that won: HTTP/3.
func (c *Client) v3QUIC(ctx context.Context, tr *load.Trace, won *v3conn, race string, user int) result.Sample {
	k := won.quic
	kept := false
	defer func() {
		if !kept {
			k.close()
		}
	}()
	tr.S.Local, tr.S.Remote = k.pc.LocalAddr().String(), k.pc.RemoteAddr().String()
	var err error
	if k.h3Conn, err = newH3Conn(k.conn, c.URL, c.UserAgent); err != nil {
		c.recordQUIC(tr, k.pc)
		return tr.Fail(ctx, "connect", err)
	}
	f, err := c.streams(ctx, tr, k, nethttp.MethodGet)
	c.recordQUIC(tr, k.pc)
	if err != nil {
		return c.failStreams(ctx, tr, nil, err)
	}
	if c.Keep {
		kept = true
		c.kept.keep(user, k)
	}
	st := k.conn.ConnectionState()
	setTLS(tr, st.TLS)
	return c.done(tr, f, "h3", "QUIC "+st.Version.String()+", "+race)
}

// v3TCP fetches over the TCP connection that won, with the protocol TLS
// chose: h2 (v6lab's own framing, h2conn), or HTTP/1.1 (v3HTTP11). With
// keepalive an h2 connection is kept (as doH2 keeps its own); HTTP/1.1's
// are not.
func (c *Client) v3TCP(ctx context.Context, tr *load.Trace, won *v3conn, race string, user int) result.Sample {
	cs := won.tls.ConnectionState()
	neg := cs.NegotiatedProtocol
	keep := c.Keep && neg == "h2"
	kept := false
	defer func() {
		if !kept {
			load.CloseAbort(won.raw)
		}
	}()
	if !keep {
		stop := load.Deadline(ctx, won.raw)
		defer stop()
	}
	tr.Conn(won.raw)
	setTLS(tr, cs)
	st := stampsOf(won.tls)
	var f fetched
	var err error
	var h *h2conn // the connection the page ended on: a new one after the server's GOAWAY
	if neg == "h2" {
		h0 := newH2Conn(won.tls, won.raw)
		f, h, err = c.h2fetch(ctx, tr, h0, &h0.reuse)
		if h != h0 {
			recordToo(tr, stampsOf(h.conn))
		}
		if keep && err == nil {
			kept = h == h0
			c.kept.keep(user, h)
		} else if h != h0 {
			defer h.close()
		}
	} else {
		neg = eyeballs.ALPNHTTP11
		f, err = c.v3HTTP11(ctx, tr, won)
	}
	st.record(tr)
	if err != nil {
		return c.failStreams(ctx, tr, st, err)
	}
	return c.done(tr, f, neg, race)
}

// v3HTTP11 fetches over HTTP/1.1 after a version 3 race whose TCP
// attempt won without h2: Go's net/http, given the winner's connection
// first, and for the objects more connections to the same address, as a
// browser opens them (v6lab's own HTTP/1.1 engine fetches a page's
// objects one after another on one connection).
func (c *Client) v3HTTP11(ctx context.Context, tr *load.Trace, won *v3conn) (fetched, error) {
	to := netip.AddrPortFrom(path.AddrOf(won.raw.RemoteAddr()), c.port())
	var once sync.Once
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var given net.Conn
		once.Do(func() { given = won.tls })
		if given != nil {
			return given, nil
		}
		more, err := c.dialTLS(ctx, eyeballs.Endpoint{Addr: to, Transport: eyeballs.TCP, ALPN: []string{eyeballs.ALPNHTTP11}}, func(time.Time) {})
		if err != nil {
			return nil, err
		}
		return more.tls, nil
	}
	var ps nethttp.Protocols
	ps.SetHTTP1(true)
	t := &nethttp.Transport{DialTLSContext: dial, Protocols: &ps, DisableCompression: true, MaxResponseHeaderBytes: MaxHeaderBytes}
	defer t.CloseIdleConnections()
	return c.streams(ctx, tr, t, nethttp.MethodGet)
}

// v3Metrics are a version 3 race's figures in its sample: he_attempts
// and he_failed (attempts started, and failed before the winner), when
// each answer of the host came (he_https_ms, he_aaaa_ms, he_a_ms), when
// the attempts could begin (he_began_ms), and with a winner its family
// (ipv6_won), its transport (quic_won), when it started (he_winner_start_ms:
// the fallback's cost) and when it completed its handshake
// (he_connect_ms); each family's first attempt's fate (eyeballs.Fates:
// the timer what-if's).
func v3Metrics(rec eyeballs.Record3) map[string]float64 {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	m := map[string]float64{"he_attempts": float64(len(rec.Attempts))}
	failed := 0
	for _, a := range rec.Attempts {
		if a.Outcome == eyeballs.Lost {
			failed++
		}
	}
	m["he_failed"] = float64(failed)
	for _, a := range rec.Answers {
		k := "he_" + strings.ToLower(eyeballs.TypeName(a.Type)) + "_ms"
		if _, seen := m[k]; !seen && a.Err == "" {
			m[k] = ms(a.At)
		}
	}
	if len(rec.Attempts) > 0 {
		m["he_began_ms"] = ms(rec.Began)
	}
	if w, ok := rec.Winning(); ok {
		m["ipv6_won"] = won(w.Addr.Addr().Is6())
		m["quic_won"] = won(w.Transport == eyeballs.QUIC)
		m["he_winner_start_ms"], m["he_connect_ms"] = ms(w.Start), ms(rec.Connect)
	}
	v6, v4 := rec.Fates()
	putFates(m, v6, v4)
	return m
}

// raceText says what each attempt of a race was and became: "quic
// [2001:db8::2]:443 at 0 ms cancelled; tcp 192.0.2.2:443 at 100 ms won".
func raceText(rec eyeballs.Record3) string {
	var out []string
	for _, a := range rec.Attempts {
		fate := string(a.Outcome)
		if fate == "" {
			fate = "running"
		}
		out = append(out, fmt.Sprintf("%s at %.3g ms %s", a.Endpoint, float64(a.Start)/1e6, fate))
	}
	if len(out) == 0 {
		return "v3: no attempt"
	}
	return "v3: " + strings.Join(out, "; ")
}
