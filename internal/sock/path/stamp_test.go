package path

import (
	"io"
	"net"
	"testing"
	"time"
)

// stampedTCPPair is a stamped TCP connection on loopback and its peer,
// closed when the test ends.
func stampedTCPPair(t *testing.T) (*StampedConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	s, ok := Stamped(c)
	if !ok {
		t.Fatal("no stamps on a TCP connection")
	}
	return s, peer
}

// TestStampedTCPReadAllocatesNothing: a TCP read through StampedConn (its
// recvmsg and receive stamp) allocates nothing: a kept HTTP/2 connection
// reads so several times a request. Two Reads at once each read whole.
func TestStampedTCPReadAllocatesNothing(t *testing.T) {
	s, peer := stampedTCPPair(t)
	b := make([]byte, 100)
	read := func() {
		if _, err := peer.Write(b[:20]); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Read(b); err != nil || n != 20 {
			t.Fatalf("read %d: %v", n, err)
		}
	}
	read() // the socket's first read registers it with the poller
	if n := testing.AllocsPerRun(100, read); n != 0 {
		t.Errorf("%.1f allocations a TCP read", n)
	}
	if s.FirstRx.IsZero() || s.LastRx.Before(s.FirstRx) {
		t.Errorf("stamps %v to %v", s.FirstRx, s.LastRx)
	}
	// Two reads waiting at once (not v6lab's use, but net.Conn allows
	// it): each gets its own bytes.
	got := make(chan int, 2)
	for range 2 {
		go func() {
			buf := make([]byte, 10)
			n, err := s.Read(buf)
			if err != nil {
				n = -1
			}
			got <- n
		}()
	}
	peer.Write(make([]byte, 10))
	if n := <-got; n <= 0 {
		t.Fatalf("the first of two reads: %d", n)
	}
	peer.Write(make([]byte, 10))
	if n := <-got; n <= 0 {
		t.Fatalf("the second of two reads: %d", n)
	}
}

// TestUnstampedReadsOn: after Unstamp a connection reads on, its stamps
// kept as they were (no later read moves them).
func TestUnstampedReadsOn(t *testing.T) {
	s, peer := stampedTCPPair(t)
	b := make([]byte, 100)
	read := func(want string) {
		t.Helper()
		if _, err := peer.Write([]byte(want)); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Read(b); err != nil || string(b[:n]) != want {
			t.Fatalf("read %q: %v", b[:n], err)
		}
	}
	read("stamped")
	last := s.LastRx
	if last.IsZero() {
		t.Fatal("no stamp before Unstamp")
	}
	s.Unstamp()
	time.Sleep(time.Millisecond)
	read("plain")
	if s.LastRx != last {
		t.Errorf("a read after Unstamp moved the stamp from %v to %v", last, s.LastRx)
	}
	peer.Close()
	if n, err := s.Read(b); n != 0 || err != io.EOF {
		t.Errorf("after the peer's close: %d, %v", n, err)
	}
}
