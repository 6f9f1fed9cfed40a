package http

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"

	"v6lab/internal/proto"
)

// rawH3 is a QUIC server that answers every request stream with the
// bytes reply gives it (frames written by hand), after reading the
// request to its end; control, when set, is written on its control
// stream. It hands the request's header fields to got.
type rawH3 struct {
	addr    string
	control []byte
	reply   func(path string) []byte
	got     chan []qpack.HeaderField
}

func newRawH3(t *testing.T, reply func(path string) []byte, control []byte) *rawH3 {
	t.Helper()
	cfg, err := proto.SelfSigned([]string{"www.v6lab.test"}, []netip.Addr{lo4})
	if err != nil {
		t.Fatal(err)
	}
	cfg.NextProtos = []string{http3.NextProtoH3}
	ln, err := quic.ListenAddr("127.0.0.1:0", cfg, &quic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &rawH3{addr: ln.Addr().String(), control: control, reply: reply, got: make(chan []qpack.HeaderField, 64)}
	go func() {
		for {
			conn, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			go s.serve(conn)
		}
	}()
	return s
}

func (s *rawH3) serve(conn *quic.Conn) {
	if s.control != nil {
		if ctrl, err := conn.OpenUniStream(); err == nil {
			_, _ = ctrl.Write(s.control)
		}
	}
	for {
		str, err := conn.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go func() {
			req, _ := io.ReadAll(str)
			fields := decodeRequest(req)
			s.got <- fields
			var path string
			for _, f := range fields {
				if f.Name == ":path" {
					path = f.Value
				}
			}
			_, _ = str.Write(s.reply(path))
			_ = str.Close()
		}()
	}
}

// decodeRequest decodes a request stream's HEADERS frame.
func decodeRequest(b []byte) []qpack.HeaderField {
	typ, n, err := quicvarint.Parse(b)
	if err != nil || typ != h3FrameHeaders {
		return nil
	}
	l, m, err := quicvarint.Parse(b[n:])
	if err != nil || len(b) < n+m+int(l) {
		return nil
	}
	var out []qpack.HeaderField
	next := (&qpack.Decoder{}).Decode(b[n+m : n+m+int(l)])
	for {
		f, err := next()
		if err != nil {
			return out
		}
		out = append(out, f)
	}
}

// h3Frame is a frame: its type, length and payload.
func h3Frame(typ uint64, payload []byte) []byte {
	b := quicvarint.Append(nil, typ)
	b = quicvarint.Append(b, uint64(len(payload)))
	return append(b, payload...)
}

// h3Header is a HEADERS frame of fields, name and value in turn.
func h3Header(fields ...string) []byte {
	var block qpackBlock
	enc := qpack.NewEncoder(&block)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = enc.WriteField(qpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return h3Frame(h3FrameHeaders, block)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// dialRaw opens an HTTP/3 connection of v6lab's to s.
func dialRaw(t *testing.T, s *rawH3) *h3Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := quic.DialAddr(ctx, s.addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{http3.NextProtoH3}}, &quic.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseWithError(0, "") })
	h, err := newH3Conn(conn, mustURL(t, "https://www.v6lab.test:8443/"), "tester/1")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// fetchRaw sends a GET of path on h and reads the reply's body.
func fetchRaw(h *h3Conn, path string, timeout time.Duration) (status int, ctype string, body string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := h.get(ctx, path, "GET", true, nil)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b), err
}

