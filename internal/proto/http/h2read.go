package http

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	nethttp "net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http2/hpack"

	"v6lab/internal/gen/content"
)

// h2reader is what the transaction reading an h2conn keeps: its buffer,
// its HPACK decoder (the connection's one table), the connection's
// receive window, and the header block it is reading.
type h2reader struct {
	br       *bufio.Reader
	dec      *hpack.Decoder
	settings bool  // the server's first SETTINGS came
	recvWin  int64 // what the server may still send on the connection
	unacked  int64 // taken since the last WINDOW_UPDATE

	blockOpen  bool // a header block is under way (CONTINUATION to come)
	blockID    uint32
	blockEnd   bool      // its HEADERS had END_STREAM
	blockOf    *h2stream // nil: a stream no longer read (decoded all the same)
	blockBytes int
	listBytes  int
	f          h2fields
}

// h2fields are the header fields of a reply the client reads.
type h2fields struct {
	status int
	length int64
	html   bool
	tooBig bool
}

// emit takes one decoded header field.
func (r *h2reader) emit(f hpack.HeaderField) {
	r.listBytes += len(f.Name) + len(f.Value) + 32
	if r.listBytes > MaxHeaderBytes {
		r.f.tooBig = true
		return
	}
	switch f.Name {
	case ":status":
		r.f.status = -1
		if n, err := strconv.Atoi(f.Value); err == nil && len(f.Value) == 3 && n >= 100 {
			r.f.status = n
		}
	case "content-length":
		r.f.length = -1
		if n, err := strconv.ParseInt(f.Value, 10, 64); err == nil && n >= 0 {
			r.f.length = n
		}
	case "content-type":
		r.f.html = strings.HasPrefix(f.Value, "text/html")
	}
}

// frame does what a frame says.
func (h *h2conn) frame(typ, flags byte, id uint32, p []byte) error {
	if id != 0 {
		h.quiet = false // a byte of a reply came
	}
	if h.rd.blockOpen && (typ != frameContinuation || id != h.rd.blockID) {
		return h2Errorf(errProtocol, "a frame of type %d in the middle of stream %d's header block", typ, h.rd.blockID)
	}
	switch typ {
	case frameData:
		return h.data(flags, id, p)
	case frameHeaders:
		return h.headers(flags, id, p)
	case frameContinuation:
		if !h.rd.blockOpen {
			return h2Errorf(errProtocol, "CONTINUATION without HEADERS on stream %d", id)
		}
		return h.fragment(flags, p)
	case frameSettings:
		return h.settings(flags, id, p)
	case framePing:
		if id != 0 || len(p) != 8 {
			return h2Errorf(errProtocol, "a PING of %d bytes on stream %d", len(p), id)
		}
		if flags&flagACK == 0 {
			h.send(append(appendFrameHeader(nil, 8, framePing, flagACK, 0), p...))
		}
	case frameGoAway:
		return h.goAway(id, p)
	case frameRSTStream:
		if id == 0 || len(p) != 4 {
			return h2Errorf(errProtocol, "RST_STREAM of %d bytes on stream %d", len(p), id)
		}
		if s := h.stream(id); s != nil {
			h.reset(s, binary.BigEndian.Uint32(p))
		} else if !h.opened(id) {
			return h2Errorf(errProtocol, "RST_STREAM on stream %d, which the client never opened", id)
		}
	case frameWindowUpdate:
		return h.windowUpdate(id, p)
	case framePushPromise:
		return h2Errorf(errProtocol, "PUSH_PROMISE, though the client's SETTINGS disabled push")
	}
	return nil // PRIORITY, and frames of unknown types, are ignored (RFC 9113 §4.1, §5.5)
}

// reset ends stream s the server reset with code: REFUSED_STREAM says
// it did not process it (RFC 9113 §8.7): it goes again on a new
// connection, with the transaction's other streams once they end.
func (h *h2conn) reset(s *h2stream, code uint32) {
	why := fmt.Sprintf("HTTP/2: the server reset stream %d of %s (%s)", s.id, s.uri, h2ErrName(code))
	if code != errRefusedStream {
		h.endStream(s, errors.New(why))
		return
	}
	h.mu.Lock()
	h.unprocessed(s, "REFUSED_STREAM", why)
	more := h.queued()
	h.mu.Unlock()
	if more {
		h.open()
	}
}

// headers begins a header block: a reply's headers, an informational
// reply's, or its trailers.
func (h *h2conn) headers(flags byte, id uint32, p []byte) error {
	p, err := unpad(p, flags)
	if err != nil {
		return err
	}
	if flags&flagPriority != 0 {
		if len(p) < 5 {
			return h2Errorf(errFrameSize, "HEADERS too short for its priority")
		}
		p = p[5:]
	}
	s := h.stream(id)
	if s == nil && !h.opened(id) {
		return h2Errorf(errProtocol, "HEADERS on stream %d, which the client never opened", id)
	}
	r := &h.rd
	r.blockOpen, r.blockID, r.blockEnd, r.blockOf = true, id, flags&flagEndStream != 0, s
	r.blockBytes, r.listBytes, r.f = 0, 0, h2fields{length: -1}
	return h.fragment(flags, p)
}

