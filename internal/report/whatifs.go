package report

import (
	"encoding/json"
	"fmt"
	"time"

	"v6lab/internal/report/stats"
	"v6lab/internal/report/whatif"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// The timer what-if of a dual cell: every counted sample whose metrics
// give both families' fates (result.FateOf: done, failed or silent
// after a time from the attempt's own start) replayed through Happy
// Eyeballs' rule (IPv6 first, IPv4 after the attempt delay or at IPv6's
// failure; whatif.PreferIPv6) at each attempt delay of WhatIfDelays.

// WhatIfDelays are the attempt delays a dual cell's samples are replayed
// at: 0 to 500 ms by 10 ms.
var WhatIfDelays = whatif.Delays(0, 500*time.Millisecond, 10*time.Millisecond)

// WhatIfRule names the rule replayed.
const WhatIfRule = "prefer-ipv6"

// WhatIfTolerance: a family counts as the slower one only when its
// handshake took more than this longer than the other's (a lab's two
// families differ by tenths of a millisecond of scheduling noise, which
// would otherwise make one of them "slower" at random).
const WhatIfTolerance = time.Millisecond

// WhatIf is a dual cell's what-if in summary.json.
type WhatIf struct {
	Rule string `json:"rule"`
	// ToleranceMS is WhatIfTolerance.
	ToleranceMS float64 `json:"tolerance_ms"`
	// N is the samples replayed; Missing those left out for want of a
	// family's fate (a family never tried and not timed after: whatif
	// off, or no address).
	N       int `json:"n"`
	Missing int `json:"missing,omitempty"`
	// Points, one per attempt delay.
	Points []whatif.Point `json:"points"`
}

// whatIfSample is a sample's per-family fates as the sweep takes them.
func whatIfSample(m map[string]float64) (whatif.Sample, bool) {
	if _, raced := m["he_attempts"]; !raced {
		return whatif.Sample{}, false
	}
	out := whatif.Sample{}
	for _, ipv6 := range []bool{true, false} {
		f, ok := result.FateOf(m, ipv6)
		if !ok {
			continue
		}
		o := whatif.Outcome{Time: f.Time}
		switch f.State {
		case result.FateDone:
			o.State = whatif.Done
		case result.FateFailed:
			o.State = whatif.Failed
		case result.FateSilent:
			o.State = whatif.Silent
		}
		if ipv6 {
			out.IPv6 = o
		} else {
			out.IPv4 = o
		}
	}
	return out, true
}

// addWhatIf replays one sample in a's sweep (made at the first race).
func (a *cellAdds) addWhatIf(m map[string]float64) {
	s, ok := whatIfSample(m)
	if !ok {
		return
	}
	if a.whatif == nil {
		a.whatif = newWhatIf()
	}
	a.whatif.Add(s)
}

// mergeWhatIf adds p's sweep to a's.
func (a *cellAdds) mergeWhatIf(p *cellAdds) {
	switch {
	case p.whatif == nil:
	case a.whatif == nil:
		a.whatif = p.whatif
	default:
		a.whatif.Merge(p.whatif)
	}
}

// saveWhatIf is w's sums for a run's record (nil without a race).
func saveWhatIf(w *whatif.Sweep) json.RawMessage {
	if w == nil {
		return nil
	}
	b, _ := json.Marshal(w.Save())
	return b
}

// restoreWhatIf takes back a run record's sums (nil when none, or not
// readable).
func restoreWhatIf(b json.RawMessage) *whatif.Sweep {
	var st whatif.Saved
	if len(b) == 0 || json.Unmarshal(b, &st) != nil {
		return nil
	}
	w := whatif.Restore(whatif.PreferIPv6, WhatIfDelays, st)
	w.Tolerance = WhatIfTolerance
	return w
}

// newWhatIf is a cell's sweep.
func newWhatIf() *whatif.Sweep {
	w := whatif.New(whatif.PreferIPv6, WhatIfDelays)
	w.Tolerance = WhatIfTolerance
	return w
}

// finishWhatIf is the cell's what-if (nil without a race).
func finishWhatIf(w *whatif.Sweep) *WhatIf {
	if w == nil {
		return nil
	}
	return &WhatIf{Rule: WhatIfRule, ToleranceMS: float64(WhatIfTolerance) / 1e6, N: w.N(), Missing: w.Missing(), Points: w.Points()}
}

// WhatIfEvery is the step of the text's what-if rows (ms).
const WhatIfEvery = 50

// WhatIfNote says how to read the what-if table.
const WhatIfNote = "what-if: the cell's counted samples replayed at each attempt delay by Happy Eyeballs' rule (IPv6 at once, IPv4 after the delay or at IPv6's failure, the first handshake to complete kept), from each family's handshake time as the sample recorded it (its race's, or timed after the transaction with whatif: true); slower: share of replays that ended on the slower family (slower by more than 1 ms), with its 95% Wilson interval; lost: mean time lost against the faster family started at once (docs/metrics.md)"

// WhatIfNone stands for the rows of a dual cell whose every sample lacks a
// family's handshake time.
const WhatIfNone = "no what-if: the races saw one family (whatif: true times the other)"

// WhatIfSection is the what-if of each dual cell with one: per attempt
// delay (every WhatIfEvery ms), how often the rule ended on the slower
// family and the time it lost. False when no cell has one.
func WhatIfSection(title string, cells []Cell) (section, bool) {
	sec := section{Title: title + ": timer what-if of the dual path (attempt delay against the slower family)",
		Head: []string{"path", "conns", "samples", "attempt delay (ms)", "slower family chosen (95% Wilson CI)", "lost mean (ms)", "ended on IPv6"}}
	for _, c := range cells {
		if c.WhatIf == nil || !path.Path(c.Path).Kind().Dual {
			continue
		}
		if c.WhatIf.N == 0 {
			// Not a row of dashes per delay (trial6 F16): one line.
			sec.Rows = append(sec.Rows, []string{c.Path, fmt.Sprint(c.Conns), whatIfN(c.WhatIf), "-", WhatIfNone, "-", "-"})
			continue
		}
		for _, p := range c.WhatIf.Points {
			if int(p.DelayMS)%WhatIfEvery != 0 {
				continue
			}
			sec.Rows = append(sec.Rows, []string{c.Path, fmt.Sprint(c.Conns), whatIfN(c.WhatIf), fmt.Sprint(p.DelayMS),
				slowerText(p), optFig(p.LostMeanMS), shareText(p.IPv6Share)})
		}
	}
	if len(sec.Rows) == 0 {
		return section{}, false
	}
	sec.Footer = []string{WhatIfNote}
	return sec, true
}

func whatIfN(w *WhatIf) string {
	if w.Missing > 0 {
		return fmt.Sprintf("%d (%d left out: a family unknown)", w.N, w.Missing)
	}
	return fmt.Sprint(w.N)
}

func slowerText(p whatif.Point) string {
	if p.SlowerShare == nil {
		return "-"
	}
	s := fmt.Sprintf("%s%% (%d of %d)", figure(100**p.SlowerShare), p.Slower, p.N-p.None)
	if p.SlowerCI95 != nil {
		s += fmt.Sprintf(" (%s–%s%%)", figure(100*p.SlowerCI95[0]), figure(100*p.SlowerCI95[1]))
	}
	return s
}

func optFig(v *float64) string {
	if v == nil {
		return "-"
	}
	return figure(*v)
}

func shareText(v *float64) string {
	if v == nil {
		return "-"
	}
	return figure(100*(*v)) + "%"
}

// whatIfPlots draw each dual cell's what-if: the share of replays that
// chose the slower family (%, with its Wilson interval) and the mean time
// lost (ms), against the attempt delay.
func whatIfPlots(proto string, cells []Cell) []*plot {
	var out []*plot
	for _, c := range cells {
		if c.WhatIf == nil || c.WhatIf.N == 0 {
			continue
		}
		id := fmt.Sprintf("whatif-%s-%s-%d", proto, c.Path, c.Conns)
		slower := series{Name: "slower family chosen (%)", Class: "s-k0"}
		lost := series{Name: "mean time lost (ms)", Class: "s-k1"}
		for _, p := range c.WhatIf.Points {
			if p.SlowerShare != nil {
				pt := point{X: p.DelayMS, Y: 100 * *p.SlowerShare}
				if p.SlowerCI95 != nil {
					pt.Lo, pt.Hi, pt.CI = 100*p.SlowerCI95[0], 100*p.SlowerCI95[1], true
				}
				slower.Points = append(slower.Points, pt)
			}
			if p.LostMeanMS != nil {
				lost.Points = append(lost.Points, point{X: p.DelayMS, Y: *p.LostMeanMS})
			}
		}
		title := fmt.Sprintf("%s %s, %s: timer what-if (%s)", proto, c.Path, stats.Count(c.Conns, "conn"), stats.Count(c.WhatIf.N, "sample"))
		out = append(out, &plot{ID: id, Title: title, XLabel: "attempt delay (ms)", YLabel: "% of samples, or ms lost", Series: []series{slower, lost}})
	}
	return out
}
