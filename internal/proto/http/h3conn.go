package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"v6lab/internal/gen/load"

	"github.com/quic-go/qpack"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
	"golang.org/x/net/http/httpguts"
)

// v6lab's own HTTP/3 request layer (RFC 9114) on quic-go's streams: a
// request is a stream whose HEADERS frame (its QPACK block encoded once
// per method and URI, static table only) is written with the stream's FIN,
// and whose reply's frames are read as they come: HEADERS decoded with
// qpack, DATA handed to the reader. quic-go's http3 ClientConn did the
// same with a goroutine, a cancel context, an http.Request and header maps
// per request; a kept connection's request here costs a quarter of the
// client's time less (docs/PERFORMANCE.md, h3-vs-oha).
//
// The connection opens its control stream with its SETTINGS (no dynamic
// QPACK table, so the server's header blocks refer to the static table
// alone), reads the server's control stream (a GOAWAY retires the
// connection) and drains its QPACK streams; it accepts no push.

// h3Conn is one HTTP/3 connection's requests.
type h3Conn struct {
	conn      *quic.Conn
	authority string // :authority (the URL's host and port)
	scheme    string
	ua        string
	mu        sync.Mutex
	frames    map[h3Key][]byte // HEADERS frames of the requests made
	// last is the last request's frame: a kept connection's transactions
	// request the same page, found without the lock and the map.
	last   atomic.Pointer[h3Made]
	ready  atomic.Bool // the handshake was seen complete
	goaway atomic.Bool // the server sent GOAWAY: no new request
}

type h3Key struct{ method, uri string }

// h3Made is a request's HEADERS frame.
type h3Made struct {
	h3Key
	frame []byte
}

// HTTP/3 frame and stream types (RFC 9114 section 7.2, 6.2).
const (
	h3FrameData     = 0x0
	h3FrameHeaders  = 0x1
	h3FrameSettings = 0x4
	h3FrameGoAway   = 0x7

	h3StreamControl      = 0x0
	h3StreamPush         = 0x1
	h3StreamQPACKEncoder = 0x2
	h3StreamQPACKDecoder = 0x3

	h3SettingMaxFieldSection = 0x6
)

// newH3Conn starts HTTP/3 on conn, for requests to u's host with user
// agent ua: the control stream and its SETTINGS, the server's streams
// read on a goroutine of the connection's.
func newH3Conn(conn *quic.Conn, u *url.URL, ua string) (*h3Conn, error) {
	host, err := httpguts.PunycodeHostPort(u.Host)
	if err != nil {
		return nil, err
	}
	if ua == "" {
		ua = "v6lab"
	}
	h := &h3Conn{conn: conn, authority: host, scheme: u.Scheme, ua: ua}
	ctrl, err := conn.OpenUniStream()
	if err != nil {
		return nil, fmt.Errorf("http3: control stream: %w", err)
	}
	b := quicvarint.Append(nil, h3StreamControl)
	b = quicvarint.Append(b, h3FrameSettings)
	b = quicvarint.Append(b, uint64(quicvarint.Len(h3SettingMaxFieldSection)+quicvarint.Len(MaxHeaderBytes)))
	b = quicvarint.Append(b, h3SettingMaxFieldSection)
	b = quicvarint.Append(b, MaxHeaderBytes)
	if _, err := ctrl.Write(b); err != nil {
		return nil, fmt.Errorf("http3: SETTINGS: %w", err)
	}
	go h.acceptUni()
	return h, nil
}

// alive says whether the connection takes new requests.
func (h *h3Conn) alive() bool { return h.conn.Context().Err() == nil && !h.goaway.Load() }

// acceptUni reads the server's unidirectional streams until the
// connection ends.
func (h *h3Conn) acceptUni() {
	for {
		str, err := h.conn.AcceptUniStream(context.Background())
		if err != nil {
			return
		}
		go h.uni(str)
	}
}

// uni reads one of the server's unidirectional streams: its control
// stream (SETTINGS, GOAWAY) and its QPACK streams (drained: with no
// dynamic table they carry nothing v6lab uses); a push stream, which
// v6lab never allowed, and unknown ones are refused.
func (h *h3Conn) uni(str *quic.ReceiveStream) {
	r := quicvarint.NewReader(str)
	typ, err := quicvarint.Read(r)
	if err != nil {
		return
	}
	switch typ {
	case h3StreamControl:
		h.control(r)
	case h3StreamQPACKEncoder, h3StreamQPACKDecoder:
		_, _ = io.Copy(io.Discard, str)
	case h3StreamPush:
		h.conn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeIDError), "")
	default:
		str.CancelRead(quic.StreamErrorCode(http3.ErrCodeStreamCreationError))
	}
}

