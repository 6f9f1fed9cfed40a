package report

import (
	"v6lab/internal/sock/path"

	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The plots are drawn here as plain SVG (no plotting library): the output
// is small, inline, styled by the page's CSS, byte-stable for golden files,
// and prints well.

// point is one value with an optional interval.
type point struct {
	X, Y   float64
	Lo, Hi float64
	CI     bool
	// Few: the interval rests on fewer than MinRuns runs; it is drawn
	// dotted and the plot says so.
	Few bool
	// Saturated: the client or the host was saturated in the cell's runs
	// (its self-check); its dot is drawn as a dotted ring and the plot
	// says so.
	Saturated bool
	// Late: v6lab's own UDP sender ran late in the cell's trials
	// (senderLate); its dot is drawn as a hollow ring and the plot says
	// so, as the tables and the notes do.
	Late bool
}

// ciClass is the class of an interval's path.
func ciClass(pt point) string {
	if pt.Few {
		return "ci few"
	}
	return "ci"
}

// series is one line (or one set of bars) of a plot, usually one path.
type series struct {
	Name string
	// Class styles the series; empty means its path's (pathClass).
	Class  string
	Points []point
}

// plot is a chart of series over a numeric x axis.
type plot struct {
	ID, Title, XLabel, YLabel string
	Series                    []series
	LogX                      bool
	// Bars draws grouped bars per x value instead of lines (x values are
	// then categories).
	Bars bool
	// XNames, with Bars, names the categories: x values are 0, 1, … .
	XNames []string
	// YMin, YMax fix the y range when set (YMax > YMin).
	YMin, YMax float64
	// ZeroLine draws y = 0 (for differences).
	ZeroLine bool
	// XTicks, when set, are the only x ticks (the connection counts: a
	// count is a whole number, and 1.2 connections means nothing).
	XTicks []float64
	// Marks are values with no point to draw (a cell whose every
	// transaction failed), said at their x.
	Marks []mark
	W, H  int
}

// mark says something at an x value of a plot: why it has no point there.
type mark struct {
	X    float64
	Text string
}

const (
	padL, padR, padT, padB = 64, 16, 30, 58
)

// pathClass maps a series name to its CSS class, so every plot draws each
// path alike; unknown names get the "other" style.
func pathClass(name string) string {
	if k, ok := path.KindOf(path.Path(name)); ok {
		return k.CSSClass
	}
	return "s-other"
}

// SVG renders the plot.
func (p *plot) SVG() string {
	if p.W == 0 {
		p.W, p.H = 560, 320
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="plot" data-plot="%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`+"\n",
		html.EscapeString(p.ID), p.W, p.H, p.W, p.H, html.EscapeString(p.Title))
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", html.EscapeString(p.Title))
	fmt.Fprintf(&b, `<text class="title" x="%d" y="18"%s>%s</text>`+"\n", padL, fitTitle(p.Title, p.W-padL-padR), html.EscapeString(p.Title))
	xs := p.xValues()
	if len(xs) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d">no data</text>`+"\n</svg>\n", p.W/2-30, p.H/2)
		return b.String()
	}
	fr := p.frame(xs)
	p.writeAxes(&b, fr)
	for si, s := range p.Series {
		fmt.Fprintf(&b, `<g class="series %s" data-series="%s">`+"\n", seriesClass(s), html.EscapeString(s.Name))
		if p.Bars {
			p.writeBars(&b, fr, si, s)
		} else {
			p.writeLine(&b, fr, s)
		}
		b.WriteString("</g>\n")
	}
	p.writeMarks(&b, fr)
	p.writeLegend(&b, fr)
	b.WriteString("</svg>\n")
	return b.String()
}

// fitTitle squeezes a title longer than the plot is wide into it (SVG's
// textLength), so it never runs off the plot: about 6.5 px a character
// at the title's size.
func fitTitle(title string, width int) string {
	if float64(len([]rune(title)))*6.5 <= float64(width) {
		return ""
	}
	return fmt.Sprintf(` textLength="%d" lengthAdjust="spacingAndGlyphs"`, width)
}

