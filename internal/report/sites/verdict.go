// Package sites reports a survey (v6lab survey, target sites): each site's
// verdict from its record and its page transactions (Judge), the survey's
// aggregates as the Bajpai and Schönwälder study gave them (shares of each
// verdict with Wilson intervals, the CDF of the per-site paired
// difference, a Happy Eyeballs timer's what-if), and the files: summary.json,
// report.txt, results.csv (one row per site) and report.html. It reads a
// result as a stream, a site at a time: memory grows with the number of
// sites judged (a few numbers each), never with their samples.
//
// It imports result and report/stats.
package sites

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"v6lab/internal/report/stats"
	"v6lab/internal/result"
)

// Verdict is what a survey says of one site.
type Verdict string

// The verdicts, in the order reports list them.
const (
	// Faster, Same, Slower and Undecided compare a dual-stacked site's
	// page over IPv6 with IPv4 by the 95% CI of the paired difference
	// against the threshold (docs/metrics.md).
	Faster    Verdict = "ipv6_faster"
	Same      Verdict = "same"
	Slower    Verdict = "ipv6_slower"
	Undecided Verdict = "undecided"
	// Partial: some of the site fails over one family only (its page, an
	// object, a redirect), the rest works.
	Partial Verdict = "partial"
	// Broken: no connection over IPv6 while IPv4 works.
	Broken Verdict = "ipv6_broken"
	// IPv4Broken: no connection over IPv4 while IPv6 works.
	IPv4Broken Verdict = "ipv4_broken"
	// Failed: neither family gets the page.
	Failed Verdict = "failed"
	// NoAAAA: an A record and no AAAA; IPv6Only the reverse; NoAddress
	// neither.
	NoAAAA    Verdict = "no_aaaa"
	IPv6Only  Verdict = "ipv6_only"
	NoAddress Verdict = "no_address"
	// LookupFailed: an A or AAAA lookup got no answer saying what the
	// DNS holds (refused, timed out, SERVFAIL): nothing more was sent.
	LookupFailed Verdict = "lookup_failed"
	// Invalid: the list's line is not a host name; Excluded: the
	// exclusion list names the site. Nothing was sent to either.
	Invalid  Verdict = "invalid"
	Excluded Verdict = "excluded"
)

// Verdicts lists every verdict in report order.
var Verdicts = []Verdict{Faster, Same, Slower, Undecided, Partial, Broken, IPv4Broken, Failed, NoAAAA, IPv6Only, NoAddress, LookupFailed, Invalid, Excluded}

// Timed says whether v compares the families' times.
func (v Verdict) Timed() bool { return v == Faster || v == Same || v == Slower || v == Undecided }

// DualStacked says whether a site of verdict v has both A and AAAA and
// was measured: the population the study's shares are of.
func (v Verdict) DualStacked() bool {
	return v.Timed() || v == Partial || v == Broken || v == IPv4Broken || v == Failed
}

// Row is one site judged: a row of results.csv.
type Row struct {
	Index int     `json:"index"`
	Line  int     `json:"line"`
	Name  string  `json:"name"`
	V     Verdict `json:"verdict"`
	// Why says what decided a verdict other than a time's.
	Why  string `json:"why,omitempty"`
	A    bool   `json:"a"`
	AAAA bool   `json:"aaaa"`
	// Version is the HTTP version the families' page times were compared
	// over: empty for a site not timed over both (no pair of runs).
	Version string `json:"version,omitempty"`
	// Per family (0 ipv4, 1 ipv6): the median page time and connect time
	// of the counted completed transactions (NaN: none), and how many of
	// the counted ones completed of how many.
	PageMS, ConnectMS [2]float64 `json:"-"`
	OK, N             [2]int     `json:"-"`
	// Pairs is how many runs completed over both families; DiffMS the
	// mean paired difference (ipv6 - ipv4) and CI its 95% interval (NaN
	// when fewer than two pairs).
	Pairs  int        `json:"-"`
	DiffMS float64    `json:"-"`
	CI     [2]float64 `json:"-"`
	// Stalled is how many runs were not counted for the survey process's
	// own stall in them (StallMetric; Uncounted).
	Stalled int `json:"-"`
	// Objects names the objects that failed over one family only.
	Objects []string `json:"objects,omitempty"`
	// (JSON: Row.MarshalJSON writes the figures snake_case, NaN as null.)
}

// Criteria are what a verdict is judged by.
type Criteria struct {
	// Threshold: the same when the CI lies within ±Threshold.
	Threshold time.Duration
}

