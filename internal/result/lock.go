package result

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrBusy is returned by Lock when another process holds the samples
// file: a run still writing it (after its owner was killed, a lab run's
// measuring process finishes its last run before it exits).
var ErrBusy = errors.New("another v6lab process is still writing it")

// Lock takes f's exclusive advisory lock without waiting; it is held until
// f is closed. Whoever writes or cuts a samples file holds it, so that a
// resume can never cut a file under a writer (whose next line would then
// land past the cut, behind a gap of zero bytes).
func Lock(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("result: locking %s: %w", f.Name(), err)
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) { lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB) }); err != nil {
		return fmt.Errorf("result: locking %s: %w", f.Name(), err)
	}
	switch {
	case errors.Is(lerr, unix.EWOULDBLOCK):
		return fmt.Errorf("%s: %w", f.Name(), ErrBusy)
	case lerr != nil:
		return fmt.Errorf("result: locking %s: %w", f.Name(), lerr)
	}
	return nil
}

// Held says whether a process holds f's lock (Lock): a v6lab still
// writing the samples file, whose figures are then only so far. pid is
// that process's id as /proc/locks gives it, 0 when it does not. It asks
// by a shared lock taken and given back at once (f may be read-only);
// a writer that starts in that instant retries (CreateSamples).
func Held(f *os.File) (writing bool, pid int) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, 0
	}
	var lerr error
	rc.Control(func(fd uintptr) {
		if lerr = unix.Flock(int(fd), unix.LOCK_SH|unix.LOCK_NB); lerr == nil {
			unix.Flock(int(fd), unix.LOCK_UN)
		}
	})
	if !errors.Is(lerr, unix.EWOULDBLOCK) {
		return false, 0
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil || serr != nil {
		return true, 0
	}
	locks, _ := os.ReadFile("/proc/locks")
	return true, lockHolder(string(locks), st.Ino)
}

// lockHolder finds the pid of the exclusive flock on inode ino in
// /proc/locks's text ("1: FLOCK  ADVISORY  WRITE 4242 fe:00:9977890 0
// EOF"; a waiter's line has "->" after the number), 0 when none or more
// than one process holds one (two files of one inode number on two file
// systems: which is not known).
func lockHolder(locks string, ino uint64) int {
	pid, suffix := 0, fmt.Sprintf(":%d", ino)
	for line := range strings.Lines(locks) {
		f := strings.Fields(line)
		if len(f) != 8 || f[1] != "FLOCK" || f[3] != "WRITE" || !strings.HasSuffix(f[5], suffix) {
			continue
		}
		p, err := strconv.Atoi(f[4])
		if err != nil || (pid != 0 && pid != p) {
			return 0
		}
		pid = p
	}
	return pid
}

// StillWritten is the error of a samples file a running v6lab still
// writes (Held), for a command that must not read it half-written:
// export's file would miss the rest, merge's result the runs to come.
type StillWritten struct {
	Name string
	PID  int // 0: not known
}

func (e *StillWritten) Error() string {
	return e.Name + " is still being written by " + WriterName(e.PID)
}

// WriterName names the process that holds a samples file's lock: "a running
// v6lab (pid 4242)", "a running v6lab" when its pid is not known.
func WriterName(pid int) string {
	if pid > 0 {
		return fmt.Sprintf("a running v6lab (pid %d)", pid)
	}
	return "a running v6lab"
}

// NotWritten returns a *StillWritten when a process holds the lock of
// the samples file name (Held), nil when none does or name cannot be
// opened (its reader then says why).
func NotWritten(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	if writing, pid := Held(f); writing {
		return &StillWritten{Name: name, PID: pid}
	}
	return nil
}
