package ftp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"v6lab/internal/gen/content"
	"v6lab/internal/proto/reply"
	"v6lab/internal/proto/scripted"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

func startServer(t *testing.T) *Server {
	t.Helper()
	s, err := Listen(context.Background(), []netip.Addr{path.IPv4.Loopback(), path.IPv6.Loopback()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestRetrieveOverEachPathPassiveAndActive(t *testing.T) {
	s := startServer(t)
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		for _, active := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/active=%v", p, active), func(t *testing.T) {
				c := &Client{Host: p.Loopback().String(), Port: s.Port, File: "/1M", Path: p, Resolver: &path.Resolver{}, Active: active}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				smp := c.Do(ctx, 3)
				if !smp.OK() {
					t.Fatalf("%s", smp.Err)
				}
				if smp.BytesIn != 1<<20 || !strings.HasPrefix(smp.Marker, "226 ") || smp.FirstByteNS == 0 || smp.ConnectNS == 0 {
					t.Errorf("sample %+v", smp)
				}
				if !strings.Contains(smp.Remote, p.Loopback().String()) {
					t.Errorf("remote %s", smp.Remote)
				}
			})
		}
	}
	if s.Logins.Load() != 4 || s.Transfers.Load() != 4 {
		t.Errorf("server counted %d logins, %d transfers", s.Logins.Load(), s.Transfers.Load())
	}
}

func TestMissingFileIsAFailedSampleWithTheReply(t *testing.T) {
	s := startServer(t)
	c := &Client{Host: "127.0.0.1", Port: s.Port, File: "/nonsense", Path: path.IPv4, Resolver: &path.Resolver{}}
	smp := c.Do(context.Background(), 0)
	if smp.OK() || !strings.Contains(smp.Err, "RETR") || !strings.Contains(smp.Err, "550") {
		t.Errorf("err %q", smp.Err)
	}
}

// login answers the greeting, USER, PASS, TYPE and SIZE.
// shortPassiveTransfer answers the login and PASV of a 1000000-byte file
// and sends only 1000 bytes of it before closing the data connection.
func shortPassiveTransfer(c net.Conn, cmds *bufio.Reader) {
	passive(c, cmds, "213 1000000", "150 here it comes\r\n", func(d net.Conn) { d.Write(make([]byte, 1000)) })
}

// passive answers the login (SIZE with size) and PASV, then RETR with
// first (the 150, and what a script sends with it), and hands the data
// connection to data before closing it.
func passive(c net.Conn, cmds *bufio.Reader, size, first string, data func(d net.Conn)) {
	login(c, cmds, size)
	cmds.ReadString('\n')
	dl, _ := net.Listen("tcp4", "127.0.0.1:0")
	defer dl.Close()
	p := dl.Addr().(*net.TCPAddr).Port
	io.WriteString(c, fmt.Sprintf("227 Entering Passive Mode (127,0,0,1,%d,%d)\r\n", p>>8, p&0xff))
	cmds.ReadString('\n')
	io.WriteString(c, first)
	d, _ := dl.Accept()
	data(d)
	d.Close()
}

func login(c net.Conn, cmds *bufio.Reader, size string) {
	io.WriteString(c, "220 hi\r\n")
	for _, reply := range []string{"331 pass?", "230 in", "200 binary", size} {
		cmds.ReadString('\n')
		io.WriteString(c, reply+"\r\n")
	}
}

func TestHostileServers(t *testing.T) {
	cases := map[string]struct {
		script func(c net.Conn, cmds *bufio.Reader)
		want   string
	}{
		"multi-line reply that never ends": {func(c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "220-welcome\r\n")
			for i := 0; i < 100000; i++ {
				if _, err := io.WriteString(c, "still welcoming\r\n"); err != nil {
					return
				}
			}
		}, "more than 200 lines"},
		"a line larger than any sane limit": {func(c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "220 "+strings.Repeat("x", 1<<20))
		}, "longer than 4096 bytes"},
		"not an FTP server": {func(c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "SSH-2.0-OpenSSH_9.2\r\n")
		}, "has no code"},
		"login refused": {func(c net.Conn, cmds *bufio.Reader) {
			io.WriteString(c, "220 hi\r\n")
			cmds.ReadString('\n')
			io.WriteString(c, "530 Not logged in.\r\n")
		}, `USER: the server answered "530 Not logged in."`},
		"PASV pointing at another host (bounce)": {func(c net.Conn, cmds *bufio.Reader) {
			login(c, cmds, "213 100")
			cmds.ReadString('\n')
			io.WriteString(c, "227 Entering Passive Mode (192,0,2,99,4,1)\r\n")
			cmds.ReadString('\n')
		}, "points at 192.0.2.99, not the server 127.0.0.1: FTP bounce refused"},
		"drops the connection mid-transfer": {func(c net.Conn, cmds *bufio.Reader) {
			shortPassiveTransfer(c, cmds)
		}, "the server closed the connection"},
		"says 226 after a short transfer": {func(c net.Conn, cmds *bufio.Reader) {
			shortPassiveTransfer(c, cmds)
			io.WriteString(c, "226 Transfer complete\r\n")
			cmds.ReadString('\n')
		}, "short transfer: 1000 of 1000000 bytes"},
		"never answers": {func(c net.Conn, cmds *bufio.Reader) {
			cmds.ReadString('\n')
		}, "timeout"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			port := scripted.Serve(t, tc.script)
			c := &Client{Host: "127.0.0.1", Port: port, File: "/f", Path: path.IPv4, Resolver: &path.Resolver{}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			smp := c.Do(ctx, 0)
			if smp.OK() || !strings.Contains(smp.Err+" "+string(smp.ErrKind), tc.want) {
				t.Errorf("err %q (%s), want %q", smp.Err, smp.ErrKind, tc.want)
			}
			if time.Since(start) > 3*time.Second {
				t.Errorf("took %v, past the transaction timeout", time.Since(start))
			}
		})
	}
}

