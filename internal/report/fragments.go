package report

import (
	"fmt"
	"strings"
)

// UDP datagrams larger than a path's MTU leave as IP fragments: a lost
// fragment loses its datagram and the receiver reassembles, so a
// difference between a fragmenting path and a whole one is partly
// fragmentation's, not the family's (a 1460-byte payload is two IPv6
// fragments over a 1500-byte link and one IPv4 packet). The sender records
// what its datagrams were (gen/transport: path_mtu, ip_fragments); the
// report says so where it matters.

// fragmentsOf returns the IP fragments per datagram and the path MTU of a
// group's cells on path (0 when its datagrams were whole or not recorded).
func fragmentsOf(s *Summary, group, path string) (frags, mtu float64) {
	for _, c := range cellsOf(s, group) {
		f, m := c.Metrics["ip_fragments"], c.Metrics["path_mtu"]
		if c.Path != path || f == nil || f.Mean <= 1 {
			continue
		}
		frags = max(frags, f.Mean)
		if m != nil {
			mtu = m.Mean
		}
	}
	return frags, mtu
}

// fragmentClause is what a verdict on path adds when its datagrams were
// fragmented and the baseline's were not ("" otherwise).
func fragmentClause(s *Summary, group, path string) string {
	frags, mtu := fragmentsOf(s, group, path)
	if frags == 0 {
		return ""
	}
	if base, _ := fragmentsOf(s, group, s.Baseline); base > 0 {
		return ""
	}
	mtuPart, advice := "", ""
	if mtu > 0 { // a udp trial's: it knows each path's MTU
		mtuPart, advice = fmt.Sprintf(" (path MTU %.0f)", mtu), " (--size max)"
	}
	return fmt.Sprintf("its datagrams left as %.0f IP fragments each%s, %s's whole: partly fragmentation's cost, not the family's%s", frags, mtuPart, s.Baseline, advice)
}

// mtuSuffix names the path MTU a sender recorded ("" when none: a DNS
// answer's fragments are counted by the client, which knows no MTU).
func mtuSuffix(mtu float64) string {
	if mtu <= 0 {
		return ""
	}
	return fmt.Sprintf(", path MTU %.0f", mtu)
}

// fragmentNote names the groups and paths whose datagrams were
// fragmented ("" if none).
func fragmentNote(s *Summary) string {
	var named []string
	trial := false
	for _, g := range protocols(s) {
		for _, p := range pathsOf(cellsOf(s, g)) {
			if frags, mtu := fragmentsOf(s, g, p); frags > 0 {
				named = append(named, fmt.Sprintf("%s on %s (%.0f fragments per datagram%s)", g, p, frags, mtuSuffix(mtu)))
				trial = trial || mtu > 0
			}
		}
	}
	if len(named) == 0 {
		return ""
	}
	advice := ""
	if trial {
		advice = "; a udp trial's --size max sends each path's largest unfragmented payload"
	}
	return "UDP datagrams larger than the path MTU were sent as IP fragments: " + strings.Join(named, "; ") +
		". A lost fragment loses its datagram and the receiver reassembles each, so differences against a path whose datagrams were whole are partly fragmentation's" + advice + " (docs/metrics.md)"
}
