package host

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CPU use, for the self-check of each run (docs/metrics.md): how much CPU
// the measuring process took, how busy the host's CPUs were, and what each
// lab role's processes took, over the run's wall time.

// CPUs is how many CPUs this process may run on: its affinity, and Go's
// GOMAXPROCS, the smaller.
func CPUs() int {
	n := runtime.NumCPU()
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil && set.Count() > 0 {
		n = set.Count()
	}
	return min(n, runtime.GOMAXPROCS(0))
}

// Affinity is the CPUs this process may run on (nil: unknown).
func Affinity() []int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return nil
	}
	var out []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out
}

// SelfCPU is the CPU time this process has used (user and system, every
// thread).
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CPUTimes are the host's CPU times in clock ticks, from /proc/stat: all
// CPUs together and each CPU's.
type CPUTimes struct {
	All   Ticks
	ByCPU map[int]Ticks
}

// Ticks are one line of /proc/stat.
type Ticks struct {
	Busy, Idle, Softirq uint64
}

// Sub is the ticks between two readings.
func (t Ticks) Sub(o Ticks) Ticks {
	return Ticks{Busy: t.Busy - o.Busy, Idle: t.Idle - o.Idle, Softirq: t.Softirq - o.Softirq}
}

// BusyShare is the share of the ticks that were not idle (0 when none).
func (t Ticks) BusyShare() float64 {
	if t.Busy+t.Idle == 0 {
		return 0
	}
	return float64(t.Busy) / float64(t.Busy+t.Idle)
}

// SoftirqShare is the share of the ticks spent in softirq.
func (t Ticks) SoftirqShare() float64 {
	if t.Busy+t.Idle == 0 {
		return 0
	}
	return float64(t.Softirq) / float64(t.Busy+t.Idle)
}

// ReadCPUTimes reads /proc/stat (ok false: it could not).
func ReadCPUTimes() (CPUTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, false
	}
	return parseStat(b)
}

func parseStat(b []byte) (CPUTimes, bool) {
	out := CPUTimes{ByCPU: map[int]Ticks{}}
	ok := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		// user nice system idle iowait irq softirq [steal guest guest_nice]
		var v [8]uint64
		for i := 1; i < len(f) && i <= 8; i++ {
			v[i-1], _ = strconv.ParseUint(f[i], 10, 64)
		}
		t := Ticks{Busy: v[0] + v[1] + v[2] + v[5] + v[6] + v[7], Idle: v[3] + v[4], Softirq: v[6]}
		if f[0] == "cpu" {
			out.All, ok = t, true
			continue
		}
		if n, err := strconv.Atoi(f[0][3:]); err == nil {
			out.ByCPU[n] = t
		}
	}
	return out, ok
}

// Of is the sum of the given CPUs' ticks (all of them when cpus is nil).
func (c CPUTimes) Of(cpus []int) Ticks {
	if cpus == nil {
		return c.All
	}
	var t Ticks
	for _, n := range cpus {
		v := c.ByCPU[n]
		t.Busy += v.Busy
		t.Idle += v.Idle
		t.Softirq += v.Softirq
	}
	return t
}

// Roles reads the CPU time used so far by the processes of each network
// namespace named in ns (role -> the namespace's name under /run/netns),
// this process left out (it is the client, measured by SelfCPU).
type Roles struct {
	inodes map[uint64]string // namespace inode -> role
	pids   map[int]string    // the roles' processes, found by Scan
}

// NewRoles finds the namespaces' inodes; roles whose namespace is not
// there are left out.
func NewRoles(ns map[string]string) *Roles {
	r := &Roles{inodes: map[uint64]string{}}
	for role, name := range ns {
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/run/netns", name), &st) == nil {
			r.inodes[st.Ino] = role
		}
	}
	return r
}

// Scan finds the processes in the roles' namespaces now.
func (r *Roles) Scan() {
	r.pids = map[int]string{}
	if len(r.inodes) == 0 {
		return
	}
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		link, err := os.Readlink("/proc/" + e.Name() + "/ns/net")
		if err != nil {
			continue
		}
		// "net:[4026532281]"
		ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "net:["), "]"), 10, 64)
		if err != nil {
			continue
		}
		if role, ok := r.inodes[ino]; ok {
			r.pids[pid] = role
		}
	}
}

// CPU is the CPU time each role's processes (those Scan found) have used
// so far. A role with no process of its own is not measured and left out,
// never a 0: the routers (their forwarding is softirq work) and v6lab's
// embedded servers and client, which run in the measuring process
// (docs/metrics.md, "The lab's roles").
func (r *Roles) CPU() map[string]time.Duration {
	out := map[string]time.Duration{}
	for pid, role := range r.pids {
		out[role] += procCPU(pid)
	}
	return out
}

// procCPU is a process's CPU time, every thread's: the first figure of
// each thread's schedstat, the scheduler's own count in ns (the utime and
// stime of /proc/PID/stat are sampled at the clock tick, 10 ms, too coarse
// for the lab's runs of a few ms); 0 when it is gone.
func procCPU(pid int) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum time.Duration
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue
		}
		if i := bytes.IndexByte(b, ' '); i > 0 {
			ns, _ := strconv.ParseUint(string(b[:i]), 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}
