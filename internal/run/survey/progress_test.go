package survey

import (
	"bytes"
	"testing"
	"time"
)

// TestProgressSaysItIsProgress (trial): the last tick read like the
// survey's final count ("3 of 3 sites this run"). Each tick now says it is
// progress, and none follows the last site.
func TestProgressSaysItIsProgress(t *testing.T) {
	old := progressEvery
	progressEvery = 0
	t.Cleanup(func() { progressEvery = old })
	var b bytes.Buffer
	tick := (&Job{Err: &b}).progress(3)
	for range 3 {
		tick()
	}
	want := "v6lab: survey: in progress, 1 of 3 sites done so far (0s in)\nv6lab: survey: in progress, 2 of 3 sites done so far (0s in)\n"
	if b.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	progressEvery = time.Hour
	tick = (&Job{Err: &b}).progress(3)
	tick()
	if b.Len() != 0 {
		t.Errorf("a tick before its time: %q", b.String())
	}
}
