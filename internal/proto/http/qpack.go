package http

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/quic-go/qpack"
	"golang.org/x/net/http2/hpack"
)

// A reply's header block read field by field (RFC 9204 section 4.5), as
// quic-go's qpack decodes it but with each value decoded (Huffman) only
// when asked for: a reply's header is read for three fields, and qpack's
// decoder decoded every value, the server's Date among them (about 1.5%
// of the client's CPU at 100 users). v6lab's SETTINGS allow no dynamic
// table, so a block refers to the static table alone.

// qpackField is one field line: its name, and its value as it came.
type qpackField struct {
	name  string
	value string // the static table's value (an indexed line's)
	raw   []byte // a literal value, Huffman-coded with huff
	huff  bool
	lit   bool // the value is literal (raw), not the table's
}

// val is the field's value.
func (f *qpackField) val() (string, error) {
	switch {
	case !f.lit:
		return f.value, nil
	case f.huff:
		return hpack.HuffmanDecodeToString(f.raw)
	}
	return string(f.raw), nil
}

// qpackStatic is QPACK's static table (RFC 9204 appendix A), read once
// from qpack's own decoder, one indexed field line an entry.
var qpackStatic = sync.OnceValue(func() []qpack.HeaderField {
	var table []qpack.HeaderField
	for i := 0; ; i++ {
		line := []byte{0xc0 | byte(min(i, 63))}
		if i >= 63 {
			line = append(line, byte(i-63)) // i < 191: one more byte
		}
		f, err := (&qpack.Decoder{}).Decode(append([]byte{0, 0}, line...))()
		if err != nil {
			return table
		}
		table = append(table, f)
	}
})

// qpackFields are a block's field lines, read one by one (next).
type qpackFields struct {
	p   []byte
	err error
}

// newQPACKFields reads block's prefix: a block that refers to a dynamic
// table fails (err).
func newQPACKFields(block []byte) qpackFields {
	ric, p, err := qpackInt(block, 8)
	if err == nil && ric != 0 {
		err = errors.New("expected Required Insert Count to be zero")
	}
	var base uint64
	if err == nil {
		base, p, err = qpackInt(p, 7)
	}
	if err == nil && base != 0 {
		err = errors.New("expected Base to be zero")
	}
	return qpackFields{p: p, err: err}
}

// next reads the next field line into f: false at the block's end or on
// an error (err), a line that refers to a dynamic table or is cut short.
func (q *qpackFields) next(f *qpackField) bool {
	if q.err != nil || len(q.p) == 0 {
		return false
	}
	q.p, q.err = qpackLine(q.p, f)
	return q.err == nil
}

// qpackLine reads one field line of p into f and returns what follows.
func qpackLine(p []byte, f *qpackField) ([]byte, error) {
	b := p[0]
	*f = qpackField{}
	switch {
	case b&0x80 != 0: // 1Txxxxxx: indexed
		if b&0x40 == 0 {
			return nil, errors.New("no dynamic table")
		}
		i, rest, err := qpackInt(p, 6)
		if err != nil {
			return nil, err
		}
		return rest, f.static(i, true)
	case b&0xc0 == 0x40: // 01NTxxxx: literal value, the name indexed
		if b&0x10 == 0 {
			return nil, errors.New("no dynamic table")
		}
		i, rest, err := qpackInt(p, 4)
		if err != nil {
			return nil, err
		}
		if err := f.static(i, false); err != nil {
			return nil, err
		}
		return f.literal(rest)
	case b&0xe0 == 0x20: // 001NHxxx: literal name and value
		name, rest, err := qpackString(p, 3)
		if err != nil {
			return nil, err
		}
		if f.name, err = f.decodeName(name, b&0x08 != 0); err != nil {
			return nil, err
		}
		return f.literal(rest)
	}
	return nil, fmt.Errorf("unexpected type byte: %#x", b)
}

// static takes entry i of the static table: its name, and with value its
// value.
func (f *qpackField) static(i uint64, value bool) error {
	t := qpackStatic()
	if i >= uint64(len(t)) {
		return fmt.Errorf("invalid indexed representation index %d", i)
	}
	f.name = t[i].Name
	if value {
		f.value = t[i].Value
	}
	return nil
}

// literal reads a literal value (H bit, 7-bit length) from p.
func (f *qpackField) literal(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return nil, io.ErrUnexpectedEOF
	}
	f.huff = p[0]&0x80 != 0
	raw, rest, err := qpackString(p, 7)
	f.raw, f.lit = raw, true
	return rest, err
}

// decodeName is a literal name (empty: an error, as a header needs one).
func (f *qpackField) decodeName(raw []byte, huff bool) (string, error) {
	name := string(raw)
	if huff {
		var err error
		if name, err = hpack.HuffmanDecodeToString(raw); err != nil {
			return "", err
		}
	}
	if name == "" {
		return "", errors.New("a field with an empty name")
	}
	return name, nil
}

// qpackString reads a string's length (an n-bit prefix integer) and
// returns its bytes as they are, and what follows.
func qpackString(p []byte, n uint8) ([]byte, []byte, error) {
	l, rest, err := qpackInt(p, n)
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(rest)) < l {
		return nil, nil, io.ErrUnexpectedEOF
	}
	return rest[:l], rest[l:], nil
}

// qpackInt reads an integer of an n-bit prefix (RFC 7541 section 5.1).
func qpackInt(p []byte, n uint8) (uint64, []byte, error) {
	if len(p) == 0 {
		return 0, p, io.ErrUnexpectedEOF
	}
	lim := uint64(1)<<n - 1
	i := uint64(p[0]) & lim
	p = p[1:]
	if i < lim {
		return i, p, nil
	}
	for m := uint(0); len(p) > 0; m += 7 {
		b := p[0]
		p = p[1:]
		if m >= 63 {
			return 0, p, errors.New("varint integer overflow")
		}
		i += uint64(b&0x7f) << m
		if b&0x80 == 0 {
			return i, p, nil
		}
	}
	return 0, p, io.ErrUnexpectedEOF
}
