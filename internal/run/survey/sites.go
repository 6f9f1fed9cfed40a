package survey

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"v6lab/internal/input/specfile"
)

// Entry is one site of a list: its place among the list's sites, its line,
// and its name, or why the line is not a name (Bad).
type Entry struct {
	Index, Line int
	Name        string
	Bad         string
}

// MaxLine bounds one line of a list: a longer one is a bad entry, read
// past without holding it.
const MaxLine = 4096

// List is a list of sites on disk, read as a stream: never held whole.
type List struct {
	Name string
	// Sites counts its sites (lines that are neither blank nor a comment)
	// and SHA256 is its digest: what a result records of it, so that the
	// segments of one survey can be known to have read one list.
	Sites  int
	SHA256 string
}

// OpenList reads the list once, streaming, for its count and digest: an
// error when it cannot be read or holds no site, or (strict) when a line
// is not a host name, naming the file and line.
func OpenList(name string, strict bool) (*List, error) {
	f, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	l := &List{Name: name}
	var bad error
	err = eachLine(io.TeeReader(f, h), func(n int, line []byte) bool {
		if !siteLine(line) {
			return true
		}
		l.Sites++
		if e := ParseEntry(line); strict && e.Bad != "" {
			bad = fmt.Errorf("survey: %s:%d: %s (fix the line, or give --skip-invalid to report it as an invalid site)", name, n, e.Bad)
			return false
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("survey: %s: %w", name, err)
	}
	if bad != nil {
		return nil, bad
	}
	if l.Sites == 0 {
		return nil, fmt.Errorf("survey: %s: the list names no site (one name a line, or a CSV of rank,name as Tranco's; # starts a comment)", name)
	}
	l.SHA256 = hex.EncodeToString(h.Sum(nil))
	return l, nil
}

// openRegular opens a regular file: a FIFO or a device would never end.
func openRegular(name string) (*os.File, error) {
	f, err := OpenRegular(name)
	if err != nil {
		return nil, fmt.Errorf("survey: %w", err)
	}
	return f, nil
}

// OpenRegular opens a regular file, refusing anything else (a FIFO or a
// device would never end) as "NAME is not a regular file (KIND)".
func OpenRegular(name string) (*os.File, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, specfile.Kind(st.Mode()))
	}
	return os.Open(name)
}

// Each streams the list's sites to fn, in order, until fn returns false;
// the list must not have changed since OpenList.
func (l *List) Each(fn func(Entry) bool) error {
	f, err := openRegular(l.Name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	index := 0
	stopped := false
	err = eachLine(io.TeeReader(f, h), func(n int, line []byte) bool {
		if !siteLine(line) {
			return true
		}
		e := ParseEntry(line)
		e.Index, e.Line = index, n
		index++
		if !fn(e) {
			stopped = true
			return false
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("survey: %s: %w", l.Name, err)
	}
	if !stopped && hex.EncodeToString(h.Sum(nil)) != l.SHA256 {
		return fmt.Errorf("survey: %s changed while the survey read it", l.Name)
	}
	return nil
}

var bom = []byte("\uFEFF")

// EachLine hands fn every line of r (numbered from 1, without its end and
// without a leading byte order mark),
// a line longer than MaxLine cut to MaxLine+1 bytes: memory stays bounded
// whatever r holds.
func EachLine(r io.Reader, fn func(n int, line []byte) bool) error {
	return eachLine(r, fn)
}

func eachLine(r io.Reader, fn func(n int, line []byte) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for n := 1; ; n++ {
		chunk, err := br.ReadSlice('\n')
		line := chunk
		for errors.Is(err, bufio.ErrBufferFull) {
			if long == nil {
				long = append(make([]byte, 0, MaxLine+1), chunk[:min(len(chunk), MaxLine+1)]...)
			}
			chunk, err = br.ReadSlice('\n')
			line = long
		}
		long = nil
		if len(line) > MaxLine+1 {
			line = line[:MaxLine+1]
		}
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) == 0 && err == io.EOF {
			return nil
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, bom) // a UTF-8 byte order mark is no part of the first name
		}
		if !fn(n, bytes.TrimRight(line, "\r\n")) || err == io.EOF {
			return nil
		}
	}
}

// siteLine says whether a line names a site: neither blank nor a comment.
func siteLine(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && t[0] != '#'
}

// ParseEntry reads one line of a list: a name, or a CSV row whose first
// column is the name, or a rank and then the name (Tranco's rank,domain).
// A line that holds no host name is an entry with Bad saying why.
func ParseEntry(line []byte) Entry {
	if len(line) > MaxLine {
		return Entry{Name: excerpt(string(line)), Bad: fmt.Sprintf("a line longer than %d bytes is not a name", MaxLine)}
	}
	s := strings.TrimSpace(string(line))
	if cols := strings.Split(s, ","); len(cols) > 1 {
		s = strings.TrimSpace(cols[0])
		if _, err := strconv.Atoi(s); err == nil {
			s = strings.TrimSpace(cols[1])
		}
		s = strings.Trim(s, `"`)
	} else if f := strings.Fields(s); len(f) > 1 {
		s = f[0] // NAME and more (a lab of sites' file: NAME PROPERTY...)
	}
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	if err := CheckName(name); err != nil {
		return Entry{Name: excerpt(s), Bad: err.Error()}
	}
	return Entry{Name: name}
}

// excerpt is at most 64 bytes of s, valid UTF-8, for a record.
func excerpt(s string) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) > 64 {
		s = strings.ToValidUTF8(s[:64], "") + "…"
	}
	return s
}

// CheckName says why s is not a host name a survey measures: at most 253
// bytes of labels of letters, digits and hyphens (1 to 63 each, no hyphen
// first or last), at least two of them, the last not all digits; no
// address (a survey measures a name's A and AAAA).
func CheckName(s string) error {
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return fmt.Errorf("%s is an address, not a name: a survey looks names up (A and AAAA)", s)
	}
	if s == "" || len(s) > 253 {
		return fmt.Errorf("not a host name: %d bytes (1 to 253)", len(s))
	}
	if strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "..") && len(s) > 1 {
		return fmt.Errorf("%q is not a host name: it ends with a dot (a fully-qualified name's root): give it as %s", s, strings.TrimSuffix(s, "."))
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return fmt.Errorf("%q is not a host name: one label (a site is a name in a domain, such as example.org)", s)
	}
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return fmt.Errorf("%q is not a host name: %v", s, err)
		}
	}
	if _, err := strconv.Atoi(labels[len(labels)-1]); err == nil {
		return fmt.Errorf("%q is not a host name: its last label is a number", s)
	}
	return nil
}

func checkLabel(l string) error {
	if l == "" || len(l) > 63 {
		return fmt.Errorf("a label of %d bytes (1 to 63)", len(l))
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return fmt.Errorf("label %q starts or ends with a hyphen", l)
	}
	for _, c := range l {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("label %q holds %q (letters, digits and hyphens only; an internationalised name in its xn-- form)", l, string(c))
		}
	}
	return nil
}
