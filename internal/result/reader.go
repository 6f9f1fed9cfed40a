package result

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// File is everything read back from a samples file.
type File struct {
	Header  Header
	Runs    []Run
	Samples []Sample
	// Truncated is set when the last line was cut off (a killed run); the
	// complete lines before it are kept.
	Truncated bool
}

// ErrNoHeader is returned when the first line is not a header.
var ErrNoHeader = errors.New("first line is not a v6lab header")

var errNoHeaderLine = errors.New("no header")

// maxLine bounds one line so a corrupt file cannot exhaust memory.
const maxLine = 1 << 20

// Read decodes a samples file. name is used in errors, which give the line.
// Unknown fields are errors (a file from a newer format must not be read
// silently wrong); a cut-off last line is tolerated and flagged.
func Read(r io.Reader, name string) (*File, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	f := &File{}
	for lineNo := 1; ; lineNo++ {
		line, err := readLine(br)
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			return f, fmt.Errorf("result: %s:%d: %w", name, lineNo, err)
		}
		last := err == io.EOF
		if len(bytes.TrimSpace(line)) == 0 {
			if last {
				break
			}
			continue
		}
		if derr := f.decodeLine(line, lineNo); derr != nil {
			if derr == errNoHeaderLine {
				return f, fmt.Errorf("result: %s: %w", name, ErrNoHeader)
			}
			if last && lineNo > 1 && !bytes.HasSuffix(line, []byte("}")) {
				f.Truncated = true
				break
			}
			return f, fmt.Errorf("result: %s:%d: %w", name, lineNo, derr)
		}
		if last {
			break
		}
	}
	if f.Header.Kind != KindHeader {
		return f, fmt.Errorf("result: %s: %w", name, ErrNoHeader)
	}
	return f, nil
}

// MaxLine bounds one line of a samples file.
const MaxLine = maxLine

// readLine returns one line without its newline; io.EOF comes with a final
// line that had no newline (possibly cut off) or with nothing at all.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("a line longer than %d bytes (v6lab writes none so long: the file is not a samples file, or is damaged)", maxLine)
		}
		switch err {
		case nil:
			return bytes.TrimRight(buf, "\r\n"), nil
		case bufio.ErrBufferFull:
			continue
		default:
			return buf, err
		}
	}
}

func (f *File) decodeLine(line []byte, lineNo int) error {
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(line, &probe); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if lineNo == 1 && probe.Kind != KindHeader {
		return errNoHeaderLine
	}
	switch probe.Kind {
	case KindHeader:
		if lineNo != 1 {
			return fmt.Errorf("second header")
		}
		if err := strict(line, &f.Header); err != nil {
			return err
		}
		if f.Header.FormatVersion < 1 || f.Header.FormatVersion > FormatVersion {
			return fmt.Errorf("format_version %d not supported (this v6lab reads %d)", f.Header.FormatVersion, FormatVersion)
		}
	case KindRun:
		var r Run
		if err := strict(line, &r); err != nil {
			return err
		}
		f.Runs = append(f.Runs, r)
	case KindSample:
		var s Sample
		if err := strict(line, &s); err != nil {
			return err
		}
		if s.TotalNS < 0 {
			return fmt.Errorf("field total_ns: negative duration %d", s.TotalNS)
		}
		f.Samples = append(f.Samples, s)
	default:
		return fmt.Errorf("field kind: unknown record kind %q", probe.Kind)
	}
	return nil
}

func strict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}
