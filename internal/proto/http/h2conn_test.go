package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"v6lab/internal/proto"

	"golang.org/x/net/http2/hpack"
)

// TestRequestBlockDecodes: the HPACK block of a request decodes, by the
// reference decoder, to the request's fields, short and long values alike
// (an integer past its prefix).
func TestRequestBlockDecodes(t *testing.T) {
	long := "/" + strings.Repeat("a", 300)
	for _, c := range []struct {
		https bool
		uri   string
	}{{true, "/"}, {false, "/obj/1?x=2"}, {true, long}} {
		var got []string
		d := hpack.NewDecoder(4096, func(f hpack.HeaderField) { got = append(got, f.Name+"="+f.Value) })
		if _, err := d.Write(requestBlock(c.https, "www.v6lab.test:8443", c.uri, "v6lab")); err != nil || d.Close() != nil {
			t.Fatalf("%q: %v", c.uri, err)
		}
		scheme := map[bool]string{true: "https", false: "http"}[c.https]
		want := []string{":method=GET", ":scheme=" + scheme, ":path=" + c.uri, ":authority=www.v6lab.test:8443", "user-agent=v6lab", "accept=*/*"}
		if !slices.Equal(got, want) {
			t.Errorf("%q: decoded %q, want %q", c.uri, got, want)
		}
	}
	big := appendHeaders(nil, 5, bytes.Repeat([]byte{0x82}, 40000), h2MaxFrame)
	var types []byte
	for p := big; len(p) > 0; {
		n := int(p[0])<<16 | int(p[1])<<8 | int(p[2])
		types = append(types, p[3], p[4])
		p = p[9+n:]
	}
	if want := []byte{frameHeaders, flagEndStream, frameContinuation, 0, frameContinuation, flagEndHeaders}; !bytes.Equal(types, want) {
		t.Errorf("a 40000-byte block went as %v, want %v", types, want)
	}
}

// fakeH2 is the server's end of an h2conn over a pipe, scripted by a
// test: it reads the client's preface and frames, and writes what the
// test gives it.
type fakeH2 struct {
	t      *testing.T
	c      net.Conn
	frames chan rawFrame
	enc    *hpack.Encoder
	encBuf bytes.Buffer
	passed []rawFrame // frames next went past
	out    chan fakeWrite
}

// fakeWrite is what the server writes, then does to its end (when then
// is not nil).
type fakeWrite struct {
	p    []byte
	then func(net.Conn)
}

type rawFrame struct {
	typ, flags byte
	id         uint32
	p          []byte
}

func newFakeH2(t *testing.T) (*h2conn, *fakeH2) {
	a, b := net.Pipe()
	h := newH2Conn(a, a)
	f := serveFakeH2(t, b)
	t.Cleanup(func() { h.close() })
	return h, f
}

// serveFakeH2 is the server's end of the client's connection b.
func serveFakeH2(t *testing.T, b net.Conn) *fakeH2 {
	f := &fakeH2{t: t, c: b, frames: make(chan rawFrame, 1000), out: make(chan fakeWrite, 100)}
	go func() { // the writes, in order (a client that failed reads none)
		for w := range f.out {
			b.Write(w.p)
			if w.then != nil {
				w.then(b)
			}
		}
	}()
	f.enc = hpack.NewEncoder(&f.encBuf)
	go func() {
		defer close(f.frames)
		pre := make([]byte, len(h2Preface))
		if _, err := io.ReadFull(b, pre); err != nil || string(pre) != h2Preface {
			return
		}
		for n := 0; ; n++ {
			hdr := make([]byte, 9)
			if _, err := io.ReadFull(b, hdr); err != nil {
				return
			}
			p := make([]byte, int(hdr[0])<<16|int(hdr[1])<<8|int(hdr[2]))
			if _, err := io.ReadFull(b, p); err != nil {
				return
			}
			fr := rawFrame{hdr[3], hdr[4], binary.BigEndian.Uint32(hdr[5:]), p}
			if n < 2 { // the client's SETTINGS and connection window, after its preface
				f.frames <- rawFrame{typ: 0xff, p: append([]byte{fr.typ}, fr.p...)}
				continue
			}
			f.frames <- fr
		}
	}()
	t.Cleanup(func() { b.Close(); close(f.out) })
	return f
}

// send writes frames to the client, in order, without waiting for it to
// read them (a client that fails stops reading).
func (f *fakeH2) send(frames ...[]byte) {
	f.out <- fakeWrite{p: bytes.Join(frames, nil)}
}

