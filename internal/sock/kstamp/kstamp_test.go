package kstamp

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestEveryFreshSocketGetsStamps: sockets that each want receive stamps
// for one datagram and close, one after another, as transactions at one
// connection do. Without Hold the kernel's switch goes off at each close
// and comes on late at the next socket, and datagrams arrive unstamped.
func TestEveryFreshSocketGetsStamps(t *testing.T) {
	// A busy CPU, as in a run at many connections or on a CI machine,
	// keeps the kernel's work item waiting longer.
	var stop atomic.Bool
	defer stop.Store(true)
	go func() {
		for !stop.Load() {
		}
	}()
	missing := 0
	const n = 600
	for i := 0; i < n; i++ {
		if !freshSocketStamped(t) {
			missing++
		}
		time.Sleep(2 * time.Millisecond) // the pause between runs

	}
	if missing > 0 {
		t.Errorf("%d of %d datagrams to a fresh socket had no receive stamp", missing, n)
	}
}

func freshSocketStamped(t *testing.T) bool {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no loopback: %v", err)
	}
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = EnableRx(int(fd)) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	s, err := net.DialUDP("udp4", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b, oob := make([]byte, 8), make([]byte, OOBSize)
	_, oobn, _, _, err := c.ReadMsgUDP(b, oob)
	if err != nil {
		t.Fatal(err)
	}
	return !Parse(oob[:oobn]).IsZero()
}

// TestParseWalksTheMessages: the stamp is found after another control
// message, and nothing is read past a truncated one.
func TestParseWalksTheMessages(t *testing.T) {
	ts := make([]byte, unix.CmsgSpace(3*int(unsafe.Sizeof(unix.Timespec{}))))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&ts[0]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SCM_TIMESTAMPING
	h.SetLen(unix.CmsgLen(3 * int(unsafe.Sizeof(unix.Timespec{}))))
	*(*unix.Timespec)(unsafe.Pointer(&ts[unix.CmsgLen(0)])) = unix.Timespec{Sec: 1700000000, Nsec: 42}
	oob := append(unix.UnixRights(7), ts...)
	if got := Parse(oob); !got.Equal(time.Unix(1700000000, 42)) {
		t.Errorf("after SCM_RIGHTS: %v", got)
	}
	if got := Parse(oob[:len(oob)-8]); !got.IsZero() {
		t.Errorf("a truncated message gave %v", got)
	}
	if got := Parse(unix.UnixRights(7)); !got.IsZero() {
		t.Errorf("no stamp gave %v", got)
	}
}
