package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/servetest"
)

func requireRoot(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t, "building a lab needs root")
}

func testName(t *testing.T) string {
	return fmt.Sprintf("t%d", os.Getpid()%100000)
}

func up(t *testing.T, cfg Config) *Lab {
	t.Helper()
	requireRoot(t)
	if cfg.Name == "" {
		cfg.Name = testName(t)
	}
	l, err := Up(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if left, _ := Namespaces(Prefix + l.Name + "-"); len(left) != 0 {
			t.Errorf("namespaces left after close: %v", left)
		}
	})
	return l
}

// echoServer listens in the server namespace on addr and answers each
// connection with its peer address.
func echoServer(t *testing.T, l *Lab, addr netip.Addr) int {
	t.Helper()
	var ln net.Listener
	err := Do(NS(l.Name, Server), func() error {
		var err error
		ln, err = path.Listen(context.Background(), path.OfAddr(addr), netip.AddrPortFrom(addr, 0).String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	servetest.Each(t, ln, func(c net.Conn) { io.WriteString(c, c.RemoteAddr().String()) })
	return ln.Addr().(*net.TCPAddr).Port
}

// dialFromClient connects from the client namespace over path p.
func dialFromClient(t *testing.T, l *Lab, p path.Path, dst netip.AddrPort) string {
	t.Helper()
	d := path.Dialer{Path: p, Source: l.Addr.Source(p)}
	var c net.Conn
	err := Do(NS(l.Name, Client), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		c, err = d.Dial(ctx, "tcp", dst)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return string(b)
}

// serverBind is where a test's server listens for path p: the path's
// server address, or for nat64 the IPv4 one its translator leads to.
func serverBind(l *Lab, p path.Path) netip.Addr {
	if p.Kind().Translated {
		return l.Addr.ServerV4
	}
	return l.Addr.Server(p)
}

func TestEveryPathConnectsThroughTheRouters(t *testing.T) {
	for _, impl := range []string{"userspace", "vxlan"} {
		t.Run(impl, func(t *testing.T) {
			l := up(t, Config{Tunnel: impl})
			if l.TunnelImpl != impl {
				t.Fatalf("tunnel %s, want %s", l.TunnelImpl, impl)
			}
			for _, p := range l.Addr.Paths() {
				c := struct {
					p        path.Path
					dst, src netip.Addr
				}{p, l.Addr.Server(p), l.Addr.Client(p)}
				port := echoServer(t, l, serverBind(l, c.p))
				seen := dialFromClient(t, l, c.p, netip.AddrPortFrom(c.dst, uint16(port)))
				if ap, err := netip.ParseAddrPort(seen); err != nil || ap.Addr() != c.src {
					t.Errorf("%s: server saw the client as %q, want %s", c.p, seen, c.src)
				}
			}
			if impl == "userspace" {
				st := &l.tunnels[0].Stats
				if st.Encapsulated.Load() == 0 || st.Decapsulated.Load() == 0 {
					t.Errorf("the 6in4 connection did not cross the tunnel: %d out, %d in", st.Encapsulated.Load(), st.Decapsulated.Load())
				}
			}
		})
	}
}

func TestDownRemovesALabLeftBehind(t *testing.T) {
	requireRoot(t)
	name := testName(t) + "k"
	l, err := Up(context.Background(), Config{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	// As if the process died: the namespaces stay; a new command finds them.
	if names, _ := Names(); !contains(names, name) {
		t.Fatalf("lab %s not listed in %v", name, names)
	}
	for _, tn := range l.tunnels {
		tn.Close()
	}
	if err := Down(name); err != nil {
		t.Fatal(err)
	}
	if left, _ := Namespaces(Prefix + name + "-"); len(left) != 0 {
		t.Fatalf("left: %v", left)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestConfigValidation(t *testing.T) {
	cases := map[string]Config{
		`bad lab name "Bad_Name"`:             {Name: "Bad_Name"},
		"tunnel MTU 1279 out of range":        {Name: "x", TunnelMTU: 1279},
		"tunnel MTU 1500 out of range":        {Name: "x", TunnelMTU: 1500},
		`unknown tunnel implementation "gre"`: {Name: "x", Tunnel: "gre"},
	}
	for want, c := range cases {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
	ok := Config{Name: "x"}
	if err := ok.Validate(); err != nil || ok.TunnelMTU != DefaultTunnelMTU {
		t.Errorf("default config: %v, mtu %d", err, ok.TunnelMTU)
	}
}

func TestReapRemovesLabsOfDeadOwners(t *testing.T) {
	requireRoot(t)
	name := testName(t) + "r"
	l, err := Up(context.Background(), Config{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// As if the owner died: a pid that cannot be alive (beyond pid_max).
	l.rec.PID = 1 << 30
	if err := l.rec.save(); err != nil {
		t.Fatal(err)
	}
	reaped, err := reap(func(n string) bool { return n == name }) // not other tests' orphans
	if err != nil || !contains(reaped, name) {
		t.Fatalf("reaped %v, %v", reaped, err)
	}
	if left, _ := Namespaces(Prefix + name + "-"); len(left) != 0 {
		t.Fatalf("left: %v", left)
	}
}

// TestGeneratorHostsReachEachOtherThroughTheRouters builds the lab with
// its background traffic hosts: each client-side generator reaches its
// server-side peer across r1-r2 over its family, and the status lists them.
func TestGeneratorHostsReachEachOtherThroughTheRouters(t *testing.T) {
	l := up(t, Config{Generators: true})
	for _, c := range []struct {
		from, to string
		p        path.Path
		fam      int
	}{{Gen4C, Gen4S, path.IPv4, 0}, {Gen6C, Gen6S, path.IPv6, 1}, {Gen4S, Gen4C, path.IPv4, 0}, {Gen6S, Gen6C, path.IPv6, 1}} {
		dst := l.Addr.Gen[c.to][c.fam]
		var ln net.Listener
		if err := Do(NS(l.Name, c.to), func() error {
			var err error
			ln, err = path.Listen(context.Background(), c.p, netip.AddrPortFrom(dst, 0).String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		go func() {
			if s, err := ln.Accept(); err == nil {
				io.WriteString(s, s.RemoteAddr().String())
				s.Close()
			}
		}()
		var conn net.Conn
		if err := Do(NS(l.Name, c.from), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var err error
			conn, err = path.Dialer{Path: c.p}.Dial(ctx, "tcp", ln.Addr().(*net.TCPAddr).AddrPort())
			return err
		}); err != nil {
			t.Fatalf("%s -> %s: %v", c.from, c.to, err)
		}
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(conn)
		conn.Close()
		ln.Close()
		if ap, err := netip.ParseAddrPort(string(b)); err != nil || ap.Addr() != l.Addr.Gen[c.from][c.fam] {
			t.Errorf("%s -> %s: seen as %q", c.from, c.to, b)
		}
	}
	st, err := Inspect(l.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Hosts) != 8 {
		t.Errorf("status lists %d hosts, want 8", len(st.Hosts))
	}
}

// TestBareServerTurnsTCPOptionsOff checks the bare server on the wire's
// terms: a connection to it negotiates neither SACK, timestamps nor window
// scaling, while the client host keeps its defaults.
func TestBareServerTurnsTCPOptionsOff(t *testing.T) {
	l := up(t, Config{BareServer: true, NoTunnel: true})
	var ln net.Listener
	if err := Do(NS(l.Name, Server), func() error {
		var err error
		ln, err = path.Listen(context.Background(), path.IPv6, netip.AddrPortFrom(l.Addr.ServerV6, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	var conn net.Conn
	var clientSack []byte
	if err := Do(NS(l.Name, Client), func() error {
		var err error
		clientSack, _ = os.ReadFile("/proc/sys/net/ipv4/tcp_sack")
		conn, err = path.Dialer{Path: path.IPv6}.Dial(context.Background(), "tcp", ln.Addr().(*net.TCPAddr).AddrPort())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if strings.TrimSpace(string(clientSack)) != "1" {
		t.Errorf("client host tcp_sack %q: the bare server's sysctls leaked", clientSack)
	}
	raw, _ := conn.(*net.TCPConn).SyscallConn()
	var info *unix.TCPInfo
	var gerr error
	raw.Control(func(fd uintptr) { info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) })
	if gerr != nil {
		t.Fatal(gerr)
	}
	const sack, ts, wscale = 2, 1, 4 // TCPI_OPT_*
	if info.Options&(sack|ts|wscale) != 0 {
		t.Errorf("TCP options negotiated with the bare server: %#x (want no SACK, timestamps or window scaling)", info.Options)
	}
}
