package http

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"

	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// doAsync starts one transaction of c (10 s at most) and returns where
// its sample comes.
func doAsync(c *Client) chan result.Sample {
	done := make(chan result.Sample, 1)
	go func() { done <- do(c, 10*time.Second) }()
	return done
}

// fakeH2Server accepts TCP connections on 127.0.0.1, each a fakeH2 the
// test scripts, in the order they came.
func fakeH2Server(t *testing.T) (*Client, chan *fakeH2) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	conns := make(chan *fakeH2, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- serveFakeH2(t, c)
		}
	}()
	u, err := ParseURL("http://127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port) + "/")
	if err != nil {
		t.Fatal(err)
	}
	return &Client{URL: u, Path: path.IPv4, Resolver: &path.Resolver{}, Objects: true, Version: Version2}, conns
}

// accepted is the server's next connection.
func accepted(t *testing.T, conns chan *fakeH2) *fakeH2 {
	t.Helper()
	select {
	case f := <-conns:
		f.send(settings0)
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("the client made no new connection")
	}
	return nil
}

// reply answers stream id with a 200 of body.
func (f *fakeH2) reply(id uint32, ctype, body string) {
	f.send(frameOf(frameHeaders, flagEndHeaders, id, f.block(":status", "200", "content-type", ctype, "content-length", strconv.Itoa(len(body)))),
		frameOf(frameData, flagEndStream, id, []byte(body)))
}

// request waits for the client's next request: its stream and its path.
func (f *fakeH2) request() (uint32, string) {
	f.t.Helper()
	fr := f.next(frameHeaders)
	fields, err := hpack.NewDecoder(4096, nil).DecodeFull(fr.p)
	if err != nil {
		f.t.Fatalf("stream %d's request: %v", fr.id, err)
	}
	for _, hf := range fields {
		if hf.Name == ":path" {
			return fr.id, hf.Value
		}
	}
	return fr.id, ""
}

func goAwayFrame(last, code uint32) []byte {
	p := binary.BigEndian.AppendUint32(nil, last)
	return frameOf(frameGoAway, 0, 0, binary.BigEndian.AppendUint32(p, code))
}

const againPage = `<html><img src="/o1"><img src="/o2"><img src="/o3"></html>`

// pageThenGoAway answers the page on the server's first connection, then
// says GOAWAY (last stream 1: the page's) to the objects' requests.
func pageThenGoAway(t *testing.T, conns chan *fakeH2) {
	f := accepted(t, conns)
	if id, _ := f.request(); id != 1 {
		t.Fatalf("the page on stream %d", id)
	}
	f.reply(1, "text/html", againPage)
	f.next(frameHeaders)
	f.send(goAwayFrame(1, errNo))
}

// TestH2AgainAfterGoAway: the objects a GOAWAY says the server did not
// process (streams above its last) go on a second connection of the same
// path, and the transaction completes, saying so (the marker, Again),
// its time counting both connections.
func TestH2AgainAfterGoAway(t *testing.T) {
	c, conns := fakeH2Server(t)
	done := doAsync(c)
	pageThenGoAway(t, conns)
	f := accepted(t, conns)
	for range 3 {
		id, _ := f.request()
		f.reply(id, "image/png", "ok")
	}
	s := <-done
	if !s.OK() {
		t.Fatalf("failed: %s", s.Err)
	}
	if want := "200 OK, 3 objects, h2c, 3 requests again on a new connection after GOAWAY"; s.Marker != want || s.Again != 3 {
		t.Errorf("marker %q, again %d; want %q, 3", s.Marker, s.Again, want)
	}
	if len(conns) != 0 {
		t.Errorf("%d connections more than two", len(conns))
	}
	if s.ConnectNS <= 0 || s.TotalNS <= s.FirstByteNS || s.BytesIn < int64(2*len(settings0)+len(againPage)) {
		t.Errorf("connect %d, first byte %d, total %d, bytes in %d", s.ConnectNS, s.FirstByteNS, s.TotalNS, s.BytesIn)
	}
}

// TestH2AgainOnce: the new connection's server saying GOAWAY before it
// processed them too fails the transaction, naming it, and the client
// makes no third connection (a server that refuses everything cannot
// loop it).
func TestH2AgainOnce(t *testing.T) {
	c, conns := fakeH2Server(t)
	done := doAsync(c)
	pageThenGoAway(t, conns)
	f := accepted(t, conns)
	f.request()
	f.send(goAwayFrame(0, errNo))
	s := <-done
	if s.OK() || !strings.Contains(s.Err, "GOAWAY (NO_ERROR, last stream 0) before it processed stream 1 of /o1") {
		t.Fatalf("the second GOAWAY: %+v", s)
	}
	if len(conns) != 0 {
		t.Errorf("a third connection after the second GOAWAY")
	}
}

