package result

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

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
// (v6lab's writer uses a window of 512 KiB; 4 MiB before 2026-11-27).
const maxWindow = 64 << 20

// SamplesPath is dir's samples file: the compressed one, or else the
// plain one of an older result; an error names both when neither is
// there.
func SamplesPath(dir string) (string, error) {
	if st, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", &NotResultError{fmt.Errorf("result: %s does not exist", dir)}
	} else if err != nil {
		return "", &NotResultError{fmt.Errorf("result: %w", err)}
	} else if !st.IsDir() {
		return "", &NotResultError{fmt.Errorf("result: %s is a file, not a result directory (a run's --results directory, with its %s)", dir, SamplesName)}
	}
	for _, n := range []string{SamplesName, PlainSamplesName} {
		p := filepath.Join(dir, n)
		if st, err := os.Stat(p); err == nil {
			// A FIFO or a device would block a reader or never end.
			if !st.Mode().IsRegular() {
				return "", &NotResultError{fmt.Errorf("result: %s: not a regular file (%s)", p, fileKind(st.Mode()))}
			}
			return p, nil
		}
	}
	return "", &NotResultError{fmt.Errorf("result: %s: no %s nor %s in it: not a result directory", dir, SamplesName, PlainSamplesName)}
}

// NotResultError is a directory given as a result's that is none (it does
// not exist, or holds no samples file): bad input, exit status 2 (the
// commands' errors carry their codes by an ExitCode method).
type NotResultError struct{ Err error }

func (e *NotResultError) Error() string { return e.Err.Error() }
func (e *NotResultError) Unwrap() error { return e.Err }

// ExitCode is 2, the status of bad input.
func (e *NotResultError) ExitCode() int { return 2 }

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
	d, err := zstd.NewReader(br, zstd.WithDecoderMaxWindow(maxWindow))
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
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		u.cut = true
		err = io.EOF
	case err != nil && err != io.EOF:
		err = fmt.Errorf("the compressed samples are damaged here (zstd: %w)", err)
	}
	return n, err
}

func (u *unzstd) Close() error { u.d.Close(); return nil }
func (u *unzstd) Cut() bool    { return u.cut }

// frame is one zstd frame of a compressed file: where it starts and
// ends, and whether it ends there (a killed writer leaves its last frame
// open).
type frame struct {
	start, end int64
	whole      bool
}

// frames lists the frames of a compressed file by their headers and block
// headers (RFC 8878), without decompressing; skippable frames are
// skipped.
func frames(r io.ReaderAt, size int64) ([]frame, error) {
	var out []frame
	for off := int64(0); off < size; {
		f, err := frameAt(r, off, size)
		if err != nil {
			return out, err
		}
		if f.start >= 0 {
			out = append(out, f)
		}
		if !f.whole {
			break
		}
		off = f.end
	}
	return out, nil
}

func frameAt(r io.ReaderAt, off, size int64) (frame, error) {
	f := frame{start: off, end: size}
	var b [14]byte
	n, _ := r.ReadAt(b[:], off)
	if n < 4 {
		return f, nil
	}
	magic := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	if magic&0xfffffff0 == 0x184d2a50 { // a skippable frame
		if n < 8 {
			return f, nil
		}
		f.end = off + 8 + int64(uint32(b[4])|uint32(b[5])<<8|uint32(b[6])<<16|uint32(b[7])<<24)
		f.whole, f.start = f.end <= size, -1
		return f, nil
	}
	if string(b[:4]) != string(zstdMagic) {
		return f, fmt.Errorf("not a zstd frame at byte %d", off)
	}
	if n < 5 {
		return f, nil
	}
	desc := b[4]
	single := desc&0x20 != 0
	p := off + 5
	if !single {
		p++ // window descriptor
	}
	p += []int64{0, 1, 2, 4}[desc&3] // dictionary id
	fcs := []int64{0, 2, 4, 8}[desc>>6]
	if fcs == 0 && single {
		fcs = 1
	}
	p += fcs // frame content size
	for {
		var h [3]byte
		if k, _ := r.ReadAt(h[:], p); k < 3 {
			return f, nil
		}
		bh := uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16
		last, kind, bsize := bh&1 != 0, (bh>>1)&3, int64(bh>>3)
		p += 3
		switch kind {
		case 1: // RLE: one byte
			p++
		case 3:
			return f, fmt.Errorf("a reserved block type at byte %d", p-3)
		default:
			p += bsize
		}
		if last {
			break
		}
	}
	if desc&4 != 0 {
		p += 4 // content checksum
	}
	if p <= size {
		f.end, f.whole = p, true
	}
	return f, nil
}

