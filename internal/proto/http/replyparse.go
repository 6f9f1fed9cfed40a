package http

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"v6lab/internal/gen/content"
)

// replyParser reads one HTTP/1.x reply incrementally, as the event-loop
// engine hands it bytes: status line and headers (at most MaxHeaderBytes),
// then a body delimited by Content-Length, chunked coding, or the end of
// the connection. It keeps no body bytes but an HTML page's when asked
// (keep), only their count, and fails on any status but 200, like the
// net/http path.
type replyParser struct {
	uri     string // for error messages
	maxBody int64

	head   []byte // header bytes while they span reads
	inBody bool
	mode   bodyMode
	left   int64 // length mode: bytes still due; chunked: of this chunk
	body   int64 // body bytes received (decoded for chunked)
	chunk  chunkState
	line   []byte // a chunk-size or trailer line spanning reads
	check  content.Check
	checks bool // body bytes go through check

	keep   bool   // keep an HTML body (up to MaxPageParse) in page
	html   bool   // the reply is text/html
	page   []byte // the kept body
	closes bool   // the server closes after this reply
}

type bodyMode uint8

const (
	bodyLength bodyMode = iota
	bodyChunked
	bodyEOF
)

type chunkState uint8

const (
	chunkSize    chunkState = iota // reading "hex[;ext]\r\n"
	chunkData                      // left bytes of data
	chunkDataEnd                   // the CRLF after data
	chunkTrailer                   // trailer lines up to an empty one
)

// maxChunkLine bounds a chunk-size or trailer line.
const maxChunkLine = 4 << 10

var crlfcrlf = []byte("\r\n\r\n")

func (p *replyParser) reset(uri string, maxBody int64, checks bool, expect content.Expect) {
	*p = replyParser{uri: uri, maxBody: maxBody, head: p.head[:0], line: p.line[:0], checks: checks, page: p.page[:0]}
	p.check.Reset(expect)
}

// take passes body bytes to the check, or keeps a page's.
func (p *replyParser) take(b []byte) error {
	if p.keep && p.html {
		p.page = append(p.page, b[:min(len(b), max(MaxPageParse-len(p.page), 0))]...)
	}
	if !p.checks {
		return nil
	}
	if _, err := p.check.Write(b); err != nil {
		return fmt.Errorf("body of %s: %w", p.uri, err)
	}
	return nil
}

// Feed implements evloop.Feeder.
func (p *replyParser) Feed(b []byte, eof bool) (bool, error) {
	if !p.inBody {
		if eof {
			if len(p.head) == 0 {
				return false, fmt.Errorf("bad response: %w (no reply)", io.ErrUnexpectedEOF)
			}
			return false, fmt.Errorf("bad response: %w within the headers", io.ErrUnexpectedEOF)
		}
		if len(p.head) < len(httpPrefix) && !startsHTTP(p.head, b) {
			return false, notHTTP(append(p.head, b[:min(len(b), 16)]...))
		}
		var head, rest []byte
		if len(p.head) == 0 {
			if i := bytes.Index(b, crlfcrlf); i >= 0 {
				head, rest = b[:i+2], b[i+4:]
			}
		}
		if head == nil {
			from := max(len(p.head)-3, 0)
			p.head = append(p.head, b...)
			i := bytes.Index(p.head[from:], crlfcrlf)
			if i < 0 {
				if len(p.head) > MaxHeaderBytes {
					return false, fmt.Errorf("response header larger than %d bytes: %w", MaxHeaderBytes, ErrTooLarge)
				}
				return false, nil
			}
			i += from
			head, rest = p.head[:i+2], p.head[i+4:]
		}
		if len(head) > MaxHeaderBytes {
			return false, fmt.Errorf("response header larger than %d bytes: %w", MaxHeaderBytes, ErrTooLarge)
		}
		if err := p.parseHead(head); err != nil {
			return false, err
		}
		p.inBody = true
		if p.mode == bodyLength && p.left == 0 {
			return true, nil
		}
		b = rest
		if len(b) == 0 {
			return false, nil
		}
	}
	if eof {
		switch {
		case p.mode == bodyEOF:
			return true, nil
		case p.mode == bodyLength:
			return false, fmt.Errorf("body of %s after %d bytes: %w", p.uri, p.body, io.ErrUnexpectedEOF)
		default:
			return false, fmt.Errorf("chunked body of %s after %d bytes: %w", p.uri, p.body, io.ErrUnexpectedEOF)
		}
	}
	switch p.mode {
	case bodyLength:
		n := min(int64(len(b)), p.left)
		p.left -= n
		p.body += n
		return p.left == 0, p.take(b[:n])
	case bodyEOF:
		p.body += int64(len(b))
		if p.body > p.maxBody {
			return false, p.tooLarge()
		}
		return false, p.take(b)
	}
	return p.feedChunked(b)
}

