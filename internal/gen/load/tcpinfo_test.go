package load

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/servetest"
)

// serveOnce accepts connections on a loopback listener and hands each to
// serve.
func serveOnce(t *testing.T, serve func(net.Conn)) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	servetest.Each(t, ln, serve)
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// fetch dials to with a trace, sends a request and reads until the
// connection ends or ctx does, and ends the transaction: Done at EOF,
// Fail otherwise.
func fetch(ctx context.Context, t *testing.T, to netip.AddrPort) result.Sample {
	t.Helper()
	tr := Begin("test", path.IPv4)
	c, _, err := tr.Dial(ctx, path.Dialer{Path: path.IPv4}, to, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := Deadline(ctx, c)
	defer stop()
	if _, err := c.Write([]byte("GET\n")); err != nil {
		return tr.Fail(ctx, "io", err)
	}
	if _, err := io.Copy(io.Discard, c); err != nil {
		return tr.Fail(ctx, "io", err)
	}
	return tr.Done("ok")
}

// TestStallIsToldFromASlowTransfer: a transaction that times out on a
// connection on which nothing arrived for a second or more stalled (its
// own kind, the time to the stall, the connection's figures), while one
// whose bytes kept coming until the timeout is a timeout.
func TestStallIsToldFromASlowTransfer(t *testing.T) {
	silent := serveOnce(t, func(c net.Conn) {
		c.Read(make([]byte, 16))
		c.Write([]byte("header\n"))
		time.Sleep(2 * time.Second)
	})
	trickle := serveOnce(t, func(c net.Conn) {
		c.Read(make([]byte, 16))
		for range 20 {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	s := fetch(ctx, t, silent)
	cancel()
	if s.ErrKind != result.ErrStall || !strings.HasPrefix(s.Err, "io: stalled after ") || !strings.Contains(s.Err, "until the timeout") {
		t.Errorf("silent server: %s %q", s.ErrKind, s.Err)
	}
	if at := s.Metrics["stall_ms"]; at < 0 || at > 300 {
		t.Errorf("stall_ms %v, want the header's arrival, at once", at)
	}
	if s.Metrics["tcp_mss"] <= 0 || s.Metrics["path_mtu"] < 1500 {
		t.Errorf("a stall's connection figures: %v", s.Metrics)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 1500*time.Millisecond)
	s = fetch(ctx, t, trickle)
	cancel()
	if s.ErrKind != result.ErrTimeout || !strings.Contains(s.Err, "timed out after") || s.Metrics != nil {
		t.Errorf("trickling server: %s %q %v", s.ErrKind, s.Err, s.Metrics)
	}
}

// TestTCPFiguresWhenAsked: a completed transaction carries its
// connection's MSS, path MTU and retransmissions when its context asks
// (WithTCPInfo), and nothing more otherwise.
func TestTCPFiguresWhenAsked(t *testing.T) {
	body := bytes.Repeat([]byte("v6lab "), 20000)
	to := serveOnce(t, func(c net.Conn) {
		c.Read(make([]byte, 16))
		c.Write(body)
	})
	for _, want := range []bool{false, true} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if want {
			ctx = WithTCPInfo(ctx)
		}
		s := fetch(ctx, t, to)
		cancel()
		if !s.OK() {
			t.Fatal(s.Err)
		}
		switch {
		case !want && s.Metrics != nil:
			t.Errorf("figures nobody asked for: %v", s.Metrics)
		case want && (s.Metrics[MetricMSS] <= 0 || s.Metrics[MetricRcvMSS] <= 0 || s.Metrics[MetricPMTU] < 1500 || s.Metrics[MetricRetrans] != 0):
			t.Errorf("figures %v", s.Metrics)
		}
	}
}

// TestAStallWithNothingReceivedSaysNoMSSReceived (trial 11): a peer that
// sent no data showed no MSS: the stall says "none received" and the
// sample has no tcp_rcv_mss, where it said "536 received", the kernel's
// default, not the peer's.
func TestAStallWithNothingReceivedSaysNoMSSReceived(t *testing.T) {
	mute := serveOnce(t, func(c net.Conn) {
		c.Read(make([]byte, 16))
		time.Sleep(2 * time.Second)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	s := fetch(ctx, t, mute)
	cancel()
	if s.ErrKind != result.ErrStall || !strings.Contains(s.Err, " sent, none received, path MTU ") {
		t.Errorf("mute server: %s %q", s.ErrKind, s.Err)
	}
	if _, ok := s.Metrics[MetricRcvMSS]; ok || s.Metrics[MetricMSS] <= 0 {
		t.Errorf("mute server's figures: %v", s.Metrics)
	}
}
