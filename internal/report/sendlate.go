package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"v6lab/internal/report/stats"
)

// SendLateMetric is the UDP sender's own lateness (gen/transport): the
// most any datagram after the warm-up left past its due time, per trial.
const SendLateMetric = "send_late_ms"

// SenderLate says that v6lab's own UDP sender ran late in some of a
// cell's trials: by more than LimitMS, the larger of one datagram's
// spacing at the rate asked and the 1 ms within which the sender sends
// what is due at once (sendLateLimitMS).
type SenderLate struct {
	Trials  int     `json:"trials"`
	Of      int     `json:"of"`
	MaxMS   float64 `json:"max_ms"`
	LimitMS float64 `json:"limit_ms"`
}

// pacedBatchMS is how far ahead of its due time the UDP sender sends a
// datagram (gen/transport's pace sends what is due within 1 ms at once):
// lateness below it is the pacing's own grain, not lag.
const pacedBatchMS = 1.0

// sendLateLimitMS is how late a cell's sender may run before its rate is
// partly v6lab's: one datagram's spacing at the rate asked (later than
// that, the sender sent at once datagrams the rate asked to space, a
// burst the path was not offered), and never below the pacing's own
// 1 ms grain. False for a cell that is no paced UDP trial.
func sendLateLimitMS(c *Cell) (float64, bool) {
	rate, ok1 := mean(c, "rate_set_mbps")
	size, ok2 := mean(c, "datagram_size")
	if !ok1 || !ok2 || rate <= 0 || c.Metrics[SendLateMetric] == nil {
		return 0, false
	}
	gap := size * 8 / (rate * 1e6) * 1e3
	return max(gap, pacedBatchMS), true
}

// senderLate is the cell's late trials, nil when none ran late.
func senderLate(c *Cell) *SenderLate {
	limit, ok := sendLateLimitMS(c)
	if !ok {
		return nil
	}
	m := c.Metrics[SendLateMetric]
	l := &SenderLate{Of: len(m.Runs), LimitMS: round3(limit)}
	for _, v := range m.Runs {
		if v > limit {
			l.Trials++
			l.MaxMS = max(l.MaxMS, round3(v))
		}
	}
	if l.Trials == 0 {
		return nil
	}
	return l
}

// String says how late, in how many trials, past what.
func (l *SenderLate) String() string {
	return fmt.Sprintf("v6lab's UDP sender ran up to %s ms late in %s (past %s ms, a datagram's spacing at the rate asked or the pacing's 1 ms grain)",
		figure(l.MaxMS), stats.CountOf(l.Trials, l.Of, "trial"), figure(l.LimitMS))
}

// markLateSenders counts a late UDP sender in its cell's self-check as
// v6lab's own lag: the client is saturated in at least as many runs as
// the sender ran late in, and the reason says so (a cell without a
// self-check gets one).
func markLateSenders(cells []Cell) {
	for i := range cells {
		c := &cells[i]
		l := senderLate(c)
		if l == nil {
			continue
		}
		sc := c.SelfCheck
		if sc == nil {
			sc = &SelfCheck{Runs: l.Of}
			c.SelfCheck = sc
		}
		sc.SenderLate = l
		sc.ClientRuns = max(sc.ClientRuns, l.Trials)
		if sc.ClientSaturated && sc.Why != "" {
			sc.Why += "; " + l.String()
		} else {
			sc.Why = l.String()
		}
		sc.ClientSaturated = true
	}
}

// offeredShortBy is how far below the rate asked offered_mbps may be
// (the lowest trial's, as a share of the rate) and still have met it: a
// sender that ran late but caught up offered the rate, in bursts.
const offeredShortBy = 0.01

// offeredShort says whether a trial of c offered less than the rate
// asked (by more than offeredShortBy), and the lowest trial's offer.
func offeredShort(c *Cell) (float64, bool) {
	rate, ok := mean(c, "rate_set_mbps")
	m := c.Metrics["offered_mbps"]
	if !ok || m == nil || len(m.Runs) == 0 {
		return 0, false
	}
	low := slices.Min(m.Runs)
	return low, low < rate*(1-offeredShortBy)
}

// sendLateNote names the cells whose UDP sender ran late and what that
// did to their figures, by the figures: offered_mbps lower where a trial
// offered less than asked, else the rate met but perhaps in bursts (""
// when no sender ran late).
func sendLateNote(cells []Cell) string {
	var late, short []string
	met := 0
	for _, c := range cells {
		sc := c.SelfCheck
		if sc == nil || sc.SenderLate == nil {
			continue
		}
		l, name := sc.SenderLate, fmt.Sprintf("%s/%s/%d", c.Protocol, c.Path, c.Conns)
		late = append(late, fmt.Sprintf("%s (up to %s ms in %s, past %s ms)", name, figure(l.MaxMS), stats.CountOf(l.Trials, l.Of, "trial"), figure(l.LimitMS)))
		if low, ok := offeredShort(&c); ok {
			rate, _ := mean(&c, "rate_set_mbps")
			short = append(short, fmt.Sprintf("%s (down to %s of %s Mbit/s)", name, figure(low), figure(rate)))
		} else {
			met++
		}
	}
	if len(late) == 0 {
		return ""
	}
	sort.Strings(late)
	sort.Strings(short)
	effect := "offered_mbps met the rate asked, but the datagrams may be burstier than asked"
	switch {
	case len(short) > 0 && met > 0:
		effect = "offered_mbps is lower than asked in " + strings.Join(short, ", ") + "; elsewhere it met the rate, but the datagrams may be burstier than asked"
	case len(short) > 0:
		effect = "offered_mbps is lower than asked in " + strings.Join(short, ", ")
	}
	return "v6lab's own UDP sender ran late in " + strings.Join(late, ", ") +
		": it sent the datagrams due meanwhile at once, so " + effect + ", and the bursts (loss, jitter) are partly v6lab's, not the path's; " +
		"rerun those cells on a quiet machine (send_late_ms per trial in the UDP tables)"
}