func (p *replyParser) tooLarge() error {
	return fmt.Errorf("body of %s exceeds the %d-byte limit: %w", p.uri, p.maxBody, ErrTooLarge)
}

// parseHead checks the status line and reads the headers that delimit the
// body. head ends with the CRLF of the last header line.
func (p *replyParser) parseHead(head []byte) error {
	eol := bytes.IndexByte(head, '\n')
	status := bytes.TrimSuffix(head[:eol], []byte("\r"))
	// "HTTP/1.x SSS reason"
	if len(status) < 12 || !bytes.HasPrefix(status, []byte("HTTP/1.")) || status[7] < '0' || status[7] > '9' ||
		status[8] != ' ' || (len(status) > 12 && status[12] != ' ') {
		return fmt.Errorf("bad response: malformed HTTP status line %q", clip(status))
	}
	code, err := strconv.Atoi(string(status[9:12]))
	if err != nil || code < 100 {
		return fmt.Errorf("bad response: malformed HTTP status code %q", clip(status[9:12]))
	}
	if code != 200 {
		return fmt.Errorf("status %s for %s", bytes.TrimSpace(status[9:]), p.uri)
	}
	length := int64(-1)
	p.closes = status[7] == '0' // HTTP/1.0 closes unless it says keep-alive
	rest := head[eol+1:]
	for len(rest) > 0 {
		eol := bytes.IndexByte(rest, '\n')
		line := bytes.TrimSuffix(rest[:eol], []byte("\r"))
		rest = rest[eol+1:]
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return fmt.Errorf("bad response: malformed HTTP header line %q", clip(line))
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("bad response: bad Content-Length %q", clip(value))
			}
			if length >= 0 && n != length {
				return fmt.Errorf("bad response: two different Content-Length values (%d, %d)", length, n)
			}
			length = n
		case bytes.EqualFold(name, []byte("Connection")):
			for rest, more := value, true; more; { // bytes.Split's slice was an allocation per reply
				var opt []byte
				opt, rest, more = bytes.Cut(rest, []byte(","))
				switch opt = bytes.TrimSpace(opt); {
				case bytes.EqualFold(opt, []byte("close")):
					p.closes = true
				case bytes.EqualFold(opt, []byte("keep-alive")) && status[7] == '0':
					p.closes = false
				}
			}
		case bytes.EqualFold(name, []byte("Content-Type")):
			p.html = bytes.HasPrefix(value, []byte("text/html"))
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			// The last coding decides; only chunked delimits a body.
			codings := bytes.Split(value, []byte(","))
			if bytes.EqualFold(bytes.TrimSpace(codings[len(codings)-1]), []byte("chunked")) {
				p.mode = bodyChunked
			} else {
				return fmt.Errorf("bad response: unsupported Transfer-Encoding %q", clip(value))
			}
		}
	}
	switch {
	case p.mode == bodyChunked: // chunked wins over a length (RFC 9112 6.3)
	case length >= 0:
		if length > p.maxBody {
			return fmt.Errorf("body of %d bytes for %s exceeds the %d-byte limit: %w", length, p.uri, p.maxBody, ErrTooLarge)
		}
		p.mode, p.left = bodyLength, length
	default:
		p.mode = bodyEOF
		p.closes = true
	}
	return nil
}

