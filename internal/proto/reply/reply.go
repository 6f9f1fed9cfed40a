// Package reply reads the numeric replies FTP and SMTP servers send (RFC 959
// 4.2, RFC 5321 4.2): "250 text", or "250-first" … "250 last". Bounds on
// line length and line count make a server that never ends a reply, or
// sends megabytes of it, an error rather than a hung or bloated client.
package reply

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bounds of one reply.
const (
	MaxLine  = 4096
	MaxLines = 200
)

// ErrReply is wrapped when a reply is malformed or not the one expected.
var ErrReply = errors.New("unexpected reply")

// Reply is one reply: its code and every line of text.
type Reply struct {
	Code  int
	Lines []string
}

func (r Reply) String() string { return strings.Join(r.Lines, " / ") }

// Text is the text of the reply's last line, after the code.
func (r Reply) Text() string {
	if len(r.Lines) == 0 {
		return ""
	}
	l := r.Lines[len(r.Lines)-1]
	if len(l) <= 4 {
		return ""
	}
	return strings.TrimSpace(l[4:])
}

// Read reads one reply; proto ("ftp", "smtp") prefixes its errors.
func Read(br *bufio.Reader, proto string) (Reply, error) {
	var r Reply
	for {
		line, err := readLine(br, proto)
		if err != nil {
			return r, err
		}
		if len(r.Lines) >= MaxLines {
			return r, fmt.Errorf("%s: a reply of more than %d lines: %w", proto, MaxLines, ErrReply)
		}
		r.Lines = append(r.Lines, line)
		if len(r.Lines) == 1 {
			if len(line) < 3 {
				return r, fmt.Errorf("%s: reply %q has no code: %w", proto, Printable(line), ErrReply)
			}
			code, err := strconv.Atoi(line[:3])
			if err != nil || code < 100 || code > 599 || (len(line) > 3 && line[3] != ' ' && line[3] != '-') {
				return r, fmt.Errorf("%s: reply %q has no code: %w", proto, Printable(line), ErrReply)
			}
			r.Code = code
			if len(line) == 3 || line[3] == ' ' {
				return r, nil
			}
			continue
		}
		if len(line) >= 4 && line[:3] == strconv.Itoa(r.Code) && line[3] == ' ' {
			return r, nil
		}
		if len(line) == 3 && line == strconv.Itoa(r.Code) {
			return r, nil
		}
	}
}

func readLine(br *bufio.Reader, proto string) (string, error) {
	var b []byte
	for {
		part, isPrefix, err := br.ReadLine()
		b = append(b, part...)
		if len(b) > MaxLine {
			return "", fmt.Errorf("%s: a reply line longer than %d bytes: %w", proto, MaxLine, ErrReply)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", fmt.Errorf("%s: the server closed the connection: %w", proto, io.ErrUnexpectedEOF)
			}
			return "", err
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}

// Printable shortens s and masks control characters, for error messages.
func Printable(s string) string {
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 32 || r == 127 {
			return '.'
		}
		return r
	}, s)
}