func TestParsePassiveReplies(t *testing.T) {
	for in, want := range map[string]string{
		"Entering Passive Mode (192,0,2,1,4,1).": "192.0.2.1:1025",
		"Entering Passive Mode 10,0,0,1,0,21":    "10.0.0.1:21",
	} {
		got, err := ParsePASV(in)
		if err != nil || got.String() != want {
			t.Errorf("%q: %v, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"(1,2,3)", "(256,0,0,1,0,1)", "(a,b,c,d,e,f)", ""} {
		if _, err := ParsePASV(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if p, err := ParseEPSV("Entering Extended Passive Mode (|||6446|)"); err != nil || p != 6446 {
		t.Errorf("EPSV: %d, %v", p, err)
	}
	for _, bad := range []string{"(|||0|)", "(|||70000|)", "(||1|2|)", "()", "no parens"} {
		if _, err := ParseEPSV(bad); err == nil {
			t.Errorf("EPSV %q accepted", bad)
		}
	}
}

func FuzzParsePassive(f *testing.F) {
	f.Add("Entering Passive Mode (192,0,2,1,4,1)")
	f.Add("(|||6446|)")
	f.Fuzz(func(t *testing.T, s string) {
		ParsePASV(s)
		if p, err := ParseEPSV(s); err == nil && p == 0 {
			t.Fatal("port 0 accepted")
		}
	})
}

// TestContentIsChecked: the embedded server's file passes as generated
// content with its CRC-32C recorded, and fails when zeros were expected.
func TestContentIsChecked(t *testing.T) {
	s := startServer(t)
	want := content.NewCheck(content.Generated)
	want.Write(content.Bytes(300_000))
	for _, c := range []struct {
		expect content.Expect
		err    string
	}{{content.Generated, ""}, {content.Unknown, ""}, {content.Zeros, "byte 0 is 0x61, not 0"}} {
		cl := &Client{Host: "127.0.0.1", Port: s.Port, File: "/300000", Path: path.IPv4, Resolver: &path.Resolver{}, Expect: c.expect}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		smp := cl.Do(ctx, 0)
		cancel()
		if c.err == "" {
			if !smp.OK() || smp.Metrics["body_crc32c"] != float64(want.Sum()) {
				t.Errorf("expect %d: err %q crc %v, want %v", c.expect, smp.Err, smp.Metrics["body_crc32c"], want.Sum())
			}
			continue
		}
		if smp.OK() || !strings.Contains(smp.Err, c.err) || !strings.Contains(smp.Err, "content differs") || smp.ErrKind != "protocol" {
			t.Errorf("expect %d: err %q kind %q", c.expect, smp.Err, smp.ErrKind)
		}
	}
}

// TestWireTimeCoversTheFile: a server that sends its 226 while half the
// file is still to come (as one whose file waits in its send buffer).
// The wire time runs to the file's last bytes, not to the 226, and its
// first byte is the file's, not the greeting's.
func TestWireTimeCoversTheFile(t *testing.T) {
	testutil.RequireRoot(t, "needs root: without a lookup the wire time starts at the SYN's stamp, a BPF program")
	if !path.SYNReady() {
		t.Skip("no SYN stamps on this host (cgroup v2, sockops)")
	}
	const gap = 40 * time.Millisecond
	port := scripted.Serve(t, func(c net.Conn, cmds *bufio.Reader) {
		passive(c, cmds, "213 2000", "150 here it comes\r\n", func(d net.Conn) {
			time.Sleep(gap)
			d.Write(make([]byte, 1000))
			io.WriteString(c, "226 Transfer complete\r\n")
			time.Sleep(gap)
			d.Write(make([]byte, 1000))
		})
		cmds.ReadString('\n')
	})
	s, ok := firstStamped(t, port, func(s result.Sample) bool { return s.WireNS != 0 && s.WireFirstByteNS != 0 })
	if !ok {
		t.Fatal("no transaction had receive stamps")
	}
	if s.WireNS < int64(2*gap) || s.WireNS > s.TotalNS {
		t.Errorf("wire %v of total %v: want the file's last bytes, %v after its first", time.Duration(s.WireNS), time.Duration(s.TotalNS), gap)
	}
	if s.WireFirstByteNS < int64(gap) || s.WireFirstByteNS > s.FirstByteNS {
		t.Errorf("wire first byte %v, first byte %v: want the file's first bytes (%v after the 150), not the greeting's", time.Duration(s.WireFirstByteNS), time.Duration(s.FirstByteNS), gap)
	}
}

// firstStamped runs a client of the server at port up to five times and
// returns the first completed sample that is stamped: kstamp.Hold waits a
// bounded time for the kernel's receive stamps to come on, and on a
// loaded machine a fresh process's first replies may still lack one.
func firstStamped(t *testing.T, port int, stamped func(result.Sample) bool) (result.Sample, bool) {
	t.Helper()
	c := &Client{Host: "127.0.0.1", Port: port, File: "/f", Path: path.IPv4, Resolver: &path.Resolver{}}
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s := c.Do(ctx, 0)
		cancel()
		if !s.OK() {
			t.Fatal(s.Err)
		}
		if stamped(s) {
			return s, true
		}
	}
	return result.Sample{}, false
}

// TestTotalCoversTheFile: a server whose 226 comes in one read with its
// 150, before the file. The transaction still ends at the file's last
// read, not at the read that brought the 226.
func TestTotalCoversTheFile(t *testing.T) {
	const gap = 40 * time.Millisecond
	port := scripted.Serve(t, func(c net.Conn, cmds *bufio.Reader) {
		passive(c, cmds, "213 1000", "150 here it comes\r\n226 Transfer complete\r\n", func(d net.Conn) {
			time.Sleep(gap)
			d.Write(make([]byte, 1000))
		})
		cmds.ReadString('\n')
	})
	c := &Client{Host: "127.0.0.1", Port: port, File: "/f", Path: path.IPv4, Resolver: &path.Resolver{}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s := c.Do(ctx, 0)
	if !s.OK() {
		t.Fatal(s.Err)
	}
	if s.TotalNS < int64(gap) || s.FirstByteNS < int64(gap) || s.FirstByteNS > s.TotalNS {
		t.Errorf("first byte %v, total %v: want both at the file, %v after the 226", time.Duration(s.FirstByteNS), time.Duration(s.TotalNS), gap)
	}
}

// slowReplies waits before each write: a server that takes its time.
type slowReplies struct {
	net.Conn
	wait time.Duration
}

func (s slowReplies) Write(p []byte) (int, error) {
	time.Sleep(s.wait)
	return s.Conn.Write(p)
}

// TestClientTurnsAreTheClientsOwn: against a server that waits before
// each of its seven replies, the wire time grows by the waits and the
// client's turns do not: they run from each reply's arrival to the next
// command (and to the data connection's SYN, and from its handshake to
// RETR), never over the server's time.
func TestClientTurnsAreTheClientsOwn(t *testing.T) {
	const wait = 10 * time.Millisecond
	port := scripted.Serve(t, func(c net.Conn, cmds *bufio.Reader) {
		passive(slowReplies{c, wait}, cmds, "213 1000", "150 here it comes\r\n", func(d net.Conn) {
			d.Write(make([]byte, 1000))
			d.Close()
			time.Sleep(wait)
			io.WriteString(c, "226 Transfer complete\r\n")
		})
		cmds.ReadString('\n')
	})
	// A transaction without receive stamps counts no turn.
	s, ok := firstStamped(t, port, func(s result.Sample) bool { return s.ClientTurnNS != 0 })
	if !ok {
		t.Fatal("no transaction counted a client turn")
	}
	if s.ClientTurnNS >= int64(wait) || s.TotalNS < int64(7*wait) {
		t.Errorf("client turns %v in a transaction of %v: want them well under one of the server's %v waits",
			time.Duration(s.ClientTurnNS), time.Duration(s.TotalNS), wait)
	}
	if s.WireNS != 0 && s.ClientTurnNS > s.WireNS {
		t.Errorf("client turns %v longer than the wire time %v", time.Duration(s.ClientTurnNS), time.Duration(s.WireNS))
	}
}

// FuzzURLLines: a url the options accept puts its user, password and file
// on USER, PASS, SIZE and RETR lines that hold no line break; one that
// would is refused by Check, naming url.
func FuzzURLLines(f *testing.F) {
	for _, s := range []string{"ftp://127.0.0.1/1M", "ftp://u:p%0d%0aDELE%20x@h/1M", "ftp://h/a%0aRETR%20/etc/passwd"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		o := &Options{}
		o.URL = raw
		if err := o.Check(result.Hosts, func(string) bool { return false }); err != nil {
			return
		}
		u, err := ParseURL(raw)
		if err != nil {
			t.Fatalf("%q: checked, then %v", raw, err)
		}
		for _, line := range []string{"USER " + u.User, "PASS " + u.Password, "SIZE " + u.File, "RETR " + u.File} {
			if _, err := reply.Command(line); err != nil {
				t.Fatalf("%q: checked, but %v", raw, err)
			}
		}
	})
}
