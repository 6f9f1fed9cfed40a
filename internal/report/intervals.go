package report

import (
	"fmt"
	"io"
	"sort"
)

// Intervals shows the last counted trial of each path interval by
// interval, as iperf does.
func Intervals(w io.Writer, dir string) {
	f, _, err := Load(dir)
	if err != nil {
		return
	}
	last := map[string]int{}
	for i, s := range f.Samples {
		if !s.Warmup && len(s.Intervals) > 0 {
			last[s.Path] = i
		}
	}
	var paths []string
	for p := range last {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return paths[i] < paths[j] })
	for _, p := range paths {
		s := f.Samples[last[p]]
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
