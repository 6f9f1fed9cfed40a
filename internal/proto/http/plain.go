package http

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"v6lab/internal/gen/content"
	"v6lab/internal/input/units"
)

// The embedded server answers the few GETs v6lab's clients and peer tools
// send (Server's routes), over HTTP/1.1 in the clear or in TLS, with one
// goroutine per connection and one write per small reply. Go's net/http
// spent, per request, a goroutine that watches the idle connection and a
// deadline to stop it: thread wake-ups that, at one user on this machine's
// two vCPUs, put about 30 µs per request of v6lab's own server into every
// response time (docs/performance-history.md).

// Limits of the server, as net/http's were set; variables so tests can
// shorten them.
var (
	plainIdle       = 30 * time.Second // between requests
	plainHeaderTime = 10 * time.Second // for a request's header, from its first byte
	plainWriteTime  = time.Minute      // for one reply (a client that never reads)
	plainLinger     = 500 * time.Millisecond
)

const (
	plainMaxHeader = 64 << 10
	// plainOneWrite: replies up to this size (header and body) leave in
	// one write.
	plainOneWrite = 64 << 10
)

// plainServer serves cfg's routes on its listeners.
type plainServer struct {
	cfg  ServerConfig
	page []byte
	// heads are the heads of /pages/N (N -> []byte), fill what follows
	// the shortest: every page of the set shares its tail, so they hold
	// one page's size and MaxObjects+1 heads, not as many whole pages.
	heads sync.Map
	fill  []byte
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  atomic.Bool
	// h2, when set, takes connections that speak HTTP/2 (ALPN h2, or
	// h2c's preface) with the bytes read from them (h2server.go); altSvc
	// is an Alt-Svc field ending in CRLF that every reply carries.
	h2          func(c net.Conn, read []byte)
	altSvc      []byte
	altSvcValue string
}

func newPlainServer(cfg ServerConfig) *plainServer {
	return &plainServer{cfg: cfg, page: Page(cfg), fill: pageFill(cfg.PageSize, len(pageHead(0))), conns: map[net.Conn]struct{}{}}
}

// serve accepts until ln is closed.
func (s *plainServer) serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.done.Load() {
				return errServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		s.mu.Lock()
		if s.done.Load() {
			s.mu.Unlock()
			c.Close()
			return errServerClosed
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go s.conn(c)
	}
}

var errServerClosed = errors.New("http: server closed")

