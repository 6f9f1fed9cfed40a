package http

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// HTTP/2's frames as v6lab's client writes and reads them (RFC 9113 §4,
// §6): a 9-byte header (length, type, flags, stream) and its payload.

// h2Preface is what an HTTP/2 client sends first (RFC 9113 §3.4).
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Frame types.
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	framePriority     = 0x2
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9
)

// Frame flags.
const (
	flagEndStream  = 0x1
	flagACK        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

// Settings (RFC 9113 §6.5.2).
const (
	settingHeaderTableSize   = 0x1
	settingEnablePush        = 0x2
	settingMaxStreams        = 0x3
	settingInitialWindowSize = 0x4
	settingMaxFrameSize      = 0x5
	settingMaxHeaderListSize = 0x6
)

// Error codes (RFC 9113 §7).
const (
	errNo            = 0x0
	errProtocol      = 0x1
	errFlowControl   = 0x3
	errFrameSize     = 0x6
	errRefusedStream = 0x7
	errCancel        = 0x8
	errCompression   = 0x9
)

var h2ErrNames = []string{"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
	"SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL",
	"COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"}

// h2ErrName names an error code ("PROTOCOL_ERROR", or "error 0x2a").
func h2ErrName(code uint32) string {
	if int(code) < len(h2ErrNames) {
		return h2ErrNames[code]
	}
	return "error 0x" + strconv.FormatUint(uint64(code), 16)
}

// h2Error is a connection error: the server broke HTTP/2 (its code says
// how), or told the client so.
type h2Error struct {
	code uint32
	msg  string
}

func (e *h2Error) Error() string { return "HTTP/2 " + h2ErrName(e.code) + ": " + e.msg }

func h2Errorf(code uint32, format string, args ...any) error {
	return &h2Error{code: code, msg: fmt.Sprintf(format, args...)}
}

// The client's side of the connection: the frames' largest payload (the
// default, which it never raises), each stream's receive window (Go's
// client's, 4 MiB) and the connection's (1 GiB).
const (
	h2MaxFrame     = 16 << 10
	h2StreamWindow = 4 << 20
	h2ConnWindow   = 1 << 30
	h2MaxWindow    = 1<<31 - 1
)

// appendFrameHeader appends a frame's 9-byte header.
func appendFrameHeader(b []byte, length int, typ, flags byte, stream uint32) []byte {
	return append(b, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(stream>>24), byte(stream>>16), byte(stream>>8), byte(stream))
}

// appendClientPreface appends the preface, the client's SETTINGS (no
// push, its stream window, its header limit) and the connection's
// WINDOW_UPDATE to its 1 GiB window.
func appendClientPreface(b []byte) []byte {
	b = append(b, h2Preface...)
	settings := [][2]uint32{{settingEnablePush, 0}, {settingInitialWindowSize, h2StreamWindow}, {settingMaxHeaderListSize, MaxHeaderBytes}}
	b = appendFrameHeader(b, 6*len(settings), frameSettings, 0, 0)
	for _, s := range settings {
		b = binary.BigEndian.AppendUint16(b, uint16(s[0]))
		b = binary.BigEndian.AppendUint32(b, s[1])
	}
	return appendWindowUpdate(b, 0, h2ConnWindow-65535)
}

// appendRSTStream appends an RST_STREAM of stream with code.
func appendRSTStream(b []byte, stream uint32, code uint32) []byte {
	b = appendFrameHeader(b, 4, frameRSTStream, 0, stream)
	return binary.BigEndian.AppendUint32(b, code)
}

func appendWindowUpdate(b []byte, stream uint32, incr uint32) []byte {
	b = appendFrameHeader(b, 4, frameWindowUpdate, 0, stream)
	return binary.BigEndian.AppendUint32(b, incr)
}

// appendHeaders appends a request's header block as a HEADERS frame
// (END_STREAM: a GET has no body), and CONTINUATION frames when the block
// is larger than the server's frames may be.
func appendHeaders(b []byte, stream uint32, block []byte, maxFrame int) []byte {
	flags := byte(flagEndStream)
	typ := byte(frameHeaders)
	for {
		n := min(len(block), maxFrame)
		f := flags
		if n == len(block) {
			f |= flagEndHeaders
		}
		b = appendFrameHeader(b, n, typ, f, stream)
		b = append(b, block[:n]...)
		block = block[n:]
		if len(block) == 0 {
			return b
		}
		typ, flags = frameContinuation, 0
	}
}

// requestBlock is a GET's HPACK header block, made once per URI and sent
// verbatim for every request of it: static-table indices for the method,
// the scheme and a path of "/", the rest literals without indexing, so no
// block ever depends on the state of the server's decoding table.
func requestBlock(https bool, authority, uri, userAgent string) []byte {
	b := make([]byte, 0, 16+len(authority)+len(uri)+len(userAgent))
	b = append(b, 0x80|2) // :method GET
	if https {
		b = append(b, 0x80|7) // :scheme https
	} else {
		b = append(b, 0x80|6) // :scheme http
	}
	if uri == "/" {
		b = append(b, 0x80|4) // :path /
	} else {
		b = appendLiteral(b, 4, uri)
	}
	b = appendLiteral(b, 1, authority)
	b = appendLiteral(b, 58, userAgent) // user-agent
	return appendLiteral(b, 19, "*/*")  // accept
}

// appendLiteral appends a literal field without indexing whose name is
// the static table's entry name, its value not Huffman-coded.
func appendLiteral(b []byte, name int, value string) []byte {
	b = appendHPACKInt(b, 4, 0, name)
	b = appendHPACKInt(b, 7, 0, len(value))
	return append(b, value...)
}

// appendHPACKInt appends an HPACK integer of an n-bit prefix (RFC 7541
// §5.1) whose first byte's other bits are first's.
func appendHPACKInt(b []byte, n uint, first byte, i int) []byte {
	max := 1<<n - 1
	if i < max {
		return append(b, first|byte(i))
	}
	b = append(b, first|byte(max))
	for i -= max; i >= 128; i >>= 7 {
		b = append(b, byte(i&0x7f|0x80))
	}
	return append(b, byte(i))
}

// unpad removes a padded frame's padding (RFC 9113 §6.1).
func unpad(p []byte, flags byte) ([]byte, error) {
	if flags&flagPadded == 0 {
		return p, nil
	}
	if len(p) == 0 || int(p[0]) > len(p)-1 {
		return nil, h2Errorf(errProtocol, "padding longer than its frame")
	}
	return p[1 : len(p)-int(p[0])], nil
}
