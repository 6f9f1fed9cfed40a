package reply

import (
	"bufio"
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
