package survey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"v6lab/internal/report/sites"
	"v6lab/internal/result"
	"v6lab/internal/run/merge"
)

// segmentDir is one survey segment's result directory and its header.
type segmentDir struct {
	dir, name string
	h         result.Header
	spec      []byte
}

// IsSurvey says whether dir (or the first result directory in it) holds
// a survey's result: what v6lab merge hands to Merge.
func IsSurvey(dir string) bool {
	dirs, err := merge.Dirs([]string{dir})
	if err != nil {
		return false
	}
	s, err := readHeader(dirs[0])
	return err == nil && s.h.Target == result.Sites
}

var errStop = errors.New("header read")

// readHeader reads a result directory's header only.
func readHeader(dir string) (*segmentDir, error) {
	name, err := result.SamplesPath(dir)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	defer f.Close()
	s := &segmentDir{dir: dir, name: name}
	_, err = result.Scan(f, name, result.Visitor{Header: func(h *result.Header) error { s.h = *h; return errStop }})
	if !errors.Is(err, errStop) {
		return nil, fmt.Errorf("merge: %s: no header: %v", dir, err)
	}
	s.spec, err = json.Marshal(s.h.Spec)
	return s, err
}

// readSegments reads the headers of the survey segments dirs name, and
// checks they are every segment of one survey: one spec (list, digest,
// options), one split, each index once.
func readSegments(dirs []string) ([]*segmentDir, error) {
	found, err := merge.Dirs(dirs)
	if err != nil {
		return nil, err
	}
	var segs []*segmentDir
	for _, dir := range found {
		s, err := readHeader(dir)
		if err != nil {
			return nil, err
		}
		segs = append(segs, s)
	}
	if len(segs) == 0 {
		return nil, errors.New("merge: no result directory")
	}
	for _, s := range segs {
		switch g := s.h.Segment; {
		case s.h.Target != result.Sites:
			return nil, fmt.Errorf("merge: %s is not a survey's result (target %s): merge surveys with surveys", s.dir, s.h.Target)
		case g == nil:
			return nil, fmt.Errorf("merge: %s is not a segment (it was surveyed without --segment)", s.dir)
		case g.Count != segs[0].h.Segment.Count:
			return nil, fmt.Errorf("merge: %s is segment %s, %s segment %s: one survey is split one way", s.dir, g, segs[0].dir, segs[0].h.Segment)
		case !bytes.Equal(s.spec, segs[0].spec):
			return nil, fmt.Errorf("merge: %s and %s are not segments of one survey: %s", s.dir, segs[0].dir, specDiff(s.spec, segs[0].spec, filepath.Base(s.dir), filepath.Base(segs[0].dir)))
		}
	}
	slices.SortFunc(segs, func(a, b *segmentDir) int { return a.h.Segment.Index - b.h.Segment.Index })
	n := segs[0].h.Segment.Count
	for i := range n {
		if i >= len(segs) || segs[i].h.Segment.Index != i {
			return nil, fmt.Errorf("merge: segment %d/%d is missing or given twice (%d directories for %d segments)", i, n, len(segs), n)
		}
	}
	if len(segs) != n {
		return nil, fmt.Errorf("merge: %d directories for %d segments", len(segs), n)
	}
	return segs, nil
}

// Merge joins the result directories of a survey's segments into a new
// one under root, its sites in the list's order, and renders its reports
// (the verdicts are each segment's: a site's samples are all in one
// segment). It streams: a site's lines at a time per segment.
func Merge(dirs []string, root, name string, command []string) (string, *sites.Summary, error) {
	segs, err := readSegments(dirs)
	if err != nil {
		return "", nil, err
	}
	h := mergedHeader(segs, command)
	if name == "" {
		name = h.Name + "-merged"
	}
	dir, err := result.NewDir(root, name, time.Now())
	if err != nil {
		return "", nil, err
	}
	f, w, err := result.CreateSamples(dir)
	if err != nil {
		return dir, nil, err
	}
	w.Header(h)
	werr := writeMerged(segs, w)
	if err := w.Close(); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return dir, nil, werr
	}
	s, err := sites.WriteAll(dir)
	return dir, s, err
}

// mergedHeader is segment 0's header without its segment, listing every
// segment merged.
func mergedHeader(segs []*segmentDir, command []string) result.Header {
	h := segs[0].h
	h.Segment, h.Created, h.Command = nil, time.Now().UTC(), command
	h.Notes = nil
	for _, n := range segs[0].h.Notes {
		if !strings.HasPrefix(n, "segment ") {
			h.Notes = append(h.Notes, n)
		}
	}
	h.Notes = append(h.Notes, fmt.Sprintf("merged from %s: each site was surveyed by segment (its index mod %d)", plural(len(segs), "segment"), len(segs)))
	for _, s := range segs {
		g := *s.h.Segment
		g.Dir = s.dir
		h.Merged = append(h.Merged, g)
	}
	return h
}

// writeMerged writes every segment's site blocks, round robin (site i is
// segment i mod N's), until every segment has none left: the list's order.
func writeMerged(segs []*segmentDir, w *result.Writer) error {
	curs := make([]*siteCursor, len(segs))
	for i, s := range segs {
		curs[i] = openCursor(s.name)
		defer curs[i].close()
	}
	left := len(curs)
	for k := 0; left > 0; k++ {
		c := curs[k%len(curs)]
		if c.ended {
			continue
		}
		b, ok := <-c.blocks
		if !ok {
			c.ended, left = true, left-1
			if err := <-c.done; err != nil {
				return err
			}
			continue
		}
		if b.site.Index != k {
			return fmt.Errorf("merge: %s: site %d where site %d was due: not a survey segment as v6lab writes them", segs[k%len(segs)].dir, b.site.Index, k)
		}
		for _, smp := range b.samples {
			w.Sample(smp)
		}
		w.Site(b.site)
	}
	return w.Sync()
}

// siteCursor streams one segment's site blocks.
type siteCursor struct {
	blocks chan block
	done   chan error
	stop   chan struct{}
	ended  bool
}

func openCursor(name string) *siteCursor {
	c := &siteCursor{blocks: make(chan block), done: make(chan error, 1), stop: make(chan struct{})}
	go func() {
		defer close(c.blocks)
		f, err := os.Open(name)
		if err != nil {
			c.done <- err
			return
		}
		defer f.Close()
		var pending []result.Sample
		_, err = result.Scan(f, name, result.Visitor{
			Header: func(*result.Header) error { return nil },
			Sample: func(s *result.Sample) { pending = append(pending, *s) },
			Site: func(s *result.Site) {
				select {
				case c.blocks <- block{samples: pending, site: *s}:
				case <-c.stop:
				}
				pending = nil
			},
		})
		c.done <- err
	}()
	return c
}

func (c *siteCursor) close() {
	close(c.stop)
	for range c.blocks {
	}
}

// specDiff names the options (or list) two segments' specs give
// differently, with both values: "threshold 1ms in A, 40ms in B".
func specDiff(a, b []byte, nameA, nameB string) string {
	ma, mb, keys, ok := sites.OptionKeys(a, b)
	if !ok {
		return "their list or options differ"
	}
	var out []string
	for _, k := range keys {
		if va, vb := specValue(ma, k), specValue(mb, k); va != vb {
			out = append(out, fmt.Sprintf("%s %s in %s, %s in %s", k, va, nameA, vb, nameB))
		}
	}
	if len(out) == 0 {
		return "their list or options differ"
	}
	return strings.Join(out, "; ")
}

func specValue(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok {
		return "(not given)"
	}
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}
