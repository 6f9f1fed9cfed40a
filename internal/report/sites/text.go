package sites

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"v6lab/internal/report/stats"
)

// Text writes report.txt: what was surveyed, the verdicts' shares, the
// study's measures, the paired difference's spread, the what-if, and the
// sites with a problem.
func Text(w io.Writer, s *Summary) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "Survey %s: %s judged", s.Name, siteCount(s.Judged))
	if s.Missing > 0 {
		fmt.Fprintf(b, " of %s (partial)", formatInt(s.Expected))
	}
	fmt.Fprintf(b, "; threshold %g ms; %s\n", s.ThresholdMS, splitText(s))
	if v := VersionsText(s.HTTPVersions); v != "" {
		fmt.Fprintf(b, "Page fetches compared over %s\n", v)
	}
	fmt.Fprintf(b, "In short: %s\n\n", InShort(s))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "verdict\tsites\tshare\t95% CI\t\tof dual-stacked\t95% CI\t")
	dual := map[Verdict]Share{}
	for _, d := range s.Dual {
		dual[d.Verdict] = d
	}
	for _, sh := range s.Shares {
		if sh.Count == 0 {
			continue
		}
		d, ok := dual[sh.Verdict]
		dualText := "\t\t"
		if ok {
			dualText = pct(d.Share) + "\t" + ciText(d.CI) + "\t"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\t%s\n", sh.Verdict, sh.Count, pct(sh.Share), ciText(sh.CI), dualText)
	}
	tw.Flush()
	fmt.Fprintf(b, "\nThe study's measures (Bajpai and Schönwälder, Alexa top 10K, 2013-2018: 56%%, 95%%, 27%%, 81%% at 250 ms):\n")
	for _, m := range []Share{s.Study.Faster, s.Study.WithinOneMS, s.Study.Partial} {
		if m.Of == 0 {
			fmt.Fprintf(b, "  %-62s %s\n", m.What, NA)
			continue
		}
		fmt.Fprintf(b, "  %-62s %7s  %s  (%d of %d)\n", m.What, pct(m.Share), ciText(m.CI), m.Count, m.Of)
	}
	whatIfText(b, s.WhatIf)
	if s.WhatIfNote != "" && len(s.WhatIf) > 0 && s.WhatIf[0].Of > 0 {
		fmt.Fprintf(b, "  note: %s\n", s.WhatIfNote)
	}
	if q := s.DiffCDF; len(q) == 101 {
		fmt.Fprintf(b, "\nPer-site paired difference, ipv6 - ipv4 (ms; %s timed): min %s  p10 %s  p25 %s  median %s  p75 %s  p90 %s  max %s\n",
			siteCount(timedCount(s)), num(q[0]), num(q[10]), num(q[25]), num(q[50]), num(q[75]), num(q[90]), num(q[100]))
	}
	if len(s.Problems) > 0 {
		fmt.Fprintf(b, "\nSites without a timed verdict (first %d; every site is in results.csv):\n", len(s.Problems))
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, r := range s.Problems {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.Name, r.V, oneLine(r.Why, 160))
		}
		tw.Flush()
	}
	for _, n := range s.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// whatIfText writes the Happy Eyeballs what-if: per timer, how often it
// picks the slower family of the sites replayed, and how often it takes
// IPv6 where IPv6 is the slower (the study's figure).
func whatIfText(b *strings.Builder, ws []WhatIf) {
	if len(ws) == 0 || ws[0].Of == 0 {
		return
	}
	fmt.Fprintf(b, "\nHappy Eyeballs what-if (each site's median connects raced: IPv6 at once, IPv4 after the timer):\n")
	for _, wi := range ws {
		fmt.Fprintf(b, "  %-62s %7s  %s  (%d of %s; %.3g ms lost on average)\n", wi.What, pct(wi.Share.Share), ciText(wi.CI), wi.Count, stats.Count(wi.Of, "site"), wi.LostMeanMS)
	}
	for _, wi := range ws {
		if sl := wi.IPv6WhenSlower; sl.Of > 0 {
			fmt.Fprintf(b, "  %-62s %7s  %s  (%d of %d)\n", sl.What, pct(sl.Share), ciText(sl.CI), sl.Count, sl.Of)
		}
	}
}

// InShort is the survey's answer in one sentence.
func InShort(s *Summary) string {
	out := inShort(s)
	for _, sh := range s.Shares {
		if sh.Verdict == LookupFailed && sh.Count > 0 {
			out += fmt.Sprintf("; the lookups of %s failed (no answer from the DNS server: what it holds is unknown, see lookup_failed)", stats.Count(sh.Count, "site"))
		}
	}
	return out
}

func inShort(s *Summary) string {
	dual := 0
	for _, d := range s.Dual {
		dual += d.Count
	}
	if dual == 0 {
		return fmt.Sprintf("no site was dual-stacked and measured (%s)", topVerdicts(s.Shares))
	}
	by := map[Verdict]Share{}
	for _, d := range s.Dual {
		by[d.Verdict] = d
	}
	out := fmt.Sprintf("of %s, IPv6 was faster at %s, the same within %g ms at %s, slower at %s, undecided at %s; broken at %s, partly broken at %s",
		countOfWhat(dual, "dual-stacked site"), pct(by[Faster].Share), s.ThresholdMS, pct(by[Same].Share), pct(by[Slower].Share), pct(by[Undecided].Share), pct(by[Broken].Share), pct(by[Partial].Share))
	if d := by[IPv4Broken]; d.Count > 0 {
		out += fmt.Sprintf(", IPv4 broken at %s", pct(d.Share))
	}
	return out + fmt.Sprintf(" and failed at %s", pct(by[Failed].Share))
}

func topVerdicts(shares []Share) string {
	var out []string
	for _, s := range shares {
		if s.Count > 0 {
			out = append(out, fmt.Sprintf("%s %d", s.Verdict, s.Count))
		}
	}
	return strings.Join(out, ", ")
}

func timedCount(s *Summary) int {
	n := 0
	for _, sh := range s.Shares {
		if sh.Verdict.Timed() {
			n += sh.Count
		}
	}
	return n
}

// splitText says whether the result is a segment or a merge.
// VersionsText names the HTTP versions the sites were compared over, the
// most used first: "HTTP/2 (11 sites)", "HTTP/3 (2 sites), HTTP/1.1 (1
// site)"; "" for none.
func VersionsText(versions map[string]int) string {
	vs := make([]string, 0, len(versions))
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool {
		if versions[vs[i]] != versions[vs[j]] {
			return versions[vs[i]] > versions[vs[j]]
		}
		return vs[i] > vs[j]
	})
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("HTTP/%s (%s)", v, stats.Count(versions[v], "site"))
	}
	return strings.Join(out, ", ")
}

func splitText(s *Summary) string {
	switch {
	case s.Segment != nil:
		return fmt.Sprintf("segment %s of the list (sites i with i mod %d = %d): merge every segment with v6lab merge", s.Segment, s.Segment.Count, s.Segment.Index)
	case len(s.Merged) > 0:
		return "merged from " + stats.Count(len(s.Merged), "segment")
	}
	return "the whole list"
}

func pct(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

func ciText(ci [2]float64) string {
	return fmt.Sprintf("%.1f–%.1f%%", 100*ci[0], 100*ci[1])
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%+.3g", v)
}

// oneLine is s on one line, cut to n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