// writeMarks says, at the foot of the plot area, what has no point to
// draw: "all failed" and why, one line per mark.
func (p *plot) writeMarks(b *strings.Builder, f *frame) {
	for i, m := range p.Marks {
		x := f.xAt(m.X)
		anchor := "middle"
		switch {
		case x < f.x0+60:
			anchor = "start"
		case x > f.x1-60:
			anchor = "end"
		}
		fmt.Fprintf(b, `<text class="note mark" x="%s" y="%s" text-anchor="%s">%s</text>`+"\n",
			f1(x), f1(f.y0-6-12*float64(i)), anchor, html.EscapeString(m.Text))
	}
}

// frame is where a plot's values land: the plot area, the y range, the x
// values and ticks, and the functions from values to coordinates.
type frame struct {
	x0, x1, y0, y1 float64
	ylo, yhi       float64
	xs, xticks     []float64
	xAt            func(float64) float64
}

func (f *frame) yAt(v float64) float64 { return f.y0 - (v-f.ylo)/(f.yhi-f.ylo)*(f.y0-f.y1) }

// frame lays out the plot for x values xs: one slot per value for bars,
// decades on a log axis, nice ticks on a linear one.
func (p *plot) frame(xs []float64) *frame {
	f := &frame{x0: float64(padL), x1: float64(p.W - padR), y0: float64(p.H - padB), y1: float64(padT), xs: xs}
	f.ylo, f.yhi = p.yRange()
	x0, x1 := f.x0, f.x1
	switch {
	case p.Bars:
		slot := (x1 - x0) / float64(len(xs))
		f.xAt = func(v float64) float64 { return x0 + slot*(float64(indexOf(xs, v))+0.5) }
		f.xticks = xs
	case len(p.XTicks) > 0 && p.LogX:
		lmin, lmax := math.Log10(xs[0]), math.Log10(xs[len(xs)-1])
		if lmax == lmin {
			lmin, lmax = lmin-0.5, lmax+0.5
		}
		pad := (lmax - lmin) * 0.04
		lmin, lmax = lmin-pad, lmax+pad
		f.xAt = func(v float64) float64 { return x0 + (math.Log10(v)-lmin)/(lmax-lmin)*(x1-x0) }
		f.xticks = p.XTicks
	case p.LogX:
		lmin, lmax := math.Log10(xs[0]), math.Log10(xs[len(xs)-1])
		if lmax == lmin {
			lmin, lmax = lmin-0.5, lmax+0.5
		}
		lmin, lmax = math.Floor(lmin), math.Ceil(lmax)
		f.xAt = func(v float64) float64 { return x0 + (math.Log10(v)-lmin)/(lmax-lmin)*(x1-x0) }
		for e := lmin; e <= lmax; e++ {
			f.xticks = append(f.xticks, math.Pow(10, e))
		}
	default:
		lo, hi := xs[0], xs[len(xs)-1]
		if lo == hi {
			lo, hi = lo-1, hi+1
		}
		pad := (hi - lo) * 0.04
		lo, hi = lo-pad, hi+pad
		f.xAt = func(v float64) float64 { return x0 + (v-lo)/(hi-lo)*(x1-x0) }
		for _, t := range niceTicks(lo, hi, 6) {
			if t >= lo && t <= hi {
				f.xticks = append(f.xticks, t)
			}
		}
		if len(p.XTicks) > 0 {
			f.xticks = p.XTicks
		}
	}
	return f
}

