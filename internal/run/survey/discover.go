package survey

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto/page"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// MaxPage is how much of a page discovery reads for its objects: a page
// that goes on past it is read no further (its objects past it are not
// found), never an error.
const MaxPage = 4 << 20

// found is what one family's discovery of a site found: its record, and,
// when the page came, the page's URL after redirects and its objects.
type found struct {
	fam     result.SiteFamily
	final   *url.URL
	objects []*url.URL
}

// discovery fetches a site's page over one family with Go's net/http, its
// connections pinned to the family (lookups of the family's record type,
// a pinned dialer: a redirect to another family's literal fails), to learn
// where the page is (redirects followed, loops refused), what the site
// offers (h2 by ALPN, h3 by Alt-Svc) and what the page embeds. It is not
// timed: the page transactions that follow are.
type discovery struct {
	resolver  path.Resolver
	timeout   time.Duration
	insecure  bool
	userAgent string
	redirects int
	gate      *gate
	exclude   Exclusion
}

// errRedirectLoop is a redirect back to a URL already fetched.
var errRedirectLoop = errors.New("redirect loop")

// find fetches start over p.
func (d *discovery) find(ctx context.Context, start *url.URL, p path.Path) found {
	f := found{fam: result.SiteFamily{Path: string(p)}}
	var connected atomic.Bool
	tr := d.transport(p, &connected)
	defer tr.CloseIdleConnections()
	redirects := 0
	client := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		redirects = len(via)
		switch {
		case len(via) > d.redirects:
			return fmt.Errorf("more than %d redirects (max_redirects)", d.redirects)
		case req.URL.Scheme != "http" && req.URL.Scheme != "https":
			return fmt.Errorf("a redirect to %s, which is not http or https", excerpt(req.URL.String()))
		case d.exclude.Excludes(req.URL.Hostname()) != "":
			return fmt.Errorf("a redirect to %s, which the exclusion list names (not followed)", excerpt(req.URL.String()))
		}
		for _, v := range via {
			if v.URL.String() == req.URL.String() {
				return fmt.Errorf("%w: %s redirects back to %s", errRedirectLoop, excerpt(via[len(via)-1].URL.String()), excerpt(req.URL.String()))
			}
		}
		return nil
	}}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	body, resp, err := d.get(ctx, client, start)
	f.fam.Connected, f.fam.Redirects = connected.Load(), redirects
	if err != nil {
		f.fam.ErrKind = load.Classify(ctx, "discover", err)
		f.fam.Err = "discover: " + discoverError(ctx, err)
		return f
	}
	f.final = resp.Request.URL
	f.fam.URL = f.final.String()
	if resp.ProtoMajor == 2 {
		f.fam.Offers = append(f.fam.Offers, "h2")
	}
	if strings.Contains(resp.Header.Get("Alt-Svc"), "h3=") {
		f.fam.Offers = append(f.fam.Offers, "h3")
	}
	f.objects = page.Objects(body, f.final, 0, func(u *url.URL) bool { return !page.SameHost(f.final, u) })
	return f
}

// get fetches u (following redirects) and reads its page.
func (d *discovery) get(ctx context.Context, client *http.Client, u *url.URL) ([]byte, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("User-Agent", d.userAgent)
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("status %d at %s", resp.StatusCode, excerpt(resp.Request.URL.String()))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxPage))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the page: %w", err)
	}
	return body, resp, nil
}

// discoverError says what went wrong, without net/http's wrapping of the
// request ("Get \"…\": …") and with the bound a timeout met.
func discoverError(ctx context.Context, err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no whole answer within the timeout: %v", err)
	}
	return err.Error()
}

// transport is net/http's transport with every connection pinned to p:
// a lookup of p's record type, a dial of p's family, the site's gate.
func (d *discovery) transport(p path.Path, connected *atomic.Bool) *http.Transport {
	return &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, portText, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			port, _ := strconv.Atoi(portText)
			res := d.resolver
			a, err := res.Lookup(ctx, host, p)
			if err != nil {
				return nil, err
			}
			release, err := d.gate.open(ctx)
			if err != nil {
				return nil, err
			}
			conn, err := path.Dialer{Path: p}.Dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)))
			if err != nil {
				release()
				return nil, err
			}
			connected.Store(true)
			return &gatedConn{Conn: conn, release: release}, nil
		},
		TLSClientConfig:        &tls.Config{InsecureSkipVerify: d.insecure},
		ForceAttemptHTTP2:      true,
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// gatedConn gives its site's connection slot back when it closes.
type gatedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *gatedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
