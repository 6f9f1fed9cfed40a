// Package content defines the bytes v6lab's servers generate for files of
// any size, and the check a client runs on what it receives: a CRC-32C of
// every body byte, and, when the server is known to serve generated content
// (or zeros, as sparse files read), a comparison at every offset. So a
// transfer that arrives complete in length but corrupted is a failed
// sample, and nothing is stored on either side.
//
// It imports nothing of v6lab.
package content

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
)

// block is the generated content's unit: byte o of a file is
// block[o % len(block)].
var block = func() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}()

// Block returns the repeating unit of generated content (not to be
// modified): a writer of a file sends it again and again, the last time
// cut to the file's size.
func Block() []byte { return block }

// Fill writes the generated content at offset off into p.
func Fill(p []byte, off int64) {
	for len(p) > 0 {
		start := int(off % int64(len(block)))
		n := copy(p, block[start:])
		p, off = p[n:], off+int64(n)
	}
}

// Bytes returns n bytes of generated content.
func Bytes(n int64) []byte {
	b := make([]byte, n)
	Fill(b, 0)
	return b
}

// Expect says what a body should hold.
type Expect uint8

const (
	// Unknown content is only summed (a real server's file).
	Unknown Expect = iota
	// Generated is the content of Fill.
	Generated
	// Zeros is what a sparse file reads as.
	Zeros
)

// ErrCorrupt is wrapped when a body differs from what was expected.
var ErrCorrupt = errors.New("content differs from what the server generates")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var zeroBlock = make([]byte, 64<<10)

// Check is an io.Writer that sums and checks a body as it arrives.
type Check struct {
	expect Expect
	off    int64
	sum    uint32
}

// NewCheck starts checking a body against expect.
func NewCheck(expect Expect) *Check { return &Check{expect: expect} }

// Reset starts over with a new body.
func (c *Check) Reset(expect Expect) { *c = Check{expect: expect} }

// Write sums p and compares it with the expected bytes at its offset; a
// difference is an error wrapping ErrCorrupt that names the first
// differing byte.
func (c *Check) Write(p []byte) (int, error) {
	c.sum = crc32.Update(c.sum, castagnoli, p)
	switch c.expect {
	case Generated:
		for done := 0; done < len(p); {
			start := int((c.off + int64(done)) % int64(len(block)))
			n := min(len(p)-done, len(block)-start)
			if !bytes.Equal(p[done:done+n], block[start:start+n]) {
				return done, c.corrupt(p[done:done+n], block[start:start+n], done)
			}
			done += n
		}
	case Zeros:
		// Compared a block at a time (memcmp speed, six times a byte
		// loop's): the client's CPU is shared with what it measures.
		for done := 0; done < len(p); {
			n := min(len(p)-done, len(zeroBlock))
			if !bytes.Equal(p[done:done+n], zeroBlock[:n]) {
				return done, c.corrupt(p[done:done+n], zeroBlock[:n], done)
			}
			done += n
		}
	}
	c.off += int64(len(p))
	return len(p), nil
}

func (c *Check) corrupt(got, want []byte, base int) error {
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("byte %d is %#02x, not %#02x: %w", c.off+int64(base+i), got[i], want[i], ErrCorrupt)
		}
	}
	return ErrCorrupt
}

// Sum is the CRC-32C (Castagnoli) of every byte written so far.
func (c *Check) Sum() uint32 { return c.sum }

// Len is how many bytes were written.
func (c *Check) Len() int64 { return c.off }
