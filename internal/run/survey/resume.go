package survey

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
)

// ResumableIn reads an interrupted survey's header: the survey as it ran,
// its segment, and the lab of sites it measured (LabKey's value: "lab:NAME", "sites:FILE"; "" for real sites or a
// record that predates it). experiment.ErrComplete: every site of it is
// there.
func ResumableIn(dir string) (*Spec, *result.Segment, string, error) {
	sp, seg, h, err := resumable(dir)
	if err != nil {
		return nil, nil, "", err
	}
	return sp, seg, h.Lab[LabKey], nil
}

func resumable(dir string) (*Spec, *result.Segment, *result.Header, error) {
	name, err := result.SamplesPath(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("survey: resume: %w", err)
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("survey: resume: %w", err)
	}
	defer fh.Close()
	var h *result.Header
	errHeader := errors.New("header read")
	if _, err := result.Scan(fh, name, result.Visitor{Header: func(hd *result.Header) error { h = hd; return errHeader }}); !errors.Is(err, errHeader) {
		return nil, nil, nil, fmt.Errorf("survey: resume: %w", err)
	}
	if h.Target != result.Sites {
		return nil, nil, nil, fmt.Errorf("survey: resume: %s is not a survey's result (target %s): resume it with v6lab run --resume", dir, h.Target)
	}
	b, err := json.Marshal(h.Spec)
	if err != nil {
		return nil, nil, nil, err
	}
	sp := &Spec{}
	if err := json.Unmarshal(b, sp); err != nil || sp.SitesSHA256 == "" {
		return nil, nil, nil, fmt.Errorf("survey: resume: %s does not hold a survey this version can resume", dir)
	}
	var seg *result.Segment
	if h.Segment != nil {
		g := result.Segment{Index: h.Segment.Index, Count: h.Segment.Count}
		seg = &g
	}
	return sp, seg, h, nil
}

// resumePoint cuts an interrupted survey's samples file back to the end
// of its last site record (the lines after it, a site the interruption
// cut short, move to samples.unfinished-N.jsonl, as an experiment's) and
// returns that site's index (-1: none yet).
func resumePoint(dir string) (int, error) {
	name, err := result.SamplesPath(dir)
	if err != nil {
		return 0, fmt.Errorf("survey: resume: %w", err)
	}
	fh, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return 0, fmt.Errorf("survey: resume: %w", err)
	}
	defer fh.Close()
	if err := result.Lock(fh); err != nil {
		return 0, fmt.Errorf("survey: resume: %w", err)
	}
	st, err := fh.Stat()
	if err != nil {
		return 0, err
	}
	keep, compressed, err := result.KeepPoint(fh, st.Size(), func(line []byte) bool {
		var l struct {
			Kind string `json:"kind"`
		}
		return json.Unmarshal(line, &l) == nil && (l.Kind == result.KindHeader || l.Kind == result.KindSite)
	})
	if err != nil {
		return 0, fmt.Errorf("survey: resume: %s: %w", name, err)
	}
	if keep < st.Size() {
		if _, err := experiment.MoveUnfinished(dir, fh, st.Size(), keep, compressed); err != nil {
			return 0, err
		}
		if err := fh.Truncate(keep); err != nil {
			return 0, fmt.Errorf("survey: resume: %w", err)
		}
	}
	last := -1
	if _, err := result.Scan(io.NewSectionReader(fh, 0, keep), name, result.Visitor{Site: func(s *result.Site) { last = s.Index }}); err != nil {
		return 0, fmt.Errorf("survey: resume: %w", err)
	}
	return last, nil
}
