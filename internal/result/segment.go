package result

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Segment is one process's share of an experiment split across client
// hosts (v6lab run --segment I/N): users floor(I*c/N) to
// floor((I+1)*c/N)-1 of every run of a cell with c connections, every
// other choice the same on every segment, so N segments together run
// exactly the users of one unsplit run.
type Segment struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// Host and Clock say where the segment ran and how far its clock can
	// be trusted (clock source and synchronisation state).
	Host  string `json:"host,omitempty"`
	Clock string `json:"clock,omitempty"`
	// StartAt is the instant run 0 was scheduled for (--start-at); zero
	// when the segment ran without a schedule.
	StartAt time.Time `json:"start_at,omitzero"`
	// Dir is where a merged segment's results came from, and LateRuns
	// how many of its runs started after their slot, by at most
	// MaxLateNS (merged only).
	Dir       string `json:"dir,omitempty"`
	LateRuns  int    `json:"late_runs,omitempty"`
	MaxLateNS int64  `json:"max_late_ns,omitempty"`
	// EarlyRuns counts its runs that started before their slot, by at
	// most MaxEarlyNS (Run.EarlyNS; merged only).
	EarlyRuns  int   `json:"early_runs,omitempty"`
	MaxEarlyNS int64 `json:"max_early_ns,omitempty"`
}

// Users is the segment's share of a run of c users: the first user and
// how many.
func (s Segment) Users(c int) (first, n int) {
	lo, hi := s.Index*c/s.Count, (s.Index+1)*c/s.Count
	return lo, hi - lo
}

// SegmentOf is the segment of count that ran user of a run of c users.
func SegmentOf(user, c, count int) int {
	for i := range count {
		if first, n := (Segment{Index: i, Count: count}).Users(c); user >= first && user < first+n {
			return i
		}
	}
	return -1
}

// String is "I/N".
func (s Segment) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ParseSegment reads "I/N": segment I (0 to N-1) of N.
func ParseSegment(s string) (*Segment, error) {
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
	return &Segment{Index: i, Count: n}, nil
}
