package host

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestRunChildSaysASignalKilledIt (trial10 T5): a child killed by a
// signal is a *KilledError naming its pid and the signal, never the
// exit code -1 (which became status 255); one that exits passes on its
// status.
func TestRunChildSaysASignalKilledIt(t *testing.T) {
	var pid int
	code, err := RunChild(exec.Command("sh", "-c", "kill -KILL $$"), func(p int) { pid = p })
	var ke *KilledError
	if !errors.As(err, &ke) || code != 0 || ke.Signal != syscall.SIGKILL || ke.PID != pid || pid == 0 {
		t.Fatalf("killed child: code %d, err %v (pid %d)", code, err, pid)
	}
	if want := "was killed by signal 9 (SIGKILL)"; !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not say %q", err, want)
	}
	if code, err := RunChild(exec.Command("sh", "-c", "exit 3"), nil); code != 3 || err != nil {
		t.Errorf("exit 3: code %d, err %v", code, err)
	}
}