// control reads the server's control stream: a GOAWAY retires the
// connection (its requests in flight end as the server lets them); the
// stream's end is a connection error (RFC 9114 section 6.2.1).
func (h *h3Conn) control(r quicvarint.Reader) {
	for {
		typ, err := quicvarint.Read(r)
		if err != nil {
			break
		}
		n, err := quicvarint.Read(r)
		if err != nil {
			break
		}
		if typ == h3FrameGoAway {
			h.goaway.Store(true)
		}
		if _, err := io.CopyN(io.Discard, r, int64(n)); err != nil {
			break
		}
	}
	if h.conn.Context().Err() == nil {
		h.conn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeClosedCriticalStream), "")
	}
}

// headersFrame is the HEADERS frame of a request of uri (a request URI)
// with method, encoded once per connection.
func (h *h3Conn) headersFrame(method, uri string) ([]byte, error) {
	k := h3Key{method, uri}
	if l := h.last.Load(); l != nil && l.h3Key == k {
		return l.frame, nil
	}
	h.mu.Lock()
	f, ok := h.frames[k]
	h.mu.Unlock()
	if ok {
		h.last.Store(&h3Made{k, f})
		return f, nil
	}
	ref, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, fmt.Errorf("bad object reference %q: %w", uri, err)
	}
	var block qpackBlock
	enc := qpack.NewEncoder(&block)
	for _, hf := range []qpack.HeaderField{{Name: ":authority", Value: h.authority}, {Name: ":method", Value: method},
		{Name: ":path", Value: ref.RequestURI()}, {Name: ":scheme", Value: h.scheme},
		{Name: "user-agent", Value: h.ua}, {Name: "accept", Value: "*/*"}} {
		if err := enc.WriteField(hf); err != nil {
			return nil, err
		}
	}
	f = quicvarint.Append(nil, h3FrameHeaders)
	f = quicvarint.Append(f, uint64(len(block)))
	f = append(f, block...)
	h.mu.Lock()
	if h.frames == nil {
		h.frames = map[h3Key][]byte{}
	}
	if len(h.frames) < maxRequests {
		h.frames[k] = f
	}
	h.mu.Unlock()
	h.last.Store(&h3Made{k, f})
	return f, nil
}

// qpackBlock collects an encoder's writes.
type qpackBlock []byte

func (b *qpackBlock) Write(p []byte) (int, error) { *b = append(*b, p...); return len(p), nil }

// RoundTrip sends req (its method and URI: the authority is the
// connection's) and returns the reply, its body read from the stream.
func (h *h3Conn) RoundTrip(req *nethttp.Request) (*nethttp.Response, error) {
	method := req.Method
	if method == "" {
		method = nethttp.MethodGet
	}
	var first func()
	if t := httptrace.ContextClientTrace(req.Context()); t != nil {
		first = t.GotFirstResponseByte
	}
	return h.get(req.Context(), req.URL.RequestURI(), method, true, first)
}