// close closes every connection; the caller closes the listeners.
func (s *plainServer) close() {
	s.mu.Lock()
	s.done.Store(true)
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

// conn serves one connection's requests in turn (pipelined ones too).
func (s *plainServer) conn(c net.Conn) {
	if s.h2 != nil && s.negotiated(c) {
		return // HTTP/2 by ALPN, served by net/http
	}
	replied := false // the last reply said the connection closes
	handed := false  // h2c: the connection is net/http's
	defer func() {
		if handed {
			return
		}
		if replied {
			lingerClose(c)
		}
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	h := &headerReader{c: c, buf: make([]byte, 0, 4096)}
	out := make([]byte, 0, 4096)
	var writeDL time.Time // as last set; moved at most once a second
	served := 0
	for {
		end, tooLarge, whole := h.next()
		if tooLarge {
			c.Write(plainError(431, "Request Header Fields Too Large"))
			replied = true
			return
		}
		if !whole {
			return // closed, reset or timed out: nothing to answer
		}
		buf := h.buf
		if s.h2 != nil && bytes.HasPrefix(buf, h2cPreface) {
			handed = true
			s.h2(c, buf)
			return
		}
		req, ok := parseRequest(buf[:end])
		h.buf = buf[:copy(buf, buf[end+4:])]
		h.headerStart = time.Time{}
		served++
		last := s.cfg.KeepaliveRequests > 0 && served >= s.cfg.KeepaliveRequests
		if !ok.fine() {
			c.Write(plainError(ok.status, ok.text))
			replied = true
			return
		}
		closeAfter := req.close || last
		if now := time.Now(); now.Add(plainWriteTime).Sub(writeDL) > time.Second {
			writeDL = now.Add(plainWriteTime)
			c.SetWriteDeadline(writeDL)
		}
		var err error
		out, err = s.reply(c, out[:0], req, closeAfter)
		if err != nil || closeAfter {
			replied = err == nil
			return
		}
	}
}

// headerReader reads the headers of a connection's requests, each
// bounded in time: plainIdle for its first byte, plainHeaderTime from it.
type headerReader struct {
	c           net.Conn
	buf         []byte
	readDL      time.Time // as last set; moved at most once a second
	headerStart time.Time // the first byte of the request being read
}

// next reads until buf holds a whole header and returns where it ends;
// tooLarge when it passed plainMaxHeader first, ok false when the
// connection ended first.
func (h *headerReader) next() (end int, tooLarge, ok bool) {
	end = bytes.Index(h.buf, crlfcrlf)
	for end < 0 {
		if len(h.buf) >= plainMaxHeader {
			return 0, true, false
		}
		now := time.Now()
		dl := now.Add(plainIdle)
		if len(h.buf) > 0 {
			if h.headerStart.IsZero() {
				h.headerStart = now
			}
			dl = h.headerStart.Add(plainHeaderTime) // a header in pieces: bounded from its first byte
		}
		if dl.Sub(h.readDL) > time.Second || dl.Before(h.readDL) {
			h.c.SetReadDeadline(dl)
			h.readDL = dl
		}
		if len(h.buf) == cap(h.buf) {
			h.buf = append(h.buf, make([]byte, cap(h.buf))...)[:len(h.buf)]
		}
		n, err := h.c.Read(h.buf[len(h.buf):min(cap(h.buf), plainMaxHeader)])
		if n == 0 && err != nil {
			return 0, false, false
		}
		from := max(0, len(h.buf)-3)
		h.buf = h.buf[:len(h.buf)+n]
		if i := bytes.Index(h.buf[from:], crlfcrlf); i >= 0 {
			end = from + i
		}
	}
	return end, false, true
}

// lingerClose ends a connection after a reply that said it closes, as
// net/http does: the FIN first, then a short wait for the client's own
// close, reading what it still sends, so that bytes left unread in the
// socket cannot turn the close into a reset that destroys the reply on
// its way.
func lingerClose(c net.Conn) {
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(plainLinger))
	io.Copy(io.Discard, c)
}

// request is what the server needs of a request.
type request struct {
	head  bool   // HEAD: the header alone
	path  string // without the query
	close bool   // the client asked to close after the reply
}

// status is a request's verdict: 0 to serve it, else the error reply.
type status struct {
	status int
	text   string
}

func (s status) fine() bool { return s.status == 0 }

// parseRequest reads a request's line and header (without the final
// blank line). Requests with a body are refused: no route takes one.
func parseRequest(h []byte) (request, status) {
	var r request
	line, rest, _ := bytes.Cut(h, []byte("\r\n"))
	method, line, ok1 := bytes.Cut(line, []byte(" "))
	target, version, ok2 := bytes.Cut(line, []byte(" "))
	if !ok1 || !ok2 || len(method) == 0 || len(target) == 0 {
		return r, status{400, "Bad Request"}
	}
	var http10 bool
	switch string(version) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		http10, r.close = true, true
	default:
		return r, status{505, "HTTP Version Not Supported"}
	}
	switch string(method) {
	case "GET":
	case "HEAD":
		r.head = true
	default:
		return r, status{405, "Method Not Allowed"}
	}
	if rest, ok := bytes.CutPrefix(target, []byte("http://")); ok {
		target = []byte("/") // absolute-form (RFC 9112 §3.2.2): its path
		if i := bytes.IndexByte(rest, '/'); i >= 0 {
			target = rest[i:]
		}
	}
	if target[0] != '/' {
		return r, status{400, "Bad Request"}
	}
	if q := bytes.IndexByte(target, '?'); q >= 0 {
		target = target[:q]
	}
	r.path = string(target)
	host := false
	for len(rest) > 0 {
		var field []byte
		field, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(field, []byte(":"))
		if !ok || len(name) == 0 || name[0] == ' ' || name[0] == '\t' {
			return r, status{400, "Bad Request"} // no colon, or obsolete line folding
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Host")):
			host = true
		case bytes.EqualFold(name, []byte("Connection")):
			for _, tok := range bytes.Split(value, []byte(",")) {
				tok = bytes.TrimSpace(tok)
				switch {
				case bytes.EqualFold(tok, []byte("close")):
					r.close = true
				case http10 && bytes.EqualFold(tok, []byte("keep-alive")):
					r.close = false
				}
			}
		case bytes.EqualFold(name, []byte("Content-Length")):
			if n, err := strconv.ParseInt(string(value), 10, 64); err != nil || n != 0 {
				return r, status{400, "Bad Request"}
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return r, status{400, "Bad Request"}
		}
	}
	if !host && !http10 {
		return r, status{400, "Bad Request"} // RFC 9112 §3.2, as net/http
	}
	return r, status{}
}

// reply writes the answer to req.
func (s *plainServer) reply(c net.Conn, out []byte, req request, closeAfter bool) ([]byte, error) {
	r := s.route(req.path)
	return s.write(c, out, r, req.head, closeAfter)
}

// pageOf is /pages/N: its own head, then the shared fill from where a
// page of that head's length starts its paragraphs (Page, byte for byte).
func (s *plainServer) pageOf(n int) routed {
	h, ok := s.heads.Load(n)
	if !ok {
		h, _ = s.heads.LoadOrStore(n, []byte(pageHead(n)))
	}
	head := h.([]byte)
	skip := (pageParas(s.cfg.PageSize, len(pageHead(0))) - pageParas(s.cfg.PageSize, len(head))) * len(pagePara)
	tail := s.fill[skip:]
	return routed{200, "text/html; charset=utf-8", head, int64(len(head) + len(tail)), tail}
}

// routed is a route's answer: its status, type, and body (nil: size
// bytes of generated content).
type routed struct {
	code  int
	ctype string
	body  []byte
	size  int64
	tail  []byte // written after body
}

// route answers a GET of path p (Server's routes), for HTTP/1.1 and the
// other versions alike.
func (s *plainServer) route(p string) routed {
	const html, text = "text/html; charset=utf-8", "text/plain; charset=utf-8"
	switch {
	case p == "/" || p == "/index.html":
		return routed{200, html, s.page, int64(len(s.page)), nil}
	case p == "/health":
		return routed{200, text, okBody, int64(len(okBody)), nil}
	}
	notFound := routed{404, text, notFoundBody, int64(len(notFoundBody)), nil}
	if n, found := routeNumber(p, "/obj/"); found {
		if n < 0 || n >= max(s.cfg.Objects, MaxObjects) {
			return notFound
		}
		return routed{200, "image/png", nil, s.cfg.ObjectSize, nil}
	}
	if n, found := routeNumber(p, "/pages/"); found {
		if n < 0 || n > MaxObjects {
			return notFound
		}
		return s.pageOf(n)
	}
	if rest, found := cutPrefix(p, "/files/"); found && rest != "" {
		size, err := units.ParseSize(rest)
		if err != nil || size > MaxFileSize {
			return routed{400, text, badSize, int64(len(badSize)), nil}
		}
		return routed{200, "application/octet-stream", nil, size, nil}
	}
	return notFound
}

var (
	okBody       = []byte("ok\n")
	badSize      = []byte("bad size\n")
	notFoundBody = []byte("404 page not found\n")
)

// routeNumber reads the N of prefix+N (found false: another route).
func routeNumber(p, prefix string) (int, bool) {
	rest, found := cutPrefix(p, prefix)
	if !found || rest == "" {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return -1, true // the route, not a number: not found
	}
	return n, true
}

func cutPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}

