package lab

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestNamesThatWalkOutAreRefused: a lab name is used in paths and
// namespace names, so anything but a plain name is refused before it
// touches the disk or a process.
func TestNamesThatWalkOutAreRefused(t *testing.T) {
	dir := t.TempDir()
	old := StateDir
	StateDir = filepath.Join(dir, "state")
	t.Cleanup(func() { StateDir = old })
	// A pid file outside the state directory that the old code would
	// have read (and killed its pid) and removed.
	victim := filepath.Join(dir, "x.json")
	os.WriteFile(victim, []byte(`{"name":"x","pid":1}`), 0o644)
	for _, name := range []string{"../x", "../../x", "a/b", "", ".", "A", "-a", "a b", "a\x00", strings.Repeat("a", 16)} {
		if err := CheckName(name); !errors.Is(err, ErrBadName) {
			t.Errorf("CheckName(%q) = %v", name, err)
		}
		if err := Down(name); !errors.Is(err, ErrBadName) {
			t.Errorf("Down(%q) = %v", name, err)
		}
		if _, err := Claim(name); !errors.Is(err, ErrBadName) {
			t.Errorf("Claim(%q) = %v", name, err)
		}
		if _, err := Inspect(name); !errors.Is(err, ErrBadName) {
			t.Errorf("Inspect(%q) = %v", name, err)
		}
		if _, err := LogFile(name); !errors.Is(err, ErrBadName) {
			t.Errorf("LogFile(%q) = %v", name, err)
		}
		if pid := Owner(name); pid != 0 {
			t.Errorf("Owner(%q) = %d", name, pid)
		}
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("a file outside the state directory was touched: %v", err)
	}
	for _, name := range []string{"a", "default", "run0a1b2c3d", "a-b-c", strings.Repeat("a", 15)} {
		if err := CheckName(name); err != nil {
			t.Errorf("CheckName(%q) = %v", name, err)
		}
	}
}

// TestARecycledPidIsNotTheOwner: the start time keeps a pid that now
// belongs to another process from passing as the lab's owner.
func TestARecycledPidIsNotTheOwner(t *testing.T) {
	me := os.Getpid()
	if !alive(me, procStart(me)) {
		t.Fatal("this process is not alive by its own start time")
	}
	if alive(me, procStart(me)+1) {
		t.Error("a different start time passed as the same process")
	}
	if alive(1<<30, 0) {
		t.Error("a pid beyond pid_max passed as alive")
	}
}

// TestDownNeverTouchesALabWithALongerName: lab "x" and lab "x-b" are
// different labs; removing one leaves the other whole.
func TestDownNeverTouchesALabWithALongerName(t *testing.T) {
	requireRoot(t)
	a := testName(t) + "p"
	b := a + "-b"
	for _, role := range Hosts {
		if err := createNamed(NS(b, role)); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { Down(b) })
	if err := createNamed(NS(a, Client)); err != nil {
		t.Fatal(err)
	}
	if err := Down(a); err != nil {
		t.Fatal(err)
	}
	if left := exactNamespaces(a); len(left) != 0 {
		t.Errorf("lab %s not removed: %v", a, left)
	}
	if got := exactNamespaces(b); len(got) != len(Hosts) {
		t.Errorf("lab %s lost namespaces when %s went down: has %v", b, a, got)
	}
	if _, err := Inspect(a); err == nil {
		t.Errorf("Inspect(%s) found a lab in %s's namespaces", a, b)
	}
}

// TestAKilledOwnersLeftoversAreRemoved: everything the record names —
// namespaces, a daemon (by pid and start time) and a working directory —
// is removed once the owner is dead, and nothing else is.
func TestAKilledOwnersLeftoversAreRemoved(t *testing.T) {
	requireRoot(t)
	name := testName(t) + "o"
	rec, err := Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(name) })
	if _, err := Claim(name); err == nil || !strings.Contains(err.Error(), "already up") {
		t.Errorf("a second claim of a live lab: %v", err)
	}
	for _, role := range []string{Client, R1} {
		if err := rec.addNamespace(NS(name, role)); err != nil {
			t.Fatal(err)
		}
		if err := createNamed(NS(name, role)); err != nil {
			t.Fatal(err)
		}
	}
	daemon := exec.Command("sleep", "60")
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { daemon.Wait(); close(exited) }()
	t.Cleanup(func() { daemon.Process.Kill() })
	if err := rec.AddDaemon(daemon.Process.Pid, "sleep"); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "v6lab-owner-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	if err := rec.AddDir(dir); err != nil {
		t.Fatal(err)
	}
	// A directory that is not v6lab's is never removed, whatever a
	// record says.
	other := t.TempDir()
	rec.AddDir(other)
	// The owner dies (a pid beyond pid_max stands for it).
	rec.PID = 1 << 30
	rec.save()
	orphans, err := Orphans()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(orphans, func(o Orphan) bool { return o.Name == name })
	if i < 0 || len(orphans[i].Namespaces) != 2 || len(orphans[i].Daemons) != 1 {
		t.Fatalf("orphans: %+v", orphans)
	}
	reaped, err := reap(func(n string) bool { return n == name }) // not other tests' orphans
	if err != nil || !slices.Contains(reaped, name) {
		t.Fatalf("reaped %v, %v", reaped, err)
	}
	if left := exactNamespaces(name); len(left) != 0 {
		t.Errorf("namespaces left: %v", left)
	}
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Error("the lab's daemon still runs")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the working directory is left: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a directory that is not v6lab's was removed: %v", err)
	}
	if _, err := ReadRecord(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the record is left: %v", err)
	}
}

