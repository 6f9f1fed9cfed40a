// Package merge joins the result directories of a split run's segments
// (v6lab run --segment I/N) into one, exactly: the merged samples file
// holds every segment's samples, so its summary is computed from all of
// them as if one host had run every user, and each segment's own share
// stays visible (report.SegmentFigures).
//
// It imports result and report only.
package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"v6lab/internal/report"
	"v6lab/internal/result"
)

// Dir is one segment's result directory, as read.
type Dir struct {
	dir  string
	file *result.File
	runs map[int]*result.Run // by Seq
}

// Read reads dirs, each a segment's result directory or a directory that
// holds them (every subdirectory with a samples.jsonl).
func Read(dirs []string) ([]*Dir, error) {
	var out []*Dir
	for _, d := range dirs {
		found, err := expand(d)
		if err != nil {
			return nil, err
		}
		for _, dir := range found {
			seg, err := readSegment(dir)
			if err != nil {
				return nil, err
			}
			out = append(out, seg)
		}
	}
	return out, nil
}

// expand is dir when it is a result directory, else the result
// directories it holds.
func expand(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, "samples.jsonl")); err == nil {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	var out []string
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(sub, "samples.jsonl")); e.IsDir() && err == nil {
			out = append(out, sub)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("merge: %s: no samples.jsonl in it nor in a directory below it: not a result directory", dir)
	}
	return out, nil
}

func readSegment(dir string) (*Dir, error) {
	name := filepath.Join(dir, "samples.jsonl")
	fh, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	defer fh.Close()
	f, err := result.Read(fh, name)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if f.Header.Segment == nil {
		return nil, fmt.Errorf("merge: %s is not a segment of a split run (it was run without --segment)", dir)
	}
	seg := &Dir{dir: dir, file: f, runs: map[int]*result.Run{}}
	for i := range f.Runs {
		seg.runs[f.Runs[i].Seq] = &f.Runs[i]
	}
	return seg, nil
}