// writeAxes draws the axes, the grid, the ticks and the labels.
func (p *plot) writeAxes(b *strings.Builder, f *frame) {
	b.WriteString(`<g class="axes">` + "\n")
	for _, t := range niceTicks(f.ylo, f.yhi, 6) {
		y := f.yAt(t)
		fmt.Fprintf(b, `<line class="grid" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="end">%s</text>`+"\n",
			f1(f.x0), f1(y), f1(f.x1), f1(y), f1(f.x0-6), f1(y+4), tickLabel(t))
	}
	for _, t := range f.xticks {
		x := f.xAt(t)
		fmt.Fprintf(b, `<line class="tickmark" x1="%s" y1="%s" x2="%s" y2="%s"/><text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>`+"\n",
			f1(x), f1(f.y0), f1(x), f1(f.y0+5), f1(x), f1(f.y0+18), html.EscapeString(p.xName(t)))
	}
	fmt.Fprintf(b, `<line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/><line class="axis" x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n",
		f1(f.x0), f1(f.y0), f1(f.x1), f1(f.y0), f1(f.x0), f1(f.y0), f1(f.x0), f1(f.y1))
	if p.ZeroLine && f.ylo < 0 && f.yhi > 0 {
		fmt.Fprintf(b, `<line class="zero" x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(f.x0), f1(f.yAt(0)), f1(f.x1), f1(f.yAt(0)))
	}
	fmt.Fprintf(b, `<text class="label" x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f1((f.x0+f.x1)/2), p.H-22, html.EscapeString(p.XLabel))
	fmt.Fprintf(b, `<text class="label" transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>`+"\n", f1((f.y0+f.y1)/2), html.EscapeString(p.YLabel))
	b.WriteString("</g>\n")
}

// writeBars draws series si as bars, beside the other series' in each
// slot, with their intervals.
func (p *plot) writeBars(b *strings.Builder, f *frame, si int, s series) {
	slot := (f.x1 - f.x0) / float64(len(f.xs))
	bw := slot * 0.8 / float64(len(p.Series))
	for _, pt := range s.Points {
		x := f.xAt(pt.X) - slot*0.4 + bw*float64(si)
		top := f.yAt(math.Max(pt.Y, f.ylo))
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s"><title>%s, %s: %s</title></rect>`+"\n",
			f1(x), f1(top), f1(bw*0.92), f1(math.Max(f.y0-top, 0)), html.EscapeString(s.Name), html.EscapeString(p.xName(pt.X)), num4(pt.Y))
		if pt.CI {
			cx := x + bw*0.46
			lo, hi := f.yAt(math.Max(pt.Lo, f.ylo)), f.yAt(math.Min(pt.Hi, f.yhi))
			fmt.Fprintf(b, `<path class="%s" d="M%s %s L%s %s M%s %s L%s %s M%s %s L%s %s"/>`+"\n", ciClass(pt),
				f1(cx), f1(lo), f1(cx), f1(hi), f1(cx-3), f1(lo), f1(cx+3), f1(lo), f1(cx-3), f1(hi), f1(cx+3), f1(hi))
		}
	}
}

// writeLine draws a series as a line through its points, with their
// intervals, and dots where they are few enough to point at.
func (p *plot) writeLine(b *strings.Builder, f *frame, s series) {
	var d strings.Builder
	for i, pt := range s.Points {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%s %s ", cmd, f1(f.xAt(pt.X)), f1(f.yAt(pt.Y)))
	}
	fmt.Fprintf(b, `<path class="line" d="%s"/>`+"\n", strings.TrimSpace(d.String()))
	for _, pt := range s.Points {
		x, y := f.xAt(pt.X), f.yAt(pt.Y)
		if pt.CI {
			lo, hi := f.yAt(math.Max(pt.Lo, f.ylo)), f.yAt(math.Min(pt.Hi, f.yhi))
			fmt.Fprintf(b, `<path class="%s" d="M%s %s L%s %s M%s %s L%s %s M%s %s L%s %s"/>`+"\n", ciClass(pt),
				f1(x), f1(lo), f1(x), f1(hi), f1(x-4), f1(lo), f1(x+4), f1(lo), f1(x-4), f1(hi), f1(x+4), f1(hi))
		}
		if pt.Late {
			fmt.Fprintf(b, `<circle class="dot late" cx="%s" cy="%s" r="5"><title>%s, %s: %s (v6lab's UDP sender ran late: see the notes)</title></circle>`+"\n",
				f1(x), f1(y), html.EscapeString(s.Name), tickLabel(pt.X), num4(pt.Y))
		} else if pt.Saturated {
			fmt.Fprintf(b, `<circle class="dot saturated" cx="%s" cy="%s" r="5"><title>%s, %s: %s (saturated: see the notes)</title></circle>`+"\n",
				f1(x), f1(y), html.EscapeString(s.Name), tickLabel(pt.X), num4(pt.Y))
		} else if len(s.Points) <= 40 {
			fmt.Fprintf(b, `<circle class="dot" cx="%s" cy="%s" r="3"><title>%s, %s: %s</title></circle>`+"\n",
				f1(x), f1(y), html.EscapeString(s.Name), tickLabel(pt.X), num4(pt.Y))
		}
	}
}

