package host

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// ErrStart is wrapped when a child process could not be started.
var ErrStart = errors.New("could not start")

// RunChild starts c and waits for it, passing Ctrl-C and SIGTERM on to it
// rather than dying first, so the child can keep what it finished. A child
// that ran and failed returns its exit code; err is nil then. started, if
// not nil, gets the child's pid as soon as it runs.
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
		return ee.ExitCode(), nil
	}
	return 0, err
}
