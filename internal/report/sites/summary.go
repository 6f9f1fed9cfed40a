package sites

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/report/stats"
	"v6lab/internal/report/whatif"
	"v6lab/internal/result"
)

// Summary is a survey's figures (summary.json): where it ran, of which
// list, the shares of each verdict, the study's measures, the CDF of the
// per-site paired difference and the Happy Eyeballs what-if.
type Summary struct {
	Name        string    `json:"name"`
	Created     time.Time `json:"created"`
	ToolVersion string    `json:"tool_version"`
	Host        string    `json:"host,omitempty"`
	Kernel      string    `json:"kernel,omitempty"`
	Target      string    `json:"target"`
	// Spec is the survey as run (its list, options).
	Spec    json.RawMessage   `json:"spec,omitempty"`
	Segment *result.Segment   `json:"segment,omitempty"`
	Merged  []result.Segment  `json:"merged,omitempty"`
	Servers map[string]string `json:"servers,omitempty"`
	// ThresholdMS is the threshold the timed verdicts were judged by.
	ThresholdMS float64 `json:"threshold_ms"`
	// Expected is how many of the list's sites this result is to hold
	// (a segment's share), Judged how many it holds, Missing the rest (a
	// survey interrupted: resume it).
	Expected int `json:"expected"`
	Judged   int `json:"judged"`
	Missing  int `json:"missing,omitempty"`
	// Shares are each verdict's count of every site judged; Dual those of
	// the dual-stacked sites (A and AAAA, measured): the study's
	// population.
	Shares []Share `json:"shares"`
	Dual   []Share `json:"dual_stacked"`
	Study  Study   `json:"study"`
	// HTTPVersions counts the sites timed over both families by the HTTP
	// version their page fetches spoke ("2": 11): what the shares and
	// the study's measures are of.
	HTTPVersions map[string]int `json:"http_versions,omitempty"`
	// DiffCDF is the CDF of the per-site mean paired difference
	// (ipv6 - ipv4, ms) of the sites with a timed verdict: 101 quantiles,
	// from the smallest to the largest.
	DiffCDF []float64 `json:"diff_cdf_ms,omitempty"`
	// WhatIf is, per Happy Eyeballs timer, how often it would pick the
	// slower family.
	WhatIf []WhatIf `json:"happy_eyeballs_what_if,omitempty"`
	// WhatIfNote says when the what-if is not a finding: in a lab of
	// sites, or where every site's connects differ by under NoiseMS.
	WhatIfNote string `json:"happy_eyeballs_what_if_note,omitempty"`
	// lab says the sites were a lab's (the header's lab).
	lab bool
	// Problems are the first sites whose verdict is not a timed one or
	// the same (every site is in results.csv).
	Problems []Row    `json:"problems,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// Share is a verdict's count of Of sites, with the Wilson 95% interval of
// its share.
type Share struct {
	Verdict Verdict    `json:"verdict,omitempty"`
	What    string     `json:"what,omitempty"`
	Count   int        `json:"count"`
	Of      int        `json:"of"`
	Share   float64    `json:"share"`
	CI      [2]float64 `json:"ci95"`
}

// NA is what a share of no site says instead of a figure.
const NA = "n/a (no sites)"

// shareJSON is a Share as summary.json writes it: a share of no site has
// no figure (share and ci95 null) and says so (na).
type shareJSON struct {
	Verdict Verdict     `json:"verdict,omitempty"`
	What    string      `json:"what,omitempty"`
	Count   int         `json:"count"`
	Of      int         `json:"of"`
	Share   *float64    `json:"share"`
	CI      *[2]float64 `json:"ci95"`
	NA      string      `json:"na,omitempty"`
}

func (s Share) json() shareJSON {
	j := shareJSON{Verdict: s.Verdict, What: s.What, Count: s.Count, Of: s.Of, NA: NA}
	if s.Of > 0 {
		j.Share, j.CI, j.NA = &s.Share, &s.CI, ""
	}
	return j
}

// MarshalJSON writes s, a share of no site as null with na saying so.
func (s Share) MarshalJSON() ([]byte, error) { return json.Marshal(s.json()) }

// MarshalJSON writes w's share as Share does, its own figures beside.
func (w WhatIf) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		TimerMS float64 `json:"timer_ms"`
		shareJSON
		IPv6WhenSlower Share   `json:"ipv6_when_slower"`
		IPv6           Share   `json:"ipv6"`
		LostMeanMS     float64 `json:"lost_mean_ms"`
	}{w.TimerMS, w.Share.json(), w.IPv6WhenSlower, w.IPv6, w.LostMeanMS})
}

func shareOf(k, n int) Share {
	s := Share{Count: k, Of: n}
	if n > 0 {
		s.Share = float64(k) / float64(n)
		s.CI, _ = stats.Wilson(k, n)
	}
	return s
}

// Study are the aggregate measures of Bajpai and Schönwälder's study of
// the Alexa top 10K, computed the same way over this survey's sites.
type Study struct {
	// Faster: of the dual-stacked sites compared (a timed verdict), those
	// whose mean paired difference is below zero (the study's 56%).
	Faster Share `json:"faster_over_ipv6"`
	// WithinOneMS: of the others, those at most 1 ms slower (95%).
	WithinOneMS Share `json:"rest_at_most_1ms_slower"`
	// Partial: of the dual-stacked sites, those partly failing over one
	// family (27%).
	Partial Share `json:"partly_failed"`
}

// WhatIf is one Happy Eyeballs timer replayed over the sites whose both
// families connected (each site's median connect time per family, raced
// by RFC 8305's rule: IPv6 at once, IPv4 TimerMS later, the first to
// connect kept; internal/report/whatif). Share is how often the family it
// ends on is the slower one, of every site replayed (the issue's "how
// often a T ms timer picks the slower family"); IPv6WhenSlower is, of the
// sites whose IPv6 connects slower, how often it still ends on IPv6 (the
// study's "prefer slower IPv6 connections", 81% at 250 ms); IPv6 how often
// it ends on IPv6 at all; LostMeanMS the mean connect time lost against
// the faster family started at once.
type WhatIf struct {
	TimerMS float64 `json:"timer_ms"`
	Share
	IPv6WhenSlower Share   `json:"ipv6_when_slower"`
	IPv6           Share   `json:"ipv6"`
	LostMeanMS     float64 `json:"lost_mean_ms"`
}

// MaxProblems bounds the sites the reports list by name.
const MaxProblems = 200

// aggregator adds rows up, a few numbers per site.
type aggregator struct {
	counts map[Verdict]int
	judged int
	diffs  []float64
	faster int
	// rest: timed sites not faster; within: of them at most 1 ms slower.
	rest, within int
	connects     [][2]float64
	problems     []Row
	problemCount int
	versions     map[string]int
	// stalledRuns of stalledSites were left out for v6lab's own stalls.
	stalledRuns, stalledSites int
}

func newAggregator() *aggregator { return &aggregator{counts: map[Verdict]int{}} }

func (a *aggregator) add(r Row) {
	a.judged++
	a.counts[r.V]++
	if r.Version != "" {
		if a.versions == nil {
			a.versions = map[string]int{}
		}
		a.versions[r.Version]++
	}
	if r.V.Timed() && !math.IsNaN(r.DiffMS) {
		a.diffs = append(a.diffs, r.DiffMS)
		if r.DiffMS < 0 {
			a.faster++
		} else {
			a.rest++
			if r.DiffMS <= 1 {
				a.within++
			}
		}
	}
	if r.V.DualStacked() && !math.IsNaN(r.ConnectMS[0]) && !math.IsNaN(r.ConnectMS[1]) {
		a.connects = append(a.connects, r.ConnectMS)
	}
	if r.Stalled > 0 {
		a.stalledRuns += r.Stalled
		a.stalledSites++
	}
	if !r.V.Timed() || r.V == Undecided {
		a.problemCount++
		if len(a.problems) < MaxProblems {
			a.problems = append(a.problems, r)
		}
	}
}

// finish fills s's figures.
func (a *aggregator) finish(s *Summary) {
	s.Judged = a.judged
	if s.Expected > a.judged {
		s.Missing = s.Expected - a.judged
	}
	dual := 0
	for _, v := range Verdicts {
		if v.DualStacked() {
			dual += a.counts[v]
		}
	}
	for _, v := range Verdicts {
		sh := shareOf(a.counts[v], a.judged)
		sh.Verdict = v
		s.Shares = append(s.Shares, sh)
		if v.DualStacked() {
			d := shareOf(a.counts[v], dual)
			d.Verdict = v
			s.Dual = append(s.Dual, d)
		}
	}
	s.Study.Faster = shareOf(a.faster, a.faster+a.rest)
	s.Study.Faster.What = "faster over IPv6, of the dual-stacked sites compared"
	s.Study.WithinOneMS = shareOf(a.within, a.rest)
	s.Study.WithinOneMS.What = "at most 1 ms slower over IPv6, of the others"
	s.Study.Partial = shareOf(a.counts[Partial], dual)
	s.Study.Partial.What = "partly failed over one family, of the dual-stacked sites"
	s.DiffCDF = quantiles(a.diffs)
	s.WhatIf = whatIf(a.connects)
	s.WhatIfNote = whatIfNote(a.connects, s.lab)
	s.Problems = a.problems
	s.HTTPVersions = a.versions
	if a.problemCount > len(a.problems) {
		s.Notes = append(s.Notes, "the reports name the first "+itoa(len(a.problems))+" of "+siteCount(a.problemCount)+" without a timed verdict; results.csv has every site")
	}
	if a.stalledRuns > 0 {
		s.Notes = append(s.Notes, stats.Count(a.stalledRuns, "run")+" of "+stats.Count(a.stalledSites, "site")+" not counted: v6lab's process stalled while they ran, beyond the threshold (the stall bounded by the pair's longer page) and far beyond the site's other runs ("+StallMetric+"; another run was made in each one's place: survey.md, \"v6lab's own stalls\")")
	}
}

// NoiseMS is the connect difference (ms) below which the what-if's
// slower family is noise: a tenth of a millisecond, the order of the
// kernel's and the scheduler's jitter on one machine.
const NoiseMS = 0.1

// whatIfNote says why the what-if is not a finding, "" when it may be
// one: the sites are a lab's (it delays answers, not connects), or every
// site's families connect within NoiseMS of each other.
func whatIfNote(connects [][2]float64, lab bool) string {
	if len(connects) == 0 {
		return ""
	}
	const why = "which family connects later is then noise, not a finding (docs/survey.md, \"The Happy Eyeballs what-if cannot be reproduced\")"
	if lab {
		return "the Happy Eyeballs what-if is of a lab of sites, which delays its answers, not its connects: both families connect in microseconds; " + why
	}
	largest := 0.0
	for _, c := range connects {
		largest = max(largest, math.Abs(c[1]-c[0]))
	}
	if largest < NoiseMS {
		return fmt.Sprintf("the Happy Eyeballs what-if races connects that differ by %.3g ms at most (under %g ms at every site); %s", largest, NoiseMS, why)
	}
	return ""
}

// Timers are the Happy Eyeballs timers the what-if tries (ms): RFC 8305's
// recommended 250 ms (RFC 6555's 300 ms in browsers of the study's time)
// and shorter ones.
var Timers = []float64{50, 150, 250, 300}

// whatIf replays every site's connect times ([ipv4, ipv6] ms) through
// whatif.PreferIPv6 at each of Timers. A family is the slower one when it
// connects later by any amount, as the study counted.
func whatIf(connects [][2]float64) []WhatIf {
	delays := make([]time.Duration, len(Timers))
	for i, t := range Timers {
		delays[i] = time.Duration(t * float64(time.Millisecond))
	}
	w := whatif.New(whatif.PreferIPv6, delays)
	for _, c := range connects {
		w.Add(whatif.Sample{IPv4: whatif.Completed(msDuration(c[0])), IPv6: whatif.Completed(msDuration(c[1]))})
	}
	out := make([]WhatIf, 0, len(Timers))
	for i, p := range w.Points() {
		chosen := p.N - p.None
		wi := WhatIf{TimerMS: Timers[i], Share: shareOf(p.Slower, chosen),
			IPv6WhenSlower: shareOf(p.IPv6PickedSlower, p.IPv6Slower),
			IPv6:           shareOf(p.IPv6, chosen)}
		wi.What = fmt.Sprintf("a %g ms Happy Eyeballs timer picks the slower family", Timers[i])
		wi.IPv6WhenSlower.What = fmt.Sprintf("a %g ms timer takes IPv6 where it is the slower", Timers[i])
		if p.LostMeanMS != nil {
			wi.LostMeanMS = *p.LostMeanMS
		}
		out = append(out, wi)
	}
	return out
}

// msDuration is ms milliseconds.
func msDuration(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }

// quantiles are xs's 0th to 100th percentiles, nil for none: the
// minimum, then by nearest rank (stats.NearestRank's definition), xs
// sorted once.
func quantiles(xs []float64) []float64 {
	if len(xs) == 0 {
		return nil
	}
	sort.Float64s(xs)
	n := len(xs)
	out := make([]float64, 101)
	for i := range out {
		r := int(math.Ceil(float64(i)/100*float64(n) - 1e-9))
		out[i] = xs[min(max(r, 1), n)-1]
	}
	return out
}

func itoa(n int) string { return formatInt(n) }

// siteCount is n sites, n with thousands separators: "1 site", "1,234
// sites".
func siteCount(n int) string { return countOfWhat(n, "site") }

// countOfWhat is stats.Count with n's thousands separated.
func countOfWhat(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return formatInt(n) + " " + what + "s"
}

// formatInt writes n with thousands separators (1,234).
func formatInt(n int) string {
	t, sign := strconv.Itoa(n), ""
	if n < 0 {
		t, sign = t[1:], "-"
	}
	var b strings.Builder
	for i, c := range t {
		if i > 0 && (len(t)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}
