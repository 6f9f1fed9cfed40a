package traffic

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"

	"v6lab/internal/sock/path"
)

// ParseSinks reads the traffic sinks ADDR or ADDR:PORT (port def unless
// given): one per family, as the levels mix both.
func ParseSinks(sinks []string, def uint16) (v4, v6 netip.AddrPort, err error) {
	for _, s := range sinks {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			ip, perr := netip.ParseAddr(strings.Trim(s, "[]"))
			if perr != nil {
				return v4, v6, fmt.Errorf("%q: want ADDR or ADDR:PORT", s)
			}
			ap = netip.AddrPortFrom(ip, def)
		}
		if path.IPv4.Accepts(ap.Addr()) {
			v4 = ap
		} else {
			v6 = ap
		}
	}
	if !v4.IsValid() || !v6.IsValid() {
		return v4, v6, fmt.Errorf("give one IPv4 and one IPv6 sink (the levels mix both families)")
	}
	return v4, v6, nil
}

// WriteReports writes what each flow of level l offered and sent.
func WriteReports(w io.Writer, l Level, reps []Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "level %s: %g Mbit/s, %.0f%% IPv6\n", l.Name, float64(l.Rate)/1e6, l.V6Share*100)
	fmt.Fprintln(tw, "flow\tproto\tpath\tpattern\trate Mbit/s\toffered Mbit/s\tsent Mbit/s\tsent %\terror\t")
	for _, r := range reps {
		pct := 0.0
		if r.OfferedBytes > 0 {
			pct = float64(r.SentBytes) / float64(r.OfferedBytes) * 100
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%.1f\t%s\t\n", r.ID, r.Proto, r.Path, r.Pattern,
			float64(r.Rate)/1e6, r.OfferedMbps(), r.SentMbps(), pct, r.Err)
	}
	return tw.Flush()
}