// feedChunked decodes chunked coding, counting data bytes.
func (p *replyParser) feedChunked(b []byte) (bool, error) {
	for len(b) > 0 {
		switch p.chunk {
		case chunkData:
			n := min(int64(len(b)), p.left)
			p.left -= n
			p.body += n
			if err := p.take(b[:n]); err != nil {
				return false, err
			}
			b = b[n:]
			if p.body > p.maxBody {
				return false, p.tooLarge()
			}
			if p.left == 0 {
				p.chunk = chunkDataEnd
			}
		case chunkSize, chunkDataEnd, chunkTrailer:
			line, rest, ok := p.takeLine(b)
			b = rest
			if !ok {
				if len(p.line) > maxChunkLine {
					return false, fmt.Errorf("bad response: chunk line longer than %d bytes", maxChunkLine)
				}
				return false, nil
			}
			switch p.chunk {
			case chunkDataEnd:
				if len(line) != 0 {
					return false, fmt.Errorf("bad response: no CRLF after a chunk of %s", p.uri)
				}
				p.chunk = chunkSize
			case chunkTrailer:
				if len(line) == 0 {
					return true, nil
				}
			case chunkSize:
				if i := bytes.IndexByte(line, ';'); i >= 0 {
					line = line[:i]
				}
				line = bytes.TrimSpace(line)
				size, err := strconv.ParseUint(string(line), 16, 63)
				if err != nil || len(line) == 0 {
					return false, fmt.Errorf("bad response: bad chunk size %q", clip(line))
				}
				if size == 0 {
					p.chunk = chunkTrailer
				} else {
					if int64(size) > p.maxBody-p.body {
						return false, p.tooLarge()
					}
					p.chunk, p.left = chunkData, int64(size)
				}
			}
		}
	}
	return false, nil
}

// takeLine returns the next line (without CRLF) once it is complete,
// keeping a partial one in p.line.
func (p *replyParser) takeLine(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		p.line = append(p.line, b...)
		return nil, nil, false
	}
	if len(p.line) > 0 {
		p.line = append(p.line, b[:i]...)
		line = p.line
		p.line = p.line[:0]
	} else {
		line = b[:i]
	}
	return bytes.TrimSuffix(line, []byte("\r")), b[i+1:], true
}

var httpPrefix = []byte("HTTP/")

// startsHTTP says whether a reply whose first bytes are head then b can
// still begin "HTTP/": a compare of at most five bytes, once per reply.
func startsHTTP(head, b []byte) bool {
	for i := range httpPrefix {
		var c byte
		switch {
		case i < len(head):
			c = head[i]
		case i-len(head) < len(b):
			c = b[i-len(head)]
		default:
			return true
		}
		if c != httpPrefix[i] {
			return false
		}
	}
	return true
}

// notHTTP is the error for a reply whose first bytes (first) cannot begin
// an HTTP status line: another protocol's server answers on the port (an
// FTP or SMTP banner, a TLS alert), and waiting for a header that will
// never come would fail it as a stall after the timeout.
func notHTTP(first []byte) error {
	first = first[:min(len(first), 16)]
	switch {
	case len(first) >= 3 && first[0] >= 0x14 && first[0] <= 0x17 && first[1] == 3:
		return fmt.Errorf("bad response: the server answered the HTTP/1.1 request with a TLS record (its first bytes %q…), not an HTTP status line: it speaks TLS on this port, give an https:// url", first)
	case printable(first):
		return fmt.Errorf("bad response: the server answered the HTTP/1.1 request with text (its first bytes %q…), not an HTTP status line: it does not speak HTTP on this port (another protocol's server?)", first)
	}
	return fmt.Errorf("bad response: the server answered the HTTP/1.1 request with bytes (its first bytes %q…), not an HTTP status line: it does not speak HTTP on this port", first)
}

// clip shortens a hostile line for an error message.
func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