// TestH2AgainAfterRefusedStream: a stream the server reset with
// REFUSED_STREAM (RFC 9113 §8.7: not processed) goes on a new connection
// once the transaction's others ended; the one it answered is not asked
// again.
func TestH2AgainAfterRefusedStream(t *testing.T) {
	c, conns := fakeH2Server(t)
	done := doAsync(c)
	f := accepted(t, conns)
	f.request()
	f.reply(1, "text/html", againPage)
	refused := ""
	for i := range 3 {
		id, uri := f.request()
		if i == 1 {
			refused = uri
			f.send(frameOf(frameRSTStream, 0, id, binary.BigEndian.AppendUint32(nil, errRefusedStream)))
			continue
		}
		f.reply(id, "image/png", "ok")
	}
	f2 := accepted(t, conns)
	id, uri := f2.request()
	if uri != refused {
		t.Errorf("the new connection asked for %q, the refused stream was %q", uri, refused)
	}
	f2.reply(id, "image/png", "ok")
	s := <-done
	if !s.OK() || s.Again != 1 || !strings.HasSuffix(s.Marker, "1 request again on a new connection after REFUSED_STREAM") {
		t.Fatalf("sample %+v", s)
	}
}

// TestH2AgainAgainstServeKeepaliveRequests: the embedded server with
// KeepaliveRequests ends its HTTP/2 connections with GOAWAY (NO_ERROR)
// after as many requests, as nginx does, and every kept transaction still
// completes (5 requests a connection, 4 a page: a transaction's objects
// asked after the GOAWAY go on a new connection, which is kept; 1 a
// connection: each transaction takes several new connections). (Which
// requests a connection answers is a race: net/http sends its GOAWAY when
// it next writes, and answers the streams it read by then; a request
// written after its close fails to be written, and its GOAWAY is read
// then. TestH2AgainOnMoreConnections counts them on the fake server.)
func TestH2AgainAgainstServeKeepaliveRequests(t *testing.T) {
	for _, limit := range []int{5, 1} {
		for _, scheme := range []string{"http", "https"} {
			t.Run(scheme+"/"+strconv.Itoa(limit), func(t *testing.T) { againAgainstServe(t, scheme, limit) })
		}
	}
}

// againAgainstServe runs 8 kept transactions against serve http with
// KeepaliveRequests limit.
func againAgainstServe(t *testing.T, scheme string, limit int) {
	cfg := DefaultServerConfig
	cfg.Objects, cfg.KeepaliveRequests = 3, limit
	if scheme == "https" {
		tc, err := proto.SelfSigned([]string{"www.v6lab.test"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.TLS = tc
	}
	cl := newRig(t, cfg).client(t, path.IPv4, scheme+"://www.v6lab.test:%d/")
	cl.Version, cl.Keep, cl.TLS = Version2, true, &tls.Config{InsecureSkipVerify: true}
	defer cl.Close()
	again := 0
	for i := range 8 {
		s := do(cl, 5*time.Second)
		if !s.OK() {
			t.Fatalf("transaction %d: %s", i, s.Err)
		}
		again += s.Again
		t.Logf("transaction %d: %s", i, s.Marker)
		if s.Kept && s.Again > 0 && (s.ConnectNS != 0 || s.TLSNS != 0 || s.WireNS != 0) {
			t.Errorf("transaction %d, kept, sent again: connect %d, tls %d, wire %d: the new connection's, not a phase of the transaction", i, s.ConnectNS, s.TLSNS, s.WireNS)
		}
	}
	if again == 0 {
		t.Errorf("no request went again: the server sent no GOAWAY")
	}
}

// TestH2ContextEndsTransaction: a transaction whose server stops
// answering ends when its context does (one watch a transaction, not one
// a run): on a kept connection, and on the new connection a GOAWAY moved
// its objects to; the sample says how many streams went unanswered.
func TestH2ContextEndsTransaction(t *testing.T) {
	t.Run("kept", func(t *testing.T) {
		c, conns := fakeH2Server(t)
		c.Keep, c.Objects = true, false
		defer c.Close()
		done := doAsync(c)
		f := accepted(t, conns)
		id, _ := f.request()
		f.reply(id, "text/plain", "ok")
		if s := <-done; !s.OK() {
			t.Fatalf("the first transaction: %+v", s)
		}
		s := cancelAfter(t, c, func() { f.request() }) // and no answer
		if s.OK() || !strings.Contains(s.Err, "1 of 1 streams unanswered: context canceled") {
			t.Fatalf("the kept connection's unanswered transaction: %q", s.Err)
		}
		if len(conns) != 0 {
			t.Errorf("a new connection for the unanswered transaction")
		}
	})
	t.Run("moved", func(t *testing.T) {
		c, conns := fakeH2Server(t)
		s := cancelAfter(t, c, func() {
			pageThenGoAway(t, conns)
			accepted(t, conns).request() // and no answer
		})
		if s.OK() || !strings.Contains(s.Err, "3 of 3 streams unanswered: context canceled") {
			t.Fatalf("the new connection's unanswered objects: %q", s.Err)
		}
	})
}

// cancelAfter runs a transaction of c, cancels its context once script
// returned, and returns its sample (failing the test when it does not end
// then).
func cancelAfter(t *testing.T, c *Client, script func()) result.Sample {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan result.Sample, 1)
	go func() { ended <- c.Do(ctx, 0) }()
	script()
	cancel()
	select {
	case s := <-ended:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("the transaction did not end with its context")
	}
	return result.Sample{}
}