// fragment decodes a piece of the header block under way.
func (h *h2conn) fragment(flags byte, p []byte) error {
	r := &h.rd
	r.blockBytes += len(p)
	_, err := r.dec.Write(p)
	if err != nil && !errors.Is(err, hpack.ErrStringLength) {
		return h2Errorf(errCompression, "the header block of stream %d: %v", r.blockID, err)
	}
	if err != nil || r.f.tooBig || r.blockBytes > MaxHeaderBytes {
		return fmt.Errorf("HTTP/2: response header larger than %d bytes: %w", MaxHeaderBytes, ErrTooLarge)
	}
	if flags&flagEndHeaders == 0 {
		return nil
	}
	r.blockOpen = false
	if err := r.dec.Close(); err != nil {
		return h2Errorf(errCompression, "the header block of stream %d: %v", r.blockID, err)
	}
	if s := r.blockOf; s != nil {
		return h.gotHeaders(s, r.f, r.blockEnd)
	}
	return nil
}

// gotHeaders takes a whole header block of stream s.
func (h *h2conn) gotHeaders(s *h2stream, f h2fields, end bool) error {
	switch {
	case s.headers: // trailers
		if !end {
			return h2Errorf(errProtocol, "a second header block on stream %d without END_STREAM", s.id)
		}
		h.finish(s)
		return nil
	case f.status <= 0:
		h.endStream(s, fmt.Errorf("HTTP/2: the reply to %s has no valid :status", s.uri))
		return nil
	case f.status < 200:
		if end {
			h.endStream(s, fmt.Errorf("HTTP/2: the reply to %s ended at an informational %d", s.uri, f.status))
		}
		return nil // the final headers follow
	}
	s.headers = true
	if !s.object {
		s.first = time.Now() // the page's: the transaction's first byte
	}
	s.status, s.length, s.html = f.status, f.length, f.html
	maxBody := s.maxBody
	switch {
	case f.status != nethttp.StatusOK:
		h.endStream(s, fmt.Errorf("status %d %s for %s", f.status, nethttp.StatusText(f.status), s.uri))
		return nil
	case f.length > maxBody:
		h.endStream(s, fmt.Errorf("body of %d bytes for %s exceeds the %d-byte limit: %w", f.length, s.uri, maxBody, ErrTooLarge))
		return nil
	}
	if s.keep && s.html {
		s.body = s.tx.r.pageBody(f.length)
	}
	if end {
		h.finish(s)
	}
	return nil
}

// finish ends a stream whose last frame came.
func (h *h2conn) finish(s *h2stream) {
	var err error
	if s.length >= 0 && s.n != s.length {
		err = fmt.Errorf("HTTP/2: the reply to %s ended after %d of its %d bytes", s.uri, s.n, s.length)
	}
	h.endStream(s, err)
}

// data takes a DATA frame: the connection's and its stream's windows
// shrink by its length and open again, a WINDOW_UPDATE sent each time a
// quarter of either was taken (a page of small objects sends none).
func (h *h2conn) data(flags byte, id uint32, p []byte) error {
	r := &h.rd
	n := int64(len(p))
	if n > r.recvWin {
		return h2Errorf(errFlowControl, "DATA of %d bytes, over the connection's window of %d", n, r.recvWin)
	}
	r.recvWin -= n
	r.unacked += n
	var wu []byte
	if r.unacked >= h2ConnWindow/4 {
		wu = appendWindowUpdate(wu, 0, uint32(r.unacked))
		r.recvWin, r.unacked = r.recvWin+r.unacked, 0
	}
	body, err := unpad(p, flags)
	if err != nil {
		return err
	}
	s := h.stream(id)
	if s == nil {
		if id == 0 || !h.opened(id) {
			return h2Errorf(errProtocol, "DATA on stream %d, which the client never opened", id)
		}
		if len(wu) > 0 {
			h.send(wu)
		}
		return nil // a stream the client no longer reads
	}
	if !s.headers {
		return h2Errorf(errProtocol, "DATA before the reply's headers on stream %d", id)
	}
	if n > s.recvWin {
		return h2Errorf(errFlowControl, "DATA of %d bytes, over stream %d's window of %d", n, id, s.recvWin)
	}
	s.recvWin -= n
	end := flags&flagEndStream != 0
	if s.unacked += n; !end && s.unacked >= h2StreamWindow/4 {
		wu = appendWindowUpdate(wu, id, uint32(s.unacked))
		s.recvWin, s.unacked = s.recvWin+s.unacked, 0
	}
	if len(wu) > 0 {
		h.send(wu)
	}
	if err := h.take(s, body); err != nil {
		h.endStream(s, err)
	} else if end {
		h.finish(s)
	}
	return nil
}

