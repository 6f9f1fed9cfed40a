package sites

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"v6lab/internal/report/stats"
)

// Versus is two surveys side by side (v6lab compare A B): each verdict's
// share in A and B with the difference B − A and its 95% interval
// (Newcombe's hybrid score interval from the two Wilson intervals), the
// study's measures the same way, and the sites whose verdict changed.
type Versus struct {
	A string `json:"a"`
	B string `json:"b"`
	// Shares are of every site each survey judged; Study the study's
	// measures (faster, at most 1 ms slower, partly failed).
	Shares []ShareVersus `json:"shares"`
	Study  []ShareVersus `json:"study"`
	// Common is how many sites both judged (by name); OnlyA and OnlyB
	// those one judged only; Changed the common ones whose verdict
	// differs, the first MaxProblems of them in Changes.
	Common  int      `json:"common"`
	OnlyA   int      `json:"only_a"`
	OnlyB   int      `json:"only_b"`
	Changed int      `json:"changed"`
	Changes []Change `json:"changes,omitempty"`
	// Notes name the options the two surveys differ in (threshold, runs,
	// …): their verdicts were judged or measured differently.
	Notes []string `json:"notes,omitempty"`
}

// ShareVersus is one share in A and in B, and B − A with its interval:
// Diff and CI95 nil where either share is of no site, NA saying which.
type ShareVersus struct {
	What string      `json:"what"`
	A    Share       `json:"a"`
	B    Share       `json:"b"`
	Diff *float64    `json:"diff"`
	CI95 *[2]float64 `json:"diff_ci95,omitempty"`
	NA   string      `json:"na,omitempty"`
}

// Change is a site whose verdict differs between A and B, with its paired
// difference (ipv6 − ipv4, ms; NaN: none) in each.
type Change struct {
	Name         string  `json:"name"`
	A            Verdict `json:"a"`
	B            Verdict `json:"b"`
	DiffA, DiffB float64 `json:"-"`
}

