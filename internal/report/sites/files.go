package sites

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// File names inside a survey's result directory (as an experiment's).
const (
	SummaryFile = "summary.json"
	TextFile    = "report.txt"
	CSVFile     = "results.csv"
	HTMLFile    = "report.html"
)

// spec is what the reports read of a survey's spec (run/survey.Spec).
type spec struct {
	Sites       string `json:"sites"`
	SitesCount  int    `json:"sites_count"`
	SitesSHA256 string `json:"sites_sha256"`
	Threshold   string `json:"threshold"`
}

// Is says whether a header is a survey's.
func Is(h *result.Header) bool { return h.Target == result.Sites }

// MaxSiteSamples bounds the samples held for one site: a file that holds
// more before the site's record is not a survey's as v6lab writes them.
const MaxSiteSamples = 100000

// Scan reads a survey's samples file as a stream, judging each site as its
// record arrives (with the samples before it), handing every row to row
// (nil: none), and returns the summary.
func Scan(dir string, row func(Row) error) (*Summary, error) {
	name, err := result.SamplesPath(dir)
	if err != nil {
		return nil, fmt.Errorf("sites: %w", err)
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("sites: %w", err)
	}
	defer fh.Close()
	var (
		s       *Summary
		c       Criteria
		pending []result.Sample
		rowErr  error
		agg     = newAggregator()
	)
	truncated, err := result.Scan(fh, name, result.Visitor{
		Header: func(h *result.Header) error {
			if !Is(h) {
				return fmt.Errorf("sites: %s is not a survey's result (target %s): v6lab report renders it", dir, h.Target)
			}
			var err error
			s, c, err = fromHeader(h)
			return err
		},
		Sample: func(smp *result.Sample) {
			if len(pending) < MaxSiteSamples {
				pending = append(pending, *smp)
			}
		},
		Site: func(site *result.Site) {
			r := Judge(site, pending, c)
			pending = pending[:0]
			agg.add(r)
			if row != nil && rowErr == nil {
				rowErr = row(r)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("sites: %w", err)
	}
	if rowErr != nil {
		return nil, rowErr
	}
	agg.finish(s)
	if truncated || len(pending) > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("the samples file ends before a site's record (%s of a site not finished: the survey was stopped); those sites are not judged", stats.Count(len(pending), "sample")))
	}
	if s.Missing > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("partial: %s of %s judged; continue it with v6lab survey --resume %s", formatInt(s.Judged), siteCount(s.Expected), dir))
	}
	return s, nil
}

// fromHeader starts a summary from the header: what ran, where, of which
// list, judged by which threshold.
func fromHeader(h *result.Header) (*Summary, Criteria, error) {
	b, err := json.Marshal(h.Spec)
	if err != nil {
		return nil, Criteria{}, err
	}
	var sp spec
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, Criteria{}, fmt.Errorf("sites: the header's spec is not a survey's: %w", err)
	}
	th, err := time.ParseDuration(sp.Threshold)
	if err != nil || th < 0 {
		return nil, Criteria{}, fmt.Errorf("sites: the header's spec has no threshold (%q)", sp.Threshold)
	}
	s := &Summary{Name: h.Name, Created: h.Created, ToolVersion: h.ToolVersion, Host: h.Host, Kernel: h.Kernel,
		Target: string(h.Target), Spec: b, Segment: h.Segment, Merged: h.Merged, Servers: h.Servers,
		ThresholdMS: float64(th) / 1e6, Notes: append([]string(nil), h.Notes...), Expected: sp.SitesCount, lab: len(h.Lab) > 0}
	if g := h.Segment; g != nil {
		s.Expected = (sp.SitesCount - g.Index + g.Count - 1) / g.Count
	}
	return s, Criteria{Threshold: th}, nil
}

