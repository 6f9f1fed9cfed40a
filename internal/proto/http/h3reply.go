package http

import (
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"strconv"
)

// The reply side of v6lab's HTTP/3 requests (h3conn.go): a reply's
// frames read from its stream.

// maxInterim is how many informational (1xx) replies may come before the
// final one (quic-go's http3 allows as many).
const maxInterim = 5

// h3Forbidden says whether a frame type may not come on a request stream
// (RFC 9114 section 7.2: the control stream's frames, PUSH_PROMISE, which
// v6lab never allows, and HTTP/2's types that HTTP/3 reserves).
func h3Forbidden(typ uint64) bool {
	switch typ {
	case 0x2, 0x3, 0x4, 0x5, 0x6, 0x7, 0x8, 0x9, 0xd:
		return true
	}
	return false
}

// readHeader reads the reply's header (the final HEADERS frame, after at
// most maxInterim informational ones) into rp.resp; frames of unknown
// types are skipped. wantType: keep the Content-Type in resp.Header.
func (rp *h3Reply) readHeader(wantType bool) error {
	for interim := 0; ; {
		typ, n, err := rp.frame()
		if err == io.EOF {
			return errors.New("http3: the stream ended before the reply's HEADERS")
		}
		if err != nil {
			return err
		}
		switch {
		case typ == h3FrameData || h3Forbidden(typ):
			return fmt.Errorf("http3: frame of type %#x before the reply's HEADERS", typ)
		case typ != h3FrameHeaders:
			if err := rp.skip(n); err != nil {
				return err
			}
			continue
		}
		if n > MaxHeaderBytes {
			return fmt.Errorf("http3: a reply header of %d bytes exceeds the %d-byte limit", n, MaxHeaderBytes)
		}
		block, err := rp.payload(n)
		if err != nil {
			return err
		}
		if err := rp.decode(block, wantType); err != nil {
			return err
		}
		if rp.resp.StatusCode >= 200 {
			return nil
		}
		if interim++; interim > maxInterim {
			return fmt.Errorf("http3: more than %d informational replies", maxInterim)
		}
	}
}

// decode reads a header block (QPACK, static table only) into rp.resp:
// the status, the Content-Length and, with wantType, the Content-Type.
// Only those values are decoded (Huffman): the others (a server's Date,
// 29 characters) are passed over, their names checked.
func (rp *h3Reply) decode(block []byte, wantType bool) error {
	status, regular := 0, false
	cl := int64(-1)
	var ctype string
	var err error
	var f qpackField
	q := newQPACKFields(block)
	for err == nil && q.next(&f) {
		if f.name[0] == ':' {
			if regular || f.name != ":status" || status != 0 {
				err = fmt.Errorf("unexpected pseudo-header %s", f.name)
				break
			}
			status, err = statusOf(&f)
			continue
		}
		regular = true
		switch {
		case f.name == "content-length":
			cl, err = contentLength(&f, cl)
		case f.name == "content-type" && wantType:
			ctype, err = f.val()
		}
	}
	if err == nil {
		err = q.err
	}
	if err != nil {
		return fmt.Errorf("http3: reply header: %w", err)
	}
	if status == 0 {
		return errors.New("http3: reply header without :status")
	}
	r := &rp.resp
	r.StatusCode, r.ContentLength, r.Body = status, cl, rp
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/3.0", 3, 0
	r.Status = "200 OK"
	if status != nethttp.StatusOK {
		r.Status = strconv.Itoa(status) + " " + nethttp.StatusText(status)
	}
	if wantType && ctype != "" {
		r.Header = nethttp.Header{"Content-Type": {ctype}}
	}
	return nil
}

// statusOf is a :status field's value.
func statusOf(f *qpackField) (int, error) {
	v, err := f.val()
	if err != nil {
		return 0, err
	}
	status, err := strconv.Atoi(v)
	if err != nil || len(v) != 3 || status < 100 {
		return 0, fmt.Errorf("bad status %q", v)
	}
	return status, nil
}

// contentLength is a content-length field's value, which must be the one
// seen before, if any (cl, -1: none).
func contentLength(f *qpackField, cl int64) (int64, error) {
	s, err := f.val()
	if err != nil {
		return cl, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || (cl >= 0 && v != cl) {
		return cl, fmt.Errorf("bad content-length %q", s)
	}
	return v, nil
}

// Read reads the reply's body: the DATA frames' payloads (frames of
// unknown types skipped, trailers passed), io.EOF at the stream's end.
func (rp *h3Reply) Read(p []byte) (int, error) {
	if rp.err != nil {
		return 0, rp.err
	}
	for rp.left == 0 {
		if err := rp.nextData(); err != nil {
			rp.err = err
			return 0, err
		}
	}
	if uint64(len(p)) > rp.left {
		p = p[:rp.left]
	}
	var n int
	if rp.r < rp.w {
		n = copy(p, rp.buf[rp.r:rp.w])
		rp.r += n
	} else {
		var err error
		n, err = rp.str.Read(p)
		if n == 0 && err != nil {
			rp.err = rp.h.ctxErr(rp.ctx, noEOF(err))
			return 0, rp.err
		}
	}
	rp.left -= uint64(n)
	rp.body += int64(n)
	if cl := rp.resp.ContentLength; cl >= 0 && rp.body > cl {
		rp.err = fmt.Errorf("http3: a body beyond its content-length of %d bytes", cl)
		return 0, rp.err
	}
	return n, nil
}

// discard reads the body to its end and drops it, as readReply does with
// a body it neither keeps nor checks: the DATA frames' bytes are read
// into the reply's own buffer and passed, with no copy to a reader's
// buffer and nothing allocated. It returns the body's length so far,
// stopping once that is over limit.
func (rp *h3Reply) discard(limit int64) (int64, error) {
	for rp.err == nil && rp.body <= limit {
		if rp.left == 0 {
			rp.err = rp.nextData()
			continue
		}
		if rp.r == rp.w {
			if err := rp.fill(); err != nil {
				rp.err = rp.h.ctxErr(rp.ctx, noEOF(err))
				continue
			}
		}
		m := min(rp.left, uint64(rp.w-rp.r))
		rp.r += int(m)
		rp.left -= m
		rp.body += int64(m)
		if cl := rp.resp.ContentLength; cl >= 0 && rp.body > cl {
			rp.err = fmt.Errorf("http3: a body beyond its content-length of %d bytes", cl)
		}
	}
	if rp.err == io.EOF {
		return rp.body, nil
	}
	return rp.body, rp.err
}

// nextData reads up to the next DATA frame's payload (io.EOF: the
// stream's end, the body complete).
func (rp *h3Reply) nextData() error {
	typ, n, err := rp.frame()
	switch {
	case err == io.EOF:
		rp.done = true
		if cl := rp.resp.ContentLength; cl >= 0 && rp.body != cl {
			return fmt.Errorf("http3: a body of %d bytes, its content-length %d: %w", rp.body, cl, io.ErrUnexpectedEOF)
		}
		return io.EOF
	case err != nil:
		return rp.h.ctxErr(rp.ctx, err)
	case typ == h3FrameData:
		rp.left = n
		return nil
	case h3Forbidden(typ):
		return fmt.Errorf("http3: frame of type %#x in a reply", typ)
	}
	return rp.h.ctxErr(rp.ctx, rp.skip(n)) // trailers (HEADERS), unknown types
}
