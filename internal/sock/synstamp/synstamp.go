// Package synstamp records, in the kernel, when each TCP connection this
// network namespace opens sends its SYN and completes its handshake: a
// sockops BPF program on this process's cgroup stamps both moments with the
// kernel's clock in the socket's own storage (a socket-local BPF map),
// beside the socket's local address and port. SO_TIMESTAMPING gives no
// stamp for a SYN (it carries no data), so without it a transaction that
// starts with a connection rather than a DNS query (an IP literal, DNS over
// TCP) has no first packet out for its wire time (docs/metrics.md).
//
// A caller reads them by the socket's descriptor while it is open
// (LookupFD), with one system call that also gives the local address
// (getsockname's). The storage goes with the socket.
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
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Stamper holds the attached program and its map.
type Stamper struct {
	sk   *ebpf.Map // the sockets' storage (SkStorage), by descriptor
	prog *ebpf.Program
	l    link.Link
}

// Operations of struct bpf_sock_ops the program stamps.
const (
	opTCPConnect         = 3    // BPF_SOCK_OPS_TCP_CONNECT_CB: the SYN is about to leave
	opActiveEstablished  = 4    // BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB: the SYN-ACK came
	valueSyn, valueEstab = 0, 8 // offsets in a map value
	// Offsets in struct bpf_sock_ops (include/uapi/linux/bpf.h): the
	// socket's family, local IPv4 address (network order), local IPv6
	// address, local port (host order), and the socket itself.
	ctxFamily, ctxLocalIP4, ctxLocalIP6, ctxLocalPort, ctxSk = 20, 28, 48, 68, 184
	// A socket storage value: the two stamps, then skAddr (16 bytes: an
	// IPv4 address in the first 4), skPort, skFamily (uint32 each).
	skAddr, skPort, skFamily, skValueSize = 16, 32, 36, 40
	fSkStorageCreate                      = 1 // BPF_SK_STORAGE_GET_F_CREATE
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
	sk, err := ebpf.NewMap(skSpec())
	if err != nil {
		return nil, fmt.Errorf("synstamp: map: %w", err)
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "v6lab_syn", Type: ebpf.SockOps, License: "GPL", Instructions: program(sk, ns)})
	if err != nil {
		sk.Close()
		return nil, fmt.Errorf("synstamp: program: %w", err)
	}
	l, err := link.AttachCgroup(link.CgroupOptions{Path: cg, Attach: ebpf.AttachCGroupSockOps, Program: prog})
	if err != nil {
		prog.Close()
		sk.Close()
		return nil, fmt.Errorf("synstamp: attach to cgroup %s: %w", cg, err)
	}
	return &Stamper{sk: sk, prog: prog, l: l}, nil
}

// skSpec is the socket storage map's: the kernel wants its key and value
// described in BTF (a 32-bit int, the descriptor, and 5 u64s).
func skSpec() *ebpf.MapSpec {
	u64 := &btf.Int{Name: "u64", Size: 8}
	return &ebpf.MapSpec{Name: "v6lab_synsk", Type: ebpf.SkStorage, KeySize: 4, ValueSize: skValueSize,
		Flags: unix.BPF_F_NO_PREALLOC, Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed},
		Value: &btf.Array{Index: &btf.Int{Name: "u32", Size: 4}, Type: u64, Nelems: skValueSize / 8}}
}

// Close detaches the program.
func (s *Stamper) Close() error {
	return errors.Join(s.l.Close(), s.prog.Close(), s.sk.Close())
}

// program stamps, for sockets of the network namespace whose cookie is ns,
// the SYN's departure (a new storage for the socket, with its local
// address) and the handshake's end. (An LRU hash by socket cookie, read
// by a getsockopt(SO_COOKIE) and a lookup, cost two system calls and the
// hash's update per connection more: it went.)
func program(sk *ebpf.Map, ns uint64) asm.Instructions {
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
	}, storage(sk), asm.Instructions{
		asm.Mov.Imm(asm.R0, 1).WithSymbol("out"),
		asm.Return(),
	})
}

