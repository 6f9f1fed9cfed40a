package experiment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/run/cmdline"
)

// Resume is what an interrupted result directory says about itself.
type Resume struct {
	Exp    *Experiment
	Header result.Header
	// Done lists the finished steps by Seq.
	Done map[int]bool
	// Rewarmed lists the re-warm runs in the file by Run (negative:
	// result.RewarmRun), so that the next re-warm of a step takes a
	// number of its own (Executor.Rewarmed).
	Rewarmed map[int]bool
	// Moved names the file that received the lines of the unfinished run
	// (samples.unfinished-N.jsonl), or "" when there were none.
	Moved string
	// StaleExport names the samples.parquet of an earlier export that
	// PrepareResume removed (result.RemoveStaleExport), "" for none.
	StaleExport string
	// StartAt is the schedule the interrupted process kept (--start-at):
	// its segment's, or, run unsplit, the one a run record's slot gives;
	// zero when it ran without one. A resume keeps it (trial7 F6): each
	// run left waits for its slot, and one whose slot has passed starts
	// at once and records how late.
	StartAt time.Time
	// slotSeq and slot are the first finished step's recorded slot.
	slotSeq int
	slot    time.Time
}

// ErrComplete is returned by PrepareResume when nothing is left to do.
var ErrComplete = errors.New("experiment: every run of this experiment is finished")

// PrepareResume reads dir's samples file and cuts it back to the end of its
// last finished run, so that the executor can append the rest of the plan.
// The cut lines (samples of a run that was interrupted, and a line a kill
// cut in half) are not thrown away: they move to samples.unfinished-N.jsonl.
// A compressed file is cut at the end of a frame (its writer ends one
// after every run), so it stays whole zstd for zstdcat.
func PrepareResume(dir string) (*Resume, error) {
	name, err := result.SamplesPath(dir)
	if err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	fh, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	defer fh.Close()
	// Held until fh closes: the file is cut below, never under a writer.
	if err := result.Lock(fh); err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	var h *result.Header
	// The header alone, read with its line bounded (result.MaxLine).
	errHeader := errors.New("header read")
	if _, err := result.Scan(io.NewSectionReader(fh, 0, 1<<62), name, result.Visitor{
		Header: func(hd *result.Header) error { h = hd; return errHeader },
	}); !errors.Is(err, errHeader) {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	if h.Target == result.Sites {
		return nil, &cmdline.BadInput{Err: fmt.Errorf("experiment: resume: %s is a survey's result: resume it with v6lab survey --resume %s", dir, dir)}
	}
	spec, err := json.Marshal(h.Spec)
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
		if name := proto.MaskedSecret(c.Opts()); name != "" {
			return nil, fmt.Errorf("experiment: resume: cell group %s's %s was a secret, which results do not record: run it again instead", c.CellName(), name)
		}
	}
	rs := &Resume{Exp: &exp, Header: *h, Done: map[int]bool{}, Rewarmed: map[int]bool{}}
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	size := st.Size()
	// The end of the last finished run's line (or the header's).
	keep, compressed, err := result.KeepPoint(fh, size, rs.finished)
	if err != nil {
		return nil, fmt.Errorf("experiment: resume: %s: %w", name, err)
	}
	rs.StartAt = rs.schedule()
	if len(rs.Done) == len(exp.Plan()) {
		return rs, ErrComplete
	}
	if rs.StaleExport, err = result.RemoveStaleExport(dir); err != nil {
		return nil, fmt.Errorf("experiment: resume: %w", err)
	}
	if keep < size {
		if rs.Moved, err = MoveUnfinished(dir, fh, size, keep, compressed); err != nil {
			return nil, err
		}
		if err := fh.Truncate(keep); err != nil {
			return nil, fmt.Errorf("experiment: resume: %w", err)
		}
	}
	return rs, nil
}

// finished says whether a samples line ends a finished run (or is the
// header), recording a finished step of the plan in Done by its seq, and
// a re-warm run (finished, but no step of the plan) in Rewarmed by its
// run number.
func (rs *Resume) finished(line []byte) bool {
	var l struct {
		Kind   string    `json:"kind"`
		Run    int       `json:"run"`
		Seq    int       `json:"seq"`
		Err    string    `json:"err"`
		Rewarm bool      `json:"rewarm"`
		Slot   time.Time `json:"slot"`
	}
	if json.Unmarshal(line, &l) != nil {
		return false
	}
	switch {
	case l.Kind == result.KindHeader:
		return true
	case l.Kind == result.KindRun && l.Err != "interrupted":
		if l.Rewarm {
			rs.Rewarmed[l.Run] = true
		} else {
			rs.Done[l.Seq] = true
			if rs.slot.IsZero() && !l.Slot.IsZero() {
				rs.slotSeq, rs.slot = l.Seq, l.Slot
			}
		}
		return true
	}
	return false
}

// schedule is when run 0 of the interrupted process's schedule was: the
// header's segment's start, or, unsplit (no segment records it), the
// first recorded slot less the slots before its step.
func (rs *Resume) schedule() time.Time {
	if g := rs.Header.Segment; g != nil && !g.StartAt.IsZero() {
		return g.StartAt.UTC()
	}
	if rs.slot.IsZero() {
		return time.Time{}
	}
	slots := rs.Exp.Schedule(time.Time{})
	if rs.slotSeq < 0 || rs.slotSeq >= len(slots) {
		return time.Time{}
	}
	return rs.slot.Add(-slots[rs.slotSeq].Sub(time.Time{})).UTC()
}

// MoveUnfinished writes the text of fh past keep to a new
// samples.unfinished-N.jsonl and returns its name.
func MoveUnfinished(dir string, fh *os.File, size, keep int64, compressed bool) (string, error) {
	for i := 1; ; i++ {
		moved := filepath.Join(dir, fmt.Sprintf("samples.unfinished-%d.jsonl", i))
		mf, err := os.OpenFile(moved, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) && i < 1000 {
			continue
		}
		if err == nil {
			err = result.CopyText(fh, size, keep, compressed, mf)
			if cerr := mf.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return "", fmt.Errorf("experiment: resume: keeping the unfinished run's lines: %w", err)
		}
		return moved, nil
	}
}
