package experiment

import (
	"time"
)

// SlotMargin is added to every run's slot in a schedule: the time a run
// needs around its transactions (parking users at the barrier, closing
// sockets, writing its record), so a run that waits out its timeout still
// ends within its slot.
const SlotMargin = time.Second

// Slot is how long a schedule allows one run of s: its timeout (one
// transaction per user), or its duration and then its timeout (sustained
// mode lets a transaction started before the end finish), plus the margin
// and the pause after it.
func (s *CellGroup) Slot() time.Duration {
	return time.Duration(s.Duration) + time.Duration(s.Timeout) + SlotMargin + time.Duration(s.Pause)
}

// Schedule is when each step of the plan starts when run 0 starts at
// start: every step gets its slot, computed from the experiment alone, so
// run r of every segment starts at the same instant on synchronised
// clocks whatever the others measured.
func (e *Experiment) Schedule(start time.Time) []time.Time {
	plan := e.Plan()
	out := make([]time.Time, len(plan))
	at := start
	for i, st := range plan {
		out[i] = at
		at = at.Add(e.Groups[st.Group].Slot())
	}
	return out
}

// ScheduleEnd is when the last slot of a schedule starting at start ends.
func (e *Experiment) ScheduleEnd(start time.Time) time.Time {
	plan := e.Plan()
	if len(plan) == 0 {
		return start
	}
	last := plan[len(plan)-1]
	return e.Schedule(start)[len(plan)-1].Add(e.Groups[last.Group].Slot())
}