// hangUp closes the server's end once what was sent before it is
// written, and returns then: with reset, by a RST (SO_LINGER 0), as a
// server closing with the client's requests unread does.
func (f *fakeH2) hangUp(reset bool) {
	closed := make(chan struct{})
	f.out <- fakeWrite{then: func(b net.Conn) {
		if tc, ok := b.(*tls.Conn); ok && reset {
			b = tc.NetConn() // no close_notify
		}
		if tc, ok := b.(*net.TCPConn); ok && reset {
			tc.SetLinger(0)
		}
		b.Close()
		close(closed)
	}}
	<-closed
}

// next waits for the client's next frame of type typ.
func (f *fakeH2) next(typ byte) rawFrame {
	f.t.Helper()
	for i, fr := range f.passed {
		if fr.typ == typ {
			f.passed = slices.Delete(f.passed, i, i+1)
			return fr
		}
	}
	timeout := time.After(5 * time.Second)
	for {
		select {
		case fr, ok := <-f.frames:
			if !ok {
				f.t.Fatalf("the client closed before a frame of type %d", typ)
			}
			if fr.typ == typ {
				return fr
			}
			f.passed = append(f.passed, fr)
		case <-timeout:
			f.t.Fatalf("no frame of type %d from the client", typ)
		}
	}
}

func frameOf(typ, flags byte, id uint32, p []byte) []byte {
	return append(appendFrameHeader(nil, len(p), typ, flags, id), p...)
}

// block encodes header fields "name", "value", ...
func (f *fakeH2) block(kv ...string) []byte {
	f.encBuf.Reset()
	for i := 0; i < len(kv); i += 2 {
		f.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return bytes.Clone(f.encBuf.Bytes())
}

func testStream(uri string) *h2stream {
	return &h2stream{uri: uri, block: requestBlock(false, "x", uri, "t"), maxBody: DefaultMaxBody}
}

// runAsync runs the streams on h, its error on the channel.
func runAsync(h *h2conn, ss ...*h2stream) chan error {
	ch := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		defer h.watch(ctx, &h.reuse)()
		_, err := h.run(ctx, ss, &h.reuse)
		ch <- err
	}()
	return ch
}

func wait(t *testing.T, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("the transaction hangs")
	}
	return nil
}

var settings0 = frameOf(frameSettings, 0, 0, nil)

// TestH2ConnReply: a reply's headers (after an informational one, with
// padding and priority), its padded DATA and its trailers; the client
// acknowledges the server's SETTINGS and answers its PING.
func TestH2ConnReply(t *testing.T) {
	h, f := newFakeH2(t)
	s := testStream("/a")
	done := runAsync(h, s)
	settings, window := f.next(0xff), f.next(0xff)
	if want := append([]byte{frameSettings}, 0, settingEnablePush, 0, 0, 0, 0, 0, settingInitialWindowSize, 0, 0x40, 0, 0, 0, settingMaxHeaderListSize, 0, 1, 0, 0); !bytes.Equal(settings.p, want) ||
		!bytes.Equal(window.p, []byte{frameWindowUpdate, 0x3f, 0xff, 0, 1}) {
		t.Errorf("the client's SETTINGS %v and WINDOW_UPDATE %v", settings.p, window.p)
	}
	req := f.next(frameHeaders)
	if req.id != 1 || req.flags != flagEndStream|flagEndHeaders || !bytes.Equal(req.p, s.block) {
		t.Fatalf("request frame %+v", req)
	}
	padded := append([]byte{3}, append(append([]byte{0, 0, 0, 0, 0}, f.block(":status", "200", "content-length", "10")...), 0, 0, 0)...)
	f.send(settings0, frameOf(framePing, 0, 0, []byte("12345678")),
		frameOf(frameHeaders, flagEndHeaders, 1, f.block(":status", "103")),
		frameOf(frameHeaders, flagEndHeaders|flagPadded|flagPriority, 1, padded),
		frameOf(frameData, flagPadded, 1, append([]byte{2}, "hello\x00\x00"...)),
		frameOf(frameData, 0, 1, []byte("world")),
		frameOf(frameHeaders, flagEndHeaders|flagEndStream, 1, f.block("x-trailer", "1")))
	if ping := f.next(framePing); ping.flags != flagACK || string(ping.p) != "12345678" {
		t.Errorf("PING answered with %+v", ping)
	}
	if err := wait(t, done); err != nil || s.status != 200 || s.n != 10 {
		t.Fatalf("reply: %v, status %d, %d bytes", err, s.status, s.n)
	}
	if ack := f.next(frameSettings); ack.flags != flagACK {
		t.Errorf("SETTINGS answered with %+v", ack)
	}
	if !h.alive() {
		t.Error("the connection is not alive after a reply")
	}
}

