package reply

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for in, want := range map[string]string{
		"220 ready\r\n": "220 ready",
		"250-mx.test\r\n250-PIPELINING\r\n250 8BITMIME\r\n": "250-mx.test / 250-PIPELINING / 250 8BITMIME",
		"220-a\r\n220-b\r\n220\r\n":                         "220-a / 220-b / 220",
		"213\r\n":                                           "213",
		"230-hello\r\nsome text\r\n 230 not the end\r\n230 end\r\n": "230-hello / some text /  230 not the end / 230 end",
	} {
		r, err := Read(bufio.NewReader(strings.NewReader(in)), "t")
		if err != nil || r.String() != want {
			t.Errorf("%q: %q, %v; want %q", in, r.String(), err, want)
		}
	}
	for in, want := range map[string]string{
		"":                        "the server closed the connection",
		"22\r\n":                  "has no code",
		"999 no\r\n":              "has no code",
		"2200 x\r\n":              "has no code",
		"250-a\r\n":               "the server closed the connection",
		strings.Repeat("x", 5000): "longer than 4096",
		"250-a\r\n" + strings.Repeat("250-b\r\n", 300): "more than 200 lines",
	} {
		if _, err := Read(bufio.NewReaderSize(strings.NewReader(in), 16), "t"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q: %v, want %q", in, err, want)
		}
	}
	if (Reply{Code: 250, Lines: []string{"250-x", "250 OK: queued as 12"}}).Text() != "OK: queued as 12" {
		t.Error("Text")
	}
}

// parse runs a Parser over in, chunk bytes at a time, to the first reply.
func parse(in string, chunk int) (Reply, error) {
	p := Parser{Proto: "t"}
	b := []byte(in)
	for len(b) > 0 {
		n := min(chunk, len(b))
		r, used, done, err := p.Feed(b[:n])
		if err != nil || done {
			return r, err
		}
		if used != n {
			return r, fmt.Errorf("used %d of %d bytes without a reply", used, n)
		}
		b = b[n:]
	}
	return p.End()
}

// TestParserAsRead: fed a byte at a time, a few or all at once, the
// parser gives what Read gives, replies and errors.
func TestParserAsRead(t *testing.T) {
	ins := []string{"220 ready\r\n", "250-mx.test\r\n250-PIPELINING\r\n250 8BITMIME\r\n", "220-a\r\n220-b\r\n220\r\n",
		"230-hello\r\nsome text\r\n 230 not the end\r\n230 end\r\n", "220 no line end", "", "22\r\n", "999 no\r\n",
		"250-a\r\n", strings.Repeat("x", 5000), "250-a\r\n" + strings.Repeat("250-b\r\n", 300), strings.Repeat("y", 4096) + "\r\n"}
	for _, in := range ins {
		want, werr := Read(bufio.NewReaderSize(strings.NewReader(in), 16), "t")
		for _, chunk := range []int{1, 3, 1 << 20} {
			got, err := parse(in, chunk)
			if (err == nil) != (werr == nil) || (err != nil && err.Error() != werr.Error()) || (err == nil && got.String() != want.String()) {
				t.Errorf("%.20q in chunks of %d: %q, %v; Read: %q, %v", in, chunk, got.String(), err, want.String(), werr)
			}
		}
	}
	// Bytes after a reply are left for the next.
	p := Parser{Proto: "t"}
	r, used, done, err := p.Feed([]byte("250 a\r\n354 b\r\n"))
	if !done || err != nil || used != 7 || r.Code != 250 {
		t.Fatalf("first: %+v %d %v %v", r, used, done, err)
	}
	if r, _, done, _ := p.Feed([]byte("354 b\r\n")); !done || r.Code != 354 {
		t.Errorf("second: %+v", r)
	}
}

func FuzzParserAsRead(f *testing.F) {
	for _, s := range []string{"220 hi\r\n", "220-a\r\nb\r\n220 c\r\n", "2\r\n", "220 x"} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, b []byte, chunk uint8) {
		want, werr := Read(bufio.NewReaderSize(strings.NewReader(string(b)), 16), "f")
		got, err := parse(string(b), int(chunk)+1)
		if (err == nil) != (werr == nil) || (err == nil && got.String() != want.String()) {
			t.Fatalf("parser %q, %v; Read %q, %v", got.String(), err, want.String(), werr)
		}
	})
}

func FuzzRead(f *testing.F) {
	for _, s := range []string{"220 hi\r\n", "220-a\r\nb\r\n220 c\r\n", "2\r\n", "999 x\r\n", "220-" + strings.Repeat("x\r\n", 300)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Read(bufio.NewReaderSize(strings.NewReader(string(b)), 16), "f")
		if err == nil && (r.Code < 100 || r.Code > 599 || len(r.Lines) > MaxLines) {
			t.Fatalf("accepted %+v", r)
		}
		_ = r.Text()
	})
}

// FuzzCommand: a command line is the line and one CRLF at its end, or
// refused; no input puts a line break, or a NUL, anywhere else.
func FuzzCommand(f *testing.F) {
	for _, s := range []string{"USER anonymous", "PASS x\r\nDELE /", "RETR /1M\n", "EHLO v6lab.test", "a\x00b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		b, err := Command(line)
		if err != nil {
			if !strings.ContainsAny(line, "\r\n\x00") || !errors.Is(err, ErrLine) {
				t.Fatalf("%q refused: %v", line, err)
			}
			return
		}
		if !bytes.HasSuffix(b, []byte("\r\n")) || bytes.ContainsAny(b[:len(b)-2], "\r\n\x00") || string(b[:len(b)-2]) != line {
			t.Fatalf("%q sent as %q", line, b)
		}
	})
}
