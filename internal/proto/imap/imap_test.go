package imap

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"v6lab/internal/proto/scripted"
	"v6lab/internal/sock/path"
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
				// Three turns (greeting, LOGIN, SELECT: each reply, then the
				// next command), inside the wire time.
				if smp.WireNS > 0 && (smp.ClientTurnNS <= 0 || smp.ClientTurnNS >= smp.WireNS) {
					t.Errorf("%s user %d: client turns %d ns of wire %d ns", p, u, smp.ClientTurnNS, smp.WireNS)
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

// play feeds a server's bytes to a session in chunks, as the event loop
// would, sending (nothing) whenever a response completes; it says how the
// conversation ended.
func play(chunks [][]byte) string {
	v, _ := newSession("user1", "p")
	for _, c := range chunks {
		for {
			done, err := v.Feed(c, false)
			c = nil
			if err != nil {
				return "error: " + err.Error()
			}
			if !done {
				break
			}
			if req, _ := v.Next(); req == nil {
				return fmt.Sprintf("done: %q, %d bytes", v.done, v.fetched)
			}
			if len(v.pending) == 0 {
				break
			}
		}
	}
	_, err := v.Feed(nil, true)
	return "error: " + err.Error()
}

// chunked cuts s into pieces whose sizes cuts gives (1 to 256 bytes).
func chunked(s string, cuts []byte) [][]byte {
	var out [][]byte
	for i := 0; len(s) > 0; i++ {
		n := len(s)
		if len(cuts) > 0 {
			n = min(n, int(cuts[i%len(cuts)])+1)
		}
		out = append(out, []byte(s[:n]))
		s = s[n:]
	}
	return out
}

const goodConversation = "* OK ready\r\nv1 OK in\r\n* 1 EXISTS\r\nv2 OK [READ-WRITE] selected\r\n" +
	"* 1 FETCH (BODY[] {12}\r\nhello\r\nworld) FLAGS ())\r\nv3 OK done\r\n"

// TestResponsesReadAsTheyCome: a conversation comes out the same whatever
// the reads' sizes: a literal, a line or a line end split across reads,
// and responses that share a read.
func TestResponsesReadAsTheyCome(t *testing.T) {
	want := `done: "OK done", 12 bytes`
	for _, cuts := range [][]byte{nil, {0}, {1}, {4}, {30, 2, 0}} {
		if got := play(chunked(goodConversation, cuts)); got != want {
			t.Errorf("reads of %v: %s, want %s", cuts, got, want)
		}
	}
	// An unsolicited response after a tagged reply is read with the next.
	early := strings.Replace(goodConversation, "v2 OK [READ-WRITE] selected\r\n", "v2 OK [READ-WRITE] selected\r\n* 2 EXISTS\r\n", 1)
	if got := play(chunked(early, nil)); got != want {
		t.Errorf("with an unsolicited response: %s", got)
	}
	if got := play(chunked(strings.Replace(goodConversation, "{12}", "{0}", 1), nil)); !strings.Contains(got, "not an IMAP response") {
		t.Errorf("a literal's bytes taken as lines: %s", got)
	}
}

// FuzzResponse: any server bytes end the conversation in bounded steps,
// and the same way however they are cut into reads.
func FuzzResponse(f *testing.F) {
	f.Add(goodConversation, []byte{3})
	f.Add("* OK\r\nv1 NO x\r\n", []byte{0})
	f.Add("* OK\r\n{99999999999999999999}\r\n", []byte{7, 1})
	f.Add("* OK\r\nv1 OK\r\nv2 OK\r\n* 1 FETCH {5}\r\nab", []byte{2})
	f.Fuzz(func(t *testing.T, s string, cuts []byte) {
		if whole, got := play(chunked(s, nil)), play(chunked(s, cuts)); whole != got {
			t.Errorf("%q whole: %s; in reads of %v: %s", s, whole, cuts, got)
		}
	})
}

// FuzzLoginLines: whatever the user name and password, each command of a
// session is one line ending in its CRLF, or the session is refused: no
// value ends the LOGIN line early to send a command of its own.
func FuzzLoginLines(f *testing.F) {
	f.Add("user1", "v6lab")
	f.Add("user1", "x\r\nA2 LOGOUT")
	f.Add("a\"b\\c", "p\n")
	f.Fuzz(func(t *testing.T, user, password string) {
		v, err := newSession(user, password)
		if err != nil {
			if !strings.ContainsAny(user+password, "\r\n\x00") {
				t.Fatalf("%q %q refused: %v", user, password, err)
			}
			return
		}
		for _, c := range v.cmds {
			if !bytes.HasSuffix(c.line, []byte("\r\n")) || bytes.ContainsAny(c.line[:len(c.line)-2], "\r\n") {
				t.Fatalf("command %q", c.line)
			}
		}
	})
}

// The users share one message: the server holds its size once, not
// users × size (100 users of a 4 MiB message held 400 MiB before), and
// each user still logs in as itself and fetches it whole.
func TestUsersShareOneMessage(t *testing.T) {
	const users, size = 100, 4 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := Listen(context.Background(), []netip.Addr{path.IPv4.Loopback()}, 0, users, size)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 3*size {
		t.Errorf("the server holds %d bytes for %d users of a %d-byte message", grew, users, size)
	}
	c := &Client{Host: "127.0.0.1", Port: s.Port, Path: path.IPv4, Resolver: &path.Resolver{}, Users: users + 1, Password: Password}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if smp := c.Do(ctx, users-1); !smp.OK() || !strings.Contains(smp.Marker, fmt.Sprintf("%d-byte message of user%d", len(Message(size)), users)) {
		t.Errorf("user%d: %q %q", users, smp.Err, smp.Marker)
	}
	if smp := c.Do(ctx, users); smp.OK() || !strings.Contains(smp.Err, "LOGIN: the server answered") {
		t.Errorf("user%d, beyond the server's users, logged in: %q", users+1, smp.Err)
	}
}
