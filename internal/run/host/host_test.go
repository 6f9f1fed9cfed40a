package host

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestReadSysctls(t *testing.T) {
	got := ReadSysctls([]string{"net.core.somaxconn", "no.such.sysctl"})
	if v, ok := got["net.core.somaxconn"]; !ok || v == "" {
		t.Errorf("somaxconn not read: %v", got)
	}
	if _, ok := got["no.such.sysctl"]; ok {
		t.Error("a missing sysctl was reported")
	}
	if _, err := ReadSysctl("no.such.sysctl"); err == nil || !strings.Contains(err.Error(), "no.such.sysctl") {
		t.Errorf("error %v does not name the sysctl", err)
	}
	if Kernel() == "" {
		t.Error("no kernel release")
	}
}

func TestRaiseNoFileReachesTheHardLimit(t *testing.T) {
	got, err := RaiseNoFile()
	if err != nil {
		t.Fatal(err)
	}
	var l syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	if got != l.Cur || l.Cur != l.Max {
		t.Fatalf("limit %d, rlimit %+v", got, l)
	}
}

// TestNameAndClock: V6LAB_HOST names the host (a pod gives its node's
// name), and the clock line names its source and synchronisation.
func TestNameAndClock(t *testing.T) {
	t.Setenv("V6LAB_HOST", "node-7")
	if Name() != "node-7" {
		t.Errorf("Name() = %q with V6LAB_HOST set", Name())
	}
	t.Setenv("V6LAB_HOST", "")
	if h, _ := os.Hostname(); Name() != h {
		t.Errorf("Name() = %q, host name %q", Name(), h)
	}
	c := Clock()
	if !strings.HasPrefix(c, "clock source ") && !strings.HasPrefix(c, "unknown clock source") {
		t.Errorf("clock %q", c)
	}
	if !strings.Contains(c, "synchronised") {
		t.Errorf("clock %q says nothing of synchronisation", c)
	}
}
