// Package synstamp records, in the kernel, when each TCP connection this
// network namespace opens sends its SYN and completes its handshake: a
// sockops BPF program on this process's cgroup stamps both moments with the
// kernel's clock, keyed by the socket's cookie. SO_TIMESTAMPING gives no
// stamp for a SYN (it carries no data), so without it a transaction that
// starts with a connection rather than a DNS query (an IP literal, DNS over
// TCP) has no first packet out for its wire time (docs/metrics.md).
//
// It needs CAP_BPF (root) and a cgroup v2 hierarchy; without them Default
// fails and callers go without the stamps. It imports nothing of v6lab.
package synstamp

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Stamper holds the attached program and its map.
type Stamper struct {
	m    *ebpf.Map
	prog *ebpf.Program
	l    link.Link
}

// Operations of struct bpf_sock_ops the program stamps.
const (
	opTCPConnect         = 3 // BPF_SOCK_OPS_TCP_CONNECT_CB: the SYN is about to leave
	opActiveEstablished  = 4 // BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB: the SYN-ACK came
	mapEntries           = 1 << 16
	valueSyn, valueEstab = 0, 8 // offsets in a map value
)

var (
	once    sync.Once
	dflt    *Stamper
	dfltErr error
)

// Default attaches the process's stamper on first use (in the network
// namespace of the calling thread) and keeps it for the process's life.
func Default() (*Stamper, error) {
	once.Do(func() { dflt, dfltErr = Open() })
	return dflt, dfltErr
}

// Open loads the program for the calling thread's network namespace and
// attaches it to this process's cgroup (v2).
func Open() (*Stamper, error) {
	ns, err := netnsCookie()
	if err != nil {
		return nil, err
	}
	cg, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "v6lab_syn", Type: ebpf.LRUHash, KeySize: 8, ValueSize: 16, MaxEntries: mapEntries})
	if err != nil {
		return nil, fmt.Errorf("synstamp: map: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "v6lab_syn", Type: ebpf.SockOps, License: "GPL", Instructions: program(m, ns)})
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("synstamp: program: %w", err)
	}
	l, err := link.AttachCgroup(link.CgroupOptions{Path: cg, Attach: ebpf.AttachCGroupSockOps, Program: prog})
	if err != nil {
		prog.Close()
		m.Close()
		return nil, fmt.Errorf("synstamp: attach to cgroup %s: %w", cg, err)
	}
	return &Stamper{m: m, prog: prog, l: l}, nil
}

// Close detaches the program.
func (s *Stamper) Close() error {
	return errors.Join(s.l.Close(), s.prog.Close(), s.m.Close())
}

// program stamps, for sockets of the network namespace whose cookie is ns,
// the SYN's departure (a new map entry) and the handshake's end.
func program(m *ebpf.Map, ns uint64) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),                // ctx
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),   // op
		asm.JEq.Imm(asm.R7, opTCPConnect, "stamp"), //
		asm.JEq.Imm(asm.R7, opActiveEstablished, "stamp"),
		asm.Ja.Label("out"),

		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("stamp"),
		asm.FnGetNetnsCookie.Call(),
		asm.LoadImm(asm.R2, int64(ns), asm.DWord),
		asm.JNE.Reg(asm.R0, asm.R2, "out"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.FnGetSocketCookie.Call(),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord), // key
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.JEq.Imm(asm.R7, opActiveEstablished, "established"),

		// The SYN: a new entry {now, 0}.
		asm.StoreMem(asm.RFP, -24, asm.R8, asm.DWord),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -16, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -24),
		asm.Mov.Imm(asm.R4, 0), // BPF_ANY
		asm.FnMapUpdateElem.Call(),
		asm.Ja.Label("out"),

		// The SYN-ACK: complete the entry.
		asm.LoadMapPtr(asm.R1, m.FD()).WithSymbol("established"),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.StoreMem(asm.R0, valueEstab, asm.R8, asm.DWord),

		asm.Mov.Imm(asm.R0, 1).WithSymbol("out"),
		asm.Return(),
	}
}

// Lookup returns when the connection on fd sent its SYN and when its
// handshake completed (zero: not stamped), as wall-clock times comparable
// with SO_TIMESTAMPING's software stamps.
func (s *Stamper) Lookup(fd int) (syn, established time.Time, ok bool) {
	cookie, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	return s.LookupCookie(cookie)
}

// LookupCookie is Lookup by the socket's cookie (SO_COOKIE), which stays
// valid after the socket is closed, as long as the map keeps its entry
// (the least recently used of 65,536 go first).
func (s *Stamper) LookupCookie(cookie uint64) (syn, established time.Time, ok bool) {
	var v [2]uint64
	// Pointers, not values: cilium/ebpf marshals values into buffers it
	// allocates; a lookup per connection made two allocations.
	if err := s.m.Lookup(unsafe.Pointer(&cookie), unsafe.Pointer(&v)); err != nil || v[0] == 0 {
		return time.Time{}, time.Time{}, false
	}
	// The program's clock is CLOCK_MONOTONIC; the stamps it is compared
	// with are CLOCK_REALTIME.
	off := wallOffset()
	toWall := func(ns uint64) time.Time {
		if ns == 0 {
			return time.Time{}
		}
		return time.Unix(0, int64(ns)+off)
	}
	return toWall(v[0]), toWall(v[1]), true
}

// offset is CLOCK_REALTIME - CLOCK_MONOTONIC in ns, read at checked (on
// Go's monotonic clock).
type offset struct {
	ns      int64
	checked time.Time
}

var lastOffset atomic.Pointer[offset]

// offsetFor is how long an offset read is used: the two clocks run at the
// same rate (NTP slews both), so they differ only when the wall clock is
// stepped. Read per lookup, the two clock_gettime calls (system calls:
// x/sys has no vDSO path) were a tenth of the system calls a loopback
// connection cost.
const offsetFor = time.Second

// wallOffset is CLOCK_REALTIME - CLOCK_MONOTONIC, read again at most once
// a second.
func wallOffset() int64 {
	if o := lastOffset.Load(); o != nil && time.Since(o.checked) < offsetFor {
		return o.ns
	}
	var mono, wall unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono)
	unix.ClockGettime(unix.CLOCK_REALTIME, &wall)
	o := &offset{ns: wall.Nano() - mono.Nano(), checked: time.Now()}
	lastOffset.Store(o)
	return o.ns
}

// netnsCookie is the calling thread's network namespace's cookie.
func netnsCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("synstamp: %w", err)
	}
	defer unix.Close(fd)
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	if err != nil {
		return 0, fmt.Errorf("synstamp: SO_NETNS_COOKIE: %w", err)
	}
	return c, nil
}

// ownCgroup is the directory of this process's cgroup in the v2 hierarchy.
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("synstamp: %w", err)
	}
	rel := ""
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel = p
		}
	}
	if rel == "" {
		return "", errors.New("synstamp: this process is in no cgroup v2")
	}
	mnt, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	return filepath.Join(mnt, rel), nil
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("synstamp: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mount-point ... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 {
			return f[4], nil
		}
	}
	return "", errors.New("synstamp: no cgroup v2 hierarchy is mounted")
}
