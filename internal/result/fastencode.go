package result

import (
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendSample appends s as encoding/json (without HTML escaping) writes
// it, and a newline, about five times faster: the writer's own cost per
// sample matters at 100,000 samples a second. A sample with metrics or
// intervals (a trial, a dual-stack race), or with a metric that is not a
// finite number, is left to encoding/json (ok false); a test checks the
// bytes are encoding/json's, field for field.
func appendSample(b []byte, s *Sample) ([]byte, bool) {
	if s.Intervals != nil {
		return b, false
	}
	b = append(b, `{"kind":`...)
	b = appendString(b, s.Kind)
	b = appendStrField(b, `,"cell":`, s.Cell, false)
	b = appendStrField(b, `,"proto":`, s.Protocol, false)
	b = appendStrField(b, `,"path":`, s.Path, false)
	b = strconv.AppendInt(append(b, `,"conns":`...), int64(s.Conns), 10)
	b = strconv.AppendInt(append(b, `,"run":`...), int64(s.Run), 10)
	if s.Warmup {
		b = append(b, `,"warmup":true`...)
	}
	b = strconv.AppendInt(append(b, `,"user":`...), int64(s.User), 10)
	b = appendStrField(b, `,"local":`, s.Local, true)
	b = appendStrField(b, `,"remote":`, s.Remote, true)
	b = appendStrField(b, `,"dns_local":`, s.DNSLocal, true)
	b = append(b, `,"start":`...)
	var ok bool
	if b, ok = appendTime(b, s.Start); !ok {
		return b, false
	}
	b = appendIntField(b, `,"resolve_ns":`, s.ResolveNS, true)
	b = appendIntField(b, `,"connect_ns":`, s.ConnectNS, true)
	b = appendIntField(b, `,"tls_ns":`, s.TLSNS, true)
	b = appendIntField(b, `,"first_byte_ns":`, s.FirstByteNS, true)
	b = appendIntField(b, `,"total_ns":`, s.TotalNS, false)
	b = appendIntField(b, `,"wire_ns":`, s.WireNS, true)
	b = appendIntField(b, `,"wire_first_byte_ns":`, s.WireFirstByteNS, true)
	b = appendIntField(b, `,"client_turn_ns":`, s.ClientTurnNS, true)
	b = appendIntField(b, `,"bytes_in":`, s.BytesIn, true)
	b = appendIntField(b, `,"bytes_out":`, s.BytesOut, true)
	b = appendStrField(b, `,"negotiated":`, s.Negotiated, true)
	b = appendStrField(b, `,"tls":`, s.TLS, true)
	b = appendBoolField(b, `,"kept":true`, s.Kept)
	b = appendBoolField(b, `,"resumed":true`, s.Resumed)
	b = appendBoolField(b, `,"zero_rtt":true`, s.ZeroRTT)
	b = appendIntField(b, `,"again":`, int64(s.Again), true)
	b = appendIntField(b, `,"again_conns":`, int64(s.AgainConns), true)
	b = appendStrField(b, `,"marker":`, s.Marker, true)
	b = appendStrField(b, `,"err":`, s.Err, true)
	b = appendStrField(b, `,"err_kind":`, string(s.ErrKind), true)
	if b, ok = appendMetrics(b, s.Metrics); !ok {
		return b, false
	}
	return append(b, "}\n"...), true
}

// appendMetrics appends a sample's metrics as encoding/json writes a map
// (keys sorted, omitted when empty); ok false for a value it refuses (NaN,
// an infinity).
func appendMetrics(b []byte, m map[string]float64) ([]byte, bool) {
	if len(m) == 0 {
		return b, true
	}
	var small [8]string
	keys := small[:0]
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return b, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, `,"metrics":{`...)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendString(b, k), ':')
		b = appendFloat(b, m[k])
	}
	return append(b, '}'), true
}

// appendFloat is encoding/json's float64: %f, or %e between 1e-6 and 1e21
// exclusive of neither, with a one-digit exponent's leading 0 dropped.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendBoolField appends field (key and true) when v is set: an
// omitempty bool.
func appendBoolField(b []byte, field string, v bool) []byte {
	if v {
		return append(b, field...)
	}
	return b
}

func appendStrField(b []byte, key, v string, omitEmpty bool) []byte {
	if omitEmpty && v == "" {
		return b
	}
	return appendString(append(b, key...), v)
}

func appendIntField(b []byte, key string, v int64, omitZero bool) []byte {
	if omitZero && v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), v, 10)
}

// appendTime is time.Time's MarshalJSON (RFC 3339 with nanoseconds); ok
// false for a year it refuses.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y >= 10000 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does with HTML escaping off:
// quote, backslash and control characters escaped, invalid UTF-8 as
// \ufffd, U+2028 and U+2029 escaped.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
