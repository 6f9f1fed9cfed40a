package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
)

// split is how a run shares an experiment with other client hosts:
// its segment, and the schedule's start.
type split struct {
	segment *result.Segment
	startAt time.Time
}

// split reads --segment and --start-at. A split run must run the same
// order on every segment, so a shuffled one needs its seed given.
func (o *runOpts) split(cmd *cobra.Command, exp *experiment.Experiment) (split, error) {
	var sp split
	if o.segment != "" {
		seg, err := result.ParseSegment(o.segment)
		if err != nil {
			return sp, fmt.Errorf("--segment %q: %w", o.segment, err)
		}
		sp.segment = seg
		shuffled := o.shuffle || exp.Order == experiment.OrderShuffled
		if shuffled && exp.Seed == 0 && !cmd.Flags().Changed("seed") {
			return sp, errors.New("--segment with a shuffled order needs --seed (or seed: in the file): every segment must run the same order")
		}
	}
	if o.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, o.startAt)
		if err != nil {
			return sp, fmt.Errorf("--start-at %q: not an RFC 3339 time such as 2026-11-24T10:00:00Z", o.startAt)
		}
		sp.startAt = t
		// A start so long ago that every slot has passed is a typo, not
		// a late start (each late run would say it was hours late).
		if end := exp.ScheduleEnd(t); time.Until(end) < 0 {
			return sp, fmt.Errorf("--start-at %q: the whole schedule (%s) ended %s ago; give a time to come", o.startAt, end.Sub(t).Round(time.Second), -time.Until(end).Round(time.Second))
		}
	}
	return sp, nil
}

// writePlan adds the split to a dry run's plan.
func (sp split) writePlan(w io.Writer, exp *experiment.Experiment) {
	exp.WriteSplit(w, sp.segment, sp.startAt)
}