// writeLegend notes intervals that rest on few runs, and names the
// series.
func (p *plot) writeLegend(b *strings.Builder, f *frame) {
	few, saturated, late := false, false, false
	for _, s := range p.Series {
		few = few || slices.ContainsFunc(s.Points, func(pt point) bool { return pt.Few && pt.CI })
		saturated = saturated || slices.ContainsFunc(s.Points, func(pt point) bool { return pt.Saturated && !pt.Late })
		late = late || slices.ContainsFunc(s.Points, func(pt point) bool { return pt.Late })
	}
	y := padT + 9
	if saturated {
		fmt.Fprintf(b, `<text class="note" x="%d" y="%d" text-anchor="end">dotted ring: client or host saturated (self-check, see the notes)</text>`+"\n", p.W-padR, y)
		y += 12
	}
	if late {
		fmt.Fprintf(b, `<text class="note" x="%d" y="%d" text-anchor="end">hollow ring: v6lab's own UDP sender ran late (send_late_ms, see the notes)</text>`+"\n", p.W-padR, y)
	}
	if few {
		// Under the title, where no legend entry can run into it.
		fmt.Fprintf(b, `<text class="note" x="%d" y="%d" text-anchor="end">dotted interval: fewer than %d counted runs, it says little</text>`+"\n", p.W-padR, padT-3, MinRuns)
	}
	// Each entry 90 px apart, closer when more would run off the plot.
	step := 90.0
	if n := len(p.Series); n > 0 {
		step = min(step, (f.x1-f.x0-8)/float64(n))
	}
	for si, s := range p.Series {
		x := f.x0 + 8 + float64(si)*step
		fmt.Fprintf(b, `<g class="legend %s"><rect x="%s" y="%d" width="14" height="4"/><text x="%s" y="%d">%s</text></g>`+"\n",
			seriesClass(s), f1(x), p.H-10, f1(x+18), p.H-5, html.EscapeString(s.Name))
	}
}

// xName is the label of x value v: its category name, or the number.
func (p *plot) xName(v float64) string {
	if i := int(v); p.XNames != nil && float64(i) == v && i >= 0 && i < len(p.XNames) {
		return p.XNames[i]
	}
	return tickLabel(v)
}

func (p *plot) xValues() []float64 {
	var xs []float64
	for _, m := range p.Marks { // a cell that failed whole still has its x
		if indexOf(xs, m.X) < 0 {
			xs = append(xs, m.X)
		}
	}
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if indexOf(xs, pt.X) < 0 && !(p.LogX && pt.X <= 0) {
				xs = append(xs, pt.X)
			}
		}
	}
	sortFloats(xs)
	return xs
}

func (p *plot) yRange() (float64, float64) {
	if p.YMax > p.YMin {
		return p.YMin, p.YMax
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range p.Series {
		for _, pt := range s.Points {
			lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
			if pt.CI {
				lo, hi = math.Min(lo, pt.Lo), math.Max(hi, pt.Hi)
			}
		}
	}
	if p.Bars || lo > 0 {
		lo = math.Min(lo, 0) // times and rates start at zero
	}
	if hi <= lo {
		hi = lo + 1
	}
	t := niceTicks(lo, hi, 6)
	return math.Min(lo, t[0]), math.Max(hi, t[len(t)-1])
}

// niceTicks returns about n round tick values covering lo..hi.
func niceTicks(lo, hi float64, n int) []float64 {
	span := hi - lo
	if span <= 0 || math.IsInf(span, 0) || math.IsNaN(span) {
		return []float64{lo}
	}
	step := math.Pow(10, math.Floor(math.Log10(span/float64(n))))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= float64(n) {
			step *= m
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	if out[len(out)-1] < hi {
		out = append(out, out[len(out)-1]+step)
	}
	return out
}

func tickLabel(v float64) string {
	if v == 0 {
		return "0"
	}
	if math.Abs(v) >= 1000 && v == math.Trunc(v) {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func num4(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func indexOf(xs []float64, v float64) int {
	for i, x := range xs {
		if x == v {
			return i
		}
	}
	return -1
}

func sortFloats(xs []float64) { slices.Sort(xs) }