// storage writes the socket's storage: at the SYN (R7, the operation) a
// new one with its stamp (R8) and the local address, at the SYN-ACK its
// stamp in the one there.
func storage(sk *ebpf.Map) asm.Instructions {
	insns := asm.Instructions{
		asm.LoadMem(asm.R2, asm.R6, ctxSk, asm.DWord),
		asm.JEq.Imm(asm.R2, 0, "out"),
		asm.LoadMapPtr(asm.R1, sk.FD()),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, 0),
		asm.JEq.Imm(asm.R7, opActiveEstablished, "get"),
		asm.Mov.Imm(asm.R4, fSkStorageCreate),
		asm.FnSkStorageGet.Call().WithSymbol("get"),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.JEq.Imm(asm.R7, opActiveEstablished, "est"),
		asm.StoreMem(asm.R0, valueSyn, asm.R8, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, ctxFamily, asm.Word),
		asm.StoreMem(asm.R0, skFamily, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R6, ctxLocalPort, asm.Word),
		asm.StoreMem(asm.R0, skPort, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R6, ctxLocalIP4, asm.Word),
		asm.StoreMem(asm.R0, skAddr, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R6, ctxFamily, asm.Word),
		asm.JNE.Imm(asm.R1, unix.AF_INET6, "out"),
	}
	for i := int16(0); i < 4; i++ {
		insns = append(insns, asm.LoadMem(asm.R1, asm.R6, ctxLocalIP6+4*i, asm.Word),
			asm.StoreMem(asm.R0, skAddr+4*i, asm.R1, asm.Word))
	}
	return append(insns, asm.Ja.Label("out"),
		asm.StoreMem(asm.R0, valueEstab, asm.R8, asm.DWord).WithSymbol("est"))
}

// Lookup returns when the connection on fd sent its SYN and when its
// handshake completed (zero: not stamped), as wall-clock times comparable
// with SO_TIMESTAMPING's software stamps.
func (s *Stamper) Lookup(fd int) (syn, established time.Time, ok bool) {
	st, ok := s.LookupFD(fd)
	return st.SYN, st.Established, ok
}

// Stamps are a connection's, from its socket's storage (LookupFD).
type Stamps struct {
	// SYN is when it sent its SYN, Established when its handshake
	// completed (zero: not yet), as Lookup's.
	SYN, Established time.Time
	// Local is its address and port when it sent its SYN.
	Local netip.AddrPort
}

// LookupFD is the stamps of the connection on fd, read from the socket's
// own storage with one system call (none if its SYN was not stamped: a
// socket of another namespace, or made before Open).
func (s *Stamper) LookupFD(fd int) (Stamps, bool) {
	var v [skValueSize / 8]uint64
	key := int32(fd)
	// The raw system call: cilium/ebpf's Lookup goes through the Go
	// scheduler's syscall bookkeeping, and this lookup never blocks.
	// union bpf_attr's map element operation; the pointers as pointers,
	// so that a moved stack moves them too.
	attr := struct {
		mapFD, _   uint32
		key, value unsafe.Pointer
		flags      uint64
	}{mapFD: uint32(s.sk.FD()), key: unsafe.Pointer(&key), value: unsafe.Pointer(&v)}
	if _, _, e := unix.RawSyscall(unix.SYS_BPF, unix.BPF_MAP_LOOKUP_ELEM, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr)); e != 0 || v[0] == 0 {
		return Stamps{}, false
	}
	b := (*[skValueSize]byte)(unsafe.Pointer(&v))
	port := *(*uint32)(unsafe.Pointer(&b[skPort]))
	var local netip.Addr
	switch *(*uint32)(unsafe.Pointer(&b[skFamily])) {
	case unix.AF_INET:
		local = netip.AddrFrom4([4]byte(b[skAddr : skAddr+4]))
	case unix.AF_INET6:
		local = netip.AddrFrom16([16]byte(b[skAddr : skAddr+16]))
	}
	off := wallOffset()
	st := Stamps{SYN: time.Unix(0, int64(v[0])+off), Local: netip.AddrPortFrom(local, uint16(port))}
	if v[1] != 0 {
		st.Established = time.Unix(0, int64(v[1])+off)
	}
	return st, true
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
