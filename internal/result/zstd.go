package result

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
)

// File names of the samples in a result directory: v6lab writes them
// compressed (zstd, one frame per run: zstdcat reads them); files of
// older versions, and plain ones a user made, are read as well.
const (
	SamplesName      = "samples.jsonl.zst"
	PlainSamplesName = "samples.jsonl"
)

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxWindow bounds the memory a compressed file can make a reader take
// (v6lab's writer uses a window of 4 MiB).
const maxWindow = 64 << 20

// SamplesPath is dir's samples file: the compressed one, or else the
// plain one of an older result; an error names both when neither is
// there.
func SamplesPath(dir string) (string, error) {
	for _, n := range []string{SamplesName, PlainSamplesName} {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("result: %s: no %s nor %s in it: not a result directory", dir, SamplesName, PlainSamplesName)
}

// HasSamples says whether dir holds a samples file of either form.
func HasSamples(dir string) bool {
	_, err := SamplesPath(dir)
	return err == nil
}

// Lines is a samples file's text, decompressed when it was compressed.
type Lines interface {
	io.ReadCloser
	// Cut says whether the compressed stream ended inside a frame (a
	// killed writer): the text before it is whole lines and perhaps one
	// cut off, as in a plain file.
	Cut() bool
}

// Decompress returns r's text: decompressed when r holds zstd frames
// (by their magic number), else as it is.
func Decompress(r io.Reader) (Lines, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(4)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(head) < 4 || string(head) != string(zstdMagic) {
		return plain{br}, nil
	}
	d, err := zstd.NewReader(br, zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	return &unzstd{d: d}, nil
}

type plain struct{ io.Reader }

func (plain) Close() error { return nil }
func (plain) Cut() bool    { return false }

// unzstd reads a stream of zstd frames; a stream that ends inside a
// frame reads as its text so far (Cut).
type unzstd struct {
	d   *zstd.Decoder
	cut bool
}

func (u *unzstd) Read(p []byte) (int, error) {
	n, err := u.d.Read(p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		u.cut = true
		err = io.EOF
	}
	return n, err
}

func (u *unzstd) Close() error { u.d.Close(); return nil }
func (u *unzstd) Cut() bool    { return u.cut }
