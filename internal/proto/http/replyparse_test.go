package http

import (
	"bufio"
	"io"
	nethttp "net/http"
	"strings"
	"testing"

	"v6lab/internal/gen/content"
)

// feedAll gives reply to a fresh parser in pieces of size step (0: whole),
// then EOF if the parser still wants more. It returns the outcome and the
// body bytes counted.
func feedAll(reply []byte, step int, maxBody int64) (done bool, body int64, err error) {
	var p replyParser
	p.reset("/", maxBody, true, content.Unknown)
	if step <= 0 {
		step = len(reply) + 1
	}
	for len(reply) > 0 {
		n := min(step, len(reply))
		if done, err = p.Feed(reply[:n], false); done || err != nil {
			return done, p.body, err
		}
		reply = reply[n:]
	}
	done, err = p.Feed(nil, true)
	return done, p.body, err
}

func TestReplyParser(t *testing.T) {
	cases := []struct {
		name  string
		reply string
		body  int64  // body bytes when it completes
		err   string // part of the error, or "" for a complete reply
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 5, ""},
		{"empty body", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0, ""},
		{"no reason", "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nhi", 2, ""},
		{"http/1.0 until close", "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nsome body", 9, ""},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n", 11, ""},
		{"chunked trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n", 3, ""},
		{"chunked beats length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n", 1, ""},
		{"lower-case names", "HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc", 3, ""},
		{"not found", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 0, "status 404 Not Found for /"},
		{"garbage", "SSH-2.0-OpenSSH\r\n\r\n", 0, "not an HTTP status line"},
		{"bad version", "HTTP/2 200 OK\r\n\r\n", 0, "malformed HTTP status line"},
		{"bad code", "HTTP/1.1 2x0 OK\r\n\r\n", 0, "malformed HTTP status code"},
		{"bad header", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", 0, "malformed HTTP header line"},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, "bad Content-Length"},
		{"two lengths", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 0, "two different Content-Length"},
		{"gzip coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", 0, "unsupported Transfer-Encoding"},
		{"short", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", 0, "unexpected EOF"},
		{"no reply", "", 0, "unexpected EOF"},
		{"cut headers", "HTTP/1.1 200 OK\r\nContent-Le", 0, "unexpected EOF"},
		{"cut chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 0, "unexpected EOF"},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0, "bad chunk size"},
		{"no crlf after chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", 0, "no CRLF after a chunk"},
		{"declared too large", "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n", 0, "exceeds the 1024-byte limit"},
		{"chunk too large", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n", 0, "exceeds the 1024-byte limit"},
		{"until close too large", "HTTP/1.1 200 OK\r\n\r\n" + strings.Repeat("x", 2000), 0, "exceeds the 1024-byte limit"},
		{"endless headers", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Junk: aaaaaaaaaaaaaaaaaaaaaaaa\r\n", 3000), 0, "response header larger than 65536 bytes"},
	}
	for _, c := range cases {
		// Whole, then in pieces that split every boundary: the outcome
		// must not depend on how the reply arrived.
		for _, step := range []int{0, 1, 2, 7, 100} {
			done, body, err := feedAll([]byte(c.reply), step, 1024)
			if c.err == "" {
				if err != nil || !done || body != c.body {
					t.Errorf("%s (step %d): done %v body %d err %v; want body %d", c.name, step, done, body, err, c.body)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s (step %d): err %v, want %q", c.name, step, err, c.err)
			}
		}
	}
}

// TestReplyParserMatchesNetHTTP: for every valid 200 reply above, the body
// length net/http reads is the one the parser counts.
func TestReplyParserMatchesNetHTTP(t *testing.T) {
	for _, reply := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nsome body",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
	} {
		resp, err := nethttp.ReadResponse(bufio.NewReader(strings.NewReader(reply)), nil)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if _, body, err := feedAll([]byte(reply), 0, 1<<20); err != nil || body != n {
			t.Errorf("%q: parser %d bytes (%v), net/http %d", reply, body, err, n)
		}
	}
}

// FuzzReplyParser: any bytes, split anywhere, end in the same outcome, never
// count more body than arrived, never panic.
func FuzzReplyParser(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), 3)
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), 1)
	f.Add([]byte("HTTP/1.1 404 Not Found\r\n\r\n"), 5)
	f.Add([]byte("HTTP/1.0 200 OK\r\n\r\nuntil the end"), 2)
	f.Add([]byte("garbage"), 1)
	f.Fuzz(func(t *testing.T, reply []byte, step int) {
		if step < 1 || step > len(reply)+1 {
			step = 1
		}
		done1, body1, err1 := feedAll(reply, 0, 1<<16)
		done2, body2, err2 := feedAll(reply, step, 1<<16)
		if done1 != done2 || body1 != body2 || (err1 == nil) != (err2 == nil) {
			t.Fatalf("whole: %v %d %v; in steps of %d: %v %d %v", done1, body1, err1, step, done2, body2, err2)
		}
		if body1 > int64(len(reply)) {
			t.Fatalf("counted %d body bytes of a %d-byte reply", body1, len(reply))
		}
		if done1 && err1 != nil {
			t.Fatalf("done with an error: %v", err1)
		}
	})
}

// TestReplyParserNotHTTP: a reply that cannot begin "HTTP/" fails at its
// first bytes, however the reads split them; one that can waits for more.
func TestReplyParserNotHTTP(t *testing.T) {
	for _, step := range []int{0, 1, 2, 4} {
		_, _, err := feedAll([]byte("220 v6lab embedded FTP server ready\r\n"), step, 1<<20)
		if err == nil || !strings.Contains(err.Error(), `with text (its first bytes "2`) {
			t.Errorf("step %d: FTP banner: %v", step, err)
		}
		var p replyParser
		p.reset("/", 1<<20, false, content.Unknown)
		for _, part := range []string{"HT", "TP", "/1.1 200 OK\r\n"} {
			if done, err := p.Feed([]byte(part), false); done || err != nil {
				t.Fatalf("HTTP/ split in reads: %q: done %v err %v", part, done, err)
			}
		}
		p.reset("/", 1<<20, false, content.Unknown)
		p.Feed([]byte("HT"), false)
		if _, err := p.Feed([]byte("TX/1.1"), false); err == nil || !strings.Contains(err.Error(), `"HTTX/1.1"`) {
			t.Errorf("HTTX split in reads: %v", err)
		}
	}
}
