package host

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrStart is wrapped when a child process could not be started.
var ErrStart = errors.New("could not start")

// KilledError is a child process ended by a signal it did not handle
// (kill -9): it could say nothing itself, and its exit code (-1) is no
// status to pass on.
type KilledError struct {
	PID    int
	Signal syscall.Signal
}

func (e *KilledError) Error() string {
	return fmt.Sprintf("process %d was killed by %s", e.PID, e.Says())
}

// Says names the signal: "signal 9 (SIGKILL)".
func (e *KilledError) Says() string {
	return fmt.Sprintf("signal %d (%s)", int(e.Signal), unix.SignalName(e.Signal))
}

// RunChild starts c and waits for it, passing Ctrl-C and SIGTERM on to it
// rather than dying first, so the child can keep what it finished. A child
// that ran and failed returns its exit code; err is nil then. One killed
// by a signal returns a *KilledError. started, if not nil, gets the
// child's pid as soon as it runs.
func RunChild(c *exec.Cmd, started func(pid int)) (code int, err error) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	if err := c.Start(); err != nil {
		return 0, errors.Join(ErrStart, err)
	}
	if started != nil {
		started(c.Process.Pid)
	}
	go func() {
		for s := range sig {
			c.Process.Signal(s)
		}
	}()
	err = c.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 0, &KilledError{PID: c.Process.Pid, Signal: ws.Signal()}
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}
