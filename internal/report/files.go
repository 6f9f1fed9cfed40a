package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// File names inside a result directory. SamplesFile is the one v6lab
// writes; older results have result.PlainSamplesName instead, and
// readers take either (result.SamplesPath).
const (
	SamplesFile = result.SamplesName
	SummaryFile = "summary.json"
	TextFile    = "report.txt"
	CSVFile     = "results.csv"
)

// Load reads a result directory's samples file into memory and
// summarizes it: for tests and small results (Open streams it).
func Load(dir string) (*result.File, *Summary, error) {
	f := &result.File{}
	s, err := scanDir(dir, result.Visitor{
		Header: func(h *result.Header) error { f.Header = *h; return nil },
		Run:    func(r *result.Run) { f.Runs = append(f.Runs, *r) },
		Sample: func(s *result.Sample) { f.Samples = append(f.Samples, *s) },
	})
	if err != nil {
		return nil, nil, err
	}
	return f, s, nil
}

// Open summarizes a result directory's samples file as a stream: its
// memory grows with cells and runs, not samples.
func Open(dir string) (*Summary, error) {
	return scanDir(dir, result.Visitor{})
}

// scanDir streams dir's samples through a Summarizer, and through also's
// functions after it.
func scanDir(dir string, also result.Visitor) (*Summary, error) {
	name, err := result.SamplesPath(dir)
	if err != nil {
		return nil, err // result: …, for report and compare alike
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	defer fh.Close()
	writing, pid := result.Held(fh)
	var z *Summarizer
	truncated, err := result.Scan(fh, name, result.Visitor{
		Header: func(h *result.Header) error {
			if h.Target == result.Sites {
				return fmt.Errorf("%s is a survey's result: v6lab report renders it as one, and v6lab compare sets it beside another survey (report/sites)", dir)
			}
			z = NewSummarizer(h)
			if writing {
				z.Writing(pid)
			}
			if also.Header != nil {
				return also.Header(h)
			}
			return nil
		},
		Run: func(r *result.Run) {
			z.Run(r)
			if also.Run != nil {
				also.Run(r)
			}
		},
		Check: CheckSample,
		Vet:   true,
		Sample: func(s *result.Sample) {
			z.Sample(s)
			if also.Sample != nil {
				also.Sample(s)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	s := z.Finish()
	if s.Partial != nil && !s.Partial.Writing {
		s.Partial.Resume = resumeHint(dir, len(s.Segments) > 0)
	}
	switch {
	case writing:
		s.Notes = append(s.Notes, "the samples file is still being written: these figures are of its lines so far (its writer keeps the last 0.1 s of samples before writing them)")
	case truncated:
		s.Notes = append(s.Notes, "the samples file ends in a cut-off line (the run was killed); every complete line is used")
	}
	return s, nil
}

// NotWritten refuses a result directory whose samples file a running
// v6lab still writes (result.NotWritten) to a command that would read it
// half-written (verb: "export", "merge"): its output would lack the runs
// still to come and never learn of them. report and compare read such a
// result as figures so far (scanDir); these wait for the run to end.
func NotWritten(dir, verb string) error {
	name, err := result.SamplesPath(dir)
	if err != nil {
		return nil // the command's reader says why
	}
	if err := result.NotWritten(name); err != nil {
		return fmt.Errorf("%s: %w: %s it when that run ends (wait, or stop it: a stopped run keeps every finished run); `v6lab report %s` gives its figures so far",
			verb, err, verb, dir)
	}
	return nil
}

// WriteParquet writes the samples file samples as Parquet to output
// (result.ExportParquet), every sample checked (CheckSample), through a
// temporary file beside it renamed over it once whole: an earlier export
// stays until then. It returns the rows written.
func WriteParquet(samples, output string) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+"-*.tmp")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	rows, err := result.ExportParquet(samples, tmp, CheckSample)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), output)
	}
	return rows, err
}

// CheckSample refuses a sample of a path v6lab does not measure: what
// the file's format alone cannot know.
func CheckSample(s *result.Sample) error { return path.Known(s.Path) }

// WriteAll renders summary.json, report.txt, results.csv and report.html into dir from
// its samples file, and returns the summary.
func WriteAll(dir string) (*Summary, error) {
	s, err := Open(dir)
	if err != nil {
		return nil, err
	}
	return s, Write(dir, s)
}

// Write renders summary.json, report.txt, results.csv and report.html of
// s into dir.
func Write(dir string, s *Summary) error {
	for _, out := range []struct {
		name   string
		render func(io.Writer, *Summary) error
	}{{SummaryFile, JSON}, {TextFile, Text}, {CSVFile, CSV}, {HTMLFile, HTML}} {
		if err := writeFile(filepath.Join(dir, out.name), func(w io.Writer) error { return out.render(w, s) }); err != nil {
			return err
		}
	}
	return nil
}

// writeFile renders into a new temporary file of its own in the result
// directory (created exclusively: a symlink planted there is never
// followed), then renames it over name.
func writeFile(name string, render func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+"-*.tmp")
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	tmp := f.Name()
	if err := render(f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("report: write %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("report: %w", err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("report: %w", err)
	}
	return os.Rename(tmp, name)
}

