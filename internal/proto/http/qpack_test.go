package http

import (
	"fmt"
	"strings"
	"testing"

	"github.com/quic-go/qpack"
)

// TestQPACKFieldsAsQPACKDecodes: v6lab's field reader (values decoded only
// when asked for) reads every block qpack's encoder makes as qpack's own
// decoder does (indexed fields, names indexed with literal values, literal
// names, Huffman both ways, long lengths), and fails on the same cut or
// foreign blocks, where qpack fails.
func TestQPACKFieldsAsQPACKDecodes(t *testing.T) {
	if n := len(qpackStatic()); n != 99 {
		t.Fatalf("static table of %d entries, want 99 (RFC 9204 appendix A)", n)
	}
	long := strings.Repeat("x", 300)
	blocks := [][]byte{
		encodeFields(":status", "200", "content-type", "text/html; charset=utf-8", "content-length", "4096",
			"date", "Fri, 27 Nov 2026 15:00:00 GMT"),
		encodeFields(":status", "404", "x-long", long, "content-length", "0"),
		encodeFields(":status", "103", "link", "</a.css>", "alt-svc", `h3=":443"`),
		encodeFields("x-empty", "", ":status", "599"),
		{0, 0},                   // no field
		{1, 0, 0xc0 | 25},        // a Required Insert Count
		{0, 1, 0xc0 | 25},        // a Base
		{0, 0, 0x80 | 25},        // an indexed field of the dynamic table
		{0, 0, 0x10},             // post-base index
		{0, 0, 0x40 | 4, 1, '7'}, // the name of the dynamic table
		{0, 0, 0xff, 0x7f},       // static index 190
		{0, 0, 0x0f},             // post-base name reference
	}
	for i, b := range blocks {
		for cut := len(b); cut >= 0; cut-- {
			want, werr := qpackDecodeAll(b[:cut])
			got, gerr := ourDecodeAll(b[:cut])
			if (werr != nil) != (gerr != nil) || (werr == nil && got != want) {
				t.Errorf("block %d cut at %d: %q, %v; qpack: %q, %v", i, cut, got, gerr, want, werr)
			}
		}
	}
}

// encodeFields is qpack's encoding of name and value pairs.
func encodeFields(fields ...string) []byte {
	var block qpackBlock
	enc := qpack.NewEncoder(&block)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = enc.WriteField(qpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return block
}

func qpackDecodeAll(b []byte) (string, error) {
	next := (&qpack.Decoder{}).Decode(b)
	var out strings.Builder
	for {
		f, err := next()
		if err != nil {
			if err.Error() == "EOF" {
				return out.String(), nil
			}
			return "", err
		}
		fmt.Fprintf(&out, "%s=%s;", f.Name, f.Value)
	}
}

func ourDecodeAll(b []byte) (string, error) {
	var out strings.Builder
	var f qpackField
	q := newQPACKFields(b)
	for q.next(&f) {
		v, err := f.val()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&out, "%s=%s;", f.name, v)
	}
	return out.String(), q.err
}
