package experiment

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"v6lab/internal/proto"
	"v6lab/internal/result"
)

// Resume is what an interrupted result directory says about itself.
type Resume struct {
	Exp    *Experiment
	Header result.Header
	// Done lists the finished steps by Seq.
	Done map[int]bool
	// Moved names the file that received the lines of the unfinished run
	// (samples.unfinished-N.jsonl), or "" when there were none.
	Moved string
}

// ErrComplete is returned by PrepareResume when nothing is left to do.
var ErrComplete = errors.New("experiment: every run of this experiment is finished")

// PrepareResume reads dir's samples file and cuts it back to the end of its
// last finished run, so that the executor can append the rest of the plan.
// The cut lines (samples of a run that was interrupted, and a line a kill
// cut in half) are not thrown away: they move to samples.unfinished-N.jsonl.
func PrepareResume(dir string) (*Resume, error) {
	name := filepath.Join(dir, "samples.jsonl")
	fh, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	defer fh.Close()
	// Held until fh closes: the file is cut below, never under a writer.
	if err := result.Lock(fh); err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	// Read as a stream with every line bounded (result.MaxLine): a damaged
	// file never takes more memory than its samples.
	f, err := result.Read(fh, name)
	if err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	spec, err := json.Marshal(f.Header.Spec)
	if err != nil {
		return nil, err
	}
	var exp Experiment
	if err := json.Unmarshal(spec, &exp); err != nil || len(exp.Groups) == 0 {
		return nil, fmt.Errorf("experiment: resume: %s does not hold an experiment this version can resume", name)
	}
	for _, c := range exp.Groups {
		if u, ok := proto.FieldOf(c.Opts(), proto.OptURL); ok && proto.Redacted(u.Text()) {
			return nil, fmt.Errorf("experiment: resume: cell group %s's url had a password, which results do not record (%s): run it again instead", c.CellName(), u.Text())
		}
	}
	rs := &Resume{Exp: &exp, Header: f.Header, Done: map[int]bool{}}
	// Find the end of the last finished run's line.
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	br := bufio.NewReaderSize(fh, 64<<10)
	var keep, off, size int64
	for {
		line, err := rawLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("experiment: resume: %s: %w", name, err)
		}
		if errors.Is(err, io.EOF) {
			size = off + int64(len(line))
			break // a cut-off last line, or the end
		}
		off += int64(len(line))
		var l struct {
			Kind string `json:"kind"`
			Seq  int    `json:"seq"`
			Err  string `json:"err"`
		}
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		switch {
		case l.Kind == result.KindHeader:
			keep = off
		case l.Kind == result.KindRun && l.Err != "interrupted":
			rs.Done[l.Seq] = true
			keep = off
		}
	}
	if len(rs.Done) == len(exp.Plan()) {
		return rs, ErrComplete
	}
	if keep < size {
		for i := 1; ; i++ {
			rs.Moved = filepath.Join(dir, fmt.Sprintf("samples.unfinished-%d.jsonl", i))
			mf, err := os.OpenFile(rs.Moved, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, os.ErrExist) && i < 1000 {
				continue
			}
			if err == nil {
				if _, err = fh.Seek(keep, io.SeekStart); err == nil {
					_, err = io.Copy(mf, fh)
				}
				if cerr := mf.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return nil, fmt.Errorf("experiment: resume: keeping the unfinished run's lines: %w", err)
			}
			break
		}
		if err := os.Truncate(name, int64(keep)); err != nil {
			return nil, fmt.Errorf("experiment: resume: %w", err)
		}
	}
	return rs, nil
}

// rawLine returns one line with its newline, at most result.MaxLine bytes;
// io.EOF comes with a last line without a newline, or with nothing.
func rawLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > result.MaxLine {
			return nil, fmt.Errorf("a line longer than %d bytes (v6lab writes none so long: the file is damaged)", result.MaxLine)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}
