package evloop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/kstamp"
	"v6lab/internal/sock/resend"
	"v6lab/internal/sock/synstamp"
	"v6lab/internal/testutil"
	"v6lab/internal/testutil/servetest"
)

// untilEOF keeps every reply byte and is done at EOF.
type untilEOF struct{ got bytes.Buffer }

func (u *untilEOF) Feed(b []byte, eof bool) (bool, error) {
	u.got.Write(b)
	return eof, nil
}

// upTo is done after n bytes.
type upTo struct{ n int }

func (u *upTo) Feed(b []byte, eof bool) (bool, error) {
	u.n -= len(b)
	if eof && u.n > 0 {
		return false, io.ErrUnexpectedEOF
	}
	return u.n <= 0, nil
}

// refuse fails on the first byte.
type refuse struct{}

func (refuse) Feed([]byte, bool) (bool, error) { return false, errors.New("not what was asked") }

// server answers every connection with reply(request line), then closes.
func server(t *testing.T, network, addr string, reply func(req string) string) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("no %s loopback: %v", network, err)
	}
	servetest.Each(t, ln, func(c net.Conn) {
		buf := make([]byte, 256)
		n, _ := c.Read(buf)
		io.WriteString(c, reply(string(buf[:n])))
	})
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

func engine(t *testing.T) *Engine {
	t.Helper()
	e, err := New(2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func TestExchangePerFamily(t *testing.T) {
	e := engine(t)
	for _, c := range []struct{ network, addr string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		t.Run(c.network, func(t *testing.T) {
			srv := server(t, c.network, c.addr, func(req string) string { return "echo " + req })
			f := &untilEOF{}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			r := e.Do(ctx, &Exchange{Remote: srv, Request: []byte("ping"), Reply: f})
			if r.Err != nil {
				t.Fatalf("%s: %v", r.Phase, r.Err)
			}
			if f.got.String() != "echo ping" || r.BytesIn != 9 || r.BytesOut != 4 {
				t.Errorf("got %q, in %d out %d", f.got.String(), r.BytesIn, r.BytesOut)
			}
			if r.Local.Addr().Is4() != srv.Addr().Is4() || !r.Local.Addr().IsLoopback() || r.Local.Port() == 0 {
				t.Errorf("local %s for remote %s", r.Local, srv)
			}
			if !(start.Before(r.Connected) && !r.FirstByte.Before(r.Connected) && time.Since(r.FirstByte) >= 0) {
				t.Errorf("times out of order: start %v connected %v first byte %v", start, r.Connected, r.FirstByte)
			}
		})
	}
}

func TestSourceIsBound(t *testing.T) {
	e := engine(t)
	srv := server(t, "tcp4", "127.0.0.1:0", func(string) string { return "ok" })
	src := netip.MustParseAddr("127.0.0.2")
	r := e.Do(context.Background(), &Exchange{Remote: srv, Source: src, Request: []byte("x"), Reply: &untilEOF{}})
	if r.Err != nil || r.Local.Addr() != src {
		t.Fatalf("local %s err %v, want source %s", r.Local, r.Err, src)
	}
}

// TestFailures: each failure ends the exchange in its phase with its
// error. A refused, short or refused-by-the-feeder exchange ends on what
// the peer did, before its deadline; a stalled one by its deadline: not
// before it, and before the silent server's reply (2 s), the only other
// thing that could end it. How soon after the deadline the loop runs is
// the scheduler's (346 and 494 ms for 200 ms in 2 of 200 runs under
// -race beside eight busy loops), so no wall-clock margin is asserted.
func TestFailures(t *testing.T) {
	e := engine(t)
	dead, _ := net.Listen("tcp4", "127.0.0.1:0")
	deadAddr := dead.Addr().(*net.TCPAddr).AddrPort()
	dead.Close()
	const hold = 2 * time.Second
	silent := server(t, "tcp4", "127.0.0.1:0", func(string) string { time.Sleep(hold); return "" })
	short := server(t, "tcp4", "127.0.0.1:0", func(string) string { return "abc" })
	cases := []struct {
		name    string
		to      netip.AddrPort
		reply   Feeder
		timeout time.Duration
		phase   string
		is      error
	}{
		{"refused", deadAddr, &untilEOF{}, time.Second, "connect", syscall.ECONNREFUSED},
		{"stall", silent, &untilEOF{}, 200 * time.Millisecond, "io", ErrTimeout},
		{"short", short, &upTo{n: 10}, time.Second, "reply", io.ErrUnexpectedEOF},
		{"feeder says no", short, refuse{}, time.Second, "reply", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
			defer cancel()
			start := time.Now()
			deadline, _ := ctx.Deadline()
			r := e.Do(ctx, &Exchange{Remote: c.to, Request: []byte("x"), Reply: c.reply})
			end := time.Now()
			if r.Err == nil || r.Phase != c.phase || (c.is != nil && !errors.Is(r.Err, c.is)) {
				t.Fatalf("phase %q err %v; want phase %q and %v", r.Phase, r.Err, c.phase, c.is)
			}
			switch byDeadline := errors.Is(r.Err, ErrTimeout); {
			case byDeadline && end.Before(deadline):
				t.Errorf("timed out %v before its deadline", deadline.Sub(end))
			case byDeadline && end.Sub(start) >= hold:
				t.Errorf("took %v: the server's reply, not the %v deadline, ended it", end.Sub(start), c.timeout)
			case !byDeadline && !end.Before(deadline):
				t.Errorf("took %v: ended by the %v deadline, not by the peer", end.Sub(start), c.timeout)
			}
		})
	}
}

func TestCancelEndsAtOnce(t *testing.T) {
	e := engine(t)
	silent := server(t, "tcp6", "[::1]:0", func(string) string { time.Sleep(2 * time.Second); return "" })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	r := e.Do(ctx, &Exchange{Remote: silent, Request: []byte("x"), Reply: &untilEOF{}})
	if !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("err %v, want canceled", r.Err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("cancel took %v", d)
	}
}

// TestManyAtOnceLeaveNothing runs 500 exchanges together and checks that
// each completes and that no descriptor is left open afterwards.
func TestManyAtOnceLeaveNothing(t *testing.T) {
	e := engine(t)
	srv := server(t, "tcp4", "127.0.0.1:0", func(req string) string { return strings.Repeat("z", 10000) })
	before := openFDs(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for range 500 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			f := &upTo{n: 10000}
			if r := e.Do(ctx, &Exchange{Remote: srv, Request: []byte("go"), Reply: f}); r.Err != nil || r.BytesIn != 10000 {
				mu.Lock()
				failed = append(failed, r.Phase+": "+errString(r.Err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of 500 failed, first: %s", len(failed), failed[0])
	}
	// The server's side closes asynchronously; give it a moment.
	for deadline := time.Now().Add(2 * time.Second); openFDs(t) > before && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if after := openFDs(t); after > before {
		t.Errorf("%d descriptors open after, %d before", after, before)
	}
}

func TestClosedEngine(t *testing.T) {
	e, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	r := e.Do(context.Background(), &Exchange{Remote: netip.MustParseAddrPort("127.0.0.1:9"), Reply: &untilEOF{}})
	if r.Err == nil || !strings.Contains(r.Err.Error(), "engine closed") {
		t.Fatalf("err %v", r.Err)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func errString(err error) string {
	if err == nil {
		return "short reply"
	}
	return err.Error()
}

// lines asks for each of reqs in turn, one reply line each, reconnecting
// when a reply ends with "bye".
type lines struct {
	reqs    []string
	next    int
	got     []string
	buf     []byte
	closing bool
}

func (l *lines) Feed(b []byte, eof bool) (bool, error) {
	l.buf = append(l.buf, b...)
	if i := bytes.IndexByte(l.buf, '\n'); i >= 0 {
		line := string(l.buf[:i])
		l.got, l.buf = append(l.got, line), l.buf[:0]
		l.closing = strings.HasSuffix(line, "bye")
		return true, nil
	}
	if eof {
		return false, io.ErrUnexpectedEOF
	}
	return false, nil
}

func (l *lines) Next() ([]byte, bool) {
	if l.next >= len(l.reqs) {
		return nil, false
	}
	l.next++
	return []byte(l.reqs[l.next-1] + "\n"), l.closing
}

// lineServer answers each line "LINE ok", and the second of a connection
// "LINE bye" before it closes. accepted stops it and counts the
// connections it took, once those have ended.
func lineServer(t *testing.T) (addr netip.AddrPort, accepted func() int) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	var conns sync.WaitGroup
	n := 0
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				r := bufio.NewReader(c)
				for i := 1; ; i++ {
					req, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if i == 2 { // two requests per connection
						io.WriteString(c, strings.TrimSpace(req)+" bye\n")
						return
					}
					io.WriteString(c, strings.TrimSpace(req)+" ok\n")
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort(), func() int {
		ln.Close()
		<-stopped
		conns.Wait()
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// TestContinuer: several requests on one connection, each sent by the loop
// after the previous reply, a new connection when the server said it
// closes, and a reconnect that fails names the connect phase.
func TestContinuer(t *testing.T) {
	addr, accepted := lineServer(t)
	e := engine(t)
	l := &lines{reqs: []string{"b", "c", "d"}}
	r := e.Do(context.Background(), &Exchange{Remote: addr, Request: []byte("a\n"), Reply: l})
	if r.Err != nil || strings.Join(l.got, ",") != "a ok,b bye,c ok,d bye" || r.Reconnects != 1 {
		t.Fatalf("got %q, %d reconnects, err %v", l.got, r.Reconnects, r.Err)
	}
	if r.BytesOut != 8 || r.Connected.IsZero() || r.LastRead.Before(r.FirstByte) {
		t.Errorf("bytes out %d, connected %v, first %v, last %v", r.BytesOut, r.Connected, r.FirstByte, r.LastRead)
	}
	if n := accepted(); n != 2 {
		t.Errorf("%d connections accepted, want 2", n)
	}

	// A server that takes one connection and stops listening: the
	// reconnect after its "bye" is refused, in the connect phase.
	once, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := once.Accept()
		once.Close()
		if err != nil {
			return
		}
		defer c.Close()
		bufio.NewReader(c).ReadString('\n')
		io.WriteString(c, "a bye\n")
	}()
	l = &lines{reqs: []string{"b"}}
	r = e.Do(context.Background(), &Exchange{Remote: once.Addr().(*net.TCPAddr).AddrPort(), Request: []byte("a\n"), Reply: l})
	if r.Err == nil || r.Phase != "connect" || !errors.Is(r.Err, syscall.ECONNREFUSED) || r.Reconnects != 1 || len(l.got) != 1 {
		t.Errorf("refused reconnect: phase %q err %v, %d reconnects, got %q", r.Phase, r.Err, r.Reconnects, l.got)
	}
}

// slowLines is lines whose owner takes a while over each complete reply:
// delays[i] over the i-th, each measured in took.
type slowLines struct {
	lines
	delays []time.Duration
	took   []time.Duration
}

func (l *slowLines) Feed(b []byte, eof bool) (bool, error) {
	done, err := l.lines.Feed(b, eof)
	if done && len(l.took) < len(l.delays) {
		start := time.Now()
		time.Sleep(l.delays[len(l.took)])
		l.took = append(l.took, time.Since(start))
	}
	return done, err
}

// TestClientTurns: the loop's own time from a reply's arrival to the next
// request's send is counted for requests on the same connection, not for
// one that needs a new connection (its connect is the network's).
func TestClientTurns(t *testing.T) {
	addr, _ := lineServer(t)
	e := engine(t)
	// The wait before the reconnect is long, so that counting it would
	// show past what a loaded machine adds to the others.
	const delay, beforeReconnect = 10 * time.Millisecond, 100 * time.Millisecond
	l := &slowLines{lines: lines{reqs: []string{"b", "c", "d"}}, delays: []time.Duration{delay, beforeReconnect, delay}}
	start := time.Now()
	r := e.Do(context.Background(), &Exchange{Remote: addr, Request: []byte("a\n"), Reply: l})
	took := time.Since(start)
	if r.Err != nil || r.Reconnects != 1 || len(l.took) != 3 {
		t.Fatalf("err %v, %d reconnects, %d replies", r.Err, r.Reconnects, len(l.took))
	}
	if r.LastRx.IsZero() {
		t.Skip("no receive stamps on this host")
	}
	// a→b and c→d on one connection each; b→c across the reconnect.
	own := l.took[0] + l.took[2]
	if r.ClientTurns < own || r.ClientTurns >= own+beforeReconnect/2 || r.ClientTurns > took {
		t.Errorf("client turns %v of %v, want the two turns' %v (%v), not the reconnect's %v", r.ClientTurns, took, own, l.took, l.took[1])
	}
}

// datagram is done at a datagram equal to want; anything else is skipped
// (a stray), and it must never be told of an end of stream.
type datagram struct {
	want   string
	strays int
}

func (d *datagram) Feed(b []byte, eof bool) (bool, error) {
	if eof {
		return false, errors.New("eof on a datagram socket")
	}
	if string(b) == d.want {
		return true, nil
	}
	d.strays++
	return false, nil
}

// TestUDPExchange: one datagram out, replies fed whole until one
// completes; both stamps and the local address are set, on each family;
// a closed port is an io failure (the ICMP error), and a silent server
// times out; no descriptor is left.
func TestUDPExchange(t *testing.T) {
	e := engine(t)
	leavesNothingOpen(t, "exchanges", func(t *testing.T) { udpExchanges(t, e) })
}

func udpExchanges(t *testing.T, e *Engine) {
	for _, c := range []struct{ network, addr string }{{"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"}} {
		t.Run(c.network, func(t *testing.T) { udpExchange(t, e, c.network, c.addr) }) // its server closes when it ends
	}
	if r := e.Do(context.Background(), &Exchange{Remote: netip.MustParseAddrPort("127.0.0.1:9"), Request: []byte("q"), Reply: &lines{reqs: []string{"more"}}, UDP: true}); r.Err == nil || !strings.Contains(r.Err.Error(), "one request") {
		t.Errorf("a UDP exchange with further requests: %v", r.Err)
	}
	dead, _ := net.ListenPacket("udp4", "127.0.0.1:0")
	addr := netip.MustParseAddrPort(dead.LocalAddr().String())
	dead.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if r := e.Do(ctx, &Exchange{Remote: addr, Request: []byte("q"), Reply: &datagram{want: "x"}, UDP: true}); !errors.Is(r.Err, syscall.ECONNREFUSED) || r.Phase != "io" {
		t.Errorf("closed port: %s: %v", r.Phase, r.Err)
	}
}

// udpExchange is TestUDPExchange on one family.
func udpExchange(t *testing.T, e *Engine, network, addr string) {
	srv, _ := udpServer(t, network, addr, 0, func(q string, reply func(string)) {
		reply("") // an empty datagram
		reply("stray")
		reply("re:" + q)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	start := time.Now()
	d := &datagram{want: "re:query"}
	r := e.Do(ctx, &Exchange{Remote: srv, Request: []byte("query"), Reply: d, UDP: true})
	cancel()
	if r.Err != nil {
		t.Fatalf("%s: %s: %v", network, r.Phase, r.Err)
	}
	if d.strays != 1 || r.BytesOut != 5 || r.BytesIn != int64(len("stray")+len("re:query")) {
		t.Errorf("%s: %d strays, %d bytes out, %d in", network, d.strays, r.BytesOut, r.BytesIn)
	}
	if r.FirstTx.Before(start) || r.LastRead.Before(r.FirstTx) || r.Connected.IsZero() || r.Local.Addr().Is4() != srv.Addr().Is4() {
		t.Errorf("%s: sent %v read %v connected %v local %v", network, r.FirstTx, r.LastRead, r.Connected, r.Local)
	}
	if !r.LastRx.IsZero() && (r.LastRx.Before(r.FirstTx) || r.LastRx.After(r.LastRead)) {
		t.Errorf("%s: reply stamped %v, sent %v, read %v", network, r.LastRx, r.FirstTx, r.LastRead)
	}
	// A server that never answers: the deadline ends it.
	quiet, err := net.ListenPacket(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	r = e.Do(ctx, &Exchange{Remote: netip.MustParseAddrPort(quiet.LocalAddr().String()), Request: []byte("query"), Reply: &datagram{want: "x"}, UDP: true})
	cancel()
	quiet.Close()
	if !errors.Is(r.Err, ErrTimeout) || r.Phase != "io" {
		t.Errorf("%s: a silent server: %s: %v", network, r.Phase, r.Err)
	}
}

// TestAdoptedSocket: a connection made elsewhere (Go's dialer) becomes the
// exchange's first connection: the request goes on it (one accept serves
// the first two requests), a reconnect dials anew, the loop closes the
// adopted descriptor, and an engine already closed closes it too.
func TestAdoptedSocket(t *testing.T) {
	addr, accepted := lineServer(t)
	adopt := func() int {
		c, err := net.Dial("tcp4", addr.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rc, _ := c.(*net.TCPConn).SyscallConn()
		fd := -1
		rc.Control(func(f uintptr) { fd, _ = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) })
		if fd < 0 {
			t.Fatal("dup failed")
		}
		return fd
	}
	e := engine(t)
	before := openFDs(t)
	fd := adopt()
	l := &lines{reqs: []string{"b", "c"}}
	r := e.Do(context.Background(), &Exchange{Remote: addr, Request: []byte("a\n"), Reply: l, Adopt: fd})
	if r.Err != nil || strings.Join(l.got, ",") != "a ok,b bye,c ok" || r.Reconnects != 1 || r.Connected.IsZero() {
		t.Fatalf("got %q, %d reconnects, connected %v, err %v", l.got, r.Reconnects, r.Connected, r.Err)
	}
	if r.Local.Port() == 0 {
		t.Errorf("no local address")
	}
	closed, err := New(1)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if r := closed.Do(context.Background(), &Exchange{Remote: addr, Request: []byte("a\n"), Reply: &lines{}, Adopt: adopt()}); r.Err == nil {
		t.Error("a closed engine took an adopted socket")
	}
	if n := accepted(); n != 3 {
		t.Errorf("%d connections accepted, want 3 (the adopted one, the reconnect, the one the closed engine refused)", n)
	}
	time.Sleep(50 * time.Millisecond) // the closer goroutine
	if after := openFDs(t); after > before {
		t.Errorf("%d descriptors open after, %d before", after, before)
	}
}

// udpServer serves datagrams on network at bind: after dropping the first
// drop, it hands each query to serve with the function that replies to
// its sender. It counts the queries.
func udpServer(t *testing.T, network, bind string, drop int, serve func(q string, reply func(string))) (netip.AddrPort, func() int) {
	t.Helper()
	pc, err := net.ListenPacket(network, bind)
	if err != nil {
		t.Skipf("no %s loopback: %v", network, err)
	}
	t.Cleanup(func() { pc.Close() })
	var mu sync.Mutex
	queries := 0
	go func() {
		b := make([]byte, 64)
		for {
			n, from, err := pc.ReadFrom(b)
			if err != nil {
				return
			}
			mu.Lock()
			queries++
			k := queries
			mu.Unlock()
			if k > drop {
				serve(string(b[:n]), func(r string) { pc.WriteTo([]byte(r), from) })
			}
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String()), func() int { mu.Lock(); defer mu.Unlock(); return queries }
}

// answerer is a UDP server whose reply to a query "name" is "addr"
// (after dropping the first drop queries), with a stray datagram first.
func answerer(t *testing.T, network, bind, addr string, drop int) (netip.AddrPort, func() int) {
	t.Helper()
	return udpServer(t, network, bind, drop, func(_ string, reply func(string)) {
		reply("stray")
		reply(addr)
	})
}

// answer takes a datagram that parses as an address; "bad" is an error,
// anything else is not the answer.
func answer(b []byte) (netip.Addr, bool, error) {
	if string(b) == "bad" {
		return netip.Addr{}, false, errors.New("bad answer")
	}
	a, err := netip.ParseAddr(string(b))
	return a, err == nil, nil
}

// TestLookupThenConnect: the query goes out first (Start just before it),
// strays are skipped, the answer's address is connected to with Remote's
// port, the stamps are ordered (query out, answer in, the connection's
// reply in) and the turn from the answer to the connect is a client turn;
// a lost query is sent again after its Stub's timeout; a bad answer, a closed DNS
// port and a silent server end in phase "resolve"; nothing is left open.
func TestLookupThenConnect(t *testing.T) {
	e := engine(t)
	leavesNothingOpen(t, "lookups", func(t *testing.T) { lookups(t, e) })
}

// leavesNothingOpen runs body as a subtest (its servers close when it
// ends), then checks that no descriptor was left open.
func leavesNothingOpen(t *testing.T, name string, body func(t *testing.T)) {
	t.Helper()
	kstamp.Hold() // its socket stays open for the process
	before := openFDs(t)
	t.Run(name, body)
	time.Sleep(50 * time.Millisecond) // the closer goroutine
	if after := openFDs(t); after > before {
		t.Errorf("%d descriptors open after, %d before", after, before)
	}
}

func lookups(t *testing.T, e *Engine) {
	for _, f := range []struct{ udp, tcp, addr, loop string }{{"udp4", "tcp4", "127.0.0.1", "127.0.0.1:0"}, {"udp6", "tcp6", "::1", "[::1]:0"}} {
		srv := server(t, f.tcp, f.loop, func(string) string { return "reply" })
		dns, _ := answerer(t, f.udp, f.loop, f.addr, 0)
		var started time.Time
		x := &Exchange{Remote: netip.AddrPortFrom(netip.IPv4Unspecified(), srv.Port()), Request: []byte("GET\n"), Reply: &untilEOF{},
			Lookup: &Lookup{Server: dns, Query: []byte("name"), Answer: answer, Start: func() { started = time.Now() }}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r := e.Do(ctx, x)
		cancel()
		if r.Err != nil {
			t.Fatalf("%s: %s: %v", f.udp, r.Phase, r.Err)
		}
		if x.Remote != srv || r.Local.Addr().Is4() != srv.Addr().Is4() || r.LookupLocal.Addr().Is4() != dns.Addr().Is4() {
			t.Errorf("%s: connected %v from %v, query from %v", f.udp, x.Remote, r.Local, r.LookupLocal)
		}
		if got := x.Reply.(*untilEOF).got.String(); got != "reply" {
			t.Errorf("%s: reply %q", f.udp, got)
		}
		if r.FirstTx.IsZero() || r.AnswerRx.IsZero() || r.LastRx.IsZero() {
			t.Fatalf("%s: stamps missing: query %v, answer %v, reply %v", f.udp, r.FirstTx, r.AnswerRx, r.LastRx)
		}
		if r.FirstTx.Before(started) || !r.AnswerRx.After(r.FirstTx) || r.Resolved.Before(r.AnswerRx) || r.Connected.Before(r.Resolved) || r.LastRx.Before(r.Connected) {
			t.Errorf("%s: out of order: start %v, query %v, answer %v, resolved %v, connected %v, reply %v", f.udp, started, r.FirstTx, r.AnswerRx, r.Resolved, r.Connected, r.LastRx)
		}
		if r.ClientTurns <= 0 || r.ClientTurns > r.Connected.Sub(r.AnswerRx) {
			t.Errorf("%s: client turns %v, answer to connected %v", f.udp, r.ClientTurns, r.Connected.Sub(r.AnswerRx))
		}
	}

	// A lost query is sent again; the answer to the second comes.
	srv := server(t, "tcp4", "127.0.0.1:0", func(string) string { return "reply" })
	dns, queries := answerer(t, "udp4", "127.0.0.1:0", "127.0.0.1", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r := e.Do(ctx, &Exchange{Remote: srv, Request: []byte("GET\n"), Reply: &untilEOF{},
		Lookup: &Lookup{Server: dns, Query: []byte("name"), Answer: answer, Stub: resend.Stub{Timeout: 20 * time.Millisecond}}})
	if r.Err != nil || queries() != 2 {
		t.Errorf("after a lost query: %d queries, %s: %v", queries(), r.Phase, r.Err)
	}
	if r.Resolved.Sub(r.FirstTx) < 20*time.Millisecond {
		t.Errorf("answered %v after the first query, before the resend was due", r.Resolved.Sub(r.FirstTx))
	}

	bad, _ := answerer(t, "udp4", "127.0.0.1:0", "bad", 0)
	silent, _ := answerer(t, "udp4", "127.0.0.1:0", "", 1000)
	dead, _ := net.ListenPacket("udp4", "127.0.0.1:0")
	closed := netip.MustParseAddrPort(dead.LocalAddr().String())
	dead.Close()
	for _, c := range []struct {
		name   string
		server netip.AddrPort
		want   error
	}{{"bad answer", bad, nil}, {"closed port", closed, syscall.ECONNREFUSED}, {"silent server", silent, ErrTimeout}} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		r := e.Do(ctx, &Exchange{Remote: srv, Request: []byte("GET\n"), Reply: &untilEOF{}, Lookup: &Lookup{Server: c.server, Query: []byte("name"), Answer: answer}})
		cancel()
		if r.Phase != "resolve" || r.Err == nil || (c.want != nil && !errors.Is(r.Err, c.want)) || r.Connected != (time.Time{}) {
			t.Errorf("%s: %s: %v (connected %v)", c.name, r.Phase, r.Err, r.Connected)
		}
	}
	if r := e.Do(context.Background(), &Exchange{Remote: srv, Request: []byte("q"), Reply: &datagram{}, UDP: true, Lookup: &Lookup{Server: bad, Query: []byte("name"), Answer: answer}}); r.Err == nil || r.Phase != "resolve" {
		t.Errorf("a lookup before a UDP exchange: %s: %v", r.Phase, r.Err)
	}
}

// heldServer accepts connections, says on arrived when each one's request
// is in, and answers them all when release is closed.
func heldServer(t *testing.T) (addr netip.AddrPort, arrived chan struct{}, release chan struct{}) {
	t.Helper()
	arrived, release = make(chan struct{}, 8), make(chan struct{})
	addr = server(t, "tcp4", "127.0.0.1:0", func(req string) string {
		arrived <- struct{}{}
		<-release
		return "late " + req
	})
	return addr, arrived, release
}

// polling says whether the engine's loops poll without blocking: the
// count moves within a window much longer than one poll.
func polling(e *Engine) bool {
	// A spin the loop began before it learned of the change may end in
	// the first window (seen once on a loaded machine): only the second
	// says whether it still spins.
	time.Sleep(20 * time.Millisecond)
	before := e.polls.Load()
	time.Sleep(20 * time.Millisecond)
	return e.polls.Load() != before
}

// spinning is polling with patience: on a loaded machine the spinning
// loop may not be scheduled for tens of milliseconds.
func spinning(e *Engine) bool {
	before := e.polls.Load()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if e.polls.Load() != before {
			return true
		}
	}
	return false
}

func TestSpinsOnlyWithOneExchangeInFlight(t *testing.T) {
	e := engine(t)
	e.SetSpin(time.Hour) // not cut by the window: only by a second exchange
	srv, arrived, release := heldServer(t)
	do := func(req string) chan Result {
		ch := make(chan Result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ch <- e.Do(ctx, &Exchange{Remote: srv, Request: []byte(req), Reply: &untilEOF{}})
		}()
		return ch
	}
	first := do("a")
	<-arrived
	if !spinning(e) {
		t.Fatal("one exchange waits for its reply, and the loop does not spin")
	}
	second := do("b")
	<-arrived
	if polling(e) {
		t.Error("two exchanges in flight, and a loop still spins")
	}
	close(release)
	for _, ch := range []chan Result{first, second} {
		if r := <-ch; r.Err != nil {
			t.Fatalf("%s: %v", r.Phase, r.Err)
		}
	}
	if polling(e) {
		t.Error("nothing in flight, and a loop still spins")
	}
}

func TestSpinWindowEnds(t *testing.T) {
	for _, spin := range []time.Duration{0, 2 * time.Millisecond} {
		e := engine(t)
		e.SetSpin(spin)
		srv, arrived, release := heldServer(t)
		done := make(chan Result, 1)
		go func() {
			done <- e.Do(context.Background(), &Exchange{Remote: srv, Request: []byte("x"), Reply: &untilEOF{}})
		}()
		<-arrived
		time.Sleep(10 * time.Millisecond) // past the window, and past a scan
		if polling(e) {
			t.Errorf("spin %v: the loop still spins %v after its window", spin, 10*time.Millisecond)
		}
		if spun := e.polls.Load(); (spun > 0) != (spin > 0) {
			t.Errorf("spin %v: %d polls", spin, spun)
		}
		close(release)
		if r := <-done; r.Err != nil {
			t.Fatalf("spin %v: %s: %v", spin, r.Phase, r.Err)
		}
	}
}

// TestSYNStampAndLocal: with the SYN stamper attached, an
// exchange that asks for its SYN (Cookie) has the kernel's stamp of it,
// within the exchange and before its handshake was seen over, and the
// local address the server saw, per family; without asking, the address
// alone.
func TestSYNStampAndLocal(t *testing.T) {
	testutil.RequireRoot(t, "needs root: the SYN stamp is a BPF program")
	if _, err := synstamp.Default(); err != nil {
		t.Skipf("no SYN stamps on this host: %v", err)
	}
	e := engine(t)
	for _, c := range []struct{ network, addr string }{{"tcp4", "127.0.0.1:0"}, {"tcp6", "[::1]:0"}} {
		ln, err := net.Listen(c.network, c.addr)
		if err != nil {
			t.Logf("no %s loopback: %v", c.network, err)
			continue
		}
		peers := make(chan string, 2)
		servetest.Each(t, ln, func(conn net.Conn) {
			peers <- conn.RemoteAddr().String()
			conn.Read(make([]byte, 16))
			io.WriteString(conn, "ok")
		})
		srv := ln.Addr().(*net.TCPAddr).AddrPort()
		for _, cookie := range []bool{true, false} {
			start := time.Now()
			r := e.Do(context.Background(), &Exchange{Remote: srv, Request: []byte("x"), Reply: &untilEOF{}, Cookie: cookie})
			if r.Err != nil {
				t.Fatalf("%s: %s: %v", c.network, r.Phase, r.Err)
			}
			if peer := <-peers; r.Local.String() != peer {
				t.Errorf("%s cookie %v: local %s, the server saw %s", c.network, cookie, r.Local, peer)
			}
			slack := 2 * time.Millisecond // the kernel's clock and Go's are read apart
			switch {
			case !cookie && !r.SYN.IsZero():
				t.Errorf("%s: a SYN stamp %v not asked for", c.network, r.SYN)
			case cookie && (r.SYN.Before(start.Add(-slack)) || r.SYN.After(r.Connected.Add(slack))):
				t.Errorf("%s: SYN stamped %v, exchange from %v, connected %v", c.network, r.SYN, start, r.Connected)
			}
		}
	}
}
