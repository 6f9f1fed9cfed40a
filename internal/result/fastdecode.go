package result

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"
)

// samplePrefix opens every sample line v6lab writes.
const samplePrefix = `{"kind":"sample",`

// decodeSampleFast decodes a sample line as v6lab writes it (compact, no
// escapes, no nulls, every key once) about ten times faster than
// encoding/json. It reports false for anything else, and the caller then
// decodes the line with encoding/json, which stays the one authority on
// what a line means and on every error: when this accepts a line, the
// result is what encoding/json gives (FuzzFastSample checks it).
func decodeSampleFast(line []byte, s *Sample) bool {
	var d fastDec
	return d.sample(line, s)
}

// sample is decodeSampleFast with the decoder's interned strings.
func (d *fastDec) sample(line []byte, s *Sample) bool {
	if len(line) < len(samplePrefix) || string(line[:len(samplePrefix)]) != samplePrefix {
		return false
	}
	d.b, d.i = line, len(samplePrefix)
	*s = Sample{Kind: KindSample}
	var seen uint32
	for {
		key, ok := d.str()
		if !ok || !d.byte(':') {
			return false
		}
		bit, ok := d.field(key, s)
		if !ok || seen&bit != 0 {
			return false // a key twice: encoding/json decides
		}
		seen |= bit
		switch {
		case d.byte(','):
			if !d.peek('"') {
				return false
			}
		case d.byte('}'):
			return d.i == len(d.b)
		default:
			return false
		}
	}
}

// fastDec reads a line left to right; every method reports false on what
// it does not know, never guessing.
type fastDec struct {
	b        []byte
	i        int
	interned map[string]string
	// skip says sample lines are not wanted (Scan without a Sample
	// visitor): they are recognised by their prefix only.
	skip bool
}

func (d *fastDec) peek(c byte) bool { return d.i < len(d.b) && d.b[d.i] == c }

func (d *fastDec) byte(c byte) bool {
	if d.peek(c) {
		d.i++
		return true
	}
	return false
}

// str reads a string without escapes, control characters or invalid
// UTF-8 (which encoding/json would rewrite), returning its bytes.
func (d *fastDec) str() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	end := bytes.IndexByte(d.b[d.i:], '"')
	if end < 0 {
		return nil, false
	}
	v := d.b[d.i : d.i+end]
	d.i += end + 1
	high := false
	for _, c := range v {
		if c < 0x20 || c == '\\' {
			return nil, false
		}
		high = high || c >= 0x80
	}
	return v, !high || utf8.Valid(v)
}

// number returns a JSON number's text, checked against the grammar (nil
// for anything else); integer says it has neither fraction nor exponent.
func (d *fastDec) number() (text []byte, integer bool) {
	start := d.i
	d.byte('-')
	switch {
	case d.byte('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return nil, false
	}
	integer = true
	if d.byte('.') {
		if d.digits() == 0 {
			return nil, false
		}
		integer = false
	}
	if d.byte('e') || d.byte('E') {
		if !d.byte('+') {
			d.byte('-')
		}
		if d.digits() == 0 {
			return nil, false
		}
		integer = false
	}
	return d.b[start:d.i], integer
}

func (d *fastDec) digits() int {
	n := 0
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}

func (d *fastDec) int64() (int64, bool) {
	t, integer := d.number()
	if t == nil || !integer {
		return 0, false
	}
	v, err := strconv.ParseInt(string(t), 10, 64)
	return v, err == nil
}

func (d *fastDec) intField(p *int) bool {
	v, ok := d.int64()
	*p = int(v)
	return ok && int64(int(v)) == v
}

func (d *fastDec) int64Field(p *int64) bool {
	v, ok := d.int64()
	*p = v
	return ok
}

func (d *fastDec) strField(p *string) bool {
	v, ok := d.str()
	*p = string(v)
	return ok
}

// internField is strField for a field whose few values repeat (a cell's
// name, a path, a marker): each is made a string once per decoder.
func (d *fastDec) internField(p *string) bool {
	v, ok := d.str()
	if !ok {
		return false
	}
	if s, seen := d.interned[string(v)]; seen {
		*p = s
		return true
	}
	*p = string(v)
	if len(d.interned) < 4096 {
		if d.interned == nil {
			d.interned = map[string]string{}
		}
		d.interned[*p] = *p
	}
	return true
}

func (d *fastDec) boolField(p *bool) bool {
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		*p = true
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		*p = false
	default:
		return false
	}
	return true
}

