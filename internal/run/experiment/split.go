package experiment

import (
	"errors"
	"fmt"
	"time"

	"v6lab/internal/result"
)

// Split is how a run shares an experiment with other client hosts: its
// segment (nil: unsplit), and the schedule's start (zero: none).
type Split struct {
	Segment *result.Segment
	StartAt time.Time
}

// ParseSplit reads run's --segment and --start-at (each "" when not
// given) for e. A split run must run the same order on every segment, so
// a shuffled one (e's order, or shuffle: --shuffle) needs its seed given
// (e's, or seedGiven: --seed).
func (e *Experiment) ParseSplit(segment, startAt string, shuffle, seedGiven bool) (Split, error) {
	var sp Split
	if segment != "" {
		seg, err := result.ParseSegment(segment)
		if err != nil {
			return sp, fmt.Errorf("--segment %q: %w", segment, err)
		}
		sp.Segment = seg
		shuffled := shuffle || e.Order == OrderShuffled
		if shuffled && e.Seed == 0 && !seedGiven {
			return sp, errors.New("--segment with a shuffled order needs --seed (or seed: in the file): every segment must run the same order")
		}
	}
	if startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, startAt)
		if err != nil {
			return sp, fmt.Errorf("--start-at %q: not an RFC 3339 time such as 2026-11-24T10:00:00Z", startAt)
		}
		sp.StartAt = t
		// A start so long ago that every slot has passed is a typo, not
		// a late start (each late run would say it was hours late).
		if end := e.ScheduleEnd(t); time.Until(end) < 0 {
			return sp, fmt.Errorf("--start-at %q: the whole schedule (%s) ended %s ago; give a time to come", startAt, end.Sub(t).Round(time.Second), -time.Until(end).Round(time.Second))
		}
	}
	return sp, nil
}
