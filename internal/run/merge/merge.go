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
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// Dir is one segment's result directory, as read: its header and run
// records (its samples stay on disk until Write streams them).
type Dir struct {
	dir    string
	name   string // its samples file
	header result.Header
	runs   []result.Run
	byID   map[string]*result.Run // by runID
	seqOf  map[string]int         // by runID
}

// Read reads dirs, each a segment's result directory or a directory that
// holds them (every subdirectory with a samples file).
func Read(dirs []string) ([]*Dir, error) {
	found, err := Dirs(dirs)
	if err != nil {
		return nil, err
	}
	out := make([]*Dir, 0, len(found))
	for _, dir := range found {
		seg, err := readSegment(dir)
		if err != nil {
			return nil, err
		}
		out = append(out, seg)
	}
	return out, nil
}

// Dirs are the result directories dirs name: each one that is a result
// directory, and those each other one holds (an error when it holds none).
func Dirs(dirs []string) ([]string, error) {
	var out []string
	for _, d := range dirs {
		found, err := expand(d)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// NotWritten refuses the result directories dirs name (Dirs) while a
// running v6lab still writes one of them (report.NotWritten): a merge of
// it would lack the runs still to come. A survey's segments alike.
func NotWritten(dirs []string) error {
	found, err := Dirs(dirs)
	if err != nil {
		return nil // Read says why
	}
	for _, dir := range found {
		if err := report.NotWritten(dir, "merge"); err != nil {
			return err
		}
	}
	return nil
}

// expand is dir when it is a result directory, else the result
// directories it holds.
func expand(dir string) ([]string, error) {
	if result.HasSamples(dir) {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	var out []string
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if e.IsDir() && result.HasSamples(sub) {
			out = append(out, sub)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("merge: %s: no samples file (%s or %s) in it nor in a directory below it: not a result directory", dir, result.SamplesName, result.PlainSamplesName)
	}
	return out, nil
}

// readSegment reads a segment's header and run records (its samples are
// read, and checked, as a stream by Write).
func readSegment(dir string) (*Dir, error) {
	name, err := result.SamplesPath(dir)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	seg := &Dir{dir: dir, name: name, byID: map[string]*result.Run{}, seqOf: map[string]int{}}
	err = scanFile(name, result.Visitor{
		Header: func(h *result.Header) error {
			if h.Segment == nil {
				return fmt.Errorf("merge: %s is not a segment of a split run (it was run without --segment)", dir)
			}
			seg.header = *h
			return nil
		},
		Run: func(r *result.Run) { seg.runs = append(seg.runs, *r) },
	})
	if err != nil {
		return nil, err
	}
	for i := range seg.runs {
		r := &seg.runs[i]
		id := runID(r.Cell, r.Run)
		if had := seg.byID[id]; had != nil {
			if err := sameRewarm(had, r); err != nil {
				return nil, fmt.Errorf("merge: %s: %w", name, err)
			}
			continue
		}
		seg.byID[id] = r
		seg.seqOf[id] = r.Seq
	}
	return seg, nil
}

// sameRewarm folds into had a second record r of the same run: two
// re-warm runs of one step, which a v6lab before result.RewarmRun
// numbered alike when two resumes re-warmed that step; their samples
// cannot be told apart, so they are one re-warm of both's counts. Two
// records of a step of the plan are an error: v6lab writes one.
func sameRewarm(had, r *result.Run) error {
	if !had.Rewarm || !r.Rewarm || had.Seq != r.Seq {
		return fmt.Errorf("two records of run %d of %s (seq %d and %d): v6lab writes one record per run", r.Run, r.Cell, had.Seq, r.Seq)
	}
	had.Completed += r.Completed
	had.Failed += r.Failed
	if r.End.After(had.End) {
		had.End = r.End
	}
	return nil
}

// scanFile streams a samples file through v.
func scanFile(name string, v result.Visitor) error {
	fh, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	defer fh.Close()
	if _, err := result.Scan(fh, name, v); err != nil {
		if strings.HasPrefix(err.Error(), "merge: ") {
			return err
		}
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}

// Check says whether segs are every segment of one experiment: the same
// experiment (spec, seed, order), the same split, distinct indexes, none
// missing, one schedule.
func Check(segs []*Dir) error {
	if len(segs) == 0 {
		return errors.New("merge: no segments given")
	}
	first := segs[0]
	h0 := first.header
	n := h0.Segment.Count
	spec0, err := specOf(h0)
	if err != nil {
		return fmt.Errorf("merge: %s: %w", first.dir, err)
	}
	have := map[int]string{}
	var problems []string
	for _, s := range segs {
		h := s.header
		switch {
		case h.SampleEvery > 1:
			problems = append(problems, fmt.Sprintf("%s kept one sample row of every %d: its per-segment figures need every row (v6lab run refuses --sample-every with --segment)", s.dir, h.SampleEvery))
			continue
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
// command is recorded in the header. The segments' samples stream through
// it: step after step as the plan did them, each segment's samples of the
// step, then the merged run record; samples of a run without a record
// (cut off) come last, segment by segment.
func Write(segs []*Dir, root, name string, command []string, now time.Time) (string, *report.Summary, error) {
	sort.Slice(segs, func(i, j int) bool { return segs[i].header.Segment.Index < segs[j].header.Segment.Index })
	h0 := segs[0].header
	if name == "" {
		name = h0.Name + "-merged"
	}
	dir, err := result.NewDir(root, name, now)
	if err != nil {
		return "", nil, err
	}
	f, w, err := result.CreateSamples(dir)
	if err != nil {
		return dir, nil, fmt.Errorf("merge: %w", err)
	}
	markSchedule(segs)
	w.Header(mergedHeader(segs, command, now))
	werr := writeSamples(segs, w)
	if err := errors.Join(werr, w.Close(), f.Close()); err != nil {
		os.RemoveAll(dir) // made moments ago, and never finished
		return "", nil, fmt.Errorf("merge: %w", err)
	}
	s, err := report.WriteAll(dir)
	return dir, s, err
}

// writeSamples interleaves the segments' sample streams by step.
func writeSamples(segs []*Dir, w *result.Writer) error {
	curs := make([]*cursor, len(segs))
	for i, s := range segs {
		curs[i] = s.open()
		defer curs[i].close()
	}
	for _, k := range allRecords(segs) {
		for i, c := range curs {
			for {
				smp, ok := c.peek()
				if !ok {
					break
				}
				sq, known := segs[i].seqOf[runID(smp.Cell, smp.Run)]
				if !known { // cut off before its run's record: last
					c.orphans = append(c.orphans, *smp)
					c.next()
					continue
				}
				at := record{seq: sq, run: smp.Run}
				if at.order(k) > 0 {
					break
				}
				if at.order(k) < 0 {
					return fmt.Errorf("%s: a sample of step %d after those of step %d: not in the order v6lab writes", segs[i].name, sq, k.seq)
				}
				w.Sample(*smp)
				c.next()
			}
		}
		w.Run(mergedRun(segs, k))
	}
	for i, c := range curs {
		for smp, ok := c.peek(); ok; smp, ok = c.peek() {
			if _, known := segs[i].seqOf[runID(smp.Cell, smp.Run)]; known {
				return fmt.Errorf("%s: a sample of a recorded run after every step: not in the order v6lab writes", segs[i].name)
			}
			c.orphans = append(c.orphans, *smp)
			c.next()
		}
		for _, smp := range c.orphans {
			w.Sample(smp)
		}
		if err := c.err(); err != nil {
			return err
		}
	}
	return nil
}

// cursor reads a segment's samples one at a time (its file streamed by
// a goroutine of its own, in batches).
type cursor struct {
	ch      chan []result.Sample
	quit    chan struct{}
	done    chan error
	buf     []result.Sample
	i       int
	orphans []result.Sample
}

func (s *Dir) open() *cursor {
	c := &cursor{ch: make(chan []result.Sample, 4), quit: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		var batch []result.Sample
		send := func() {
			select {
			case c.ch <- batch:
			case <-c.quit: // the reader stopped: drop the rest
			}
			batch = nil
		}
		err := scanFile(s.name, result.Visitor{Check: report.CheckSample, Vet: true, Sample: func(smp *result.Sample) {
			if batch == nil {
				batch = make([]result.Sample, 0, 1024)
			}
			batch = append(batch, *smp)
			if len(batch) == cap(batch) {
				send()
			}
		}})
		if len(batch) > 0 {
			send()
		}
		close(c.ch)
		c.done <- err
	}()
	return c
}

// peek is the next sample, without taking it.
func (c *cursor) peek() (*result.Sample, bool) {
	for c.i == len(c.buf) {
		b, ok := <-c.ch
		if !ok {
			return nil, false
		}
		c.buf, c.i = b, 0
	}
	return &c.buf[c.i], true
}

func (c *cursor) next() { c.i++ }

// err is the stream's error, once it has ended (call it once).
func (c *cursor) err() error { return <-c.done }

// close stops the stream's goroutine.
func (c *cursor) close() {
	close(c.quit)
	for range c.ch {
	}
}

func runID(cell string, run int) string { return fmt.Sprintf("%s#%d", cell, run) }

// record is a run record's place: its cell's name, seq and run number.
type record struct {
	cell     string
	seq, run int
}

func (k record) id() string { return runID(k.cell, k.run) }

// order compares k's place with o's (in the cell's order of the samples
// file): by seq (place), then, the re-warms of one step, by run
// descending: result.RewarmRun numbers a later resume's lower.
func (k record) order(o record) int {
	if d := place(k.seq) - place(o.seq); d != 0 {
		return d
	}
	return o.run - k.run
}

// allRecords are the runs any segment recorded, each once, in order:
// a step of the plan, or a re-warm, which the segments that re-warmed
// that step alike (the same run number) share.
func allRecords(segs []*Dir) []record {
	seen := map[string]bool{}
	var out []record
	for _, s := range segs {
		for id, r := range s.byID {
			if !seen[id] {
				seen[id] = true
				out = append(out, record{r.Cell, r.Seq, r.Run})
			}
		}
	}
	slices.SortFunc(out, func(a, b record) int {
		if d := a.order(b); d != 0 {
			return d
		}
		return strings.Compare(a.cell, b.cell)
	})
	return out
}

// place orders a record by its seq: a step of the plan by its seq, a
// re-warm run of a resumed segment (result.RewarmIndex) just before the
// step it preceded.
func place(seq int) int {
	if seq < 0 {
		return 2 * (-1 - seq)
	}
	return 2*seq + 1
}

func mergedHeader(segs []*Dir, command []string, now time.Time) result.Header {
	h := segs[0].header
	h.Segment = nil
	h.Created = now.UTC()
	h.Command = command
	h.Notes = nil
	hosts := map[string]bool{}
	var hostList []string
	for _, s := range segs {
		g := *s.header.Segment
		g.Dir = s.dir
		for _, r := range s.runs {
			if r.LateNS > 0 {
				g.LateRuns++
				g.MaxLateNS = max(g.MaxLateNS, r.LateNS)
			}
			if r.EarlyNS > 0 {
				g.EarlyRuns++
				g.MaxEarlyNS = max(g.MaxEarlyNS, r.EarlyNS)
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
		for _, n := range s.header.Notes {
			if !seen[n] && !strings.HasPrefix(n, "segment ") {
				seen[n] = true
				h.Notes = append(h.Notes, n)
			}
		}
	}
	if segs[0].header.Segment.StartAt.IsZero() {
		h.Notes = append(h.Notes, fmt.Sprintf("merged by v6lab merge from %s (%s): the samples of every segment, pooled", stats.Count(len(segs), "segment"), strings.Join(dirsOf(segs), ", ")),
			"the segments ran without a schedule (--start-at): their runs did not run together, so rate/s is left out (n/a: a merged run's window, from the first segment's start to the last one's end, spans runs that were not at once, and its completions over it are no rate of the servers); every other figure is that of the pooled samples, each transaction's times its own")
		return h
	}
	h.Notes = append(h.Notes, fmt.Sprintf("merged by v6lab merge from %s (%s): the samples of every segment, so every figure is that of one run of all users", stats.Count(len(segs), "segment"), strings.Join(dirsOf(segs), ", ")))
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
func mergedRun(segs []*Dir, k record) result.Run {
	var out result.Run
	var errs []string
	started := false
	for _, s := range segs {
		r := s.byID[k.id()]
		g := s.header.Segment
		if r == nil && k.seq < 0 {
			continue // a re-warm: only a resumed segment runs one
		}
		if r == nil {
			errs = append(errs, fmt.Sprintf("segment %s never finished this run (resume it with v6lab run --resume %s, then merge again)", g, s.dir))
			continue
		}
		if !started {
			out = *r
			out.Wire, out.Err, out.Completed, out.Failed, out.LateNS, out.EarlyNS = nil, "", 0, 0, 0, 0
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
		out.EarlyNS = max(out.EarlyNS, r.EarlyNS)
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
	if apart := notTogether(segs, k); apart != "" {
		errs = append(errs, apart)
	}
	out.Err = strings.Join(errs, "; ")
	return out
}

// markSchedule gives each segment's run of a step that recorded no slot
// the slot another segment recorded for it (one schedule: the same for
// every segment), and so its lateness or earliness: a segment resumed by
// a v6lab before 2026-11-27 ran its runs left back to back, off its
// schedule, and recorded no slot (trial7 F6).
func markSchedule(segs []*Dir) {
	slots := map[string]time.Time{}
	for _, s := range segs {
		for id, r := range s.byID {
			if !r.Slot.IsZero() {
				slots[id] = r.Slot
			}
		}
	}
	for _, s := range segs {
		for id, r := range s.byID {
			slot, ok := slots[id]
			if !r.Slot.IsZero() || !ok {
				continue
			}
			r.Slot = slot
			if d := r.Start.Sub(slot); d > result.LateAfter {
				r.LateNS = int64(d)
			} else if d < -result.LateAfter {
				r.EarlyNS = int64(-d)
			}
		}
	}
}

// notTogether says why the segments' runs of step k, on a schedule, are
// not one run of all users, or "" when they are: a segment's run (with users in it)
// started more than result.LateAfter after another's had ended. Pooled,
// such runs would be figures of a host running every user at once that
// never did (its rate/s divides by a window from the first start to the
// last end, spanning the gap: trial7 F6). Runs that overlap, or start
// within LateAfter (what a schedule counts as on time) of one another's
// end, ran together; those late or early are counted and said apart.
func notTogether(segs []*Dir, k record) string {
	if k.seq < 0 || segs[0].header.Segment.StartAt.IsZero() {
		return "" // a re-warm (only a resumed segment runs one), or no schedule (mergedHeader's note)
	}
	var first, last *result.Run
	var firstSeg, lastSeg *result.Segment
	for _, s := range segs {
		r := s.byID[k.id()]
		if r == nil || r.Completed+r.Failed == 0 {
			continue
		}
		if first == nil || r.End.Before(first.End) {
			first, firstSeg = r, s.header.Segment
		}
		if last == nil || r.Start.After(last.Start) {
			last, lastSeg = r, s.header.Segment
		}
	}
	if first == nil || last.Start.Sub(first.End) <= result.LateAfter {
		return ""
	}
	return fmt.Sprintf("not run together: segment %s started it %s after segment %s had ended it (%s's run started %s, %s's %s), so its users never ran at once; "+
		"run every segment again on a new --start-at (a resume keeps the schedule; a v6lab before 2026-11-27 did not)",
		lastSeg, last.Start.Sub(first.End).Round(time.Millisecond), firstSeg, firstSeg, offSlot(first), lastSeg, offSlot(last))
}

// offSlot says when r started against its slot.
func offSlot(r *result.Run) string {
	switch {
	case r.Slot.IsZero():
		return "at " + r.Start.Format(time.RFC3339Nano) + ", no slot"
	case r.EarlyNS > 0:
		return fmt.Sprintf("%s before its slot", time.Duration(r.EarlyNS).Round(time.Millisecond))
	case r.LateNS > 0:
		return fmt.Sprintf("%s after its slot", time.Duration(r.LateNS).Round(time.Millisecond))
	}
	return "at its slot"
}
