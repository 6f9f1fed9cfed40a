package wakeread

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// pair is a connection through a wakeread listener and its client end.
func pair(t *testing.T, ln net.Listener) (*Conn, net.Conn) {
	t.Helper()
	cl, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	wc, ok := c.(*Conn)
	if !ok {
		t.Fatalf("accepted a %T", c)
	}
	return wc, cl
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := Listener{Listener: inner}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestReadsDeadlinesAndClose: data written later is read; a read deadline
// ends a read with a timeout; EOF is io.EOF; a Close from another
// goroutine ends a waiting read with net.ErrClosed, within a slice.
func TestReadsDeadlinesAndClose(t *testing.T) {
	ln := listen(t)
	c, cl := pair(t, ln)
	go func() { time.Sleep(30 * time.Millisecond); cl.Write([]byte("hello")) }()
	b := make([]byte, 16)
	if n, err := c.Read(b); err != nil || string(b[:n]) != "hello" {
		t.Fatalf("read %q %v", b[:n], err)
	}

	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	_, err := c.Read(b)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("deadline: %v after %v", err, time.Since(start))
	}
	c.SetReadDeadline(time.Time{})

	cl.Close()
	if _, err := c.Read(b); err != io.EOF {
		t.Fatalf("after the peer closed: %v", err)
	}

	c2, _ := pair(t, ln)
	go func() { time.Sleep(30 * time.Millisecond); c2.Close() }()
	start = time.Now()
	if _, err := c2.Read(b); !errors.Is(err, net.ErrClosed) || time.Since(start) > time.Second {
		t.Fatalf("closed while waiting: %v after %v", err, time.Since(start))
	}
}

// TestMoreReadersThanSlots: with many reads waiting at once, at most one
// waits in poll (under load every read waits in the netpoller), and every
// one gets its data.
func TestMoreReadersThanSlots(t *testing.T) {
	ln := listen(t)
	n := int(slots()) + 40
	var conns []*Conn
	var clients []net.Conn
	for range n {
		c, cl := pair(t, ln)
		conns = append(conns, c)
		clients = append(clients, cl)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := make([]byte, 4)
			if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
				errs <- errors.New("read " + string(b) + ": " + errString(err))
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	if got := inPoll.Load(); got > 1 {
		t.Errorf("%d reads in poll with %d waiting: at most one allowed", got, n)
	}
	for _, cl := range clients {
		cl.Write([]byte("ping"))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := inPoll.Load(); got != 0 {
		t.Errorf("%d reads still counted in poll", got)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// TestProbeReadEndsAtOnce: a one-byte read, as net/http's watch of an idle
// connection, ends as soon as its deadline is moved into the past.
func TestProbeReadEndsAtOnce(t *testing.T) {
	c, _ := pair(t, listen(t))
	done := make(chan time.Time, 1)
	go func() {
		var one [1]byte
		c.Read(one[:])
		done <- time.Now()
	}()
	time.Sleep(30 * time.Millisecond)
	moved := time.Now()
	c.SetReadDeadline(time.Unix(1, 0))
	select {
	case at := <-done:
		if d := at.Sub(moved); d > 10*time.Millisecond {
			t.Errorf("the read ended %v after its deadline moved", d)
		}
	case <-time.After(time.Second):
		t.Fatal("the read did not end")
	}
}

// TestCloseDuringPollSendsFINAtOnce: closing a connection whose read waits
// in poll closes the socket at once (the peer sees EOF), not when the poll
// would have ended: a late FIN lands in the next run's packets.
func TestCloseDuringPollSendsFINAtOnce(t *testing.T) {
	c, cl := pair(t, listen(t))
	go func() {
		b := make([]byte, 4096)
		c.Read(b)
	}()
	time.Sleep(5 * time.Millisecond) // the read is in poll by now
	closed := time.Now()
	c.Close()
	cl.SetReadDeadline(time.Now().Add(time.Second))
	var b [1]byte
	if _, err := cl.Read(b[:]); err != io.EOF {
		t.Fatalf("the peer read %v, want EOF", err)
	}
	if d := time.Since(closed); d > slice/2 {
		t.Errorf("the peer saw the close %v after it", d)
	}
}

// TestReadAllocatesNothing: a read of data that waits allocates nothing
// (a server reads so several times a request), and a read that waits in
// poll leaves the count of waiting reads as it found it.
func TestReadAllocatesNothing(t *testing.T) {
	c, cl := pair(t, listen(t))
	b := make([]byte, 100)
	read := func() {
		if _, err := cl.Write(b[:20]); err != nil {
			t.Fatal(err)
		}
		if n, err := c.Read(b); err != nil || n != 20 {
			t.Fatalf("read %d: %v", n, err)
		}
	}
	read() // the socket's first read registers it with the poller
	if n := testing.AllocsPerRun(100, read); n != 0 {
		t.Errorf("%.1f allocations a read", n)
	}
	go func() { time.Sleep(20 * time.Millisecond); cl.Write([]byte("later")) }()
	if n, err := c.Read(b); err != nil || string(b[:n]) != "later" {
		t.Fatalf("a read that waited: %q %v", b[:n], err)
	}
	if w := waiting.Load(); w != 0 {
		t.Errorf("%d reads counted as waiting after the last ended", w)
	}
}
