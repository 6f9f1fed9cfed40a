package result

import (
	"bytes"
	"io"
	"os"
)

// Same says how a and b are one result, "" when they are not (or either
// is not a result: its reader then says why): "one directory" (one path
// written twice, or a link to the other), or "identical samples files" (a
// copy). Two sides of one result differ by nothing, and a comparison of
// them would be a table of zeros.
func Same(a, b string) string {
	na, errA := SamplesPath(a)
	nb, errB := SamplesPath(b)
	switch {
	case errA != nil || errB != nil:
		return ""
	case sameDir(a, b):
		return "one directory"
	case sameBytes(na, nb):
		return "identical samples files"
	}
	return ""
}

// sameBytes says whether files a and b hold the same bytes: their sizes
// first, then their contents, a block at a time (two different results'
// samples differ in their first lines, their headers' times).
func sameBytes(a, b string) bool {
	fa, err := os.Open(a)
	if err != nil {
		return false
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return false
	}
	defer fb.Close()
	sa, errA := fa.Stat()
	sb, errB := fb.Stat()
	if errA != nil || errB != nil || sa.Size() != sb.Size() {
		return false
	}
	ba, bb := make([]byte, 1<<16), make([]byte, 1<<16)
	for {
		n, errA := io.ReadFull(fa, ba)
		m, errB := io.ReadFull(fb, bb)
		if n != m || !bytes.Equal(ba[:n], bb[:m]) {
			return false
		}
		switch {
		case errA == nil && errB == nil:
		case atEnd(errA) && atEnd(errB):
			return true
		default:
			return false // a read failed: not known to be the same
		}
	}
}

// atEnd says whether io.ReadFull's err is the file's end.
func atEnd(err error) bool { return err == io.EOF || err == io.ErrUnexpectedEOF }
