package synstamp

import (
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// TestStampsSynAndHandshake: a connection made after Open has its SYN and
// its handshake's end stamped, in order, within the dial's wall-clock
// bounds; a listening socket has none.
func TestStampsSynAndHandshake(t *testing.T) {
	testutil.RequireRoot(t, "needs root (a BPF program on the cgroup)")
	progs := attached(t)
	s, err := Open()
	if err != nil {
		t.Skipf("no sockops here: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		if left := attached(t); left != progs {
			t.Errorf("%d sockops programs on the cgroup after Close, %d before Open", left, progs)
		}
	}()
	if n := attached(t); n != progs+1 {
		t.Errorf("%d sockops programs on the cgroup after Open, %d before", n, progs)
	}
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

// attached counts the sockops programs on this process's cgroup.
func attached(t *testing.T) int {
	t.Helper()
	cg, err := ownCgroup()
	if err != nil {
		t.Skip(err)
	}
	f, err := os.Open(cg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := link.QueryPrograms(link.QueryOptions{Target: int(f.Fd()), Attach: ebpf.AttachCGroupSockOps})
	if err != nil {
		t.Skipf("cannot list the cgroup's programs: %v", err)
	}
	return len(r.Programs)
}

// TestLookupFD: the socket's own storage has the SYN's and the
// handshake's stamps, in order, within the dial, and the local address
// getsockname gives, for IPv4 and IPv6; a socket it did not stamp (a
// listener, UDP) has none.
func TestLookupFD(t *testing.T) {
	testutil.RequireRoot(t, "needs root (a BPF program on the cgroup)")
	s, err := Open()
	if err != nil {
		t.Skipf("no sockops here: %v", err)
	}
	defer s.Close()
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := map[string]string{"tcp4": "127.0.0.1:0", "tcp6": "[::1]:0"}[network]
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Logf("%s: %v", network, err)
			continue
		}
		defer ln.Close()
		before := time.Now()
		c, err := net.Dial(network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		defer c.Close()
		var st Stamps
		var ok bool
		rc, _ := c.(syscall.Conn).SyscallConn()
		rc.Control(func(fd uintptr) { st, ok = s.LookupFD(int(fd)) })
		if !ok {
			t.Fatalf("%s: no stamps", network)
		}
		slack := 2 * time.Millisecond // the two clocks are read apart
		if st.SYN.Before(before.Add(-slack)) || st.Established.After(after.Add(slack)) || st.Established.Before(st.SYN) {
			t.Errorf("%s: syn %v est %v outside the dial %v .. %v", network, st.SYN, st.Established, before, after)
		}
		if want := netip.MustParseAddrPort(c.LocalAddr().String()); st.Local != want {
			t.Errorf("%s: local %v, getsockname says %v", network, st.Local, want)
		}
		lrc, _ := ln.(syscall.Conn).SyscallConn()
		lrc.Control(func(fd uintptr) {
			if _, ok := s.LookupFD(int(fd)); ok {
				t.Errorf("%s: a listening socket has stamps", network)
			}
		})
	}
	u, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	urc, _ := u.(syscall.Conn).SyscallConn()
	urc.Control(func(fd uintptr) {
		if _, ok := s.LookupFD(int(fd)); ok {
			t.Error("a UDP socket has stamps")
		}
	})
}