// TestH2ConnMaxStreams: with the server's SETTINGS_MAX_CONCURRENT_STREAMS
// at 1, each request waits for the stream before it to end.
func TestH2ConnMaxStreams(t *testing.T) {
	h, f := newFakeH2(t)
	first := testStream("/")
	done := runAsync(h, first)
	f.next(frameHeaders)
	maxOne := frameOf(frameSettings, 0, 0, []byte{0, settingMaxStreams, 0, 0, 0, 1})
	f.send(maxOne, frameOf(frameHeaders, flagEndHeaders|flagEndStream, 1, f.block(":status", "200")))
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	objs := []*h2stream{testStream("/1"), testStream("/2"), testStream("/3")}
	done = runAsync(h, objs...)
	for i, id := range []uint32{3, 5, 7} {
		req := f.next(frameHeaders)
		if req.id != id {
			t.Fatalf("request %d on stream %d, want %d", i, req.id, id)
		}
		select {
		case fr := <-f.frames:
			if fr.typ == frameHeaders {
				t.Fatalf("stream %d opened while %d was open", fr.id, id)
			}
		case <-time.After(50 * time.Millisecond):
		}
		f.send(frameOf(frameHeaders, flagEndHeaders|flagEndStream, id, f.block(":status", "200")))
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

// TestH2ConnWindows: a long reply gets WINDOW_UPDATEs for its stream as
// it is read, so it never waits for its window.
func TestH2ConnWindows(t *testing.T) {
	h, f := newFakeH2(t)
	s := testStream("/big")
	done := runAsync(h, s)
	f.next(frameHeaders)
	f.send(settings0, frameOf(frameHeaders, flagEndHeaders, 1, f.block(":status", "200")))
	chunk := make([]byte, h2MaxFrame)
	var frames [][]byte
	for range h2StreamWindow / 4 / h2MaxFrame {
		frames = append(frames, frameOf(frameData, 0, 1, chunk))
	}
	f.send(frames...)
	wu := f.next(frameWindowUpdate)
	if wu.id != 1 || binary.BigEndian.Uint32(wu.p) != h2StreamWindow/4 {
		t.Fatalf("WINDOW_UPDATE %+v (%d), want stream 1, %d", wu, binary.BigEndian.Uint32(wu.p), h2StreamWindow/4)
	}
	f.send(frameOf(frameData, flagEndStream, 1, nil))
	if err := wait(t, done); err != nil || s.n != h2StreamWindow/4 {
		t.Fatalf("%v, %d bytes", err, s.n)
	}
}

// TestH2ConnFailures: whatever a server does wrong, the transaction fails
// with an error that says what, never a hang or a panic.
func TestH2ConnFailures(t *testing.T) {
	huge := strings.Repeat("v", 8000)
	cases := []struct {
		name   string
		script func(f *fakeH2) [][]byte
		want   string
	}{
		{"reset", func(*fakeH2) [][]byte { return [][]byte{frameOf(frameRSTStream, 0, 1, []byte{0, 0, 0, 8})} }, "reset stream 1 of /x (CANCEL)"},
		{"goaway", func(*fakeH2) [][]byte {
			return [][]byte{frameOf(frameGoAway, 0, 0, append([]byte{0, 0, 0, 0, 0, 0, 0, 0}, "bye"...))}
		}, `GOAWAY (NO_ERROR, "bye", last stream 0) before it processed stream 1 of /x`},
		{"frame too large", func(*fakeH2) [][]byte { return [][]byte{appendFrameHeader(nil, 20000, frameData, 0, 1)} }, "FRAME_SIZE_ERROR"},
		{"data on a stream never opened", func(f *fakeH2) [][]byte { return [][]byte{frameOf(frameData, 0, 9, []byte("x"))} }, "stream 9, which the client never opened"},
		{"push", func(*fakeH2) [][]byte {
			return [][]byte{frameOf(framePushPromise, flagEndHeaders, 1, []byte{0, 0, 0, 2})}
		}, "PUSH_PROMISE"},
		{"bad hpack", func(*fakeH2) [][]byte {
			return [][]byte{frameOf(frameHeaders, flagEndHeaders, 1, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})}
		}, "COMPRESSION_ERROR"},
		{"no status", func(f *fakeH2) [][]byte {
			return [][]byte{frameOf(frameHeaders, flagEndHeaders, 1, f.block("server", "x"))}
		}, "no valid :status"},
		{"status 404", func(f *fakeH2) [][]byte {
			return [][]byte{frameOf(frameHeaders, flagEndHeaders|flagEndStream, 1, f.block(":status", "404"))}
		}, "status 404 Not Found for /x"},
		{"short body", func(f *fakeH2) [][]byte {
			return [][]byte{frameOf(frameHeaders, flagEndHeaders, 1, f.block(":status", "200", "content-length", "9")), frameOf(frameData, flagEndStream, 1, []byte("abc"))}
		}, "ended after 3 of its 9 bytes"},
		{"closed", func(f *fakeH2) [][]byte {
			f.c.Close()
			return nil
		}, "closed the connection"},
		{"data before headers", func(*fakeH2) [][]byte { return [][]byte{frameOf(frameData, 0, 1, []byte("x"))} }, "DATA before the reply's headers"},
		{"continuation alone", func(*fakeH2) [][]byte { return [][]byte{frameOf(frameContinuation, flagEndHeaders, 1, nil)} }, "CONTINUATION without HEADERS"},
		{"interleaved header block", func(f *fakeH2) [][]byte {
			return [][]byte{frameOf(frameHeaders, 0, 1, f.block(":status", "200")), frameOf(framePing, 0, 0, make([]byte, 8))}
		}, "in the middle of stream 1's header block"},
		{"bad settings", func(*fakeH2) [][]byte {
			return [][]byte{frameOf(frameSettings, 0, 0, []byte{0, settingInitialWindowSize, 0xff, 0xff, 0xff, 0xff})}
		}, "FLOW_CONTROL_ERROR"},
		{"huge headers", func(f *fakeH2) [][]byte {
			out := [][]byte{frameOf(frameHeaders, 0, 1, f.block(":status", "200"))}
			for i := range 20 {
				out = append(out, frameOf(frameContinuation, 0, 1, f.block("x-big-"+strconv.Itoa(i), huge)))
			}
			return out
		}, "response header larger than 65536 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, f := newFakeH2(t)
			s := testStream("/x")
			done := runAsync(h, s)
			f.next(frameHeaders)
			frames := c.script(f)
			if c.name != "bad settings" && c.name != "closed" {
				frames = append([][]byte{settings0}, frames...)
			}
			if frames != nil {
				f.send(frames...)
			}
			err := wait(t, done)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
			if c.name != "status 404" && c.name != "reset" && c.name != "no status" && c.name != "short body" && h.alive() {
				t.Error("the connection is still alive after the server broke HTTP/2")
			}
		})
	}
}

