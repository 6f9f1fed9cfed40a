package result

import (
	"errors"
	"fmt"
	"os"

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
