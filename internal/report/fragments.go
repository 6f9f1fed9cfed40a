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
	return fmt.Sprintf("its datagrams left as %.0f IP fragments each (path MTU %.0f), %s's whole: partly fragmentation's cost, not the family's (--size max)", frags, mtu, s.Baseline)
}

// fragmentNote names the groups and paths whose datagrams were
// fragmented ("" if none).
func fragmentNote(s *Summary) string {
	var named []string
	for _, g := range protocols(s) {
		for _, p := range pathsOf(cellsOf(s, g)) {
			if frags, mtu := fragmentsOf(s, g, p); frags > 0 {
				named = append(named, fmt.Sprintf("%s on %s (%.0f fragments per datagram, path MTU %.0f)", g, p, frags, mtu))
			}
		}
	}
	if len(named) == 0 {
		return ""
	}
	return "UDP datagrams larger than the path MTU were sent as IP fragments: " + strings.Join(named, "; ") +
		". A lost fragment loses its datagram and the receiver reassembles each, so differences against a path whose datagrams were whole are partly fragmentation's; --size max sends each path's largest unfragmented payload (docs/metrics.md)"
}
