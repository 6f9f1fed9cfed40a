package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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
// last finished run, so that the runner can append the rest of the plan.
// The cut lines (samples of a run that was interrupted, and a line a kill
// cut in half) are not thrown away: they move to samples.unfinished-N.jsonl.
func PrepareResume(dir string) (*Resume, error) {
	name := filepath.Join(dir, "samples.jsonl")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	f, err := result.Read(bytes.NewReader(data), name)
	if err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	spec, err := json.Marshal(f.Header.Spec)
	if err != nil {
		return nil, err
	}
	var exp Experiment
	if err := json.Unmarshal(spec, &exp); err != nil || len(exp.Cells) == 0 {
		return nil, fmt.Errorf("experiment: resume: %s does not hold an experiment this version can resume", name)
	}
	rs := &Resume{Exp: &exp, Header: f.Header, Done: map[int]bool{}}
	// Find the end of the last finished run's line.
	keep, off := 0, 0
	for off < len(data) {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			break // a cut-off last line
		}
		line := data[off : off+end]
		off += end + 1
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
	if keep < len(data) {
		for i := 1; ; i++ {
			rs.Moved = filepath.Join(dir, fmt.Sprintf("samples.unfinished-%d.jsonl", i))
			mf, err := os.OpenFile(rs.Moved, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, os.ErrExist) && i < 1000 {
				continue
			}
			if err == nil {
				_, err = mf.Write(data[keep:])
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
