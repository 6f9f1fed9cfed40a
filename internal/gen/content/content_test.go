package content

import (
	"errors"
	"strings"
	"testing"
)

func TestFillIsBlockRepeated(t *testing.T) {
	b := Bytes(3*int64(len(block)) + 100)
	for o, got := range b {
		if want := block[o%len(block)]; got != want {
			t.Fatalf("byte %d is %q, want %q", o, got, want)
		}
	}
	p := make([]byte, 1000)
	Fill(p, 65500) // across a block boundary
	for i := range p {
		if p[i] != b[65500+i] {
			t.Fatalf("Fill at 65500: byte %d differs", i)
		}
	}
}

func TestCheck(t *testing.T) {
	good := Bytes(200_000)
	// Any way of cutting the body gives the same sum and no error.
	var sums []uint32
	for _, step := range []int{1, 7, 4096, 65536, 200_000} {
		c := NewCheck(Generated)
		for off := 0; off < len(good); off += step {
			if _, err := c.Write(good[off:min(off+step, len(good))]); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		if c.Len() != int64(len(good)) {
			t.Fatalf("step %d: length %d", step, c.Len())
		}
		sums = append(sums, c.Sum())
	}
	for _, s := range sums[1:] {
		if s != sums[0] {
			t.Fatalf("sums differ by cut: %x", sums)
		}
	}
	// CRC-32C of "123456789" is e3069283 (RFC 3720 check value).
	c := NewCheck(Unknown)
	c.Write([]byte("123456789"))
	if c.Sum() != 0xe3069283 {
		t.Fatalf("crc32c %x", c.Sum())
	}

	bad := append([]byte(nil), good...)
	bad[131_073] ^= 0x20
	c = NewCheck(Generated)
	_, err := c.Write(bad[:100_000])
	if err == nil {
		_, err = c.Write(bad[100_000:])
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "byte 131073") {
		t.Fatalf("corrupt body: %v", err)
	}
	if _, err := NewCheck(Unknown).Write(bad); err != nil {
		t.Fatalf("unknown content is only summed: %v", err)
	}
	z := NewCheck(Zeros)
	if _, err := z.Write(make([]byte, 5000)); err != nil {
		t.Fatal(err)
	}
	if _, err := z.Write([]byte{0, 0, 7}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "byte 5002") {
		t.Fatalf("zeros: %v", err)
	}
	big := make([]byte, 200_000) // more than one block at a time
	big[150_000] = 1
	if _, err := NewCheck(Zeros).Write(big); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "byte 150000 is 0x01") {
		t.Fatalf("zeros, one write of several blocks: %v", err)
	}
}

func BenchmarkCheckZeros(b *testing.B) {
	body := make([]byte, 1<<20)
	b.SetBytes(int64(len(body)))
	c := NewCheck(Zeros)
	for b.Loop() {
		c.Reset(Zeros)
		c.Write(body)
	}
}

func BenchmarkCheckGenerated(b *testing.B) {
	body := Bytes(1 << 20)
	b.SetBytes(int64(len(body)))
	c := NewCheck(Generated)
	for b.Loop() {
		c.Reset(Generated)
		c.Write(body)
	}
}