// TestH2ConnFirstFrame: a server whose first frame is not SETTINGS (an
// HTTP/1.1 server's reply read as a frame, say) fails the connection.
func TestH2ConnFirstFrame(t *testing.T) {
	h, f := newFakeH2(t)
	done := runAsync(h, testStream("/"))
	f.next(frameHeaders)
	f.send(frameOf(framePing, 0, 0, make([]byte, 8)))
	if err := wait(t, done); err == nil || !strings.Contains(err.Error(), "not SETTINGS") {
		t.Fatalf("error %v", err)
	}
}

// TestH2ConnFlowControl: DATA beyond the window the client gave is a
// FLOW_CONTROL_ERROR, the stream's or the connection's.
func TestH2ConnFlowControl(t *testing.T) {
	for _, c := range []struct {
		conn, stream int64
	}{{100, h2StreamWindow}, {h2ConnWindow, 100}} {
		s := &h2stream{id: 1, uri: "/", headers: true, recvWin: c.stream, maxBody: DefaultMaxBody}
		h := &h2conn{nextID: 3, streams: []*h2stream{s}, rd: h2reader{recvWin: c.conn}}
		err := h.data(0, 1, make([]byte, 200))
		if err == nil || !strings.Contains(err.Error(), "FLOW_CONTROL_ERROR") {
			t.Errorf("windows %d, %d: %v", c.conn, c.stream, err)
		}
	}
}

