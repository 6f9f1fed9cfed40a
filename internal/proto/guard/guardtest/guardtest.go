// Package guardtest checks that a server keeps to its guard.Limits: the
// slow-client tests of the embedded FTP, SMTP and IMAP servers share it.
package guardtest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"v6lab/internal/proto/guard"
)

// Limits a server under test is given: short, so the tests are quick.
const (
	Idle = 400 * time.Millisecond
	Line = 300 * time.Millisecond
)

// dial connects and reads the greeting line.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp4", addr) // the servers under test listen on 127.0.0.1
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		c.Close()
		t.Fatalf("greeting: %v", err)
	}
	return c
}

// closedBy waits until the server closes c (reading what it says first),
// and reports when.
func closedBy(c net.Conn, limit time.Duration) (time.Duration, bool) {
	start := time.Now()
	c.SetReadDeadline(start.Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return 0, false
	}
	return time.Since(start), true
}

// Run gives a server short limits through limits (the server package's
// Limits variable, restored afterwards), starts it with start, and checks
// it against a slow and a silent client.
func Run(t *testing.T, limits *guard.Limits, start func() (addr string, stop func(), err error)) {
	t.Helper()
	defer func(l guard.Limits) { *limits = l }(*limits)
	*limits = guard.Limits{Idle: Idle, Line: Line, Write: limits.Write}
	addr, stop, err := start()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	t.Run("slow", func(t *testing.T) { Slow(t, addr) })
	t.Run("silent", func(t *testing.T) { Silent(t, addr) })
}

// Slow sends a command one byte every 100 ms, never ending it: the server
// must close the connection at its line limit, not keep it while bytes
// trickle in.
func Slow(t *testing.T, addr string) {
	t.Helper()
	c := dial(t, addr)
	defer c.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
				if _, err := c.Write([]byte("N")); err != nil {
					return
				}
			}
		}
	}()
	if d, ok := closedBy(c, 5*time.Second); !ok {
		t.Errorf("a client sending a byte every 100 ms was still served after 5 s (line limit %v)", Line)
	} else if d > 3*time.Second {
		t.Errorf("a slow client was cut off after %v, want about %v", d, Line)
	}
}

// Silent sends nothing after the greeting: the server must close at its
// idle limit.
func Silent(t *testing.T, addr string) {
	t.Helper()
	c := dial(t, addr)
	defer c.Close()
	if d, ok := closedBy(c, 5*time.Second); !ok {
		t.Errorf("a silent client was still served after 5 s (idle limit %v)", Idle)
	} else if d < Idle/2 {
		t.Errorf("a silent client was cut off after %v, before the idle limit %v", d, Idle)
	}
}
