package result

import "testing"

// TestSegmentsPartitionEveryRun: for every count of users and segments,
// the segments' shares are disjoint, in order, and cover every user, and
// SegmentOf finds the share each user is in.
func TestSegmentsPartitionEveryRun(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for c := 0; c <= 40; c++ {
			next := 0
			for i := range n {
				first, k := Segment{Index: i, Count: n}.Users(c)
				if first != next || k < 0 {
					t.Fatalf("c=%d n=%d segment %d: users %d+%d, want to start at %d", c, n, i, first, k, next)
				}
				for u := first; u < first+k; u++ {
					if got := SegmentOf(u, c, n); got != i {
						t.Fatalf("c=%d n=%d: user %d in segment %d, SegmentOf says %d", c, n, u, i, got)
					}
				}
				next = first + k
			}
			if next != c {
				t.Fatalf("c=%d n=%d: segments cover %d users", c, n, next)
			}
		}
	}
	// The formula: floor(i*c/N) to floor((i+1)*c/N)-1.
	if first, k := (Segment{Index: 1, Count: 3}).Users(10); first != 3 || k != 3 {
		t.Errorf("segment 1/3 of 10: %d+%d, want users 3-5", first, k)
	}
	if SegmentOf(10, 10, 3) != -1 {
		t.Error("a user past the run found a segment")
	}
}