// Judge gives a site its verdict from its record and its samples (those
// whose User is its index, in any order).
func Judge(s *result.Site, samples []result.Sample, c Criteria) Row {
	r := Row{Index: s.Index, Line: s.Line, Name: s.Name, DiffMS: math.NaN(),
		CI: [2]float64{math.NaN(), math.NaN()}, PageMS: [2]float64{math.NaN(), math.NaN()}, ConnectMS: [2]float64{math.NaN(), math.NaN()}}
	switch {
	case strings.HasPrefix(s.Skip, "excluded"):
		r.V, r.Why = Excluded, s.Skip
		return r
	case s.Skip != "":
		r.V, r.Why = Invalid, s.Skip
		return r
	}
	var lookupErr [2]string
	var failed []string
	for _, l := range s.Lookups {
		i := map[string]int{"A": 0, "AAAA": 1}[l.Type]
		if l.Type == "A" || l.Type == "AAAA" {
			have := len(l.Addrs) > 0
			r.A, r.AAAA = r.A || (have && i == 0), r.AAAA || (have && i == 1)
			lookupErr[i] = l.Err
			if l.Failed {
				failed = append(failed, l.Type+": "+l.Err)
			}
		}
	}
	switch {
	case len(failed) > 0:
		r.V, r.Why = LookupFailed, "lookup failed: "+strings.Join(failed, "; ")
		return r
	case !r.A && !r.AAAA:
		r.V, r.Why = NoAddress, orText(s.Err, lookupErr[0])
		return r
	case !r.AAAA:
		families(s, samples, &r) // the family it has was measured: its figures
		r.V, r.Why = NoAAAA, lookupErr[1]
		return r
	case !r.A:
		families(s, samples, &r)
		r.V, r.Why = IPv6Only, lookupErr[0]
		return r
	}
	fams := families(s, uncounted(samples, c, &r), &r)
	r.V, r.Why = judgeFamilies(s, fams, &r)
	if r.V == "" {
		r.V, r.Why = timed(&r, fams, c)
	}
	if r.Pairs > 0 {
		r.Version = s.Version // what both families were timed over
	}
	if r.V == Undecided && r.Stalled > 0 {
		r.Why = fmt.Sprintf("%s not counted: v6lab's process stalled while they ran, beyond the threshold and far beyond its other runs (its own wait for a CPU, %s, bounded by the pair's longer page); %s left", stats.Count(r.Stalled, "run"), StallMetric, stats.Count(r.Pairs, "pair"))
	}
	return r
}

