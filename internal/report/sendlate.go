package report

import (
	"fmt"
	"sort"
	"strings"
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
	return fmt.Sprintf("v6lab's UDP sender ran up to %s ms late in %d of %d trials (past %s ms, a datagram's spacing at the rate asked or the pacing's 1 ms grain)",
		figure(l.MaxMS), l.Trials, l.Of, figure(l.LimitMS))
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

// sendLateNote names the cells whose UDP sender ran late and what that
// did to their figures ("" when none did).
func sendLateNote(cells []Cell) string {
	var late []string
	for _, c := range cells {
		if sc := c.SelfCheck; sc != nil && sc.SenderLate != nil {
			l := sc.SenderLate
			late = append(late, fmt.Sprintf("%s/%s/%d (up to %s ms in %d of %d trials, past %s ms)",
				c.Protocol, c.Path, c.Conns, figure(l.MaxMS), l.Trials, l.Of, figure(l.LimitMS)))
		}
	}
	if len(late) == 0 {
		return ""
	}
	sort.Strings(late)
	return "v6lab's own UDP sender ran late in " + strings.Join(late, ", ") +
		": it sent the datagrams due meanwhile at once, so offered_mbps there is lower, and the bursts (loss, jitter) partly v6lab's, not the path's; " +
		"rerun those cells on a quiet machine (send_late_ms per trial in the UDP tables)"
}
