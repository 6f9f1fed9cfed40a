package sites

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
)

// HTML writes report.html: one self-contained page (inline CSS and SVG,
// nothing fetched) with the verdicts' shares and their intervals, the CDF
// of the per-site paired difference, the study's measures and the sites
// with a problem.
func HTML(w io.Writer, s *Summary) error {
	return page.Execute(w, htmlPage{S: s, Short: InShort(s), Split: splitText(s), Versions: VersionsText(s.HTTPVersions),
		Shares: template.HTML(sharesSVG(s.Shares)), CDF: template.HTML(cdfSVG(s.DiffCDF, s.ThresholdMS))})
}

type htmlPage struct {
	S                      *Summary
	Short, Split, Versions string
	Shares, CDF            template.HTML
}

var page = template.Must(template.New("survey").Funcs(template.FuncMap{"pct": pct, "ci": ciText, "na": func() string { return NA },
	"slice3": func(a, b, c Share) []Share { return []Share{a, b, c} }}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>v6lab survey {{.S.Name}}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:right}
td:first-child,th:first-child{text-align:left}.why{text-align:left;font-size:12px}
svg{margin:1em 0}.bar{fill:#4a7ab5}.ci{stroke:#222}.cdf{fill:none;stroke:#b5524a;stroke-width:2}
.axis{stroke:#888}.thr{stroke:#999;stroke-dasharray:4 3}text{font-size:11px;fill:#333}
</style></head><body>
<h1>Survey {{.S.Name}}</h1>
<p>{{.S.Judged}} sites judged{{if .S.Missing}} of {{.S.Expected}} (partial){{end}}; {{.Split}}; threshold {{.S.ThresholdMS}} ms.{{with .Versions}} Page fetches compared over {{.}}.{{end}}</p>
<p><b>In short:</b> {{.Short}}.</p>
<h2>Verdicts</h2>
{{.Shares}}
<table><tr><th>verdict</th><th>sites</th><th>share</th><th>95% CI (Wilson)</th></tr>
{{range .S.Shares}}{{if .Count}}<tr><td>{{.Verdict}}</td><td>{{.Count}}</td><td>{{pct .Share}}</td><td>{{ci .CI}}</td></tr>{{end}}{{end}}
</table>
<h2>The study's measures</h2>
<table><tr><th>measure</th><th>share</th><th>95% CI</th><th>sites</th></tr>
{{with .S.Study}}{{range (slice3 .Faster .WithinOneMS .Partial)}}<tr><td>{{.What}}</td>{{if .Of}}<td>{{pct .Share}}</td><td>{{ci .CI}}</td><td>{{.Count}} of {{.Of}}</td>{{else}}<td colspan="3">{{na}}</td>{{end}}</tr>{{end}}{{end}}
{{range .S.WhatIf}}{{if .Of}}<tr><td>{{.What}}</td><td>{{pct .Share.Share}}</td><td>{{ci .CI}}</td><td>{{.Count}} of {{.Of}}; {{printf "%.3g" .LostMeanMS}} ms lost on average</td></tr>{{end}}{{end}}
{{range .S.WhatIf}}{{if .IPv6WhenSlower.Of}}<tr><td>{{.IPv6WhenSlower.What}}</td><td>{{pct .IPv6WhenSlower.Share}}</td><td>{{ci .IPv6WhenSlower.CI}}</td><td>{{.IPv6WhenSlower.Count}} of {{.IPv6WhenSlower.Of}}</td></tr>{{end}}{{end}}
</table>
{{with .S.WhatIfNote}}<p>note: {{.}}</p>{{end}}
<h2>Per-site paired difference, ipv6 − ipv4</h2>
{{.CDF}}
{{if .S.Problems}}<h2>Sites without a timed verdict</h2>
<table><tr><th>site</th><th>verdict</th><th class="why">why</th></tr>
{{range .S.Problems}}<tr><td>{{.Name}}</td><td>{{.V}}</td><td class="why">{{.Why}}</td></tr>{{end}}
</table>{{end}}
{{range .S.Notes}}<p>note: {{.}}</p>{{end}}
<p>v6lab {{.S.ToolVersion}}{{if .S.Host}}, {{.S.Host}}{{end}}{{if .S.Kernel}}, kernel {{.S.Kernel}}{{end}}; every site is in results.csv.</p>
</body></html>
`))

// sharesSVG draws each verdict's share as a bar with its interval.
func sharesSVG(shares []Share) string {
	var rows []Share
	for _, s := range shares {
		if s.Count > 0 {
			rows = append(rows, s)
		}
	}
	if len(rows) == 0 {
		return ""
	}
	const left, width, rowH = 110.0, 420.0, 20.0
	b := &strings.Builder{}
	fmt.Fprintf(b, `<svg width="%g" height="%g" role="img" aria-label="shares of each verdict">`, left+width+60, rowH*float64(len(rows))+24)
	for i, s := range rows {
		y := float64(i)*rowH + 4
		fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="end">%s</text>`, left-6, y+13, template.HTMLEscapeString(string(s.Verdict)))
		fmt.Fprintf(b, `<rect class="bar" x="%g" y="%g" width="%.1f" height="%g"/>`, left, y+2, width*s.Share, rowH-6)
		fmt.Fprintf(b, `<line class="ci" x1="%.1f" x2="%.1f" y1="%g" y2="%g"/>`, left+width*s.CI[0], left+width*s.CI[1], y+rowH/2-1, y+rowH/2-1)
		fmt.Fprintf(b, `<text x="%.1f" y="%g">%s</text>`, left+width*s.CI[1]+4, y+13, pct(s.Share))
	}
	y := rowH*float64(len(rows)) + 6
	fmt.Fprintf(b, `<line class="axis" x1="%g" x2="%g" y1="%g" y2="%g"/>`, left, left+width, y, y)
	for _, t := range []float64{0, .25, .5, .75, 1} {
		fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="middle">%g%%</text>`, left+width*t, y+14, 100*t)
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// cdfSVG draws the CDF of the per-site paired difference (its 101
// quantiles), with the threshold's band.
func cdfSVG(q []float64, threshold float64) string {
	if len(q) != 101 {
		return "<p>No site was timed over both families.</p>"
	}
	const x0, y0, w, h = 50.0, 10.0, 520.0, 220.0
	lo, hi := math.Min(q[1], -threshold), math.Max(q[99], threshold)
	if hi-lo < 1e-9 {
		lo, hi = lo-1, hi+1
	}
	pad := (hi - lo) * 0.05
	lo, hi = lo-pad, hi+pad
	xAt := func(v float64) float64 { return x0 + (math.Max(lo, math.Min(hi, v))-lo)/(hi-lo)*w }
	b := &strings.Builder{}
	fmt.Fprintf(b, `<svg width="%g" height="%g" role="img" aria-label="CDF of the per-site paired difference">`, x0+w+20, y0+h+40)
	fmt.Fprintf(b, `<line class="axis" x1="%g" x2="%g" y1="%g" y2="%g"/><line class="axis" x1="%g" x2="%g" y1="%g" y2="%g"/>`, x0, x0+w, y0+h, y0+h, x0, x0, y0, y0+h)
	for _, t := range []float64{-threshold, threshold} {
		fmt.Fprintf(b, `<line class="thr" x1="%.1f" x2="%.1f" y1="%g" y2="%g"/>`, xAt(t), xAt(t), y0, y0+h)
	}
	var pts []string
	for i, v := range q {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", xAt(v), y0+h-float64(i)/100*h))
	}
	fmt.Fprintf(b, `<polyline class="cdf" points="%s"/>`, strings.Join(pts, " "))
	for i := 0; i <= 4; i++ {
		v := lo + (hi-lo)*float64(i)/4
		fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="middle">%.3g</text>`, xAt(v), y0+h+14, v)
		fmt.Fprintf(b, `<text x="%g" y="%.1f" text-anchor="end">%d%%</text>`, x0-4, y0+h-float64(i)/4*h+4, 25*i)
	}
	fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="middle">ms, ipv6 − ipv4 (negative: IPv6 faster; dashed: ±threshold)</text></svg>`, x0+w/2, y0+h+32)
	return b.String()
}