// take takes a piece of a reply's body: kept (the page's, when HTML),
// checked, or counted.
func (h *h2conn) take(s *h2stream, body []byte) error {
	s.n += int64(len(body))
	if s.n > s.maxBody {
		return fmt.Errorf("body of %s exceeds the %d-byte limit: %w", s.uri, s.maxBody, ErrTooLarge)
	}
	switch {
	case s.keep && s.html:
		if room := MaxPageParse - len(s.body); room > 0 {
			s.body = append(s.body, body[:min(len(body), room)]...)
		}
	case s.check != nil:
		if _, err := s.check.Write(body); errors.Is(err, content.ErrCorrupt) {
			return fmt.Errorf("body of %s: %w", s.uri, err)
		}
	}
	return nil
}

// settings takes the server's SETTINGS (its ACK goes with the next
// requests, or at the transaction's end, or once what came while idle was
// read), or its ACK of the client's.
func (h *h2conn) settings(flags byte, id uint32, p []byte) error {
	if id != 0 || len(p)%6 != 0 || (flags&flagACK != 0 && len(p) != 0) {
		return h2Errorf(errFrameSize, "SETTINGS of %d bytes on stream %d", len(p), id)
	}
	h.rd.settings = true
	if flags&flagACK != 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for ; len(p) > 0; p = p[6:] {
		v := binary.BigEndian.Uint32(p[2:])
		switch binary.BigEndian.Uint16(p) {
		case settingMaxStreams:
			h.maxStreams = v
		case settingInitialWindowSize:
			if v > h2MaxWindow {
				return h2Errorf(errFlowControl, "SETTINGS_INITIAL_WINDOW_SIZE %d", v)
			}
			for _, s := range h.streams {
				s.sendWin += int64(v) - h.sendInitial
			}
			h.sendInitial = int64(v)
		case settingMaxFrameSize:
			if v < h2MaxFrame || v > 1<<24-1 {
				return h2Errorf(errProtocol, "SETTINGS_MAX_FRAME_SIZE %d", v)
			}
			h.maxFrame = int(v)
		case settingEnablePush:
			if v > 1 {
				return h2Errorf(errProtocol, "SETTINGS_ENABLE_PUSH %d", v)
			}
		}
	}
	h.pending = appendFrameHeader(h.pending, 0, frameSettings, flagACK, 0)
	return nil
}

// windowUpdate opens the client's send windows (it sends no DATA: they
// are only checked).
func (h *h2conn) windowUpdate(id uint32, p []byte) error {
	if len(p) != 4 {
		return h2Errorf(errFrameSize, "WINDOW_UPDATE of %d bytes", len(p))
	}
	incr := int64(binary.BigEndian.Uint32(p) & (1<<31 - 1))
	if incr == 0 {
		return h2Errorf(errProtocol, "WINDOW_UPDATE of 0 on stream %d", id)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	w := &h.sendWindow
	if id != 0 {
		w = nil
		for _, s := range h.streams {
			if s.id == id {
				w = &s.sendWin
			}
		}
		if w == nil {
			return nil // a stream that ended
		}
	}
	if *w += incr; *w > h2MaxWindow {
		return h2Errorf(errFlowControl, "WINDOW_UPDATE beyond 2^31-1 on stream %d", id)
	}
	return nil
}

// goAway takes the server's GOAWAY: the streams it did not process, and
// those not yet requested, are the transaction's to send again on a new
// connection (h2Again), the others go on, and no stream opens after.
func (h *h2conn) goAway(id uint32, p []byte) error {
	if id != 0 || len(p) < 8 {
		return h2Errorf(errProtocol, "GOAWAY of %d bytes on stream %d", len(p), id)
	}
	last := binary.BigEndian.Uint32(p) & (1<<31 - 1)
	code := binary.BigEndian.Uint32(p[4:])
	debug := ""
	if d := p[8:]; len(d) > 0 {
		debug = fmt.Sprintf(", %q", d[:min(len(d), 200)])
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.goaway = "GOAWAY (" + h2ErrName(code) + debug + ")"
	h.goneAs = fmt.Sprintf("GOAWAY (%s%s, last stream %d)", h2ErrName(code), debug, last)
	what := "GOAWAY"
	if h.sendErr != nil { // read after a write failed: the server had closed
		what = "GOAWAY and the server's close"
	}
	var gone []*h2stream
	for _, s := range h.streams {
		if s.id > last {
			gone = append(gone, s)
		}
	}
	for _, s := range gone {
		h.unprocessed(s, what, fmt.Sprintf("HTTP/2: the server sent %s before it processed stream %d of %s", h.goneAs, s.id, s.uri))
	}
	for _, tx := range h.txs {
		if len(tx.queue) == 0 {
			continue
		}
		why := h.refuses(tx.queue).Error()
		for _, s := range tx.queue {
			h.unprocessed(s, what, why)
		}
		tx.queue = nil
	}
	return nil
}
