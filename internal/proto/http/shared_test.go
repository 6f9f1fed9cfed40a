package http

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	nethttp "net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// inFlight counts a server's requests under way on each connection, and
// the most there were at once on one.
type inFlight struct {
	mu   sync.Mutex
	now  map[string]int
	most int
	all  atomic.Int64
}

func (f *inFlight) enter(conn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.now == nil {
		f.now = map[string]int{}
	}
	f.now[conn]++
	f.most = max(f.most, f.now[conn])
	f.all.Add(1)
}

// mostAtOnce is the most requests there were at once on a connection.
func (f *inFlight) mostAtOnce() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.most
}

func (f *inFlight) leave(conn string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now[conn]--
}

// sharedServer serves HTTP/2 (Go's server; TLS or h2c) through handle,
// counting its connections and its requests at once on each: "/" a page of
// 4 objects, each reply after wait.
func sharedServer(t *testing.T, useTLS bool, wait time.Duration, handle func(w nethttp.ResponseWriter, r *nethttp.Request) bool) (*Client, *countingListener, *inFlight) {
	t.Helper()
	fl := &inFlight{}
	h := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		fl.enter(r.RemoteAddr)
		defer fl.leave(r.RemoteAddr)
		time.Sleep(wait)
		if handle != nil && handle(w, r) {
			return
		}
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<html><img src="/o/1"><img src="/o/2"><img src="/o/3"><img src="/o/4"></html>`)
			return
		}
		w.Write(make([]byte, 2000))
	})
	var ps nethttp.Protocols
	ps.SetHTTP2(true)
	ps.SetUnencryptedHTTP2(!useTLS)
	srv := &nethttp.Server{Handler: h, Protocols: &ps}
	raw, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: raw}
	var served net.Listener = ln
	scheme := "http"
	if useTLS {
		srv.TLSConfig = tlsConfig(t).TLS.Clone()
		srv.TLSConfig.NextProtos = []string{"h2"}
		served, scheme = tls.NewListener(ln, srv.TLSConfig), "https"
	}
	go srv.Serve(served)
	t.Cleanup(func() { srv.Close() })
	c := &Client{URL: mustURL(t, scheme+"://127.0.0.1:"+strconv.Itoa(raw.Addr().(*net.TCPAddr).Port)+"/"), Path: path.IPv4,
		Resolver: &path.Resolver{}, Version: Version2, Keep: true, Shared: 4, Objects: true,
		TLS: &tls.Config{InsecureSkipVerify: true}}
	t.Cleanup(func() { c.Close() })
	return c, ln, fl
}

// sustain runs c's users for d, as a run does (load.Sustained), and
// returns their samples.
func sustain(c *Client, users int, d time.Duration) []result.Sample {
	var mu sync.Mutex
	var out []result.Sample
	load.Sustained(context.Background(), c, load.Users{First: 0, N: users}, d, 5*time.Second, func(s result.Sample) {
		mu.Lock()
		out = append(out, s)
		mu.Unlock()
	})
	return out
}

// TestSharedConnectionRunsTransactionsAtOnce: with streams 4, each user's
// one connection carries 4 transactions at once (the server sees 4
// requests under way on it, never more without objects), over TLS and
// h2c; each user's first transaction opened it alone, the others are
// kept and say they shared it; every sample is the user's.
func TestSharedConnectionRunsTransactionsAtOnce(t *testing.T) {
	for _, useTLS := range []bool{true, false} {
		t.Run(map[bool]string{true: "h2", false: "h2c"}[useTLS], func(t *testing.T) {
			c, ln, fl := sharedServer(t, useTLS, 5*time.Millisecond, nil)
			c.Objects = false
			ss := sustain(c, 2, 400*time.Millisecond)
			first := map[int]int{}
			for _, s := range ss {
				if !s.OK() {
					t.Fatalf("user %d: %s", s.User, s.Err)
				}
				if s.User < 0 || s.User > 1 {
					t.Fatalf("a sample of user %d, of 2 users", s.User)
				}
				if !s.Kept {
					first[s.User]++
				} else if !strings.Contains(s.Marker, "kept connection shared by 4") {
					t.Errorf("a kept transaction's marker %q", s.Marker)
				}
			}
			if n := ln.n.Load(); n != 2 {
				t.Errorf("%d connections for 2 users", n)
			}
			if first[0] != 1 || first[1] != 1 {
				t.Errorf("transactions not on a kept connection, by user: %v (want one each: the one that opened it)", first)
			}
			if most := fl.mostAtOnce(); most != 4 {
				t.Errorf("at most %d requests at once on a connection, want 4", most)
			}
			// One at a time, 2 users would do at most 400/5 = 80.
			if len(ss) < 160 {
				t.Errorf("%d transactions in 400 ms of 5 ms replies: not 4 at once", len(ss))
			}
		})
	}
}

// TestSharedTransactionFailsAlone: a transaction whose object fails (a
// 404) fails alone: its other streams are cancelled, the connection goes
// on carrying the others, and its worker's next transactions succeed.
func TestSharedTransactionFailsAlone(t *testing.T) {
	var n atomic.Int64
	c, ln, _ := sharedServer(t, true, time.Millisecond, func(w nethttp.ResponseWriter, r *nethttp.Request) bool {
		if r.URL.Path == "/o/2" && n.Add(1)%5 == 0 {
			nethttp.NotFound(w, r)
			return true
		}
		return false
	})
	ss := sustain(c, 1, 500*time.Millisecond)
	failed, ok := 0, 0
	for _, s := range ss {
		switch {
		case s.OK():
			ok++
		case strings.Contains(s.Err, "status 404 Not Found for /o/2"):
			failed++
		default:
			t.Errorf("a failure not the 404's: %s", s.Err)
		}
	}
	if failed == 0 || ok < 4*failed {
		t.Errorf("%d transactions completed, %d failed at the 404", ok, failed)
	}
	if m := ln.n.Load(); m != 1 {
		t.Errorf("%d connections: a failed transaction ended the shared one", m)
	}
}

// TestSharedConnectionAfterGoAway: the embedded server ends each HTTP/2
// connection after 40 requests (10 pages) with GOAWAY: the streams it did not process
// go again on the user's next connection, opened by the first transaction
// that needs it and shared by the others (trial11 MEDIUM 8: each opened
// its own), so the user holds its connection and the old ones while their
// last transactions end; every transaction completes.
func TestSharedConnectionAfterGoAway(t *testing.T) {
	cfg := DefaultServerConfig
	cfg.Objects, cfg.KeepaliveRequests = 3, 40
	r := newRig(t, cfg)
	c := r.client(t, path.IPv4, "http://www.v6lab.test:%d/")
	c.Version, c.Keep, c.Shared = Version2, true, 4
	defer c.Close()
	stop := make(chan struct{})
	most := make(chan int)
	go func() { // the server's established connections, every millisecond
		m := 0
		for {
			select {
			case <-stop:
				most <- m
				return
			case <-time.After(time.Millisecond):
				m = max(m, established(t, r.srv.Port))
			}
		}
	}()
	ss := sustain(c, 1, 300*time.Millisecond)
	close(stop)
	again := 0
	for _, s := range ss {
		if !s.OK() {
			t.Fatalf("user %d: %s", s.User, s.Err)
		}
		again += s.Again
	}
	if again == 0 || len(ss) < 20 {
		t.Errorf("%d transactions, %d requests sent again: the server's GOAWAY was not met", len(ss), again)
	}
	// Its connection, the one a GOAWAY retired while its last
	// transactions end, and, when the server is slow to close that one, the
	// one before (before the mend: 6 to 8).
	if m := <-most; m > 3 {
		t.Errorf("%d connections of one user's at once: its transactions opened one each after the GOAWAY", m)
	}
}

// established counts the IPv4 TCP connections established on local port
// port (the server's side of its connections).
func established(t *testing.T, port int) int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	want := fmt.Sprintf(":%04X", port)
	n := 0
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) > 3 && strings.HasSuffix(f[1], want) && f[3] == "01" {
			n++
		}
	}
	return n
}

// TestSharedTimeoutEndsTheConnection: a transaction that runs out of time
// on a shared connection ends it (its reads are the others' too); the
// others say why, and the user's next transactions open a new one.
func TestSharedTimeoutEndsTheConnection(t *testing.T) {
	var stall atomic.Bool
	c, ln, _ := sharedServer(t, false, 0, func(w nethttp.ResponseWriter, r *nethttp.Request) bool {
		if stall.Load() {
			time.Sleep(2 * time.Second)
		}
		return false
	})
	c.Objects = false
	if ss := sustain(c, 1, 50*time.Millisecond); len(ss) == 0 || !ss[0].OK() {
		t.Fatalf("before the stall: %+v", ss)
	}
	stall.Store(true)
	var mu sync.Mutex
	var errs []string
	load.Sustained(context.Background(), c, load.Users{N: 1}, 10*time.Millisecond, 300*time.Millisecond, func(s result.Sample) {
		mu.Lock()
		errs = append(errs, s.Err)
		mu.Unlock()
	})
	stall.Store(false)
	mine, others := 0, 0
	for _, e := range errs {
		switch {
		case strings.Contains(e, "streams unanswered"):
			mine++
		case strings.Contains(e, "the connection these transactions shared was ended as one on it ended"):
			others++
		case e != "":
			t.Errorf("error %q", e)
		}
	}
	if mine == 0 || mine+others != len(errs) {
		t.Errorf("%d timed out, %d ended with them, of %v", mine, others, errs)
	}
	if ss := sustain(c, 1, 50*time.Millisecond); len(ss) == 0 || !ss[0].OK() || ln.n.Load() != 2 {
		t.Errorf("after the stall: %d connections, %+v", ln.n.Load(), ss)
	}
}

// TestSharedOnTheDualPath: on the dual path, a user's first transaction
// races the families and the connection it won is the one its workers
// share: every shared transaction says the family of that connection.
func TestSharedOnTheDualPath(t *testing.T) {
	r := h3Rig(t)
	c := r.client(t, path.Dual, "https://www.v6lab.test:%d/")
	c.Version, c.Keep, c.Shared, c.TLS = Version2, true, 3, &tls.Config{InsecureSkipVerify: true}
	defer c.Close()
	ss := sustain(c, 2, 200*time.Millisecond)
	won := map[int]float64{}
	for _, s := range ss {
		if !s.OK() {
			t.Fatalf("user %d: %s", s.User, s.Err)
		}
		v6, ok := s.Metrics["ipv6_won"]
		if !ok {
			t.Fatalf("user %d: no ipv6_won: %+v", s.User, s.Metrics)
		}
		if first, seen := won[s.User]; seen && first != v6 {
			t.Errorf("user %d: ipv6_won %v, then %v on the same connection", s.User, first, v6)
		}
		won[s.User] = v6
		if remote := netip.MustParseAddrPort(s.Remote).Addr(); remote.Is6() != (v6 == 1) {
			t.Errorf("user %d: remote %s, ipv6_won %v", s.User, remote, v6)
		}
	}
	if len(won) != 2 || len(ss) < 10 {
		t.Errorf("%d transactions of users %v", len(ss), won)
	}
}