// Check says whether segs are every segment of one experiment: the same
// experiment (spec, seed, order), the same split, distinct indexes, none
// missing, one schedule.
func Check(segs []*Dir) error {
	if len(segs) == 0 {
		return errors.New("merge: no segments given")
	}
	first := segs[0]
	h0 := first.file.Header
	n := h0.Segment.Count
	spec0, err := specOf(h0)
	if err != nil {
		return fmt.Errorf("merge: %s: %w", first.dir, err)
	}
	have := map[int]string{}
	var problems []string
	for _, s := range segs {
		h := s.file.Header
		switch {
		case h.Segment.Count != n:
			problems = append(problems, fmt.Sprintf("%s is segment %s, but %s is one of %d", s.dir, h.Segment, first.dir, n))
			continue
		case have[h.Segment.Index] != "":
			problems = append(problems, fmt.Sprintf("%s and %s are both segment %s", have[h.Segment.Index], s.dir, h.Segment))
			continue
		}
		have[h.Segment.Index] = s.dir
		if s == first {
			continue
		}
		spec, _ := specOf(h)
		if string(spec) != string(spec0) {
			problems = append(problems, fmt.Sprintf("%s ran another experiment than %s (spec differs at %s)", s.dir, first.dir, firstDifference(spec0, spec)))
		}
		if h.FormatVersion != h0.FormatVersion || h.ToolVersion != h0.ToolVersion {
			problems = append(problems, fmt.Sprintf("%s was written by v6lab %s (format %d), %s by %s (format %d): merge segments of one version",
				s.dir, h.ToolVersion, h.FormatVersion, first.dir, h0.ToolVersion, h0.FormatVersion))
		}
		if !h.Segment.StartAt.Equal(h0.Segment.StartAt) {
			problems = append(problems, fmt.Sprintf("%s was scheduled to start at %s, %s at %s: not one schedule (--start-at)",
				s.dir, startText(h.Segment.StartAt), first.dir, startText(h0.Segment.StartAt)))
		}
		if h.Target != h0.Target {
			problems = append(problems, fmt.Sprintf("%s ran on %s, %s on %s", s.dir, h.Target, first.dir, h0.Target))
		}
	}
	var missing []string
	for i := range n {
		if have[i] == "" {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("segment(s) %s missing (have %d of %d)", strings.Join(missing, ", "), len(have), n))
	}
	if len(problems) > 0 {
		return fmt.Errorf("merge: these are not the segments of one experiment:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// specOf is a header's experiment as JSON, but its name: segments may
// be named apart (--name), the experiment is the same.
func specOf(h result.Header) ([]byte, error) {
	b, err := json.Marshal(h.Spec)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "name")
	return json.Marshal(m)
}

func startText(t time.Time) string {
	if t.IsZero() {
		return "no schedule"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// firstDifference names the first JSON field where a and b differ.
func firstDifference(a, b []byte) string {
	var x, y any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	return diffAt("spec", x, y)
}

func diffAt(at string, x, y any) string {
	xm, okx := x.(map[string]any)
	ym, oky := y.(map[string]any)
	if okx && oky {
		keys := map[string]bool{}
		for k := range xm {
			keys[k] = true
		}
		for k := range ym {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			if !reflect.DeepEqual(xm[k], ym[k]) {
				return diffAt(at+"."+k, xm[k], ym[k])
			}
		}
		return at
	}
	xs, okx := x.([]any)
	ys, oky := y.([]any)
	if okx && oky && len(xs) == len(ys) {
		for i := range xs {
			if !reflect.DeepEqual(xs[i], ys[i]) {
				return diffAt(fmt.Sprintf("%s[%d]", at, i), xs[i], ys[i])
			}
		}
	}
	return fmt.Sprintf("%s: %v vs %v", at, short(x), short(y))
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// Write writes the merged result directory under root (named name, or
// the experiment's with "-merged") and its reports, and returns it.
// command is recorded in the header.
func Write(segs []*Dir, root, name string, command []string, now time.Time) (string, *report.Summary, error) {
	sort.Slice(segs, func(i, j int) bool { return segs[i].file.Header.Segment.Index < segs[j].file.Header.Segment.Index })
	h0 := segs[0].file.Header
	if name == "" {
		name = h0.Name + "-merged"
	}
	dir, err := result.NewDir(root, name, now)
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "samples.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return dir, nil, fmt.Errorf("merge: %w", err)
	}
	w := result.NewWriter(f)
	w.Header(mergedHeader(segs, command, now))
	// Samples by run: a segment's samples of step seq, then the merged
	// run record, step after step as the plan did them.
	bySeq := make([]map[int][]result.Sample, len(segs))
	for i, s := range segs {
		bySeq[i] = map[int][]result.Sample{}
		seqOf := map[string]int{}
		for _, r := range s.file.Runs {
			seqOf[runID(r.Cell, r.Run)] = r.Seq
		}
		for _, smp := range s.file.Samples {
			seq, ok := seqOf[runID(smp.Cell, smp.Run)]
			if !ok {
				seq = -1 // cut off before its run's record: a run of its own, left out
			}
			bySeq[i][seq] = append(bySeq[i][seq], smp)
		}
	}
	for _, seq := range allSeqs(segs) {
		for i := range segs {
			for _, smp := range bySeq[i][seq] {
				w.Sample(smp)
			}
		}
		if seq >= 0 {
			w.Run(mergedRun(segs, seq))
		}
	}
	if err := errors.Join(w.Close(), f.Close()); err != nil {
		return dir, nil, fmt.Errorf("merge: %w", err)
	}
	s, err := report.WriteAll(dir)
	return dir, s, err
}

func runID(cell string, run int) string { return fmt.Sprintf("%s#%d", cell, run) }

// allSeqs are the steps any segment recorded, in order (and -1 for
// samples without a run record, last).
func allSeqs(segs []*Dir) []int {
	seen := map[int]bool{}
	for _, s := range segs {
		for seq := range s.runs {
			seen[seq] = true
		}
	}
	out := make([]int, 0, len(seen)+1)
	for seq := range seen {
		out = append(out, seq)
	}
	slices.Sort(out)
	return append(out, -1)
}

func mergedHeader(segs []*Dir, command []string, now time.Time) result.Header {
	h := segs[0].file.Header
	h.Segment = nil
	h.Created = now.UTC()
	h.Command = command
	h.Notes = nil
	hosts := map[string]bool{}
	var hostList []string
	for _, s := range segs {
		g := *s.file.Header.Segment
		g.Dir = s.dir
		for _, r := range s.file.Runs {
			if r.LateNS > 0 {
				g.LateRuns++
				g.MaxLateNS = max(g.MaxLateNS, r.LateNS)
			}
		}
		h.Merged = append(h.Merged, g)
		if !hosts[g.Host] {
			hosts[g.Host] = true
			hostList = append(hostList, g.Host)
		}
	}
	if len(hostList) > 1 {
		h.Host = strings.Join(hostList, ", ")
	}
	// The segments' notes, each once, but the one that says a segment's
	// figures are a share.
	seen := map[string]bool{}
	for _, s := range segs {
		for _, n := range s.file.Header.Notes {
			if !seen[n] && !strings.HasPrefix(n, "segment ") {
				seen[n] = true
				h.Notes = append(h.Notes, n)
			}
		}
	}
	h.Notes = append(h.Notes, fmt.Sprintf("merged by v6lab merge from %d segments (%s): the samples of every segment, so every figure is that of one run of all users", len(segs), strings.Join(dirsOf(segs), ", ")))
	return h
}

func dirsOf(segs []*Dir) []string {
	var out []string
	for _, s := range segs {
		out = append(out, s.dir)
	}
	return out
}

// mergedRun is one step's record over every segment: from the first
// segment's start to the last one's end (rate/s divides by that),
// completions and failures summed, the wire counts summed, and left out
// (Err) when any segment's run was, or a segment never finished it.
func mergedRun(segs []*Dir, seq int) result.Run {
	var out result.Run
	var errs []string
	started := false
	for _, s := range segs {
		r := s.runs[seq]
		g := s.file.Header.Segment
		if r == nil {
			errs = append(errs, fmt.Sprintf("segment %s never finished this run (resume it with v6lab run --resume %s, then merge again)", g, s.dir))
			continue
		}
		if !started {
			out = *r
			out.Wire, out.Err, out.Completed, out.Failed, out.LateNS = nil, "", 0, 0, 0
			started = true
		}
		if r.Start.Before(out.Start) {
			out.Start = r.Start
		}
		if r.End.After(out.End) {
			out.End = r.End
		}
		out.Completed += r.Completed
		out.Failed += r.Failed
		out.LateNS = max(out.LateNS, r.LateNS)
		if r.Wire != nil {
			if out.Wire == nil {
				out.Wire = &result.Wire{}
			}
			out.Wire.IPv4 += r.Wire.IPv4
			out.Wire.IPv6 += r.Wire.IPv6
			out.Wire.SixIn4 += r.Wire.SixIn4
			out.Wire.NAT64 += r.Wire.NAT64
			out.Wire.DSLite += r.Wire.DSLite
			out.Wire.Stray += r.Wire.Stray
			if cs := r.Wire.ClientSide; cs != nil {
				if out.Wire.ClientSide == nil {
					out.Wire.ClientSide = &result.Wire{}
				}
				out.Wire.ClientSide.IPv4 += cs.IPv4
				out.Wire.ClientSide.IPv6 += cs.IPv6
				out.Wire.ClientSide.SixIn4 += cs.SixIn4
				out.Wire.ClientSide.Stray += cs.Stray
			}
		}
		if r.Err != "" {
			errs = append(errs, fmt.Sprintf("segment %s: %s", g, r.Err))
		}
	}
	out.Err = strings.Join(errs, "; ")
	return out
}