// KeepPoint reads a samples file (plain or compressed) line by line,
// handing each complete line to keep, and returns the byte offset the
// file can be cut at so that it ends after the last line keep accepted:
// for a plain file that line's end; for a compressed one, the end of the
// last whole frame whose last line keep accepted (a frame ends at every
// Sync, so after every run). compressed says which it was.
func KeepPoint(r io.ReaderAt, size int64, keep func(line []byte) bool) (at int64, compressed bool, err error) {
	var head [4]byte
	if n, _ := r.ReadAt(head[:], 0); n < 4 || string(head[:]) != string(zstdMagic) {
		at, err = plainKeepPoint(io.NewSectionReader(r, 0, size), keep)
		return at, false, err
	}
	fs, err := frames(r, size)
	if err != nil {
		return 0, true, err
	}
	for _, f := range fs {
		last := false
		err := eachLine(io.NewSectionReader(r, f.start, f.end-f.start), true, func(line []byte, whole bool) {
			if whole {
				last = keep(line)
			} else {
				last = false
			}
		})
		if err != nil && f.whole {
			return 0, true, err
		}
		if f.whole && last {
			at = f.end
		}
	}
	return at, true, nil
}

func plainKeepPoint(r io.Reader, keep func([]byte) bool) (int64, error) {
	var at, off int64
	err := eachLine(r, false, func(line []byte, whole bool) {
		off += int64(len(line))
		if whole && keep(line) {
			at = off
		}
	})
	return at, err
}

// eachLine hands every line of r (with its newline; whole: it has one)
// to fn, decompressing a zstd stream when compressed.
func eachLine(r io.Reader, compressed bool, fn func(line []byte, whole bool)) error {
	if compressed {
		d, err := zstd.NewReader(r, zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderConcurrency(1))
		if err != nil {
			return err
		}
		defer d.Close()
		r = &unzstd{d: d}
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := appendLine(br, nil)
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) > 0 {
			fn(line, err == nil)
		}
		if err == io.EOF {
			return nil
		}
	}
}

// CopyText writes the text of r from byte from on (decompressed when
// compressed: from is then where a frame starts) to w.
func CopyText(r io.ReaderAt, size, from int64, compressed bool, w io.Writer) error {
	sr := io.NewSectionReader(r, from, size-from)
	if !compressed {
		_, err := io.Copy(w, sr)
		return err
	}
	var werr error
	err := eachLine(sr, true, func(line []byte, _ bool) {
		if werr == nil {
			_, werr = w.Write(line)
		}
	})
	return cmp.Or(err, werr)
}

// CreateSamples creates dir's samples file (compressed, never over an
// existing one), takes its lock (Lock) and starts a writer on it. The
// caller closes the writer, then the file.
func CreateSamples(dir string) (*os.File, *Writer, error) {
	f, err := os.OpenFile(filepath.Join(dir, SamplesName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("result: %w", err)
	}
	// A file this process just made is held by no writer: only by a
	// reader asking whether one writes it (Held), for an instant.
	err = Lock(f)
	for i := 0; errors.Is(err, ErrBusy) && i < 100; i++ {
		time.Sleep(time.Millisecond)
		err = Lock(f)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, NewCompressedWriter(f), nil
}

// AppendSamples opens dir's samples file, of either form, to append to it
// in its own form, with its lock held.
func AppendSamples(dir string) (*os.File, *Writer, error) {
	name, err := SamplesPath(dir)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("result: %w", err)
	}
	if err := Lock(f); err != nil {
		f.Close()
		return nil, nil, err
	}
	var head [4]byte
	if n, _ := f.ReadAt(head[:], 0); n == 4 && string(head[:]) == string(zstdMagic) {
		return f, NewCompressedWriter(f), nil
	}
	return f, NewWriter(f), nil
}

// fileKind names a file's type in words, as specfile.Kind does (result
// imports no other package of v6lab's).
func fileKind(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case t&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "a device"
	case t&fs.ModeSocket != 0:
		return "a socket"
	}
	return "not a plain file"
}
