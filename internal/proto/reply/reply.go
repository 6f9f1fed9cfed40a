// Package reply reads the numeric replies FTP and SMTP servers send (RFC 959
// 4.2, RFC 5321 4.2): "250 text", or "250-first" … "250 last". Bounds on
// line length and line count make a server that never ends a reply, or
// sends megabytes of it, an error rather than a hung or bloated client.
package reply

import (
	"bufio"
	"bytes"
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
		if done, err := r.add(line, proto); done || err != nil {
			return r, err
		}
	}
}

// add takes the reply's next line; done when it was the last.
func (r *Reply) add(line, proto string) (done bool, err error) {
	if len(r.Lines) >= MaxLines {
		return false, fmt.Errorf("%s: a reply of more than %d lines: %w", proto, MaxLines, ErrReply)
	}
	r.Lines = append(r.Lines, line)
	if len(r.Lines) == 1 {
		if len(line) < 3 {
			return false, fmt.Errorf("%s: reply %q has no code: %w", proto, Printable(line), ErrReply)
		}
		code, err := strconv.Atoi(line[:3])
		if err != nil || code < 100 || code > 599 || (len(line) > 3 && line[3] != ' ' && line[3] != '-') {
			return false, fmt.Errorf("%s: reply %q has no code: %w", proto, Printable(line), ErrReply)
		}
		r.Code = code
		return len(line) == 3 || line[3] == ' ', nil
	}
	c := strconv.Itoa(r.Code)
	return (len(line) >= 4 && line[:3] == c && line[3] == ' ') || line == c, nil
}

// Parser reads replies from bytes as they arrive (an event loop's reads),
// with Read's bounds and errors.
type Parser struct {
	Proto string // prefixes errors: the protocol's name
	line  []byte // the line read so far
	r     Reply
}

// Feed takes the next bytes. When they complete a reply it returns it with
// done, and how many bytes of b it used (the rest belongs to what comes
// after); the parser then starts on the next reply.
func (p *Parser) Feed(b []byte) (r Reply, used int, done bool, err error) {
	for used < len(b) {
		i := bytes.IndexByte(b[used:], '\n')
		end := used + i
		if i < 0 {
			end = len(b)
		}
		p.line = append(p.line, b[used:end]...)
		if len(p.line) > MaxLine+1 { // +1: the CR a line may end with
			return r, used, false, tooLong(p.Proto)
		}
		if i < 0 {
			return r, len(b), false, nil
		}
		used = end + 1
		line := string(bytes.TrimSuffix(p.line, []byte{'\r'}))
		p.line = p.line[:0]
		if len(line) > MaxLine {
			return r, used, false, tooLong(p.Proto)
		}
		if done, err := p.r.add(line, p.Proto); err != nil {
			return r, used, false, err
		} else if done {
			r, p.r = p.r, Reply{}
			return r, used, true, nil
		}
	}
	return r, used, false, nil
}

// End is the end of the bytes (the peer closed): a last line without its
// line end still counts, as Read takes it; a reply still incomplete is
// Read's error for a closed connection.
func (p *Parser) End() (Reply, error) {
	if len(p.line) > 0 {
		line := string(p.line)
		p.line = p.line[:0]
		if done, err := p.r.add(line, p.Proto); err != nil {
			return Reply{}, err
		} else if done {
			r := p.r
			p.r = Reply{}
			return r, nil
		}
	}
	return Reply{}, closed(p.Proto)
}

func tooLong(proto string) error {
	return fmt.Errorf("%s: a reply line longer than %d bytes: %w", proto, MaxLine, ErrReply)
}

func closed(proto string) error {
	return fmt.Errorf("%s: the server closed the connection: %w", proto, io.ErrUnexpectedEOF)
}

func readLine(br *bufio.Reader, proto string) (string, error) {
	var b []byte
	for {
		part, isPrefix, err := br.ReadLine()
		b = append(b, part...)
		if len(b) > MaxLine {
			return "", tooLong(proto)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", closed(proto)
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

// ErrLine is wrapped when a command line would hold a CR, LF or NUL of
// its own: it would end early and send the rest as a command of its own.
var ErrLine = errors.New("a command line holds a line break")

// Command is a command line as sent: line and CRLF. A line that holds a
// CR, LF or NUL (a value from a URL or a flag, unchecked) is refused, so
// no value can inject a command.
func Command(line string) ([]byte, error) {
	if i := strings.IndexAny(line, "\r\n\x00"); i >= 0 {
		return nil, fmt.Errorf("%q: %w", line[:i], ErrLine)
	}
	return append([]byte(line), '\r', '\n'), nil
}
