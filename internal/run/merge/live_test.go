package merge

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/result"
)

// TestMergeRefusesASegmentStillWritten: a segment whose samples file a
// running v6lab still writes (its lock held: here by this process, on
// another open file) is refused, named with the writer's pid and what to
// do, whether named itself or by the directory that holds it; once the
// writer is gone, the same segments merge (trial10b).
func TestMergeRefusesASegmentStillWritten(t *testing.T) {
	root := t.TempDir()
	vol := filepath.Join(root, "vol")
	var dirs []string
	for i := range 2 {
		dirs = append(dirs, writeSegment(t, vol, i, 2, spec(5), false))
	}
	name := filepath.Join(dirs[1], result.PlainSamplesName)
	held, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := result.Lock(held); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{dirs, {vol}} {
		err := NotWritten(args)
		var live *result.StillWritten
		if !errors.As(err, &live) || live.PID != os.Getpid() || live.Name != name ||
			!strings.Contains(err.Error(), "merge it when that run ends (wait, or stop it") {
			t.Errorf("NotWritten(%q): %v", args, err)
		}
	}
	if err := NotWritten(dirs[:1]); err != nil {
		t.Errorf("a segment no one writes: %v", err)
	}
	held.Close()
	if err := NotWritten(dirs); err != nil {
		t.Fatalf("after the writer: %v", err)
	}
	segs, err := Read(dirs)
	if err == nil {
		err = Check(segs)
	}
	if err != nil {
		t.Errorf("the same segments, written: %v", err)
	}
}
