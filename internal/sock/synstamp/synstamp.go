// Package synstamp records, in the kernel, when each TCP connection this
// network namespace opens sends its SYN and completes its handshake: a
// sockops BPF program on this process's cgroup stamps both moments with the
// kernel's clock and writes them, with the connection's addresses, to a
// BPF ring buffer this process reads from its own memory (no system call).
// SO_TIMESTAMPING gives no stamp for a SYN (it carries no data), so
// without it a transaction that starts with a connection rather than a
// DNS query (an IP literal, DNS over TCP) has no first packet out for its
// wire time (docs/metrics.md).
//
// A caller finds a connection's stamps by its local and remote addresses
// (Find; getsockname gives the local one). The newest 65,536 connections'
// stamps, and up to as many before them, are kept.
//
// It needs CAP_BPF (root) and a cgroup v2 hierarchy; without them Default
// fails and callers go without the stamps. It imports nothing of v6lab.
package synstamp

import (
	"bufio"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Stamper holds the attached program, its ring and the stamps read from
// it.
type Stamper struct {
	rb   *ebpf.Map
	prog *ebpf.Program
	l    link.Link
	r    *ring
	mu   sync.Mutex // guards r, now, old
	// now and old are the stamps read, by connection: two generations
	// of at most kept each, the older dropped whole.
	now, old map[tuple]stamp
	stop     chan struct{}
	done     chan struct{}
}

// Operations of struct bpf_sock_ops the program stamps.
const (
	opTCPConnect        = 3 // BPF_SOCK_OPS_TCP_CONNECT_CB: the SYN is about to leave
	opActiveEstablished = 4 // BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB: the SYN-ACK came
	// Offsets in struct bpf_sock_ops (include/uapi/linux/bpf.h): the
	// socket's family, remote and local IPv4 addresses (network order),
	// remote and local IPv6 addresses, remote port (network order, in
	// the upper half on little-endian hosts), local port (host order).
	ctxFamily, ctxRemoteIP4, ctxLocalIP4, ctxRemoteIP6, ctxLocalIP6, ctxRemotePort, ctxLocalPort = 20, 24, 28, 32, 48, 64, 68
	// A record: the stamp (ns, CLOCK_MONOTONIC), the operation, the
	// family, the local and remote addresses (16 bytes each: an IPv4 one
	// in the first 4), the local and remote ports (ctx's u32s).
	recNS, recOp, recFamily, recLocal, recRemote, recLocalPort, recRemotePort, recSize = 0, 8, 12, 16, 32, 48, 52, 56
	// ringSize holds 65,536 records (64 bytes each with its header).
	ringSize = 4 << 20
	// kept is how many connections' stamps a generation holds.
	kept = 1 << 16
	// drainEvery is how often the ring is read when nobody asks, so that
	// it does not fill (a full ring drops the records of new SYNs).
	drainEvery = 100 * time.Millisecond
	rbNoWakeup = 1 // BPF_RB_NO_WAKEUP: the reader polls
)

var (
	once       sync.Once
	dflt       *Stamper
	dfltErr    error
	isAttached atomic.Bool // Default attached dflt
)

// Default attaches the process's stamper on first use (in the network
// namespace of the calling thread) and keeps it for the process's life.
func Default() (*Stamper, error) {
	once.Do(func() {
		dflt, dfltErr = Open()
		isAttached.Store(dfltErr == nil)
	})
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
	rb, err := ebpf.NewMap(&ebpf.MapSpec{Name: "v6lab_syn", Type: ebpf.RingBuf, MaxEntries: ringSize})
	if err != nil {
		return nil, fmt.Errorf("synstamp: ring buffer: %w", err)
	}
	r, err := openRing(rb.FD(), ringSize)
	if err != nil {
		rb.Close()
		return nil, fmt.Errorf("synstamp: ring buffer: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "v6lab_syn", Type: ebpf.SockOps, License: "GPL", Instructions: program(rb, ns)})
	if err != nil {
		r.close()
		rb.Close()
		return nil, fmt.Errorf("synstamp: program: %w", err)
	}
	l, err := link.AttachCgroup(link.CgroupOptions{Path: cg, Attach: ebpf.AttachCGroupSockOps, Program: prog})
	if err != nil {
		prog.Close()
		r.close()
		rb.Close()
		return nil, fmt.Errorf("synstamp: attach to cgroup %s: %w", cg, err)
	}
	s := &Stamper{rb: rb, prog: prog, l: l, r: r, now: map[tuple]stamp{}, old: map[tuple]stamp{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go s.drainLoop()
	return s, nil
}

// Close detaches the program.
func (s *Stamper) Close() error {
	err := errors.Join(s.l.Close(), s.prog.Close())
	close(s.stop)
	<-s.done
	s.mu.Lock()
	s.r.close()
	s.r = nil // a Find after Close finds what was read
	s.mu.Unlock()
	return errors.Join(err, s.rb.Close())
}

// program writes, for sockets of the network namespace whose cookie is
// ns, a record of the SYN's departure and one of the handshake's end to
// the ring rb. (A map by socket cookie, read by getsockopt(SO_COOKIE) and
// a lookup, and then the socket's own storage, read by a lookup, cost a
// system call or two per connection more, and the storage an allocation.)
func program(rb *ebpf.Map, ns uint64) asm.Instructions {
	return slices.Concat(asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),                // ctx
		asm.LoadMem(asm.R7, asm.R6, 0, asm.Word),   // op
		asm.JEq.Imm(asm.R7, opTCPConnect, "stamp"), //
		asm.JEq.Imm(asm.R7, opActiveEstablished, "stamp"),
		asm.Ja.Label("out"),

		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("stamp"),
		asm.FnGetNetnsCookie.Call(),
		asm.LoadImm(asm.R2, int64(ns), asm.DWord),
		asm.JNE.Reg(asm.R0, asm.R2, "out"),
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.LoadMapPtr(asm.R1, rb.FD()),
		asm.Mov.Imm(asm.R2, recSize),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"), // the ring is full: no stamps
		asm.Mov.Reg(asm.R9, asm.R0),
		asm.StoreMem(asm.R9, recNS, asm.R8, asm.DWord),
		asm.StoreMem(asm.R9, recOp, asm.R7, asm.Word),
	}, record(), asm.Instructions{
		asm.Mov.Reg(asm.R1, asm.R9).WithSymbol("submit"),
		asm.Mov.Imm(asm.R2, rbNoWakeup),
		asm.FnRingbufSubmit.Call(),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("out"),
		asm.Return(),
	})
}

// record copies the connection's family, addresses and ports from the
// context (R6) to the reserved record (R9).
func record() asm.Instructions {
	copy32 := func(from, to int16) asm.Instructions {
		return asm.Instructions{asm.LoadMem(asm.R1, asm.R6, from, asm.Word), asm.StoreMem(asm.R9, to, asm.R1, asm.Word)}
	}
	insns := slices.Concat(copy32(ctxFamily, recFamily), copy32(ctxLocalPort, recLocalPort), copy32(ctxRemotePort, recRemotePort),
		asm.Instructions{asm.LoadMem(asm.R1, asm.R6, ctxFamily, asm.Word), asm.JEq.Imm(asm.R1, unix.AF_INET6, "ipv6")},
		copy32(ctxLocalIP4, recLocal), copy32(ctxRemoteIP4, recRemote), asm.Instructions{asm.Ja.Label("submit")})
	for i := int16(0); i < 4; i++ {
		c := slices.Concat(copy32(ctxLocalIP6+4*i, recLocal+4*i), copy32(ctxRemoteIP6+4*i, recRemote+4*i))
		if i == 0 {
			c[0] = c[0].WithSymbol("ipv6")
		}
		insns = append(insns, c...)
	}
	return insns
}

// Stamps are a connection's (Find).
type Stamps struct {
	// SYN is when it sent its SYN, Established when its handshake
	// completed (zero: not yet), as wall-clock times comparable with
	// SO_TIMESTAMPING's software stamps.
	SYN, Established time.Time
}

// Find is the stamps of the connection from local to remote (zones are
// not compared), false if its SYN was not stamped (a connection of
// another namespace, made before Open, or long gone).
func (s *Stamper) Find(local, remote netip.AddrPort) (Stamps, bool) {
	k := tupleOf(local, remote)
	s.mu.Lock()
	s.drain() // it, or its handshake's end, may be in the ring yet
	st, ok := s.get(k)
	s.mu.Unlock()
	if !ok || st.syn == 0 {
		return Stamps{}, false
	}
	off := wallOffset()
	out := Stamps{SYN: time.Unix(0, st.syn+off)}
	if st.est != 0 {
		out.Established = time.Unix(0, st.est+off)
	}
	return out, true
}

// Current is the process's stamper if Default attached it, else nil
// (it attaches nothing).
func Current() *Stamper {
	if isAttached.Load() {
		return dflt
	}
	return nil
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
