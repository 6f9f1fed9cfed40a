package report

import (
	"fmt"
	"sort"
)

// TransportPlots draw the Herrera Rubio study's figures from the same
// cells as TransportTables: per MSS and path, the transfer time by amount
// of data with one line per window (Figs 5-8); per path, UDP loss and
// jitter by offered rate with one line per buffer (Figs 9-13). The study
// drew one figure per protocol; so do these, so a window's or buffer's
// effect on one path reads at a glance.
func TransportPlots(s *Summary) []*plot {
	return append(tcpWindowPlots(s), udpBufferPlots(s)...)
}

// lineKey is one line of a transport figure: a window or buffer.
type lineKey struct {
	name  string
	value float64
}

// figureLines groups points into lines, ordered by the line's setting, and
// each line's points by x.
func figureLines(pts map[lineKey][]point) []series {
	var keys []lineKey
	for k := range pts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].value < keys[j].value })
	var out []series
	for i, k := range keys {
		p := pts[k]
		sort.Slice(p, func(a, b int) bool { return p[a].X < p[b].X })
		out = append(out, series{Name: k.name, Class: fmt.Sprintf("s-k%d", i%4), Points: p})
	}
	return out
}

// withCI is a point at x of a metric's mean and its interval.
func withCI(x float64, m *MetricStat) point {
	pt := point{X: x, Y: m.Mean}
	if m.CI95 != nil {
		pt.Lo, pt.Hi, pt.CI = m.CI95[0], m.CI95[1], true
		pt.Few = m.N < MinRuns
	}
	return pt
}

func tcpWindowPlots(s *Summary) []*plot {
	type fig struct {
		mss  float64
		path string
	}
	byFig := map[fig]map[lineKey][]point{}
	var figs []fig
	for i := range s.Cells {
		c := &s.Cells[i]
		_, tcp := mean(c, "retransmits")
		amount, ok := mean(c, "bytes_set")
		t := c.Metrics["transfer_s"]
		if !tcp || !ok || t == nil {
			continue
		}
		mss, _ := mean(c, "mss_set")
		w, _ := mean(c, "window_set")
		f := fig{mss, c.Path}
		if byFig[f] == nil {
			byFig[f] = map[lineKey][]point{}
			figs = append(figs, f)
		}
		k := lineKey{"default window", 1 << 40} // the kernel's own, drawn last
		if w > 0 {
			k = lineKey{figure(w/1024) + " KiB", w}
		}
		byFig[f][k] = append(byFig[f][k], withCI(amount/(1<<20), t))
	}
	sort.SliceStable(figs, func(i, j int) bool {
		if figs[i].mss != figs[j].mss {
			return figs[i].mss < figs[j].mss
		}
		return pathRank(figs[i].path) < pathRank(figs[j].path)
	})
	var out []*plot
	for _, f := range figs {
		lines := figureLines(byFig[f])
		if !sweeps(lines) {
			continue
		}
		mss := "default MSS"
		if f.mss > 0 {
			mss = "MSS " + figure(f.mss)
		}
		out = append(out, &plot{ID: fmt.Sprintf("tcp-window-%s-%s", figure(f.mss), f.path),
			Title:  fmt.Sprintf("TCP over %s, %s: time by window (study Figs 5-8)", f.path, mss),
			XLabel: "data sent (MiB)", YLabel: "transfer time (s), 95% CI", Series: lines})
	}
	return out
}

func udpBufferPlots(s *Summary) []*plot {
	loss := map[string]map[lineKey][]point{}
	jitter := map[string]map[lineKey][]point{}
	var paths []string
	for i := range s.Cells {
		c := &s.Cells[i]
		rate, ok := mean(c, "rate_set_mbps")
		if !ok {
			continue
		}
		if loss[c.Path] == nil {
			loss[c.Path], jitter[c.Path] = map[lineKey][]point{}, map[lineKey][]point{}
			paths = append(paths, c.Path)
		}
		b, _ := mean(c, "rcvbuf_set")
		k := lineKey{"default buffer", 1 << 40}
		if b > 0 {
			k = lineKey{bufText(b) + " KiB", b}
		}
		late := senderLate(c) != nil // drawn hollow, as the tables and the note say it
		if m := c.Metrics["loss_pct"]; m != nil {
			pt := withCI(rate, m)
			pt.Late = late
			loss[c.Path][k] = append(loss[c.Path][k], pt)
		}
		if m := c.Metrics["jitter_ms"]; m != nil {
			pt := withCI(rate, m)
			pt.Late = late
			jitter[c.Path][k] = append(jitter[c.Path][k], pt)
		}
	}
	sort.SliceStable(paths, func(i, j int) bool { return pathRank(paths[i]) < pathRank(paths[j]) })
	var out []*plot
	for _, p := range paths {
		if lines := figureLines(loss[p]); sweeps(lines) {
			out = append(out, &plot{ID: "udp-loss-" + p, Title: fmt.Sprintf("UDP over %s: loss by offered rate (study Figs 9, 12)", p),
				XLabel: "offered rate (Mbit/s, log scale)", YLabel: "loss (%), 95% CI", LogX: true, Series: lines})
		}
		if lines := figureLines(jitter[p]); sweeps(lines) {
			out = append(out, &plot{ID: "udp-jitter-" + p, Title: fmt.Sprintf("UDP over %s: jitter by offered rate (study Figs 10-13)", p),
				XLabel: "offered rate (Mbit/s, log scale)", YLabel: "jitter (ms), 95% CI", LogX: true, Series: lines})
		}
	}
	return out
}

// sweeps says whether some line has two x values: one point is no figure.
func sweeps(lines []series) bool {
	for _, l := range lines {
		xs := map[float64]bool{}
		for _, pt := range l.Points {
			xs[pt.X] = true
		}
		if len(xs) > 1 {
			return true
		}
	}
	return false
}

// seriesClass is a series' CSS class: its own, or its path's.
func seriesClass(s series) string {
	if s.Class != "" {
		return s.Class
	}
	return pathClass(s.Name)
}