// WriteAll renders dir's survey: results.csv as its samples stream by,
// then summary.json, report.txt and report.html; it returns the summary.
func WriteAll(dir string) (*Summary, error) {
	var s *Summary
	err := writeFile(filepath.Join(dir, CSVFile), func(w io.Writer) error {
		var err error
		s, err = WriteCSV(w, dir)
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, out := range []struct {
		name   string
		render func(io.Writer, *Summary) error
	}{{SummaryFile, JSON}, {TextFile, Text}, {HTMLFile, HTML}} {
		if err := writeFile(filepath.Join(dir, out.name), func(w io.Writer) error { return out.render(w, s) }); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// WriteCSV writes dir's results.csv to w as its samples stream by, and
// returns the summary.
func WriteCSV(w io.Writer, dir string) (*Summary, error) {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return nil, err
	}
	s, err := Scan(dir, func(r Row) error { return cw.Write(csvRow(r)) })
	if err != nil {
		return nil, err
	}
	cw.Flush()
	return s, cw.Error()
}

// writeFile renders into a new temporary file in name's directory
// (created exclusively), then renames it over name.
func writeFile(name string, render func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return fmt.Errorf("sites: %w", err)
	}
	werr := render(f)
	if err := f.Chmod(0o644); werr == nil {
		werr = err // readable as an experiment's reports are
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(f.Name(), name)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("sites: %s: %w", filepath.Base(name), werr)
	}
	return nil
}

// JSON writes summary.json.
func JSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonSafe(s))
}

// jsonSafe is s as JSON writes it: a Row writes its not-a-number figures
// (a site without a time) as null itself (Row.MarshalJSON).
func jsonSafe(s *Summary) *Summary { return s }

// MarshalJSON writes a row with snake_case keys, each family's figures as
// [ipv4, ipv6], and a figure not measured as null (JSON has no NaN).
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	return json.Marshal(struct {
		plain
		PageMS    [2]*float64 `json:"page_ms"`
		ConnectMS [2]*float64 `json:"connect_ms"`
		OK        [2]int      `json:"ok"`
		N         [2]int      `json:"n"`
		Pairs     int         `json:"pairs"`
		DiffMS    *float64    `json:"diff_ms"`
		CI        [2]*float64 `json:"diff_ci95_ms"`
	}{plain(r), [2]*float64{orNull(r.PageMS[0]), orNull(r.PageMS[1])}, [2]*float64{orNull(r.ConnectMS[0]), orNull(r.ConnectMS[1])},
		r.OK, r.N, r.Pairs, orNull(r.DiffMS), [2]*float64{orNull(r.CI[0]), orNull(r.CI[1])}})
}

func orNull(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// csvHeader names results.csv's columns (docs/formats.md).
var csvHeader = []string{"index", "line", "name", "verdict", "a", "aaaa", "version", "ipv4_ms", "ipv6_ms", "diff_ms", "diff_ci95_lo", "diff_ci95_hi",
	"pairs", "ipv4_connect_ms", "ipv6_connect_ms", "ipv4_ok", "ipv4_n", "ipv6_ok", "ipv6_n", "partial_objects", "why"}

func csvRow(r Row) []string {
	return []string{strconv.Itoa(r.Index), strconv.Itoa(r.Line), r.Name, string(r.V), strconv.FormatBool(r.A), strconv.FormatBool(r.AAAA), r.Version,
		ms(r.PageMS[0]), ms(r.PageMS[1]), ms(r.DiffMS), ms(r.CI[0]), ms(r.CI[1]), strconv.Itoa(r.Pairs),
		ms(r.ConnectMS[0]), ms(r.ConnectMS[1]), strconv.Itoa(r.OK[0]), strconv.Itoa(r.N[0]), strconv.Itoa(r.OK[1]), strconv.Itoa(r.N[1]),
		strings.Join(r.Objects, " "), r.Why}
}

// ms writes a time in milliseconds, empty when there is none.
func ms(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// ReadRows reads results.csv back: each site's verdict by name (tests,
// and anyone comparing two surveys).
func ReadRows(name string) (map[string]Verdict, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != strings.Join(csvHeader, ",") {
		return nil, errors.New("sites: not a survey's results.csv")
	}
	out := map[string]Verdict{}
	for _, r := range recs[1:] {
		out[r[2]] = Verdict(r[3])
	}
	return out, nil
}