// write sends a reply: body, or size bytes of generated content when body
// is nil. Up to plainOneWrite bytes leave in one write.
func (s *plainServer) write(c net.Conn, out []byte, r routed, head, closeAfter bool) ([]byte, error) {
	out = appendHeader(out, r.code, r.ctype, r.size, closeAfter)
	if len(s.altSvc) > 0 { // its field before the header's end
		out = append(append(out[:len(out)-2], s.altSvc...), "\r\n"...)
	}
	if head {
		_, err := c.Write(out)
		return out, err
	}
	if r.body != nil {
		return writeBody(c, out, r.body, r.tail)
	}
	size := r.size
	// Generated: byte o of the body is block[o % len(block)] (content.Fill).
	first := min(int64(plainOneWrite-len(out)), size)
	n := len(out)
	out = append(out, make([]byte, first)...)
	content.Fill(out[n:], 0)
	if _, err := c.Write(out); err != nil {
		return out, err
	}
	block := content.Block()
	for sent := first; sent < size; {
		start := sent % int64(len(block))
		k := min(int64(len(block))-start, size-sent)
		if _, err := c.Write(block[start : start+k]); err != nil {
			return out, err
		}
		sent += k
	}
	return out, nil
}

// writeBody writes a reply's header out, then its body and tail: in one
// write when they are small. It returns out's buffer for the next reply.
func writeBody(c net.Conn, out, body, tail []byte) ([]byte, error) {
	if len(out)+len(body)+len(tail) <= plainOneWrite {
		out = append(append(out, body...), tail...)
		_, err := c.Write(out)
		return out, err
	}
	bufs := net.Buffers{out, body, tail}
	_, err := bufs.WriteTo(c)
	return out, err
}

// appendHeader appends a reply's status line and header, as net/http
// writes them (fields sorted, a Date).
func appendHeader(out []byte, code int, ctype string, size int64, closeAfter bool) []byte {
	out = append(out, "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(code), 10)
	out = append(out, ' ')
	out = append(out, statusText(code)...)
	if closeAfter {
		out = append(out, "\r\nConnection: close"...)
	}
	out = append(out, "\r\nContent-Length: "...)
	out = strconv.AppendInt(out, size, 10)
	out = append(out, "\r\nContent-Type: "...)
	out = append(out, ctype...)
	out = append(out, "\r\nDate: "...)
	out = append(out, httpDate()...)
	return append(out, "\r\n\r\n"...)
}

func statusText(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 404:
		return "Not Found"
	}
	return "Error"
}

// plainError is a reply that ends the connection.
func plainError(code int, text string) []byte {
	body := strconv.Itoa(code) + " " + text + "\n"
	return []byte("HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body)
}

// httpDate is the Date field's value, formatted once a second.
func httpDate() []byte {
	now := time.Now().Unix()
	if d := cachedDate.Load(); d != nil && d.at == now {
		return d.text
	}
	d := &dateText{at: now, text: time.Unix(now, 0).UTC().AppendFormat(nil, nethttpTimeFormat)}
	cachedDate.Store(d)
	return d.text
}

type dateText struct {
	at   int64
	text []byte
}

var cachedDate atomic.Pointer[dateText]

// nethttpTimeFormat is net/http.TimeFormat.
const nethttpTimeFormat = "Mon, 02 Jan 2006 15:04:05 GMT"
