package measure

import (
	"time"

	"v6lab/internal/run/experiment"
)

// Pace estimates the time a job's runs left will take: the time its runs
// so far took, scaled by the dry run's estimates of the runs left against
// those done (Experiment.StepEstimates). Runs differ: a sustained cell's
// run lasts its duration, others a fraction of a second, and a count of
// runs alone said "5s left" with 48 s to go.
type Pace struct {
	start time.Time
	// from is how many runs an earlier process did (a resume); est are
	// the estimates of the runs this one does, in their order.
	from int
	est  []time.Duration
}

// NewPace is the pace of running plan, with the steps in done (a
// resume's) already run, from now on.
func NewPace(exp *experiment.Experiment, plan []experiment.Step, done map[int]bool) *Pace {
	p := &Pace{start: time.Now(), from: len(done)}
	for i, d := range exp.StepEstimates(plan, 0) {
		if !done[plan[i].Seq] {
			p.est = append(p.est, d)
		}
	}
	return p
}

// Left is the time likely left once done runs of the plan are done, at
// now, rounded to the second: "?" before this process finished a run.
func (p *Pace) Left(done int, now time.Time) string {
	if p == nil {
		return "?"
	}
	k := min(max(done-p.from, 0), len(p.est))
	var did, left time.Duration
	for i, d := range p.est {
		if i < k {
			did += d
		} else {
			left += d
		}
	}
	if k == 0 || did <= 0 {
		return "?"
	}
	return time.Duration(float64(now.Sub(p.start)) * float64(left) / float64(did)).Round(time.Second).String()
}
