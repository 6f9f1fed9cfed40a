package report

import (
	"fmt"
	"io"
	"sort"

	"v6lab/internal/result"
)

// Intervals shows the last counted trial of each path interval by
// interval, as iperf does.
func Intervals(w io.Writer, dir string) {
	last := map[string]result.Sample{}
	if _, err := scanDir(dir, result.Visitor{Sample: func(s *result.Sample) {
		if !s.Warmup && len(s.Intervals) > 0 {
			last[s.Path] = *s
		}
	}}); err != nil {
		return
	}
	var paths []string
	for p := range last {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		s := last[p]
		fmt.Fprintf(w, "\n%s, trial %d, by interval:\n", p, s.Run)
		// TCP_INFO's columns are TCP's; a UDP trial (it counts loss) has
		// intervals of the bytes its receiver counted.
		_, udp := s.Metrics["loss_pct"]
		tcp := !udp
		if tcp {
			fmt.Fprintf(w, "  %-15s %12s %10s %8s %8s %6s\n", "interval (s)", "bytes", "Mbit/s", "retrans", "rtt ms", "cwnd")
		} else {
			fmt.Fprintf(w, "  %-15s %12s %10s\n", "interval (s)", "bytes", "Mbit/s")
		}
		for _, iv := range s.Intervals {
			secs := float64(iv.EndNS-iv.StartNS) / 1e9
			if secs <= 0 {
				continue
			}
			omitted := ""
			if iv.Omitted {
				omitted = "  (omitted)"
			}
			fmt.Fprintf(w, "  %6.2f-%-8.2f %12d %10.1f", float64(iv.StartNS)/1e9, float64(iv.EndNS)/1e9, iv.Bytes, float64(iv.Bytes)*8/secs/1e6)
			if tcp {
				fmt.Fprintf(w, " %8d %8.3f %6d", iv.Retrans, float64(iv.RTTUS)/1000, iv.Cwnd)
			}
			fmt.Fprintf(w, "%s\n", omitted)
		}
	}
}
