package imap

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"v6lab/internal/path"
	"v6lab/internal/proto/scripted"
)

func TestEachUserFetchesItsMessageOverEachPath(t *testing.T) {
	s, err := Listen(context.Background(), []netip.Addr{path.IPv4.Loopback(), path.IPv6.Loopback()}, 0, DefaultUsers, 2000)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	size := len(Message(2000))
	var wg sync.WaitGroup
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		c := &Client{Host: p.Loopback().String(), Port: s.Port, Path: p, Resolver: &path.Resolver{}, Users: DefaultUsers, Password: Password}
		for u := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				smp := c.Do(ctx, u*17) // users spread over the 500
				want := fmt.Sprintf("OK, %d-byte message of user%d", size, u*17%DefaultUsers+1)
				if !smp.OK() || !strings.HasPrefix(smp.Marker, strings.SplitN(want, ",", 2)[0]) || !strings.HasSuffix(smp.Marker, want[3:]) {
					t.Errorf("%s user %d: %q %q (want %q)", p, u, smp.Err, smp.Marker, want)
				}
			}()
		}
	}
	wg.Wait()
	c := &Client{Host: "127.0.0.1", Port: s.Port, Path: path.IPv4, Resolver: &path.Resolver{}, Users: 1, Password: "wrong"}
	if smp := c.Do(context.Background(), 0); smp.OK() || !strings.Contains(smp.Err, "LOGIN: the server answered") {
		t.Errorf("wrong password: %q", smp.Err)
	}
}

// upToFetch answers the greeting, LOGIN and SELECT.
func upToFetch(c net.Conn, in *bufio.Reader) {
	io.WriteString(c, "* OK ready\r\n")
	in.ReadString('\n')
	io.WriteString(c, "v1 OK logged in\r\n")
	in.ReadString('\n')
	io.WriteString(c, "* 1 EXISTS\r\nv2 OK [READ-WRITE] selected\r\n")
	in.ReadString('\n')
}

func TestHostileServers(t *testing.T) {
	cases := map[string]struct {
		script func(c net.Conn, in *bufio.Reader)
		want   string
	}{
		"a literal size that lies": {func(c net.Conn, in *bufio.Reader) {
			upToFetch(c, in)
			io.WriteString(c, "* 1 FETCH (BODY[] {100000}\r\nonly this")
		}, "a literal of 100000 bytes ended after 9"},
		"a literal larger than any sane limit": {func(c net.Conn, in *bufio.Reader) {
			upToFetch(c, in)
			io.WriteString(c, "* 1 FETCH (BODY[] {99999999999}\r\n")
		}, "more than 67108864"},
		"a response that never ends": {func(c net.Conn, in *bufio.Reader) {
			upToFetch(c, in)
			for {
				if _, err := io.WriteString(c, "* 1 FETCH (FLAGS ())\r\n"); err != nil {
					return
				}
			}
		}, "a response of more than 100000 lines"},
		"a line larger than any sane limit": {func(c net.Conn, in *bufio.Reader) {
			io.WriteString(c, "* OK "+strings.Repeat("x", 1<<20))
		}, "longer than 8192"},
		"not IMAP": {func(c net.Conn, in *bufio.Reader) {
			io.WriteString(c, "220 smtp.example ESMTP\r\n")
		}, `greeting "220 smtp.example ESMTP"`},
		"the mailbox is empty": {func(c net.Conn, in *bufio.Reader) {
			upToFetch(c, in)
			io.WriteString(c, "v3 OK nothing\r\n")
		}, "FETCH returned no message"},
		"SELECT refused": {func(c net.Conn, in *bufio.Reader) {
			io.WriteString(c, "* OK ready\r\n")
			in.ReadString('\n')
			io.WriteString(c, "v1 OK in\r\n")
			in.ReadString('\n')
			io.WriteString(c, "v2 NO [NONEXISTENT] no INBOX\r\n")
		}, `SELECT: the server answered "NO [NONEXISTENT] no INBOX"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			port := scripted.Serve(t, tc.script)
			c := &Client{Host: "127.0.0.1", Port: port, Path: path.IPv4, Resolver: &path.Resolver{}, Users: 1, Password: "p"}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			smp := c.Do(ctx, 0)
			if smp.OK() || !strings.Contains(smp.Err, tc.want) {
				t.Errorf("err %q, want %q", smp.Err, tc.want)
			}
			if time.Since(start) > 3*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}

func FuzzResponse(f *testing.F) {
	f.Add("* 1 FETCH (BODY[] {5}\r\nhello)\r\nv1 OK done\r\n")
	f.Add("* OK\r\nv1 NO x\r\n")
	f.Add("{99999999999999999999}\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		c := &conn{br: bufio.NewReaderSize(strings.NewReader(s), 64), c: nopConn{}}
		c.cmd("FETCH 1 (BODY[])")
	})
}

// nopConn is a net.Conn that swallows writes.
type nopConn struct{ net.Conn }

func (nopConn) Write(b []byte) (int, error) { return len(b), nil }