// TestH2ConnRefusesNewStreams: after the server's GOAWAY, or with its
// stream limit at 0, a transaction fails at once, saying so, rather than
// waiting for a stream that never comes.
func TestH2ConnRefusesNewStreams(t *testing.T) {
	for _, c := range []struct {
		name string
		then []byte
		want string
	}{
		{"goaway", frameOf(frameGoAway, 0, 0, []byte{0, 0, 0, 1, 0, 0, 0, 0}), "the server sent GOAWAY (NO_ERROR) before /next was requested"},
		{"no streams", frameOf(frameSettings, 0, 0, []byte{0, settingMaxStreams, 0, 0, 0, 0}), "allows no stream (SETTINGS_MAX_CONCURRENT_STREAMS 0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, f := newFakeH2(t)
			done := runAsync(h, testStream("/"))
			f.next(frameHeaders)
			f.send(settings0, frameOf(frameHeaders, flagEndHeaders|flagEndStream, 1, f.block(":status", "200")))
			if err := wait(t, done); err != nil {
				t.Fatal(err)
			}
			f.send(c.then)
			if c.name == "goaway" {
				for h.alive() {
					time.Sleep(time.Millisecond)
				}
			} else { // read when the connection is next used, as a kept connection is
				for h.alive() && h.limit() != 0 {
					time.Sleep(time.Millisecond)
				}
				f.next(frameSettings) // the first SETTINGS' ACK
				f.next(frameSettings) // the second's: the limit was read
			}
			if err := wait(t, runAsync(h, testStream("/next"))); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}

// limit is the server's SETTINGS_MAX_CONCURRENT_STREAMS, as read.
func (h *h2conn) limit() uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.maxStreams
}

// TestH2ConnIdleClose: a kept connection over TCP whose server closed it
// while it was idle (a bare close: no GOAWAY, no TLS alert) is found
// closed when it is next checked, not at its next transaction.
func TestH2ConnIdleClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closeNow := make(chan struct{})
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		go io.Copy(io.Discard, s)
		s.Write(append(settings0, frameOf(frameHeaders, flagEndHeaders|flagEndStream, 1, []byte{0x88})...)) // :status 200
		<-closeNow
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	h := newH2Conn(c, c)
	defer h.close()
	if err := wait(t, runAsync(h, testStream("/"))); err != nil {
		t.Fatal(err)
	}
	if !h.alive() {
		t.Fatal("the connection is not alive before the server closed it")
	}
	close(closeNow)
	deadline := time.Now().Add(5 * time.Second)
	for h.alive() {
		if time.Now().After(deadline) {
			t.Fatal("the server's close was not found while the connection was idle")
		}
		time.Sleep(time.Millisecond)
	}
	if err := wait(t, runAsync(h, testStream("/next"))); err == nil || !strings.Contains(err.Error(), "closed the connection") {
		t.Fatalf("error %v, want the server's close", err)
	}
}

// heldConn passes writes through until held, then keeps them for one
// write: what a server sends as separate TLS records reaches the client
// in one TCP segment.
type heldConn struct {
	net.Conn
	hold bool
	buf  []byte
}

func (c *heldConn) Write(p []byte) (int, error) {
	if c.hold {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// TestH2ConnGoAwayInTheLastReplysSegment: a GOAWAY the server sends right
// after the last reply, in its own TLS record but the same TCP segment,
// is read off the socket with the reply and waits in the TLS layer, where
// the socket's peek cannot see it. The kept connection must still be
// found going away before its next use, not fail its next transaction:
// over a syncStamp (as every connection v6lab dials: peekSealed), and
// over the bare TCP connection (expired deadlines).
func TestH2ConnGoAwayInTheLastReplysSegment(t *testing.T) {
	t.Run("stamped", func(t *testing.T) { goAwayInTheLastReplysSegment(t, true) })
	t.Run("bare", func(t *testing.T) { goAwayInTheLastReplysSegment(t, false) })
}

func goAwayInTheLastReplysSegment(t *testing.T, stamped bool) {
	cfg, err := proto.SelfSigned([]string{"h2.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NextProtos = []string{"h2"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		held := &heldConn{Conn: c}
		s := tls.Server(held, cfg)
		if s.Handshake() != nil {
			return
		}
		go io.Copy(io.Discard, s)
		held.hold = true
		s.Write(append(settings0, frameOf(frameHeaders, flagEndHeaders|flagEndStream, 1, []byte{0x88})...)) // :status 200
		s.Write(frameOf(frameGoAway, 0, 0, []byte{0, 0, 0, 1, 0, 0, 0, 0}))
		c.Write(held.buf)
		time.Sleep(10 * time.Second) // open, as a server draining its last streams is
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	under := raw
	if stamped {
		under = stampH2(raw)
	}
	c := tls.Client(under, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	h := newH2Conn(c, raw)
	defer h.close()
	if (h.under != nil) != stamped {
		t.Fatalf("the connection's syncStamp %v, want one: %v", h.under, stamped)
	}
	if err := wait(t, runAsync(h, testStream("/"))); err != nil {
		t.Fatal(err)
	}
	if h.alive() {
		t.Fatal("the connection is alive after the server's GOAWAY came with the last reply")
	}
	if err := wait(t, runAsync(h, testStream("/next"))); err == nil || !strings.Contains(err.Error(), "GOAWAY (NO_ERROR) before /next was requested") {
		t.Fatalf("error %v, want the GOAWAY named before any stream opened", err)
	}
}
