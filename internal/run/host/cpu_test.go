package host

import (
	"fmt"
	"os"
	"os/exec"
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

// TestRolesByNamespace: a busy process in a named network namespace is
// counted as that role's CPU. As root (it makes a namespace).
func TestRolesByNamespace(t *testing.T) {
	testutil.RequireRoot(t, "making a network namespace needs root")
	ns := fmt.Sprintf("v6lab-hostcpu-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	busy := exec.Command("ip", "netns", "exec", ns, "sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
	time.Sleep(50 * time.Millisecond) // ip has exec'd sh in the namespace
	r := NewRoles(map[string]string{"server": ns, "gone": ns + "-none"})
	r.Scan()
	before := r.CPU()
	time.Sleep(300 * time.Millisecond)
	after := r.CPU()
	if _, ok := after["gone"]; ok {
		t.Errorf("a role without its namespace: %v", after)
	}
	if d := after["server"] - before["server"]; d < 30*time.Millisecond {
		t.Errorf("a busy process in the namespace used %v in 300 ms", d)
	}
}
