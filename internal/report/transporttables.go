package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// TransportTables are the Herrera Rubio study's shapes, for experiments
// whose tcp cells send set amounts of data and whose udp cells set rates:
// per window and MSS, one row per amount of data with each path's data
// sent, rate and time (Tables 1 and 2); and one row per UDP rate and
// buffer with each path's datagrams received, loss and jitter, as means
// over the counted trials and then trial by trial as the study prints its
// Table 3. Other figures are means over the cell's counted trials.
func TransportTables(s *Summary) []section {
	var out []section
	out = append(out, tcpAmountTables(s)...)
	if sec, ok := udpRateTable(s); ok {
		out = append(out, sec, udpTrialTable(s))
	}
	return out
}

// mean is a cell's mean of metric k, and whether it has it.
func mean(c *Cell, k string) (float64, bool) {
	if m := c.Metrics[k]; m != nil {
		return m.Mean, true
	}
	return 0, false
}

// rowsOf groups cells into rows by key, keeping each row's cells by path.
type transportRow struct {
	key    [2]float64
	byPath map[string]*Cell
}

func transportRows(cells []*Cell, key func(*Cell) [2]float64) ([]*transportRow, []string) {
	// Two cell groups with the same settings (say, after --scale) get a
	// row each.
	rows := map[[2]float64][]*transportRow{}
	var out []*transportRow // in first-seen order, sorted below
	var paths []string
	seen := map[string]bool{}
	for _, c := range cells {
		k := key(c)
		var r *transportRow
		for _, have := range rows[k] {
			if have.byPath[c.Path] == nil {
				r = have
				break
			}
		}
		if r == nil {
			r = &transportRow{key: k, byPath: map[string]*Cell{}}
			rows[k] = append(rows[k], r)
			out = append(out, r)
		}
		r.byPath[c.Path] = c
		if !seen[c.Path] {
			seen[c.Path] = true
			paths = append(paths, c.Path)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].key[0] != out[j].key[0] {
			return out[i].key[0] < out[j].key[0]
		}
		return out[i].key[1] < out[j].key[1]
	})
	sort.Slice(paths, func(i, j int) bool { return pathRank(paths[i]) < pathRank(paths[j]) })
	return out, paths
}

func tcpAmountTables(s *Summary) []section {
	groups := map[[2]float64][]*Cell{} // window, MSS
	var keys [][2]float64
	for i := range s.Cells {
		c := &s.Cells[i]
		_, tcp := mean(c, "retransmits")
		_, amount := mean(c, "bytes_set")
		if !tcp || !amount {
			continue
		}
		w, _ := mean(c, "window_set")
		m, _ := mean(c, "mss_set")
		k := [2]float64{w, m}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i][0] != keys[j][0] {
			return keys[i][0] < keys[j][0]
		}
		return keys[i][1] < keys[j][1]
	})
	var out []section
	for _, k := range keys {
		rows, paths := transportRows(groups[k], func(c *Cell) [2]float64 { b, _ := mean(c, "bytes_set"); return [2]float64{b} })
		if len(rows) < 2 { // one amount is no table of amounts
			continue
		}
		window, mss := "default window", "default MSS"
		if k[0] > 0 {
			window = fmt.Sprintf("%s KiB window", figure(k[0]/1024))
		}
		if k[1] > 0 {
			mss = fmt.Sprintf("MSS %s bytes", figure(k[1]))
		}
		sec := section{Title: fmt.Sprintf("TCP, %s, %s: time per amount of data (the Herrera Rubio study's Tables 1-2), mean of trials", window, mss),
			Head: []string{"data (MiB)"}}
		for _, p := range paths {
			sec.Head = append(sec.Head, p+" sent (KiB)", p+" KiB/s", p+" time (s)")
		}
		for _, r := range rows {
			row := []string{figure(r.key[0] / (1 << 20))}
			for _, p := range paths {
				c := r.byPath[p]
				if c == nil {
					row = append(row, "-", "-", "-")
					continue
				}
				sent, _ := mean(c, "bytes_sent")
				rate, _ := mean(c, "throughput_mbps")
				row = append(row, figure(sent/1024), figure(rate*1e6/8/1024), statText(c.Metrics["transfer_s"]))
			}
			sec.Rows = append(sec.Rows, row)
		}
		if note := clampedMSS(k[1], groups[k], paths); note != "" {
			sec.Footer = append(sec.Footer, note)
		}
		out = append(out, sec)
	}
	return out
}

