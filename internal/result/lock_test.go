package result

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestHeldNamesTheWriter: a samples file whose lock a writer holds (here
// this process, by another open file) is held, by this pid; once it is
// closed, not; and asking takes nothing a writer then needs.
func TestHeldNamesTheWriter(t *testing.T) {
	name := filepath.Join(t.TempDir(), SamplesName)
	w, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if held, pid := Held(r); held || pid != 0 {
		t.Fatalf("an unlocked file: held %v by %d", held, pid)
	}
	if err := Lock(w); err != nil {
		t.Fatalf("locking after Held asked: %v", err)
	}
	if held, pid := Held(r); !held || pid != os.Getpid() {
		t.Errorf("a locked file: held %v by %d, want this process %d", held, pid, os.Getpid())
	}
	w.Close()
	if held, _ := Held(r); held {
		t.Errorf("held after its writer closed it")
	}
}

// TestLockHolder reads /proc/locks's lines: a waiter ("->") and other
// inodes are not the holder, and two holders of one inode number name
// none.
func TestLockHolder(t *testing.T) {
	locks := "1: FLOCK  ADVISORY  WRITE 29330 fe:00:9977890 0 EOF\n" +
		"2: FLOCK  ADVISORY  WRITE 4242 fe:00:123 0 EOF\n" +
		"2: -> FLOCK  ADVISORY  WRITE 30975 fe:00:123 0 EOF\n" +
		"3: POSIX  ADVISORY  WRITE 777 fe:00:55 0 EOF\n"
	for ino, want := range map[uint64]int{123: 4242, 9977890: 29330, 12: 0, 55: 0} {
		if got := lockHolder(locks, ino); got != want {
			t.Errorf("inode %d: %d, want %d", ino, got, want)
		}
	}
	if got := lockHolder(locks+"4: FLOCK  ADVISORY  WRITE 5 08:01:123 0 EOF\n", 123); got != 0 {
		t.Errorf("two holders of inode 123: %d, want 0 (not known)", got)
	}
}

// TestNotWrittenNamesTheWriter: NotWritten of a file whose lock is held
// is a *StillWritten naming this process; of one not held, or missing,
// nil.
func TestNotWrittenNamesTheWriter(t *testing.T) {
	name := filepath.Join(t.TempDir(), SamplesName)
	w, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := NotWritten(name); err != nil {
		t.Errorf("an unlocked file: %v", err)
	}
	if err := Lock(w); err != nil {
		t.Fatal(err)
	}
	want := name + " is still being written by a running v6lab (pid " + strconv.Itoa(os.Getpid()) + ")"
	if err := NotWritten(name); err == nil || err.Error() != want {
		t.Errorf("a locked file: %v, want %q", err, want)
	}
	w.Close()
	if err := NotWritten(name); err != nil {
		t.Errorf("after its writer: %v", err)
	}
	if err := NotWritten(name + ".missing"); err != nil {
		t.Errorf("a missing file: %v", err)
	}
	if got := WriterName(0); got != "a running v6lab" {
		t.Errorf("WriterName(0) = %q", got)
	}
}