// TestH3RequestAndReplies: v6lab's HTTP/3 request carries the method,
// scheme, authority, path, user agent and accept it must, and its reply
// reader takes what RFC 9114 allows (frames of unknown types, informational
// replies, trailers, DATA in pieces) and refuses what it forbids, each
// with an error that says what came.
func TestH3RequestAndReplies(t *testing.T) {
	hdr := func(status, length string) []byte {
		return h3Header(":status", status, "content-type", "text/html; charset=utf-8", "content-length", length)
	}
	replies := map[string][]byte{
		"/ok": cat(h3Frame(0x21, []byte("grease")), h3Header(":status", "103", "link", "</a.css>"), hdr("200", "5"),
			h3Frame(h3FrameData, []byte("he")), h3Frame(0x1f*2+0x21, nil), h3Frame(h3FrameData, []byte("llo")),
			h3Header("x-trailer", "1")),
		"/missing":    cat(h3Header(":status", "404"), h3Frame(h3FrameData, []byte("no"))),
		"/short":      cat(hdr("200", "10"), h3Frame(h3FrameData, []byte("hello"))),
		"/long":       cat(hdr("200", "2"), h3Frame(h3FrameData, []byte("hello"))),
		"/data-first": h3Frame(h3FrameData, []byte("hello")),
		"/settings":   cat(hdr("200", "5"), h3Frame(h3FrameSettings, nil), h3Frame(h3FrameData, []byte("hello"))),
		"/huge":       cat(quicvarint.Append(quicvarint.Append(nil, h3FrameHeaders), MaxHeaderBytes+1)),
		"/empty":      nil,
		"/no-status":  h3Header("content-length", "0"),
		"/bad-status": h3Header(":status", "2000"),
		"/late":       h3Header("content-length", "0", ":status", "200"),
		"/two-length": h3Header(":status", "200", "content-length", "1", "content-length", "2"),
		"/cut":        cat(hdr("200", "5"), quicvarint.Append(nil, h3FrameData)),
	}
	s := newRawH3(t, func(path string) []byte { return replies[path] }, nil)
	h := dialRaw(t, s)

	status, ctype, body, err := fetchRaw(h, "/ok", 5*time.Second)
	if err != nil || status != 200 || ctype != "text/html; charset=utf-8" || body != "hello" {
		t.Errorf("/ok: %d %q %q %v", status, ctype, body, err)
	}
	want := map[string]string{":method": "GET", ":scheme": "https", ":authority": "www.v6lab.test:8443", ":path": "/ok",
		"user-agent": "tester/1", "accept": "*/*"}
	got := <-s.got
	if len(got) != len(want) {
		t.Errorf("request header: %v", got)
	}
	for _, f := range got {
		if want[f.Name] != f.Value {
			t.Errorf("request header %s: %q, want %q", f.Name, f.Value, want[f.Name])
		}
	}

	if status, _, body, err := fetchRaw(h, "/missing", 5*time.Second); err != nil || status != 404 || body != "no" {
		t.Errorf("/missing: %d %q %v", status, body, err)
	}
	for path, wantErr := range map[string]string{
		"/short":      "a body of 5 bytes, its content-length 10",
		"/long":       "beyond its content-length of 2 bytes",
		"/data-first": "frame of type 0x0 before the reply's HEADERS",
		"/settings":   "frame of type 0x4 in a reply",
		"/huge":       "exceeds the 65536-byte limit",
		"/empty":      "the stream ended before the reply's HEADERS",
		"/no-status":  "reply header without :status",
		"/bad-status": `bad status "2000"`,
		"/late":       "unexpected pseudo-header :status",
		"/two-length": `bad content-length "2"`,
		"/cut":        io.ErrUnexpectedEOF.Error(),
	} {
		_, _, _, err := fetchRaw(h, path, 5*time.Second)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: %v, want %q", path, err, wantErr)
		}
	}
	// The body a transaction neither keeps nor checks is dropped without
	// a copy (discard): the same length, the same errors as a read.
	if n, err := discardRaw(h, "/ok", DefaultMaxBody); n != 5 || err != nil {
		t.Errorf("/ok dropped: %d bytes, %v; want 5", n, err)
	}
	if n, err := discardRaw(h, "/ok", 3); n <= 3 || err != nil {
		t.Errorf("/ok dropped with a limit of 3: %d bytes, %v; want more than 3, the limit seen", n, err)
	}
	for _, path := range []string{"/short", "/long", "/settings", "/cut"} {
		if _, err := discardRaw(h, path, DefaultMaxBody); err == nil || !strings.Contains(err.Error(), map[string]string{
			"/short": "a body of 5 bytes, its content-length 10", "/long": "beyond its content-length of 2 bytes",
			"/settings": "frame of type 0x4 in a reply", "/cut": io.ErrUnexpectedEOF.Error()}[path]) {
			t.Errorf("%s dropped: %v", path, err)
		}
	}
	if !h.alive() {
		t.Error("the connection is not alive after failed replies (a stream's error is the stream's)")
	}
	// Each request carries its own path, the last one's frame or another.
	for len(s.got) > 0 {
		<-s.got
	}
	paths := []string{"/ok", "/ok", "/missing", "/ok"}
	for _, p := range paths {
		_, _, _, _ = fetchRaw(h, p, 5*time.Second)
	}
	for i, p := range paths {
		for _, f := range <-s.got {
			if f.Name == ":path" && f.Value != p {
				t.Errorf("request %d: path %s, want %s", i, f.Value, p)
			}
		}
	}
}

// discardRaw requests path on h and drops its body (h3Reply.discard with
// limit), returning the body's length.
func discardRaw(h *h3Conn, path string, limit int64) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := h.get(ctx, path, "GET", false, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.Body.(bodyDiscarder).discard(limit)
}

// TestH3RequestEndsWithItsContext: a reply that never comes ends with the
// request's context, at once, and the stream is cancelled.
func TestH3RequestEndsWithItsContext(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	s := newRawH3(t, func(string) []byte { <-block; return nil }, nil)
	h := dialRaw(t, s)
	start := time.Now()
	_, _, _, err := fetchRaw(h, "/", 300*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 3*time.Second {
		t.Errorf("a reply that never came: %v after %v", err, time.Since(start))
	}
}

// TestH3GoAwayRetiresTheConnection: a GOAWAY on the server's control
// stream takes the connection out of use (a kept connection is not used
// again).
func TestH3GoAwayRetiresTheConnection(t *testing.T) {
	settings := h3Frame(h3FrameSettings, nil)
	goaway := h3Frame(h3FrameGoAway, quicvarint.Append(nil, 0))
	s := newRawH3(t, func(string) []byte { return nil }, cat([]byte{h3StreamControl}, settings, goaway))
	h := dialRaw(t, s)
	deadline := time.Now().Add(5 * time.Second)
	for h.alive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if h.alive() {
		t.Fatal("still alive after the server's GOAWAY")
	}
	if _, err := h.get(context.Background(), "/", "GET", false, nil); err == nil || !strings.Contains(err.Error(), "GOAWAY") {
		t.Errorf("a request after GOAWAY: %v", err)
	}
}
