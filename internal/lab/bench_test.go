package lab

import (
	"context"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"v6lab/internal/testutil"

	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/servetest"
)

// sink listens in the server namespace and discards what it receives; a
// one-byte reply to each 1-byte ping measures round trips.
func sink(b testing.TB, l *Lab, addr netip.Addr) netip.AddrPort {
	ap, _ := countingSink(b, l, addr)
	return ap
}

// serve listens on addr in the lab's server host and runs handle on
// every connection it accepts, until the test ends; it returns the port.
func serve(b testing.TB, l *Lab, addr netip.Addr, handle func(net.Conn)) netip.AddrPort {
	var ln net.Listener
	if err := Do(NS(l.Name, Server), func() error {
		var err error
		ln, err = path.Listen(context.Background(), path.OfAddr(addr), netip.AddrPortFrom(addr, 0).String())
		return err
	}); err != nil {
		b.Fatal(err)
	}
	servetest.Each(b, ln, handle)
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// countingSink is sink that also counts the bytes it received.
func countingSink(b testing.TB, l *Lab, addr netip.Addr) (netip.AddrPort, *atomic.Int64) {
	received := new(atomic.Int64)
	return serve(b, l, addr, func(c net.Conn) {
		defer c.Close()
		var one [1]byte
		if _, err := io.ReadFull(c, one[:]); err != nil {
			return
		}
		if one[0] == 'p' { // ping-pong mode
			for {
				c.Write(one[:])
				if _, err := io.ReadFull(c, one[:]); err != nil {
					return
				}
			}
		}
		io.Copy(io.Discard, countingReader{received, c})
	}), received
}

// countingReader reads from r and counts into n as it goes.
type countingReader struct {
	n *atomic.Int64
	r io.Reader
}

func (c countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	return k, err
}

func benchPaths(l *Lab) []struct {
	p        path.Path
	dst, src netip.Addr
} {
	return []struct {
		p        path.Path
		dst, src netip.Addr
	}{
		{path.IPv4, l.Addr.ServerV4, netip.Addr{}},
		{path.IPv6, l.Addr.ServerV6, netip.Addr{}},
		{path.SixIn4, l.Addr.ServerTun6, l.Addr.ClientTun6},
	}
}

func dialIn(b testing.TB, l *Lab, p path.Path, src netip.Addr, dst netip.AddrPort) net.Conn {
	var c net.Conn
	if err := Do(NS(l.Name, Client), func() error {
		var err error
		c, err = path.Dialer{Path: p, Source: src}.Dial(context.Background(), "tcp", dst)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	return c
}

// tunnels are the implementations the benchmarks compare; the 6in4 path
// runs over each (vxlan as a kernel reference).
var tunnels = []string{"bpf", "userspace", "vxlan"}

// eachPath builds a lab per tunnel implementation and runs fn per path;
// ipv4 and ipv6 run once (they do not use the tunnel).
func eachPath(b *testing.B, fn func(b *testing.B, conn net.Conn)) {
	testutil.RequireRoot(b, "needs root")
	for i, impl := range tunnels {
		l, err := Up(context.Background(), Config{Name: "bench", Tunnel: impl})
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range benchPaths(l) {
			if i > 0 && c.p != path.SixIn4 {
				continue
			}
			name := string(c.p)
			if c.p == path.SixIn4 {
				name += "-" + impl
			}
			dst := sink(b, l, c.dst)
			b.Run(name, func(b *testing.B) {
				conn := dialIn(b, l, c.p, c.src, dst)
				defer conn.Close()
				fn(b, conn)
			})
		}
		l.Close()
	}
}

// BenchmarkBulkTCP sends bulk TCP client -> server through both routers on
// each path (run as root: go test ./internal/lab -bench BulkTCP).
func BenchmarkBulkTCP(b *testing.B) {
	buf := make([]byte, 256<<10)
	eachPath(b, func(b *testing.B, conn net.Conn) {
		conn.Write([]byte{'b'}) // bulk mode
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			if _, err := conn.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRoundTrip measures one-byte TCP ping-pongs on each path.
func BenchmarkRoundTrip(b *testing.B) {
	eachPath(b, func(b *testing.B, conn net.Conn) {
		conn.(*net.TCPConn).SetNoDelay(true)
		one := []byte{'p'} // ping-pong mode
		conn.Write(one)
		io.ReadFull(conn, one)
		for b.Loop() {
			conn.Write(one)
			if _, err := io.ReadFull(conn, one); err != nil {
				b.Fatal(err)
			}
		}
	})
}