// TestClaimRefusesNamespacesNobodyOwns: namespaces of a name with no
// record are not silently taken over or removed by lab up.
func TestClaimRefusesNamespacesNobodyOwns(t *testing.T) {
	requireRoot(t)
	name := testName(t) + "u"
	if err := createNamed(NS(name, Server)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(name) })
	_, err := Claim(name)
	if err == nil || !strings.Contains(err.Error(), "no process owns them") {
		t.Fatalf("claim over unowned namespaces: %v", err)
	}
}

// TestDoNeverMovesTheCallersThread: the caller's own (locked) thread is in
// the same namespace before and after Do, and fn ran elsewhere.
func TestDoNeverMovesTheCallersThread(t *testing.T) {
	requireRoot(t)
	name := testName(t) + "d"
	rec, err := Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Remove() })
	rec.addNamespace(NS(name, Client))
	if err := createNamed(NS(name, Client)); err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self := func() string { l, _ := os.Readlink("/proc/thread-self/ns/net"); return l }
	mine := self()
	var inside string
	if err := Do(NS(name, Client), func() error { inside = self(); return nil }); err != nil {
		t.Fatal(err)
	}
	if inside == mine || inside == "" {
		t.Errorf("fn ran in %q, the caller's namespace %q", inside, mine)
	}
	if now := self(); now != mine {
		t.Errorf("the caller's thread moved from %q to %q", mine, now)
	}
	if err := Do(NS(name, Client), func() error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "panic: boom") {
		t.Errorf("a panic in fn: %v", err)
	}
	if now := self(); now != mine {
		t.Errorf("after a panic, the caller's thread is in %q", now)
	}
}

// TestCongestionControlIsTheLabsOwn: every host of the lab runs the
// congestion control asked for (default cubic, whatever the machine's),
// and one the kernel lacks is an error listing those it has.
func TestCongestionControlIsTheLabsOwn(t *testing.T) {
	requireRoot(t)
	read := func(l *Lab, role string) string {
		var v string
		Do(NS(l.Name, role), func() error {
			b, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
			v = strings.TrimSpace(string(b))
			return nil
		})
		return v
	}
	l := up(t, Config{Name: testName(t) + "c", Tunnel: TunnelBPF})
	for _, role := range Hosts {
		if got := read(l, role); got != DefaultCongestion {
			t.Errorf("%s: %s, want %s", role, got, DefaultCongestion)
		}
	}
	r := up(t, Config{Name: testName(t) + "r", Tunnel: TunnelBPF, Congestion: "reno"})
	if got := read(r, Server); got != "reno" {
		t.Errorf("server: %s, want reno", got)
	}
	_, err := Up(context.Background(), Config{Name: testName(t) + "x", Congestion: "nosuch"})
	if err == nil || !strings.Contains(err.Error(), `congestion control "nosuch" is not available in this kernel (available: `) && !strings.Contains(err.Error(), `congestion control "nosuch" cannot be set in the lab (available: `) {
		t.Errorf("an unknown algorithm: %v", err)
	}
	if left := exactNamespaces(testName(t) + "x"); len(left) != 0 {
		t.Errorf("a failed lab up left %v", left)
	}
}

// TestRunNamesAreLabNamesOfTheirOwn: a run's lab name passes CheckName
// and is not another run's (two runs at once build two labs).
func TestRunNamesAreLabNamesOfTheirOwn(t *testing.T) {
	a, b := RunName(), RunName()
	for _, n := range []string{a, b} {
		if err := CheckName(n); err != nil || !strings.HasPrefix(n, "run") {
			t.Errorf("RunName() = %q: %v", n, err)
		}
	}
	if a == b {
		t.Errorf("two runs' labs are both named %q", a)
	}
}
