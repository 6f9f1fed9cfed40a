package http

import (
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/proto"
	"v6lab/internal/result"
)

// tcpPair is the two ends of a TCP connection on 127.0.0.1: the client's
// and the server's.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if client, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if server, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	return client, server
}

// tcpFakeH2 is an h2conn over a TCP connection on 127.0.0.1 to a fakeH2
// (with secure, over TLS over a syncStamp: h2, as v6lab dials it), with
// its first transaction (/, answered) done: a kept connection.
func tcpFakeH2(t *testing.T, secure ...bool) (*h2conn, *fakeH2, net.Conn) {
	raw, b := tcpPair(t)
	var conn net.Conn = raw
	var f *fakeH2
	if len(secure) > 0 {
		cfg, err := proto.SelfSigned([]string{"h2.test"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.NextProtos = []string{"h2"}
		f = serveFakeH2(t, tls.Server(b, cfg)) // its handshake, at its first read
		tc := tls.Client(stampH2(raw), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		conn = tc
	} else {
		f = serveFakeH2(t, b)
	}
	h := newH2Conn(conn, raw)
	t.Cleanup(h.close)
	done := runAsync(h, testStream("/"))
	f.next(frameHeaders)
	f.send(settings0, frameOf(frameHeaders, flagEndHeaders|flagEndStream, 1, f.block(":status", "200")))
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	f.next(frameSettings) // its SETTINGS' ACK: the client wrote all it had to
	return h, f, raw
}

// waitClosed waits until the client's socket c took the server's close
// (its RST: TCP_CLOSE, or with fin its FIN: TCP_CLOSE_WAIT), without
// reading it.
func waitClosed(t *testing.T, c net.Conn, fin ...bool) {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		var state uint8
		rc.Control(func(fd uintptr) {
			if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				state = info.State
			}
		})
		if state == 7 && len(fin) == 0 || state == 8 && len(fin) > 0 { // TCP_CLOSE, TCP_CLOSE_WAIT
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client's socket in state %d, not closed", state)
		}
	}
}

// TestH2ConnGoAwayReadAfterSendFailed: the server said GOAWAY (last
// stream 1) and closed with a reset before the client read it; the
// client's next requests fail to be written (ECONNRESET), and the
// GOAWAY, still in the socket, says they were not processed: they go
// again (h2Again), not fail with the write's error.
func TestH2ConnGoAwayReadAfterSendFailed(t *testing.T) {
	t.Run("h2c", func(t *testing.T) { goAwayAfterSendFailed(t) })
	t.Run("h2", func(t *testing.T) { goAwayAfterSendFailed(t, true) })
}

func goAwayAfterSendFailed(t *testing.T, secure ...bool) {
	h, f, raw := tcpFakeH2(t, secure...)
	f.send(goAwayFrame(1, errNo))
	f.hangUp(true)
	waitClosed(t, raw)
	h.newTx()
	err := wait(t, runAsync(h, testStream("/a"), testStream("/b")))
	var again *h2Again
	if !errors.As(err, &again) || again.what != "GOAWAY and the server's close" || len(again.ss) != 2 {
		t.Fatalf("error %v, want both streams unprocessed after GOAWAY", err)
	}
	if !strings.Contains(again.why, "GOAWAY (NO_ERROR, last stream 1) before it processed stream 3 of /a") {
		t.Errorf("why %q", again.why)
	}
}

// TestH2ConnClosedIdleUnderTransaction: a kept connection the server
// closed (a reset, no GOAWAY) after the client last looked at it: the
// transaction's write fails and no byte of its replies came, so none of
// its requests was processed (a browser sends them again on a new
// connection): they go again, saying so; so do they when the server's
// close was a FIN (the write succeeds, the read finds the close). The
// same on a new connection (no earlier transaction: nothing says the
// server did not process them) fails, naming the close and the write's
// failure.
func TestH2ConnClosedIdleUnderTransaction(t *testing.T) {
	for _, reset := range []bool{true, false} {
		t.Run("kept/reset="+strconv.FormatBool(reset), func(t *testing.T) { closedIdleUnder(t, reset) })
	}
	t.Run("new", func(t *testing.T) {
		raw, b := tcpPair(t)
		b.(*net.TCPConn).SetLinger(0)
		b.Close()
		waitClosed(t, raw)
		h := newH2Conn(raw, raw)
		defer h.close()
		h.newTx()
		err := wait(t, runAsync(h, testStream("/a")))
		var again *h2Again
		if errors.As(err, &again) || err == nil || !strings.Contains(err.Error(), "the server closed the connection without a GOAWAY, 1 of the transaction's requests unanswered; writing to it had failed (HTTP/2: send: ") {
			t.Fatalf("error %v, want the server's close and the write's failure", err)
		}
	})
}

// closedIdleUnder: the kept connection's server closed it (reset: by a
// RST) after the client last looked at it.
func closedIdleUnder(t *testing.T, reset bool) {
	h, f, raw := tcpFakeH2(t)
	f.hangUp(reset)
	if reset {
		waitClosed(t, raw)
	} else {
		waitClosed(t, raw, true)
	}
	h.newTx()
	err := wait(t, runAsync(h, testStream("/a"), testStream("/b")))
	var again *h2Again
	if !errors.As(err, &again) || again.what != closedIdle || len(again.ss) != 2 {
		t.Fatalf("error %v, want both streams again after the server closed the idle connection", err)
	}
	if !strings.Contains(again.why, "the server closed the kept connection, idle, before any reply to this transaction's requests (no GOAWAY)") {
		t.Errorf("why %q", again.why)
	}
}

// TestH2ConnResetWhileIdle: a kept connection the server reset while it
// was idle is found closed the first time it is checked (the socket's
// error, not a byte, is what waits), not used for a transaction.
func TestH2ConnResetWhileIdle(t *testing.T) {
	h, f, raw := tcpFakeH2(t)
	f.hangUp(true)
	waitClosed(t, raw)
	if h.alive() {
		t.Fatal("the connection is alive after the server's reset")
	}
}

// TestH2CutShortAfterGoAway: a stream the server's GOAWAY counts as
// processed (last stream 3) but whose reply its close cut short fails
// (it was processed: it is not sent again), its error naming the stream,
// what of its reply came and the GOAWAY; the streams above go nowhere
// (the transaction failed), no new connection is made.
func TestH2CutShortAfterGoAway(t *testing.T) {
	c, conns := fakeH2Server(t)
	done := doAsync(c)
	f := accepted(t, conns)
	f.request()
	f.reply(1, "text/html", againPage)
	id, uri := f.request()
	f.request()
	f.request()
	f.send(frameOf(frameHeaders, flagEndHeaders, id, f.block(":status", "200", "content-type", "image/png", "content-length", "10")),
		frameOf(frameData, 0, id, []byte("1234")), goAwayFrame(id, errNo))
	f.hangUp(false)
	s := <-done
	want := "HTTP/2: stream 3 of /o1: the server closed the connection after GOAWAY (NO_ERROR, last stream 3) before this reply ended (4 of its 10 bytes had come)"
	if id != 3 || uri != "/o1" || s.OK() || !strings.Contains(s.Err, want) || s.Again != 0 {
		t.Fatalf("stream %d of %s: sample %+v, want the error %q", id, uri, s, want)
	}
	select {
	case <-conns:
		t.Error("a new connection after a processed stream was cut short")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestH2AgainOnMoreConnections: a server whose limit of requests a
// connection is below one page's (nginx's keepalive_requests 1: each
// connection answers one request and says GOAWAY, last stream 1) still
// serves the page, on as many new connections as it takes, each
// processing some: the transaction completes, its sample says how many
// requests went again on how many new connections.
func TestH2AgainOnMoreConnections(t *testing.T) {
	c, conns := fakeH2Server(t)
	done := doAsync(c)
	pageThenGoAway(t, conns)
	for left := 3; left > 0; left-- {
		f := accepted(t, conns)
		var ids []uint32
		for range left {
			id, _ := f.request()
			ids = append(ids, id)
		}
		f.reply(ids[0], "image/png", "ok")
		if left > 1 {
			f.send(goAwayFrame(ids[0], errNo))
		}
	}
	s := <-done
	if want := "200 OK, 3 objects, h2c, 6 requests again on 3 new connections after GOAWAY"; !s.OK() || s.Marker != want || s.Again != 6 || s.AgainConns != 3 {
		t.Fatalf("sample %+v, want marker %q, again 6 on 3", s, want)
	}
	if len(conns) != 0 {
		t.Errorf("%d connections more than four", len(conns))
	}
}

// TestH2KeptResetWhileIdle: the server resets a user's kept connection
// between its transactions (no GOAWAY); the next transaction completes on
// a new connection: found closed before it was used, or, when the reset
// came as its requests left, with them sent again ("after the server
// closed the idle kept connection").
func TestH2KeptResetWhileIdle(t *testing.T) {
	c, conns := fakeH2Server(t)
	c.Keep = true
	defer c.Close()
	done := make(chan result.Sample, 1)
	go func() { done <- do(c, 10*time.Second) }()
	f := accepted(t, conns)
	f.request()
	f.reply(1, "text/plain", "ok")
	if s := <-done; !s.OK() {
		t.Fatalf("the first transaction: %s", s.Err)
	}
	f.hangUp(true)
	go func() { done <- do(c, 10*time.Second) }()
	f2 := accepted(t, conns)
	id, _ := f2.request()
	f2.reply(id, "text/plain", "ok")
	s := <-done
	if !s.OK() || s.Again == 0 && s.Kept || s.Again > 0 && !strings.HasSuffix(s.Marker, "1 request again on a new connection after "+closedIdle) {
		t.Fatalf("the transaction after the reset: %+v", s)
	}
}

// TestH2ConnCutShortSays: what a processed stream's error says of its
// reply when the server's close after its GOAWAY cut it short: its
// headers had not come, or how many bytes of its body had (of how many).
func TestH2ConnCutShortSays(t *testing.T) {
	for _, c := range []struct {
		name  string
		reply func(f *fakeH2) [][]byte
		want  string
	}{
		{"no headers", func(*fakeH2) [][]byte { return nil }, "stream 1 of /a: the server closed the connection after GOAWAY (NO_ERROR, last stream 3) before this reply ended (its headers had not come)"},
		{"no length", func(f *fakeH2) [][]byte {
			return [][]byte{frameOf(frameHeaders, flagEndHeaders, 1, f.block(":status", "200")), frameOf(frameData, 0, 1, []byte("ab"))}
		}, "stream 1 of /a: the server closed the connection after GOAWAY (NO_ERROR, last stream 3) before this reply ended (2 bytes of its body had come)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, f := newFakeH2(t)
			done := runAsync(h, testStream("/a"), testStream("/b"))
			f.next(frameHeaders)
			f.next(frameHeaders)
			f.send(append(append([][]byte{settings0}, c.reply(f)...), goAwayFrame(3, errNo))...)
			f.hangUp(false)
			if err := wait(t, done); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