// clampedMSS says when a path's MSS, as TCP_INFO read it, differs from the
// one asked: the path's MTU clamps it (an MSS of 2048 on a 1280-byte
// tunnel), which the table must not hide.
func clampedMSS(asked float64, cells []*Cell, paths []string) string {
	if asked <= 0 {
		return ""
	}
	var parts []string
	clamped := false
	for _, p := range paths {
		var sum float64
		n := 0
		for _, c := range cells {
			if m, ok := mean(c, "mss"); ok && c.Path == p {
				sum, n = sum+m, n+1
			}
		}
		if n == 0 {
			continue
		}
		eff := sum / float64(n)
		parts = append(parts, fmt.Sprintf("%s %s", p, figure(eff)))
		clamped = clamped || math.Abs(eff-asked) >= 1
	}
	if !clamped {
		return ""
	}
	return fmt.Sprintf("MSS asked %s bytes; effective, as the sender's TCP_INFO read it (the path's MTU clamps it): %s", figure(asked), strings.Join(parts, ", "))
}

// udpRows groups the udp cells by rate and receive buffer.
func udpRows(s *Summary) ([]*transportRow, []string) {
	var cells []*Cell
	for i := range s.Cells {
		c := &s.Cells[i]
		if _, ok := mean(c, "rate_set_mbps"); ok {
			cells = append(cells, c)
		}
	}
	return transportRows(cells, func(c *Cell) [2]float64 {
		r, _ := mean(c, "rate_set_mbps")
		b, _ := mean(c, "rcvbuf_set")
		return [2]float64{r, b}
	})
}

func bufText(b float64) string {
	if b > 0 {
		return figure(b / 1024)
	}
	return "default"
}

func udpRateTable(s *Summary) (section, bool) {
	rows, paths := udpRows(s)
	if len(rows) < 2 {
		return section{}, false
	}
	sec := section{Title: "UDP: datagrams by rate and receive buffer (the Herrera Rubio study's Table 3), mean of trials",
		Head: []string{"rate (Mbit/s)", "buffer (KiB)"}}
	for _, p := range paths {
		sec.Head = append(sec.Head, udpHead(p, "sender late, most (ms)")...)
	}
	for _, r := range rows {
		row := []string{figure(r.key[0]), bufText(r.key[1])}
		for _, p := range paths {
			c := r.byPath[p]
			if c == nil {
				row = append(row, "-", "-", "-", "-", "-")
				continue
			}
			row = append(row, metricMean(c, "datagrams_received"), metricMean(c, "lost"), metricMean(c, "loss_pct"), metricMean(c, "jitter_ms"), maxOf(c, SendLateMetric))
		}
		sec.Rows = append(sec.Rows, row)
	}
	return sec, true
}

// udpTrialTable is Table 3 as the study prints it: one row per trial
// ("event") of each rate and buffer, the paths side by side (trial i of
// each path ran in the same round of the interleaved order).
func udpTrialTable(s *Summary) section {
	rows, paths := udpRows(s)
	metrics := []string{"datagrams_received", "lost", "loss_pct", "jitter_ms", SendLateMetric}
	sec := section{Title: "UDP trials (the Herrera Rubio study's Table 3): one row per counted trial",
		Head: []string{"trial", "rate (Mbit/s)", "buffer (KiB)"}}
	for _, p := range paths {
		sec.Head = append(sec.Head, udpHead(p, "sender late (ms)")...)
	}
	for _, r := range rows {
		trials := 0
		for _, c := range r.byPath {
			if m := c.Metrics["datagrams_received"]; m != nil {
				trials = max(trials, len(m.Runs))
			}
		}
		for i := range trials {
			row := []string{fmt.Sprint(i + 1), figure(r.key[0]), bufText(r.key[1])}
			for _, p := range paths {
				c := r.byPath[p]
				for _, k := range metrics {
					if c == nil || c.Metrics[k] == nil || i >= len(c.Metrics[k].Runs) {
						row = append(row, "-")
						continue
					}
					row = append(row, figure(c.Metrics[k].Runs[i]))
				}
			}
			sec.Rows = append(sec.Rows, row)
		}
	}
	return sec
}

// udpHead is a path's columns in the UDP tables: the study's four, then
// how late v6lab's own sender ran (send_late_ms; in the table of means
// the most over the trials, so a sender late in one trial is not
// averaged away).
func udpHead(p, late string) []string {
	return []string{p + " received", p + " lost", p + " loss %", p + " jitter (ms)", p + " " + late}
}

// maxOf prints the most of a cell's metric over its trials, or "-".
func maxOf(c *Cell, k string) string {
	m := c.Metrics[k]
	if m == nil || len(m.Runs) == 0 {
		return metricMean(c, k)
	}
	return figure(slices.Max(m.Runs))
}

// metricMean prints a cell's metric's mean, or "-" when absent.
func metricMean(c *Cell, k string) string {
	v, ok := mean(c, k)
	if !ok {
		return "-"
	}
	return figure(v)
}

// statText prints a figure as "mean (lo–hi)", "mean" without a CI, or
// "-" when absent.
func statText(m *MetricStat) string {
	switch {
	case m == nil:
		return "-"
	case m.CI95 == nil:
		return figure(m.Mean)
	}
	return fmt.Sprintf("%s (%s–%s)", figure(m.Mean), figure(m.CI95[0]), figure(m.CI95[1]))
}
