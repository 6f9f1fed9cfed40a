package imap

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"v6lab/internal/proto/reply"
)

// session is a transaction's conversation on the event loop
// (evloop.Continuer): the greeting, then each command's response up to
// its tagged reply, read as the bytes come, with the bounds on lines,
// literals and responses.
type session struct {
	user string    // the account, for errors
	cmds []command // sent after the greeting and after each response
	i    int       // responses complete: 0 while the greeting is read

	line    []byte // the line read so far, without its end
	lit     int64  // bytes of the current literal still to come
	litSize int64  // the current literal's size
	lines   int    // lines of the current response
	lits    int64  // literal bytes of the current response
	pending []byte // bytes after a complete response, for the next one

	fetched int64  // literal bytes of the last response (the FETCH's message)
	done    string // the last tagged reply, after its tag
}

// command is one tagged command and its verb, for errors.
type command struct {
	tag, verb string
	line      []byte
}

// newSession is user's login, INBOX selection and fetch of message 1. A
// user or password with a line break is refused (reply.Command): a quoted
// string cannot hold one, and it would end the LOGIN line.
func newSession(user, password string) (*session, error) {
	v := &session{user: user}
	for i, c := range []string{
		"LOGIN " + quote(user) + " " + quote(password),
		"SELECT INBOX",
		"FETCH 1 (BODY.PEEK[])",
	} {
		tag := "v" + strconv.Itoa(i+1)
		line, err := reply.Command(tag + " " + c)
		if err != nil {
			return nil, fmt.Errorf("imap: %w", err)
		}
		v.cmds = append(v.cmds, command{tag, strings.Fields(c)[0], line})
	}
	return v, nil
}

// quote makes an IMAP quoted string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

var errLong = fmt.Errorf("imap: a response line longer than %d bytes: %w", MaxLine, ErrResponse)

func (v *session) Feed(b []byte, eof bool) (bool, error) {
	if eof {
		if v.lit > 0 {
			return false, fmt.Errorf("imap: a literal of %d bytes ended after %d: %w", v.litSize, v.litSize-v.lit, io.ErrUnexpectedEOF)
		}
		return false, fmt.Errorf("imap: the server closed the connection: %w", io.ErrUnexpectedEOF)
	}
	if len(v.pending) > 0 {
		b, v.pending = append(v.pending, b...), nil
	}
	for len(b) > 0 {
		if v.lit > 0 {
			k := min(v.lit, int64(len(b)))
			v.lit -= k
			b = b[k:]
			continue
		}
		end := bytes.IndexByte(b, '\n')
		if end < 0 {
			if len(v.line)+len(b) > MaxLine+1 { // +1: a "\r" whose "\n" is still to come
				return false, errLong
			}
			v.line = append(v.line, b...)
			return false, nil
		}
		v.line = append(v.line, b[:end]...)
		b = b[end+1:]
		line := strings.TrimSuffix(string(v.line), "\r")
		v.line = v.line[:0]
		if len(line) > MaxLine {
			return false, errLong
		}
		complete, err := v.take(line)
		if err != nil || !complete {
			if err != nil {
				return false, err
			}
			continue
		}
		if len(b) > 0 { // an unsolicited response ahead of the next command
			v.pending = append([]byte(nil), b...)
		}
		return true, nil
	}
	return false, nil
}

// take is one line of the current response; it says whether the
// response is complete.
func (v *session) take(line string) (bool, error) {
	if v.lines++; v.lines > MaxResponse {
		return false, fmt.Errorf("imap: a response of more than %d lines: %w", MaxResponse, ErrResponse)
	}
	if n, err := literalSize(line); err != nil || n >= 0 {
		v.lit, v.litSize = n, n
		v.lits += max(n, 0)
		return false, err
	}
	if v.i == 0 {
		if !strings.HasPrefix(line, "* OK") && !strings.HasPrefix(line, "* PREAUTH") {
			return false, fmt.Errorf("imap: greeting %q: %w", reply.Printable(line), ErrResponse)
		}
		v.next()
		return true, nil
	}
	c := v.cmds[v.i-1]
	if rest, ok := strings.CutPrefix(line, c.tag+" "); ok {
		if !strings.HasPrefix(rest, "OK") {
			return false, fmt.Errorf("imap: %s: the server answered %q: %w", c.verb, reply.Printable(rest), ErrResponse)
		}
		if c.verb == "FETCH" && v.lits <= 0 {
			return false, fmt.Errorf("imap: FETCH returned no message for %s: %w", v.user, ErrResponse)
		}
		v.done = rest
		v.next()
		return true, nil
	}
	if !strings.HasPrefix(line, "* ") && !strings.HasPrefix(line, "+ ") && !strings.HasPrefix(line, ")") && line != "" && !strings.Contains(line, ")") {
		// The rest of a literal's line (") FLAGS …") is fine; anything
		// else is not IMAP.
		return false, fmt.Errorf("imap: %q is not an IMAP response: %w", reply.Printable(line), ErrResponse)
	}
	return false, nil
}

// next starts the next response.
func (v *session) next() {
	v.fetched, v.lits, v.lines = v.lits, 0, 0
}

func (v *session) Next() ([]byte, bool) {
	if v.i >= len(v.cmds) {
		return nil, false
	}
	v.i++
	return v.cmds[v.i-1].line, false
}

// literalSize is the size of the {N} (or {N+}) that ends a line, -1 if none.
func literalSize(line string) (int64, error) {
	if !strings.HasSuffix(line, "}") {
		return -1, nil
	}
	open := strings.LastIndexByte(line, '{')
	if open < 0 {
		return -1, nil
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(line[open+1:len(line)-1], "+"), 10, 64)
	if err != nil || n < 0 {
		return -1, fmt.Errorf("imap: bad literal in %q: %w", reply.Printable(line), ErrResponse)
	}
	if n > MaxLiteral {
		return -1, fmt.Errorf("imap: a literal of %d bytes, more than %d: %w", n, MaxLiteral, ErrResponse)
	}
	return n, nil
}
