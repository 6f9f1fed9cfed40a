package synstamp

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestStampsSynAndHandshake: a connection made after Open has its SYN and
// its handshake's end stamped, in order, within the dial's wall-clock
// bounds; a listening socket has none.
func TestStampsSynAndHandshake(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (a BPF program on the cgroup)")
	}
	s, err := Open()
	if err != nil {
		t.Skipf("no sockops here: %v", err)
	}
	defer s.Close()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	before := time.Now()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	defer c.Close()
	var syn, est time.Time
	var ok bool
	rc, _ := c.(syscall.Conn).SyscallConn()
	rc.Control(func(fd uintptr) { syn, est, ok = s.Lookup(int(fd)) })
	if !ok || syn.IsZero() || est.IsZero() {
		t.Fatalf("no stamps: %v %v %v", syn, est, ok)
	}
	slack := 2 * time.Millisecond // the two clocks are read apart
	if syn.Before(before.Add(-slack)) || est.After(after.Add(slack)) || est.Before(syn) {
		t.Errorf("syn %v est %v outside the dial %v .. %v", syn, est, before, after)
	}
	lrc, _ := ln.(syscall.Conn).SyscallConn()
	lrc.Control(func(fd uintptr) {
		if _, _, ok := s.Lookup(int(fd)); ok {
			t.Error("a listening socket has stamps")
		}
	})
}
