package pktring

import (
	"bytes"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// inOwnNetns runs the test in a network namespace of its own.
func inOwnNetns(t *testing.T) {
	t.Helper()
	testutil.InOwnNetns(t, "needs root for a packet socket and a network namespace")
}

// TestRingReadsFramesWithKernelStamps: frames sent after New arrive a
// block at a time, cut to Snap bytes, with their full length and a
// kernel stamp between the send and the read; a frame sent before New
// (the socket takes none until then) does not.
func TestRingReadsFramesWithKernelStamps(t *testing.T) {
	inOwnNetns(t)
	fd, err := Socket("lo")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	to := conn.LocalAddr().(*net.UDPAddr)
	payload := func(tag byte) []byte { return bytes.Repeat([]byte{tag}, 1000) }
	conn.WriteToUDP(payload('a'), to) // before the ring: not taken

	const snap = 96
	r, err := New(fd, Config{Snap: snap, Retire: 2 * time.Millisecond, BlockSize: 64 << 10, Blocks: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sent := time.Now()
	for range 3 {
		conn.WriteToUDP(payload('b'), to)
	}
	type frame struct {
		at      time.Time
		data    []byte
		wireLen int
	}
	var got []frame
	// lo shows each datagram twice: leaving and arriving.
	for deadline := time.Now().Add(2 * time.Second); len(got) < 6 && time.Now().Before(deadline); {
		if r.Wait(100 * time.Millisecond) {
			r.Read(func(at time.Time, data []byte, wireLen int) {
				got = append(got, frame{at, bytes.Clone(data), wireLen})
			})
		}
	}
	read := time.Now()
	if len(got) != 6 {
		t.Fatalf("read %d frames, want the 3 sent after New, each seen twice", len(got))
	}
	for i, f := range got {
		// Ethernet header on lo (14) + IPv4 (20) + UDP (8) + 1000.
		if len(f.data) != snap || f.wireLen != 1042 {
			t.Errorf("frame %d: %d bytes kept of %d, want %d of 1042", i, len(f.data), f.wireLen, snap)
		}
		if binary.BigEndian.Uint16(f.data[12:14]) != 0x0800 || binary.BigEndian.Uint16(f.data[14+22:14+24]) != uint16(to.Port) || f.data[snap-1] != 'b' {
			t.Errorf("frame %d is not the datagram sent: % x", i, f.data)
		}
		if f.at.Before(sent) || f.at.After(read) {
			t.Errorf("frame %d stamped %v, outside the send (%v) and the read (%v)", i, f.at, sent, read)
		}
	}
	if frames, drops, err := r.Stats(); err != nil || frames < 6 || drops != 0 {
		t.Errorf("stats: %d frames, %d drops, %v", frames, drops, err)
	}
	if r.Ready() {
		t.Error("a block is ready with nothing more sent")
	}
	if r.Wait(10 * time.Millisecond) {
		t.Error("Wait saw a block with nothing sent")
	}
}

// TestNewRefusesANonPacketSocket names what is wrong, and closes the fd.
func TestNewRefusesANonPacketSocket(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	_, err = New(fd, Config{Snap: 64, Retire: time.Millisecond, BlockSize: 4096, Blocks: 1})
	if err == nil || !strings.Contains(err.Error(), "not a packet socket") {
		t.Errorf("New on a UDP socket: %v", err)
	}
	if _, err := unix.Getsockname(fd); err != unix.EBADF {
		t.Errorf("New left the fd open: %v", err)
	}
}

// TestWaitSurvivesItsInterfaceGoingDown: the interface going down sets an
// error on the socket that poll reports at once until it is read; Wait
// reads it (it would spin otherwise), keeps its timeout, and reads frames
// again once the interface is back.
func TestWaitSurvivesItsInterfaceGoingDown(t *testing.T) {
	inOwnNetns(t)
	fd, err := Socket("lo")
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(fd, Config{Snap: 64, Retire: 2 * time.Millisecond, BlockSize: 64 << 10, Blocks: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	if err := netlink.LinkSetDown(lo); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if r.Wait(50 * time.Millisecond) {
		t.Error("a block was handed over on a link that is down")
	}
	if d := time.Since(start); d < 50*time.Millisecond || d > time.Second {
		t.Errorf("Wait(50ms) took %v", d)
	}
	if e, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || e != 0 {
		t.Errorf("the socket's error is still set after Wait: %d %v", e, err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.WriteToUDP([]byte("back"), conn.LocalAddr().(*net.UDPAddr))
	if !r.Wait(time.Second) {
		t.Fatal("no frame after the link came back up")
	}
}
