package host

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"v6lab/internal/testutil"
)

func TestParseStat(t *testing.T) {
	b := []byte("cpu  100 5 50 800 10 0 20 3 0 0\ncpu0 60 5 30 400 5 0 15 2 0 0\ncpu1 40 0 20 400 5 0 5 1 0 0\nintr 1 2\n")
	c, ok := parseStat(b)
	if !ok || len(c.ByCPU) != 2 {
		t.Fatalf("%v %+v", ok, c)
	}
	// busy: user nice system irq softirq steal; idle: idle iowait.
	if c.All != (Ticks{Busy: 178, Idle: 810, Softirq: 20}) || c.ByCPU[1] != (Ticks{Busy: 66, Idle: 405, Softirq: 5}) {
		t.Errorf("%+v", c)
	}
	if got := c.Of([]int{1}); got != c.ByCPU[1] {
		t.Errorf("cpu 1 alone: %+v", got)
	}
	d := c.All.Sub(Ticks{Busy: 78, Idle: 710, Softirq: 10})
	if d.BusyShare() != 0.5 || d.SoftirqShare() != 0.05 {
		t.Errorf("shares of %+v: %v %v", d, d.BusyShare(), d.SoftirqShare())
	}
}

func TestSelfCPUAndCPUs(t *testing.T) {
	before := SelfCPU()
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	if d := SelfCPU() - before; d <= 0 || d > time.Second {
		t.Errorf("a 50 ms busy loop took %v of CPU", d)
	}
	if n := CPUs(); n < 1 || n > len(Affinity()) {
		t.Errorf("%d CPUs, affinity %v", n, Affinity())
	}
}

// TestRolesByNamespace: a process in a named network namespace is counted
// as that role's CPU, all of it and nothing else: the role's count, read
// while the process is stopped, is the CPU time the kernel reports for the
// process when it is reaped. It asserts no rate, so other processes' load
// (which only delays the busy loop) cannot fail it. As root (it makes a
// namespace).
func TestRolesByNamespace(t *testing.T) {
	testutil.RequireRoot(t, "making a network namespace needs root")
	ns := fmt.Sprintf("v6lab-hostcpu-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	// A role whose namespace has no process (a router; embedded servers,
	// which run in this process) is not measured: left out, not a 0.
	empty := ns + "-empty"
	if out, err := exec.Command("ip", "netns", "add", empty).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", empty).Run() })
	// The shell says when it runs, in the namespace (ip netns exec enters
	// it, then execs the shell in the same process): no sleep guesses it.
	busy := exec.Command("ip", "netns", "exec", ns, "sh", "-c", "echo in; while :; do :; done")
	stdout, err := busy.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "in\n" {
		t.Fatalf("the busy shell said %q (%v)", line, err)
	}
	r := NewRoles(map[string]string{"server": ns, "gone": ns + "-none", "r1": empty})
	r.Scan()
	if _, ok := r.CPU()["gone"]; ok {
		t.Errorf("a role without its namespace: %v", r.CPU())
	}
	if v, ok := r.CPU()["r1"]; ok {
		t.Errorf("a role with no process of its own counted as %v, not left out", v)
	}
	// However busy the machine, the loop gets CPU in the end: wait for
	// some (the bound only ends a test whose count never grows).
	for end := time.Now().Add(time.Minute); r.CPU()["server"] < 30*time.Millisecond; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the role's count stayed at %v for a minute of a busy loop", r.CPU()["server"])
		}
	}
	stopped := stop(t, busy.Process)
	counted := r.CPU()["server"]
	busy.Process.Kill()
	busy.Wait()
	// The kernel's total (user + system, which it scales to the precise
	// runtime) adds only what dying took after the reading.
	reaped := busy.ProcessState.UserTime() + busy.ProcessState.SystemTime()
	t.Logf("the role counted %v; the process used %v in all", counted, reaped)
	if !stopped || counted > reaped || reaped-counted > 5*time.Millisecond {
		t.Errorf("the role counted %v (stopped: %v); the process used %v in all", counted, stopped, reaped)
	}
}

// stop stops p and waits until it is stopped (its state in /proc), so its
// CPU time no longer grows.
func stop(t *testing.T, p *os.Process) bool {
	t.Helper()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid))
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) STATE ...
		if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'T' {
			return true
		}
	}
	return false
}
