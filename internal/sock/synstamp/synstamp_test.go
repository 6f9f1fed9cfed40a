package synstamp

import (
	"net"
	"net/netip"
	"os"
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
	st, ok := s.Find(addrPort(c.LocalAddr()), addrPort(c.RemoteAddr()))
	if !ok || st.SYN.IsZero() || st.Established.IsZero() {
		t.Fatalf("no stamps: %+v %v", st, ok)
	}
	slack := 2 * time.Millisecond // the two clocks are read apart
	if st.SYN.Before(before.Add(-slack)) || st.Established.After(after.Add(slack)) || st.Established.Before(st.SYN) {
		t.Errorf("syn %v est %v outside the dial %v .. %v", st.SYN, st.Established, before, after)
	}
	if _, ok := s.Find(addrPort(ln.Addr()), netip.AddrPort{}); ok {
		t.Error("a listening socket has stamps")
	}
	// The server's side of the connection made no SYN.
	if _, ok := s.Find(addrPort(c.RemoteAddr()), addrPort(c.LocalAddr())); ok {
		t.Error("the accepted side has stamps")
	}
}

func addrPort(a net.Addr) netip.AddrPort { return a.(*net.TCPAddr).AddrPort() }

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

// TestFind: each of many connections, IPv4 and IPv6, has its own SYN
// and handshake stamps, in order, within its dial; one Close stops
// nothing else (the test's stamper is its own).
func TestFind(t *testing.T) {
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
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		type dialled struct {
			c             net.Conn
			before, after time.Time
		}
		var conns []dialled
		for range 300 {
			before := time.Now()
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, dialled{c, before, time.Now()})
		}
		slack := 2 * time.Millisecond // the two clocks are read apart
		for i, d := range conns {
			st, ok := s.Find(addrPort(d.c.LocalAddr()), addrPort(d.c.RemoteAddr()))
			if !ok {
				t.Fatalf("%s: connection %d from %v: no stamps", network, i, d.c.LocalAddr())
			}
			if st.SYN.Before(d.before.Add(-slack)) || st.Established.After(d.after.Add(slack)) || st.Established.Before(st.SYN) {
				t.Errorf("%s: connection %d: syn %v est %v outside its dial %v .. %v", network, i, st.SYN, st.Established, d.before, d.after)
			}
			d.c.Close()
		}
	}
	u, err := net.Dial("udp4", "127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, ok := s.Find(u.LocalAddr().(*net.UDPAddr).AddrPort(), u.RemoteAddr().(*net.UDPAddr).AddrPort()); ok {
		t.Error("a UDP socket has stamps")
	}
}