// get sends a request of uri with method (http3.MethodGet0RTT: GET, sent
// in 0-RTT data when the connection resumes with early data; any other
// waits for the handshake) and reads the reply's header (its Content-Type
// kept with wantType; first, when not nil, called at its first byte). The
// reply's body must be closed.
func (h *h3Conn) get(ctx context.Context, uri, method string, wantType bool, first func()) (*nethttp.Response, error) {
	if method == http3.MethodGet0RTT {
		method = nethttp.MethodGet
	} else if !h.ready.Load() {
		select {
		case <-h.conn.HandshakeComplete():
			h.ready.Store(true)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	frame, err := h.headersFrame(method, uri)
	if err != nil {
		return nil, err
	}
	if h.goaway.Load() {
		return nil, errors.New("http3: the server sent GOAWAY")
	}
	str, err := h.conn.OpenStreamSync(ctx)
	if err != nil {
		return nil, h.ctxErr(ctx, err)
	}
	rp := newH3Reply(ctx, h, str, first)
	if _, err := str.Write(frame); err != nil {
		return nil, rp.fail(err)
	}
	// The request's end (FIN). A server that replied from the HEADERS
	// alone may have stopped the request's side already (STOP_SENDING,
	// H3_NO_ERROR: RFC 9114 section 4.1): Close fails then, and the reply
	// is still to be read.
	_ = str.Close()
	if err := rp.readHeader(wantType); err != nil {
		return nil, rp.fail(err)
	}
	return &rp.resp, nil
}

// ctxErr is ctx's error when it ended (the stream was cancelled for it),
// else err.
func (h *h3Conn) ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// h3Reply is a request's stream and its reply: the header read into resp,
// the body read through resp.Body (the h3Reply itself).
type h3Reply struct {
	resp  nethttp.Response
	ctx   context.Context
	h     *h3Conn
	str   *quic.Stream
	stop  func() bool // ends the cancellation by ctx
	first func()      // called at the reply's first byte, then nil
	buf   *[h3BufSize]byte
	r, w  int    // buf[r:w] is read, not yet used
	left  uint64 // bytes of the current DATA frame not yet read
	body  int64  // body bytes read
	done  bool   // the stream ended where a frame may end
	err   error
}

// h3BufSize is a reply's read buffer: a page's header and first DATA.
const h3BufSize = 16 << 10

var h3Bufs = sync.Pool{New: func() any { return new([h3BufSize]byte) }}

// newH3Reply is the reply to come on str, which ctx's end cancels; first,
// when not nil, is called at its first byte.
func newH3Reply(ctx context.Context, h *h3Conn, str *quic.Stream, first func()) *h3Reply {
	rp := &h3Reply{ctx: ctx, h: h, str: str, first: first}
	rp.stop = load.AfterFunc(ctx, func() {
		str.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
		str.CancelWrite(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
	})
	rp.buf = h3Bufs.Get().(*[h3BufSize]byte)
	return rp
}

// fail ends the request on err: the stream is cancelled both ways.
func (rp *h3Reply) fail(err error) error {
	rp.str.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
	rp.str.CancelWrite(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
	rp.release()
	return rp.h.ctxErr(rp.ctx, err)
}

// release gives the buffer back and ends the cancellation by ctx.
func (rp *h3Reply) release() {
	if rp.buf != nil {
		rp.stop()
		h3Bufs.Put(rp.buf)
		rp.buf = nil
	}
}

// Close ends the body: a reply not read to its end is cancelled.
func (rp *h3Reply) Close() error {
	if rp.buf == nil {
		return nil
	}
	if !rp.done {
		rp.str.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestCanceled))
	}
	rp.release()
	return nil
}

// fill reads what the stream has into the buffer (at least one byte, or
// an error; io.EOF at the stream's end).
func (rp *h3Reply) fill() error {
	if rp.r > 0 {
		rp.w = copy(rp.buf[:], rp.buf[rp.r:rp.w])
		rp.r = 0
	}
	if rp.w == len(rp.buf) {
		return errors.New("http3: frame header beyond the buffer")
	}
	n, err := rp.str.Read(rp.buf[rp.w:])
	if n > 0 && rp.first != nil {
		rp.first()
		rp.first = nil
	}
	rp.w += n
	if n > 0 {
		return nil
	}
	return err
}

// varint reads a QUIC variable-length integer from the buffer, filling
// it as needed; atStart says an io.EOF there is the stream's clean end.
func (rp *h3Reply) varint(atStart bool) (uint64, error) {
	for {
		if rp.r < rp.w {
			if l := 1 << (rp.buf[rp.r] >> 6); rp.w-rp.r >= l {
				v, n, err := quicvarint.Parse(rp.buf[rp.r:rp.w])
				rp.r += n
				return v, err
			}
		}
		err := rp.fill()
		if err == io.EOF && (!atStart || rp.r < rp.w) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, err
		}
	}
}

// frame reads the next frame's type and length (io.EOF: the stream ended
// between frames).
func (rp *h3Reply) frame() (typ, n uint64, err error) {
	if typ, err = rp.varint(true); err != nil {
		return 0, 0, err
	}
	n, err = rp.varint(false)
	return typ, n, err
}

// payload returns the next n bytes of the stream, the buffer's when they
// fit in it.
func (rp *h3Reply) payload(n uint64) ([]byte, error) {
	if n > uint64(len(rp.buf)) {
		p := make([]byte, n)
		m := copy(p, rp.buf[rp.r:rp.w])
		rp.r += m
		if _, err := io.ReadFull(rp.str, p[m:]); err != nil {
			return nil, noEOF(err)
		}
		return p, nil
	}
	for uint64(rp.w-rp.r) < n {
		if err := rp.fill(); err != nil {
			return nil, noEOF(err)
		}
	}
	p := rp.buf[rp.r : rp.r+int(n)]
	rp.r += int(n)
	return p, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// skip passes n bytes of the stream.
func (rp *h3Reply) skip(n uint64) error {
	for n > 0 {
		if rp.r == rp.w {
			if err := rp.fill(); err != nil {
				return noEOF(err)
			}
		}
		m := min(n, uint64(rp.w-rp.r))
		rp.r += int(m)
		n -= m
	}
	return nil
}