func orText(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// family is what one family's samples and discovery say.
type family struct {
	name      string
	connected bool
	// page says discovery found the page; discoverErr why not.
	page        bool
	discoverErr string
	byRun       map[int]float64 // counted completed runs: page ms
	firstErr    string
}

// families reads each family's discovery and samples, and fills the
// row's per-family figures.
func families(s *result.Site, samples []result.Sample, r *Row) [2]*family {
	var out [2]*family
	for i, name := range []string{"ipv4", "ipv6"} {
		f := &family{name: name, byRun: map[int]float64{}}
		for _, d := range s.Families {
			if d.Path == name {
				f.connected, f.page, f.discoverErr = d.Connected, d.URL != "", d.Err
			}
		}
		var pages, connects []float64
		for j := range samples {
			smp := &samples[j]
			if smp.Path != name {
				continue
			}
			if smp.ConnectNS > 0 {
				f.connected = true
			}
			if smp.Warmup {
				continue
			}
			r.N[i]++
			if !smp.OK() {
				f.firstErr = orText(f.firstErr, smp.Err)
				continue
			}
			r.OK[i]++
			ms := float64(smp.TotalNS) / 1e6
			f.byRun[smp.Run] = ms
			pages = append(pages, ms)
			if smp.ConnectNS > 0 {
				connects = append(connects, float64(smp.ConnectNS-smp.ResolveNS)/1e6)
			}
		}
		r.PageMS[i], r.ConnectMS[i] = median(pages), median(connects)
		out[i] = f
	}
	return out
}

// median of xs, NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// works says whether a family got the page at all.
func (f *family) works() bool { return f.page || len(f.byRun) > 0 }

// judgeFamilies gives the verdicts that do not compare times: a family
// that never connected, a site that fails over both, a part that fails
// over one only. "" when the times decide.
func judgeFamilies(s *result.Site, fams [2]*family, r *Row) (Verdict, string) {
	v4, v6 := fams[0], fams[1]
	switch {
	case !v4.works() && !v6.works():
		return Failed, orText(s.Err, "ipv4: "+orText(v4.discoverErr, v4.firstErr)+"; ipv6: "+orText(v6.discoverErr, v6.firstErr))
	case noPage(r):
		// Discovery found the page, yet not one counted fetch of it
		// arrived over either family (a forced HTTP version the site
		// does not offer, a page that stopped answering): neither
		// family gets the page.
		return Failed, "no page over either family: ipv4: " + orText(v4.firstErr, v4.discoverErr) + "; ipv6: " + orText(v6.firstErr, v6.discoverErr) + notOffered(s)
	case !v6.connected && v4.works():
		return Broken, "ipv6: " + orText(v6.discoverErr, v6.firstErr)
	case !v4.connected && v6.works():
		return IPv4Broken, "ipv4: " + orText(v4.discoverErr, v4.firstErr)
	}
	var why []string
	for i, f := range fams {
		other := fams[1-i]
		switch {
		case !f.page && other.page:
			why = append(why, f.name+": "+f.discoverErr)
		case r.N[i] > 0 && r.OK[i] == 0 && r.OK[1-i] > 0:
			why = append(why, f.name+": every page transaction failed: "+f.firstErr)
		}
	}
	for _, o := range s.Objects {
		e4, ok4 := o.Err["ipv4"]
		e6, ok6 := o.Err["ipv6"]
		if !ok4 || !ok6 || (e4 == "") == (e6 == "") {
			continue // fetched over one family only, or alike over both
		}
		p, e := "ipv6", e6
		if e4 != "" {
			p, e = "ipv4", e4
		}
		r.Objects = append(r.Objects, o.URL)
		why = append(why, fmt.Sprintf("object %s fails over %s only: %s", o.URL, p, e))
	}
	if len(why) > 0 {
		return Partial, strings.Join(why, "; ")
	}
	return "", ""
}

// notOffered says, for a site timed over HTTP/3 that discovery found
// offered over neither family (a forced --http-version 3), that it was
// not offered; "" otherwise.
func notOffered(s *result.Site) string {
	if s.Version != "3" {
		return ""
	}
	for _, f := range s.Families {
		if slices.Contains(f.Offers, "h3") {
			return ""
		}
	}
	return " (HTTP/3 was forced and discovery found it offered over neither family)"
}

// noPage says whether both families fetched the page (counted fetches)
// and not one of those fetches completed, none left out for a stall.
func noPage(r *Row) bool {
	return r.N[0] > 0 && r.N[1] > 0 && r.OK == [2]int{} && r.Stalled == 0
}

// timed compares the families' page times run by run: the mean paired
// difference and its 95% CI against the threshold; an undecided one
// says why.
func timed(r *Row, fams [2]*family, c Criteria) (Verdict, string) {
	var v4, v6 []float64
	runs := make([]int, 0, len(fams[0].byRun))
	for run := range fams[0].byRun {
		if _, ok := fams[1].byRun[run]; ok {
			runs = append(runs, run)
		}
	}
	sort.Ints(runs)
	for _, run := range runs {
		v4, v6 = append(v4, fams[0].byRun[run]), append(v6, fams[1].byRun[run])
	}
	r.Pairs = len(runs)
	if r.Pairs < 2 {
		return Undecided, fmt.Sprintf("%s completed over both families (ipv4 %d of %d, ipv6 %d of %d): fewer than two pairs give no CI", stats.Count(r.Pairs, "counted run"), r.OK[0], r.N[0], r.OK[1], r.N[1])
	}
	t := stats.Paired(v4, v6)
	r.DiffMS = t.Diff
	switch {
	case t.NA == "":
		r.CI = t.CI95Diff
	case strings.HasPrefix(t.NA, "zero variance"):
		r.CI = [2]float64{t.Diff, t.Diff} // every pair differs by the same
	default:
		return Undecided, "no CI: " + t.NA
	}
	th := float64(c.Threshold) / 1e6
	switch {
	case r.CI[1] < -th:
		return Faster, ""
	case r.CI[0] > th:
		return Slower, ""
	case r.CI[0] >= -th && r.CI[1] <= th:
		return Same, ""
	}
	return Undecided, fmt.Sprintf("the 95%% CI of ipv6 - ipv4, %+.3g to %+.3g ms over %s, straddles ±%g ms", r.CI[0], r.CI[1], stats.Count(r.Pairs, "pair"), th)
}
