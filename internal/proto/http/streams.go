package http

import (
	"context"
	"fmt"
	"maps"
	nethttp "net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/result"
)

// roundTripper is one connection's requests: quic-go's HTTP/3
// ClientConn, or net/http's Transport for HTTP/1.1 after a version 3 race.
type roundTripper interface {
	RoundTrip(*nethttp.Request) (*nethttp.Response, error)
}

// fetched is what streams got: the objects fetched, and the page's body
// check (a file's).
type fetched struct {
	objects    int
	check      *content.Check
	again      int    // HTTP/2: requests sent again on a new connection
	againConns int    // on how many new connections
	againAfter string // after what: GOAWAY, REFUSED_STREAM, the server's close
}

// streams fetches the page on rt and then, with objects, every object it
// links at once, each a stream of the one connection, as a browser does.
// method is GET, or quic-go's GET_0RTT for the page's request. It marks the
// first byte of the page's reply. (HTTP/2's is h2fetch.)
func (c *Client) streams(ctx context.Context, tr *load.Trace, rt roundTripper, method string) (fetched, error) {
	var first atomic.Int64
	onFirst := func() {
		first.CompareAndSwap(0, tr.Since())
	}
	var f fetched
	if c.checks() {
		f.check = content.NewCheck(c.Expect)
	}
	page, err := c.stream(ctx, rt, c.URL.RequestURI(), method, c.Objects, f.check, onFirst)
	tr.S.FirstByteNS = first.Load()
	if err != nil || !c.Objects || page == nil {
		return f, err
	}
	refs := c.objectsOf(page)
	errs := make(chan error, len(refs))
	for _, ref := range refs {
		go func() {
			_, err := c.stream(ctx, rt, ref, nethttp.MethodGet, false, nil, nil)
			if err != nil {
				err = fmt.Errorf("object %s: %w", ref, err)
			}
			errs <- err
		}()
	}
	for range refs {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	f.objects = len(refs)
	return f, err
}

// uriGetter is a connection with a request layer of its own (HTTP/3's
// h3Conn): it is handed the request's URI and method, no net/http Request
// is built; wantType asks for the reply's Content-Type in its Header,
// first (when not nil) is called at the reply's first byte.
type uriGetter interface {
	get(ctx context.Context, uri, method string, wantType bool, first func()) (*nethttp.Response, error)
}

// stream sends one request of uri on rt and reads its whole reply
// (readReply); first, when not nil, is called at the reply's first byte.
func (c *Client) stream(ctx context.Context, rt roundTripper, uri, method string, keepBody bool, check *content.Check, first func()) ([]byte, error) {
	if g, ok := rt.(uriGetter); ok {
		resp, err := g.get(ctx, uri, method, keepBody, first)
		if err != nil {
			return nil, err
		}
		return c.readReply(resp, uri, keepBody, check)
	}
	if first != nil {
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: first})
	}
	ref, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, fmt.Errorf("bad object reference %q: %w", uri, err)
	}
	u := *c.URL
	u.Path, u.RawPath, u.RawQuery = ref.Path, ref.RawPath, ref.RawQuery
	ua := c.UserAgent
	if ua == "" {
		ua = "v6lab"
	}
	req := (&nethttp.Request{Method: method, URL: &u, Host: u.Host, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: nethttp.Header{"User-Agent": {ua}, "Accept": {"*/*"}}}).WithContext(ctx)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	return c.readReply(resp, uri, keepBody, check)
}

// done ends a transaction of the streams' versions: its marker says the
// objects, the protocol and the TLS the connection spoke.
func (c *Client) done(tr *load.Trace, f fetched, negotiated, more string) result.Sample {
	if f.check != nil && c.Sum {
		if tr.S.Metrics == nil {
			tr.S.Metrics = map[string]float64{}
		}
		maps.Copy(tr.S.Metrics, bodyMetrics(f.check))
	}
	tr.S.Negotiated = negotiated
	k := marker{objects: f.objects, negotiated: negotiated, more: more, tls: tr.TLS}
	if f.again == 0 {
		return tr.Done(c.marker(k))
	}
	tr.S.Again, tr.S.AgainConns = f.again, f.againConns
	n, on := strconv.Itoa(f.again)+" requests", "a new connection"
	if f.again == 1 {
		n = "1 request"
	}
	if f.againConns > 1 {
		on = strconv.Itoa(f.againConns) + " new connections"
	}
	k.more = strings.TrimPrefix(more+", "+n+" again on "+on+" after "+f.againAfter, ", ")
	return tr.Done(k.build())
}

// marker is a completed transaction's marker, of what makes it.
type marker struct {
	objects               int
	negotiated, more, tls string
	text                  string
}

// marker is k's text: the last one made, when k is the same (a run's
// transactions mostly are: three strings built a transaction otherwise).
func (c *Client) marker(k marker) string {
	if last := c.lastMarker.Load(); last != nil && last.objects == k.objects && last.negotiated == k.negotiated && last.more == k.more && last.tls == k.tls {
		return last.text
	}
	m := k // made only here: k itself stays on the stack
	m.text = k.build()
	c.lastMarker.Store(&m)
	return m.text
}

// build makes k's text: "200 OK, N objects, PROTOCOL[, MORE][, TLS]".
func (k marker) build() string {
	t := "200 OK, " + strconv.Itoa(k.objects) + " objects, " + k.negotiated
	if k.more != "" {
		t += ", " + k.more
	}
	if k.tls != "" {
		t += ", " + k.tls
	}
	return t
}
