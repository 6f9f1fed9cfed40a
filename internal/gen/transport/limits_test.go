package transport

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"

	"time"
	"v6lab/internal/sock/path"
)

func startLimited(t *testing.T, s *Server) netip.AddrPort {
	t.Helper()
	r, err := s.ListenAndServe(context.Background(), []netip.Addr{netip.MustParseAddr("127.0.0.1")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(r.Port))
}

// closedWithin says whether the server closes c within d (reading what
// it may send first).
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// TestServerReadsAtMostAFewKiBOfRequest: a client sending an endless line
// is cut off after 4 KiB, not buffered (1000 such clients drove the old
// server to 1.6 GB).
func TestServerReadsAtMostAFewKiBOfRequest(t *testing.T) {
	srv := startLimited(t, &Server{})
	c, err := net.Dial("tcp4", srv.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	line := bytes.Repeat([]byte{'{'}, 64<<10)
	c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	written, _ := c.Write(line)
	if !closedWithin(c, 2*time.Second) {
		t.Fatalf("the server still reads after %d bytes of one line", written)
	}
}

// TestServerRefusesTestsBeyondItsLimit: with MaxTests held by idle
// clients, the next client is told the server is busy, and is served
// again once a slot frees.
func TestServerRefusesTestsBeyondItsLimit(t *testing.T) {
	srv := startLimited(t, &Server{MaxTests: 2})
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp4", srv.String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	time.Sleep(100 * time.Millisecond) // both accepted
	c, err := net.Dial("tcp4", srv.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var acc Accept
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if err := newCtrl(c).recv(&acc); err != nil || !strings.Contains(acc.Error, "as many tests as it may at once (2; serve transport --max-tests)") {
		t.Fatalf("third client: %v, %+v", err, acc)
	}
	idle[0].Close()
	time.Sleep(100 * time.Millisecond)
	// openTest fails the test unless the server accepts.
	openTest(t, srv, Request{Test: "tcp", Streams: 1, Duration: time.Second})
}

// TestServerDropsASlowRequest: a client that sends its request a byte at
// a time is cut off at the request timeout.
func TestServerDropsASlowRequest(t *testing.T) {
	srv := startLimited(t, &Server{RequestTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp4", srv.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	go func() {
		for _, b := range []byte(`{"magic":`) {
			if _, err := c.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if !closedWithin(c, 3*time.Second) {
		t.Fatal("the server waits past its request timeout")
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 2*time.Second {
		t.Errorf("closed after %v, want about 300ms", d)
	}
}

// TestUDPBuffersAreRecordedAsSet: the study's buffers are applied to both
// ends (the sender's SO_SNDBUF, the receiver's SO_RCVBUF, as JPerf's -w)
// and each trial records what the kernel set, read back: Linux doubles
// what was asked (socket(7)).
func TestUDPBuffersAreRecordedAsSet(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		srv := startServer(t, path.IPv4)
		pr := &Probe{Server: srv, Path: path.IPv4, Opts: Options{Test: "udp", Reverse: reverse, Duration: 300 * time.Millisecond,
			Rate: 1e6, Size: 1000, RcvBuf: 10 << 10, SndBuf: 10 << 10}}
		s := pr.Do(context.Background(), 0)
		if !s.OK() {
			t.Fatalf("reverse=%v: %s", reverse, s.Err)
		}
		if s.Metrics["sndbuf_effective"] != 20<<10 || s.Metrics["rcvbuf_effective"] != 20<<10 {
			t.Errorf("reverse=%v: sndbuf %v rcvbuf %v, want 20480 each (10 KiB asked, doubled by the kernel)",
				reverse, s.Metrics["sndbuf_effective"], s.Metrics["rcvbuf_effective"])
		}
	}
}
