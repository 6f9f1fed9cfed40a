package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// fileGroup is the transfer-rate table of one protocol's file cells.
type fileGroup struct {
	proto string
	rows  []*fileRow
	paths []string
}

type fileRow struct {
	label  string
	bytes  float64
	byPath map[string]*Cell
}

// fileSeries is the series a file cell group belongs to: its name up to
// the last dash when what follows is the size of the file it transfers
// (bytes, file_bytes' mean: ftp-5879824 of a 5879824-byte file is ftp,
// ftp-10m-5879824 is ftp-10m, http-64k of 64 KiB is http), as the
// Regensburg presets label their file sets; any other name is a series
// of its own, so it keeps its own section: curl-ipv6-lossy, and foo-2024
// of a 64 KiB file (a number, not its size).
func fileSeries(label string, bytes float64) string {
	if i := strings.LastIndex(label, "-"); i > 0 && isFileSize(label[i+1:], bytes) {
		return label[:i]
	}
	return label
}

// isFileSize: s is size bytes, plain (5879824) or with a unit, binary or
// decimal (64k, 10m, 1gib, 1mb; labels are lowercase).
func isFileSize(s string, bytes float64) bool {
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	if digits == 0 || digits > 15 {
		return false
	}
	n, _ := strconv.ParseFloat(s[:digits], 64)
	unit := map[string][]float64{"": {1}, "k": {1 << 10, 1e3}, "m": {1 << 20, 1e6}, "g": {1 << 30, 1e9}}
	u := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(s[digits:]), "b"), "i")
	return slices.ContainsFunc(unit[u], func(m float64) bool { return math.Abs(n*m-bytes) <= 0.5 })
}

// fileGroups gathers the cells that transferred a file (they carry
// file_bytes and mbytes_per_s), one group per series (fileSeries), as
// rateBySize groups them, one row per cell group, largest file first as
// the studies list them.
func fileGroups(s *Summary) []*fileGroup {
	var out []*fileGroup
	byProto := map[string]*fileGroup{}
	rows := map[string]*fileRow{}
	for i := range s.Cells {
		c := &s.Cells[i]
		size, rate := c.Metrics["file_bytes"], c.Metrics["mbytes_per_s"]
		if size == nil || rate == nil || c.Conns != 1 {
			continue
		}
		proto := fileSeries(c.Protocol, size.Mean)
		g := byProto[proto]
		if g == nil {
			g = &fileGroup{proto: proto}
			byProto[proto] = g
			out = append(out, g)
		}
		r := rows[c.Protocol]
		if r == nil {
			r = &fileRow{label: c.Protocol, bytes: size.Mean, byPath: map[string]*Cell{}}
			rows[c.Protocol] = r
			g.rows = append(g.rows, r)
		}
		r.byPath[c.Path] = c
		if !slices.Contains(g.paths, c.Path) {
			g.paths = append(g.paths, c.Path)
		}
	}
	for _, g := range out {
		sort.SliceStable(g.rows, func(i, j int) bool { return g.rows[i].bytes > g.rows[j].bytes })
		sort.SliceStable(g.paths, func(i, j int) bool { return pathRank(g.paths[i]) < pathRank(g.paths[j]) })
	}
	return out
}

// MiB is the Regensburg tables' "MB": 2^20 bytes.
const MiB = 1 << 20

// scaled is m with every figure multiplied by f (a change of unit).
func scaled(m *MetricStat, f float64) *MetricStat {
	if m == nil {
		return nil
	}
	out := *m
	out.Mean *= f
	if m.CI95 != nil {
		out.CI95 = &[2]float64{m.CI95[0] * f, m.CI95[1] * f}
	}
	out.Runs = nil
	for _, v := range m.Runs {
		out.Runs = append(out.Runs, v*f)
	}
	return &out
}

// inFileTables are the cell groups FileTables shows.
func inFileTables(s *Summary) map[string]bool {
	out := map[string]bool{}
	for _, g := range fileGroups(s) {
		if len(g.rows) < 2 {
			continue
		}
		for _, r := range g.rows {
			out[r.label] = true
		}
	}
	return out
}

// FileTables are the Regensburg studies' table: per protocol, one row per
// file with its size in bytes and in MB, and each path's transfer rate in
// MB/s (mean of the counted transfers, 95% CI), then each path's rate
// against the baseline's in percent, with the confidence level of the
// difference (from the comparison of the same transfers' times). A group
// with a single file is left to the cell's own tables.
func FileTables(s *Summary) []section {
	var out []section
	cmp := map[cellKey]*Comparison{}
	for i := range s.Comparisons {
		c := &s.Comparisons[i]
		cmp[cellKey{c.Protocol, c.Path, c.Conns}] = c
	}
	for _, g := range fileGroups(s) {
		if len(g.rows) < 2 {
			continue
		}
		sec := section{Title: fmt.Sprintf("%s file transfers (the Regensburg studies' table): MiB/s per file, mean of counted transfers (95%% CI)", strings.ToUpper(g.proto)),
			Head: []string{"file", "size (bytes)", "size (MiB)"}}
		var others []string
		for _, p := range g.paths {
			sec.Head = append(sec.Head, p+" MiB/s")
			if p != s.Baseline {
				others = append(others, p)
			}
		}
		hasBase := slices.Contains(g.paths, s.Baseline)
		if hasBase {
			for _, p := range others {
				sec.Head = append(sec.Head, p+" vs "+s.Baseline, "confidence")
			}
		}
		for _, r := range g.rows {
			row := []string{r.label, fmt.Sprintf("%.0f", r.bytes), fmt.Sprintf("%.2f", r.bytes/MiB)}
			for _, p := range g.paths {
				if c := r.byPath[p]; c != nil {
					row = append(row, statText(scaled(c.Metrics["mbytes_per_s"], 1e6/MiB)))
				} else {
					row = append(row, "-")
				}
			}
			if hasBase {
				base := r.byPath[s.Baseline]
				for _, p := range others {
					c := r.byPath[p]
					if c == nil || base == nil {
						row = append(row, "-", "-")
						continue
					}
					bm, pm := base.Metrics["mbytes_per_s"].Mean, c.Metrics["mbytes_per_s"].Mean
					pct := "-"
					if bm > 0 {
						pct = signedPct((pm - bm) / bm * 100)
					}
					conf := "-"
					if k := cmp[cellKey{c.Protocol, p, c.Conns}]; k != nil {
						conf = optConf(k.Confidence, k.NA["confidence"])
					}
					row = append(row, pct, conf)
				}
			}
			sec.Rows = append(sec.Rows, row)
		}
		sec.Footer = []string{"MiB = 2^20 bytes, the study's \"MB\" (41,592,248 bytes = 39.67 MiB); summary.json's mbytes_per_s is in 10^6 bytes",
			"rate = bytes received / the transfer's time, lookup and login included (docs/metrics.md); positive % = faster than " + s.Baseline}
		out = append(out, sec)
	}
	return out
}
