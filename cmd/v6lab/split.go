package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
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
		seg, err := parseSegment(o.segment)
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
	}
	return sp, nil
}

// parseSegment reads "I/N": segment I (0 to N-1) of N.
func parseSegment(s string) (*result.Segment, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return nil, errors.New("want I/N, e.g. 0/3 (segment 0 of 3)")
	case n < 1 || n > 10000:
		return nil, fmt.Errorf("%d segments: want 1 to 10000", n)
	case i < 0 || i >= n:
		return nil, fmt.Errorf("segment %d: the segments of %d are numbered 0 to %d", i, n, n-1)
	}
	return &result.Segment{Index: i, Count: n}, nil
}

// writePlan adds the split to a dry run's plan: each cell's users for
// this segment, and the schedule's slots.
func (sp split) writePlan(w io.Writer, exp *experiment.Experiment) {
	if g := sp.segment; g != nil {
		var parts []string
		for _, c := range exp.Groups {
			for _, n := range c.Conns {
				first, k := g.Users(n)
				users := "none"
				if k > 0 {
					users = fmt.Sprintf("users %d-%d", first, first+k-1)
				}
				parts = append(parts, fmt.Sprintf("%s/%d: %s", c.CellName(), n, users))
			}
		}
		fmt.Fprintf(w, "segment %s of every run: %s\n", g, strings.Join(parts, ", "))
	}
	if !sp.startAt.IsZero() {
		end := exp.ScheduleEnd(sp.startAt)
		fmt.Fprintf(w, "schedule: run 0 at %s, the last slot ends at %s (%s; each run's slot is its timeout, or duration and timeout, plus %s and its pause)\n",
			sp.startAt.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339), end.Sub(sp.startAt).Round(time.Second), experiment.SlotMargin)
	}
}