// Compare reads two survey result directories (each as a stream; A's
// sites kept by name, a verdict and a number each) and sets them side by
// side.
func Compare(dirA, dirB string) (*Versus, error) {
	type seen struct {
		v    Verdict
		diff float64
	}
	a := map[string]seen{}
	sa, err := Scan(dirA, func(r Row) error { a[r.Name] = seen{r.V, r.DiffMS}; return nil })
	if err != nil {
		return nil, err
	}
	v := &Versus{A: dirA, B: dirB}
	sb, err := Scan(dirB, func(r Row) error {
		x, ok := a[r.Name]
		if !ok {
			v.OnlyB++
			return nil
		}
		v.Common++
		if x.v != r.V {
			v.Changed++
			if len(v.Changes) < MaxProblems {
				v.Changes = append(v.Changes, Change{Name: r.Name, A: x.v, B: r.V, DiffA: x.diff, DiffB: r.DiffMS})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	v.OnlyA = sa.Judged - v.Common
	v.Notes = optionNotes(sa.Spec, sb.Spec)
	for i, s := range sa.Shares {
		if t := sb.Shares[i]; s.Count+t.Count > 0 {
			v.Shares = append(v.Shares, versus(string(s.Verdict), s, t))
		}
	}
	for _, p := range [][2]Share{{sa.Study.Faster, sb.Study.Faster}, {sa.Study.WithinOneMS, sb.Study.WithinOneMS}, {sa.Study.Partial, sb.Study.Partial}} {
		v.Study = append(v.Study, versus(p[0].What, p[0], p[1]))
	}
	return v, nil
}

// sameSurvey are the spec's keys that name the survey or its list rather
// than how it measured.
var sameSurvey = map[string]bool{"name": true, "sites": true, "sites_count": true, "sites_sha256": true}

// optionNotes names each option the two specs give differently, with
// both values ("threshold: 40ms in A, 1ms in B").
func optionNotes(a, b []byte) []string {
	ma, mb, keys, ok := OptionKeys(a, b)
	if !ok {
		return nil
	}
	var out []string
	for _, k := range keys {
		va, vb := optionText(ma, k), optionText(mb, k)
		if sameSurvey[k] || va == vb {
			continue
		}
		out = append(out, fmt.Sprintf("the surveys' options differ: %s %s in A, %s in B", k, va, vb))
	}
	return out
}

func optionText(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok {
		return "(not given)"
	}
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

// versus sets a share of A and of B side by side.
func versus(what string, a, b Share) ShareVersus {
	v := ShareVersus{What: what, A: a, B: b}
	var empty []string
	for _, x := range []struct {
		name string
		s    Share
	}{{"A", a}, {"B", b}} {
		if x.s.Of == 0 {
			empty = append(empty, x.name)
		}
	}
	if len(empty) > 0 {
		v.NA = "no B − A: a share of no site in " + strings.Join(empty, " and ")
		return v
	}
	d := b.Share - a.Share
	v.Diff = &d
	if ci, ok := DiffCI(a, b); ok {
		v.CI95 = &ci
	}
	return v
}

// shareCell is a share with its count for the comparison's table, n/a
// for a share of no site.
func shareCell(s Share) string {
	if s.Of == 0 {
		return "n/a\t(0 sites)"
	}
	return fmt.Sprintf("%s\t(%d of %d)", pct(s.Share), s.Count, s.Of)
}

// diffCell is B − A and its interval, or why there is none.
func diffCell(s ShareVersus) string {
	if s.Diff == nil {
		return s.NA + "\t"
	}
	return fmt.Sprintf("%+.1f pt\t%s", 100**s.Diff, ptText(s.CI95))
}

// DiffCI is the 95% interval of b's share less a's by Newcombe's hybrid
// score method (Statistics in Medicine 17, 1998, method 10), from each
// share's Wilson interval: b − a − √((b − lb)² + (ua − a)²) to
// b − a + √((ub − b)² + (a − la)²); ok is false where either is of no
// site.
func DiffCI(a, b Share) (ci [2]float64, ok bool) {
	if a.Of == 0 || b.Of == 0 {
		return ci, false
	}
	d := b.Share - a.Share
	return [2]float64{d - math.Hypot(b.Share-b.CI[0], a.CI[1]-a.Share), d + math.Hypot(b.CI[1]-b.Share, a.Share-a.CI[0])}, true
}

// VersusText writes v for a terminal.
func VersusText(w io.Writer, v *Versus) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "A: %s\nB: %s\n%s in both, %d changed verdict; %d only in A, %d only in B\n\n", v.A, v.B, stats.Count(v.Common, "site"), v.Changed, v.OnlyA, v.OnlyB)
	for _, n := range v.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	if len(v.Notes) > 0 {
		b.WriteString("\n")
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tA\t\tB\t\tB − A\t95% CI\t")
	for _, rows := range [][]ShareVersus{v.Shares, v.Study} {
		for _, s := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", s.What, shareCell(s.A), shareCell(s.B), diffCell(s))
		}
	}
	tw.Flush()
	if len(v.Changes) > 0 {
		fmt.Fprintf(b, "\nSites whose verdict changed (first %d of %d), ipv6 − ipv4 ms in A and B:\n", len(v.Changes), v.Changed)
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		for _, c := range v.Changes {
			fmt.Fprintf(tw, "  %s\t%s → %s\t%s → %s\n", c.Name, c.A, c.B, num(c.DiffA), num(c.DiffB))
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// VersusJSON writes v as JSON.
func VersusJSON(w io.Writer, v *Versus) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func ptText(ci *[2]float64) string {
	if ci == nil {
		return "-"
	}
	return fmt.Sprintf("%+.1f to %+.1f pt", 100*ci[0], 100*ci[1])
}

// OptionKeys decodes two JSON objects of options and lists their keys:
// a's sorted, then those only b has (ok false: one is not an object).
func OptionKeys(a, b []byte) (ma, mb map[string]any, keys []string, ok bool) {
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return nil, nil, nil, false
	}
	keys = slices.Sorted(maps.Keys(ma))
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	return ma, mb, keys, true
}
