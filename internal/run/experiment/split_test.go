package experiment

import (
	"strings"
	"testing"
	"time"

	"v6lab/internal/sock/path"
)

// splitSpec is an experiment of one group of two runs of 1 s slots
// (timeout, margin, no pause), shuffled when order says so.
func splitSpec(order string, seed int64) *Experiment {
	e := Single(CellGroup{Name: "http", Protocol: "http", Paths: []path.Path{path.IPv4}, Conns: []int{3}, Runs: 2,
		Timeout: Duration(time.Second), Baseline: path.IPv4}, "hosts")
	e.Order, e.Seed = order, seed
	return e
}

// TestParseSplit: --segment and --start-at are read into the split, and
// each refusal names its flag and why.
func TestParseSplit(t *testing.T) {
	start := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	sp, err := splitSpec(OrderInterleaved, 0).ParseSplit("1/3", start.Format(time.RFC3339), false, false)
	if err != nil || sp.Segment == nil || sp.Segment.String() != "1/3" || !sp.StartAt.Equal(start) {
		t.Fatalf("ParseSplit = %+v, %v", sp, err)
	}
	if sp, err := splitSpec(OrderInterleaved, 0).ParseSplit("", "", false, false); err != nil || sp.Segment != nil || !sp.StartAt.IsZero() {
		t.Errorf("unsplit: %+v, %v", sp, err)
	}
	// A shuffled order with its seed given (by the file or --seed) splits.
	for _, c := range []struct {
		e         *Experiment
		shuffle   bool
		seedGiven bool
	}{{splitSpec(OrderShuffled, 7), false, false}, {splitSpec(OrderInterleaved, 0), true, true}} {
		if _, err := c.e.ParseSplit("0/2", "", c.shuffle, c.seedGiven); err != nil {
			t.Errorf("shuffled with a seed: %v", err)
		}
	}
	for _, c := range []struct {
		e                *Experiment
		segment, startAt string
		shuffle          bool
		want             string
	}{
		{splitSpec(OrderInterleaved, 0), "3/3", "", false, `--segment "3/3": segment 3: the segments of 3 are numbered 0 to 2`},
		{splitSpec(OrderInterleaved, 0), "half", "", false, `--segment "half": want I/N`},
		{splitSpec(OrderInterleaved, 0), "0/2", "", true, "--segment with a shuffled order needs --seed"},
		{splitSpec(OrderShuffled, 0), "0/2", "", false, "--segment with a shuffled order needs --seed"},
		{splitSpec(OrderInterleaved, 0), "", "10:00", false, `--start-at "10:00": not an RFC 3339 time`},
		{splitSpec(OrderInterleaved, 0), "", "2000-01-01T00:00:00Z", false, `--start-at "2000-01-01T00:00:00Z": the whole schedule (4s) ended `},
	} {
		if _, err := c.e.ParseSplit(c.segment, c.startAt, c.shuffle, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSplit(%q, %q) = %v, want %q", c.segment, c.startAt, err, c.want)
		}
	}
}
