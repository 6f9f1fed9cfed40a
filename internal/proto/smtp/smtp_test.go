package smtp

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"v6lab/internal/proto/scripted"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

func TestSendOverEachPathEveryMessageKept(t *testing.T) {
	s, err := Listen(context.Background(), []netip.Addr{path.IPv4.Loopback(), path.IPv6.Loopback()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		c := &Client{Host: p.Loopback().String(), Port: s.Port, Path: p, Resolver: &path.Resolver{},
			From: "v6lab@v6lab.test", To: "user%d@v6lab.test", Size: 10000}
		for u := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				smp := c.Do(ctx, u)
				if !smp.OK() || !strings.HasPrefix(smp.Marker, "250 2.0.0 OK: queued as ") || smp.BytesOut < 10000 {
					t.Errorf("%s user %d: %+v", p, u, smp)
					return
				}
				mu.Lock()
				ok++
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	kept, bytes := s.Kept()
	if ok != 40 || kept != 40 || s.Accepted.Load() != 40 || bytes < 40*10000 {
		t.Errorf("%d sent, %d kept (%d bytes), %d accepted", ok, kept, bytes, s.Accepted.Load())
	}
}

func TestRefusalsAndBrokenServers(t *testing.T) {
	cases := map[string]struct {
		script   func(c net.Conn, in *bufio.Reader)
		startTLS bool
		want     string
	}{
		"recipient refused": {func(c net.Conn, in *bufio.Reader) {
			io.WriteString(c, "220 mx ESMTP\r\n")
			in.ReadString('\n')
			io.WriteString(c, "250-mx\r\n250 PIPELINING\r\n")
			in.ReadString('\n')
			io.WriteString(c, "250 ok\r\n")
			in.ReadString('\n')
			io.WriteString(c, "554 5.7.1 Relay access denied\r\n")
		}, false, `RCPT TO: the server answered "554 5.7.1 Relay access denied"`},
		"drops the connection mid-DATA": {func(c net.Conn, in *bufio.Reader) {
			io.WriteString(c, "220 mx\r\n")
			for _, r := range []string{"250 mx", "250 ok", "250 ok", "354 go"} {
				in.ReadString('\n')
				io.WriteString(c, r+"\r\n")
			}
			in.ReadString('\n')
		}, false, "connection"},
		"message rejected": {func(c net.Conn, in *bufio.Reader) {
			io.WriteString(c, "220 mx\r\n")
			for _, r := range []string{"250 mx", "250 ok", "250 ok", "354 go"} {
				in.ReadString('\n')
				io.WriteString(c, r+"\r\n")
			}
			for {
				l, err := in.ReadString('\n')
				if err != nil || l == ".\r\n" {
					break
				}
			}
			io.WriteString(c, "552 too big\r\n")
		}, false, `message: the server answered "552 too big"`},
		"STARTTLS not offered": {func(c net.Conn, in *bufio.Reader) {
			io.WriteString(c, "220 mx\r\n")
			in.ReadString('\n')
			io.WriteString(c, "250-mx\r\n250 8BITMIME\r\n")
		}, true, "the server does not offer it"},
		"greeting that never ends": {func(c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "220-hi\r\n")
			for {
				if _, err := io.WriteString(c, "220-more\r\n"); err != nil {
					return
				}
			}
		}, false, "more than 200 lines"},
		"answers ahead of the commands": {func(c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "220 mx\r\n250 mx\r\n")
		}, false, `greeting: more bytes after the reply "220 mx"`},
		"busy": {func(c net.Conn, _ *bufio.Reader) {
			io.WriteString(c, "421 4.4.5 Too busy\r\n")
		}, false, `greeting: the server answered "421 4.4.5 Too busy"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			port := scripted.Serve(t, tc.script)
			c := &Client{Host: "127.0.0.1", Port: port, Path: path.IPv4, Resolver: &path.Resolver{}, From: "a@b", To: "c@d", StartTLS: tc.startTLS}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			smp := c.Do(ctx, 0)
			if smp.OK() || !strings.Contains(smp.Err, tc.want) {
				t.Errorf("err %q, want %q", smp.Err, tc.want)
			}
		})
	}
}

// FuzzEnvelopeLines: envelope addresses the options accept make MAIL FROM
// and RCPT TO lines without a line break of their own.
func FuzzEnvelopeLines(f *testing.F) {
	f.Add("v6lab@v6lab.test", "user%d@v6lab.test")
	f.Add("a@b\r\nRCPT TO:<x@y>", "c@d")
	f.Fuzz(func(t *testing.T, from, to string) {
		o := &Options{From: from, To: to}
		o.URL = "smtp://127.0.0.1"
		if err := o.Check(result.Hosts, func(string) bool { return false }); err != nil {
			return
		}
		if _, err := commands("MAIL FROM:<"+from+">", "RCPT TO:<"+to+">"); err != nil {
			t.Fatalf("%q %q: checked, but %v", from, to, err)
		}
	})
}

// A message's Message-ID is kept bounded, however long the client sends
// it (a 1 MB ID was kept whole, and read as one line), and the message's
// size is counted whole.
func TestLongMessageIDKeptBounded(t *testing.T) {
	for _, tc := range []struct {
		msg string
		id  string
	}{
		{"Subject: x\r\nMessage-ID: <a@b>\r\n\r\nbody\r\n", "<a@b>"},
		{"Message-ID: <" + strings.Repeat("x", 1<<20) + ">\r\nSubject: x\r\n\r\nbody\r\n", "<" + strings.Repeat("x", MaxID-1)},
		{"Subject: x\r\n\r\nMessage-ID: <not@header>\r\n", ""},
		{"Message-ID:  <c@d>  \r\n\r\n", "<c@d>"},
	} {
		size, id, err := readMessage(strings.NewReader(tc.msg))
		if err != nil || id != tc.id || size != len(tc.msg) {
			t.Errorf("%.40q: id %.40q (%d bytes), size %d, %v; want %.40q, %d", tc.msg, id, len(id), size, err, tc.id, len(tc.msg))
		}
	}
}
