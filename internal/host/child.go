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
// that ran and failed returns its exit code; err is nil then.
func RunChild(c *exec.Cmd) (code int, err error) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	if err := c.Start(); err != nil {
		return 0, errors.Join(ErrStart, err)
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