func (d *fastDec) timeField(p *time.Time) bool {
	start := d.i
	if _, ok := d.str(); !ok {
		return false
	}
	return p.UnmarshalJSON(d.b[start:d.i]) == nil
}

// metrics reads an object of numbers (a sample's metrics).
func (d *fastDec) metrics(p *map[string]float64) bool {
	if !d.byte('{') {
		return false
	}
	m := map[string]float64{}
	*p = m
	if d.byte('}') {
		return true
	}
	for {
		k, ok := d.str()
		if !ok || !d.byte(':') {
			return false
		}
		if _, dup := m[string(k)]; dup {
			return false
		}
		t, _ := d.number()
		if t == nil {
			return false
		}
		v, err := strconv.ParseFloat(string(t), 64)
		if err != nil {
			return false
		}
		m[string(k)] = v
		switch {
		case d.byte(','):
		case d.byte('}'):
			return true
		default:
			return false
		}
	}
}

// field decodes the value of key into s, returning the key's bit (for
// duplicates); false for a key it does not know (intervals among them:
// encoding/json decodes a transport trial's line).
func (d *fastDec) field(key []byte, s *Sample) (uint32, bool) {
	switch string(key) {
	case "cell":
		return 1 << 0, d.internField(&s.Cell)
	case "proto":
		return 1 << 1, d.internField(&s.Protocol)
	case "path":
		return 1 << 2, d.internField(&s.Path)
	case "conns":
		return 1 << 3, d.intField(&s.Conns)
	case "run":
		return 1 << 4, d.intField(&s.Run)
	case "warmup":
		return 1 << 5, d.boolField(&s.Warmup)
	case "user":
		return 1 << 6, d.intField(&s.User)
	case "local":
		return 1 << 7, d.strField(&s.Local)
	case "remote":
		return 1 << 8, d.internField(&s.Remote)
	case "dns_local":
		return 1 << 9, d.strField(&s.DNSLocal)
	case "start":
		return 1 << 10, d.timeField(&s.Start)
	case "resolve_ns":
		return 1 << 11, d.int64Field(&s.ResolveNS)
	case "connect_ns":
		return 1 << 12, d.int64Field(&s.ConnectNS)
	case "tls_ns":
		return 1 << 13, d.int64Field(&s.TLSNS)
	case "first_byte_ns":
		return 1 << 14, d.int64Field(&s.FirstByteNS)
	case "total_ns":
		return 1 << 15, d.int64Field(&s.TotalNS)
	case "wire_ns":
		return 1 << 16, d.int64Field(&s.WireNS)
	case "wire_first_byte_ns":
		return 1 << 17, d.int64Field(&s.WireFirstByteNS)
	case "client_turn_ns":
		return 1 << 18, d.int64Field(&s.ClientTurnNS)
	case "bytes_in":
		return 1 << 19, d.int64Field(&s.BytesIn)
	case "bytes_out":
		return 1 << 20, d.int64Field(&s.BytesOut)
	case "marker":
		return 1 << 21, d.internField(&s.Marker)
	case "err":
		return 1 << 22, d.strField(&s.Err)
	case "err_kind":
		var k string
		ok := d.internField(&k)
		s.ErrKind = ErrKind(k)
		return 1 << 23, ok
	case "metrics":
		return 1 << 24, d.metrics(&s.Metrics)
	case "negotiated":
		return 1 << 25, d.internField(&s.Negotiated)
	case "tls":
		return 1 << 26, d.internField(&s.TLS)
	case "kept":
		return 1 << 27, d.boolField(&s.Kept)
	case "resumed":
		return 1 << 28, d.boolField(&s.Resumed)
	case "zero_rtt":
		return 1 << 29, d.boolField(&s.ZeroRTT)
	case "again":
		return 1 << 30, d.intField(&s.Again)
	case "again_conns":
		return 1 << 31, d.intField(&s.AgainConns)
	}
	return 0, false
}