// JSON writes the summary as indented JSON (the summary.json format).
func JSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// CSVHeader is the column list of results.csv: one row per cell, with the
// comparison columns filled for every non-baseline path.
var CSVHeader = []string{"protocol", "path", "conns", "runs_counted", "mean_ms", "ci95_lo_ms", "ci95_hi_ms",
	"p50_ms", "p90_ms", "p99_ms", "p999_ms", "completed", "failed", "completion_rate", "rate_per_s",
	"baseline", "diff_ms", "pct_increase", "ci95_diff_lo_ms", "ci95_diff_hi_ms", "welch_df", "p_welch",
	"confidence", "p_paired", "p_mann_whitney", "pairs", "paired_diff_ms", "ci95_paired_diff_lo_ms", "ci95_paired_diff_hi_ms", "p_paired_holm",
	"percentile_n", "few_runs", "wire_mean_ms", "wire_ci95_lo_ms", "wire_ci95_hi_ms", "wire_diff_ms", "wire_ci95_diff_lo_ms", "wire_ci95_diff_hi_ms", "client_turn_mean_ms",
	"http_version", "connection", "wire_na", "loss", "loss_dropped", "streams", "partial"}

// cellMeasured is what a cell measured, for its CSV row: the HTTP
// version its transactions spoke (else its group's http_version) and
// what its connections did (connWords); both empty for a cell of no HTTP
// version and no connection facts.
func cellMeasured(s *Summary, c *Cell) (version, conn string) {
	var spoke []string
	for p := range c.Negotiated {
		spoke = append(spoke, p)
	}
	slices.Sort(spoke)
	version = cmpOr(strings.Join(spoke, "+"), s.HTTPVersions[c.Protocol])
	var f ConnFacts
	if c.Conn != nil {
		f = *c.Conn
	}
	switch {
	case version == "" && f == (ConnFacts{}):
		return "", ""
	case c.Completed == 0:
		return version, "none completed" // no connection did anything to say
	}
	return version, connWords(f, c.Completed, cleartext(s, c.Protocol, version))
}

// CSV writes results.csv. An n/a figure is an empty field.
func CSV(w io.Writer, s *Summary) error {
	cw := csv.NewWriter(w)
	cw.Write(CSVHeader)
	cmp := map[cellKey]*Comparison{}
	for i := range s.Comparisons {
		c := &s.Comparisons[i]
		cmp[cellKey{c.Protocol, c.Path, c.Conns}] = c
	}
	for i := range s.Cells {
		c := &s.Cells[i]
		row := []string{c.Protocol, c.Path, strconv.Itoa(c.Conns), strconv.Itoa(len(c.Runs)), num(c.MeanMS),
			lo(c.CI95MS), hi(c.CI95MS), num(c.P50MS), num(c.P90MS), num(c.P99MS), num(c.P999MS),
			strconv.Itoa(c.Completed), strconv.Itoa(c.Failed), num(c.CompletionRate), num(c.RatePerS)}
		if m := cmp[cellKey{c.Protocol, c.Path, c.Conns}]; m != nil {
			row = append(row, m.Baseline, num(m.DiffMS), num(m.PctIncrease), lo(m.CI95DiffMS), hi(m.CI95DiffMS),
				num(m.WelchDF), num(m.PWelch), num(m.Confidence), num(m.PPaired), num(m.PMannWhitney),
				strconv.Itoa(m.Pairs), num(m.PairedDiffMS), lo(m.CI95PairedDiffMS), hi(m.CI95PairedDiffMS), num(m.PPairedHolm))
		} else {
			row = append(row, make([]string, 15)...)
		}
		row = append(row, strconv.Itoa(c.PercentileN), strconv.FormatBool(c.FewRuns))
		// The wire time (the kernel's stamps), and its comparison; none
		// of a minority of the transactions (its reason in wire_na).
		wireNA := c.MinorityNA(WireMetric)
		if w := c.Metrics[WireMetric]; w != nil && wireNA == "" {
			row = append(row, num(&w.Mean), lo(w.CI95), hi(w.CI95))
		} else {
			row = append(row, "", "", "")
		}
		if m := cmp[cellKey{c.Protocol, c.Path, c.Conns}]; m != nil && m.Wire != nil {
			row = append(row, num(m.Wire.Diff), lo(m.Wire.CI95Diff), hi(m.Wire.CI95Diff))
		} else {
			row = append(row, "", "", "")
		}
		if t := c.Metrics[ClientTurnMetric]; t != nil {
			row = append(row, num(&t.Mean))
		} else {
			row = append(row, "")
		}
		version, conn := cellMeasured(s, c)
		row = append(row, version, conn, wireNA)
		if c.Loss != nil {
			row = append(row, strings.Join(c.Loss.placed(), "; "), strconv.FormatInt(c.Loss.Dropped, 10))
		} else {
			row = append(row, "", "")
		}
		row = append(row, streamsField(c.Streams), partialField(s.Partial))
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// streamsField is results.csv's streams: N above 1, empty for one
// transaction at a time on each connection.
func streamsField(n int) string {
	if n > 1 {
		return strconv.Itoa(n)
	}
	return ""
}

// partialField is results.csv's partial: how far a result still being
// written ("still being written: 7 of 20 runs") or cut short ("partial: 7
// of 20 runs") is, on every row, so that a script reading the rows alone
// knows they are figures so far; empty for a whole result.
func partialField(p *Partial) string {
	switch {
	case p == nil:
		return ""
	case p.Writing:
		return "still being written: " + stats.CountOf(p.RunsDone, p.RunsPlanned, "run")
	}
	return "partial: " + stats.CountOf(p.RunsDone, p.RunsPlanned, "run")
}

func num(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', 10, 64)
}

func lo(v *[2]float64) string {
	if v == nil {
		return ""
	}
	return num(&v[0])
}

func hi(v *[2]float64) string {
	if v == nil {
		return ""
	}
	return num(&v[1])
}
