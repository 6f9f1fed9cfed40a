package lab

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/sock/path"
)

// fdOf returns a TCP connection's descriptor for getsockopt.
func fdOf(t *testing.T, c net.Conn) uintptr {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	raw.Control(func(f uintptr) { fd = f })
	return fd
}

func TestShapedRateIsExact(t *testing.T) {
	for _, rate := range []uint64{10e6, 100e6} {
		t.Run(strconv.FormatUint(rate/1e6, 10)+"Mbit", func(t *testing.T) {
			l := up(t, Config{Shaping: Shaping{Rate: rate}})
			dst, received := countingSink(t, l, l.Addr.ServerV4)
			conn := dialIn(t, l, path.IPv4, netip.Addr{}, dst)
			defer conn.Close()
			fd := int(fdOf(t, conn))
			// cubic fills the bottleneck queue and keeps it full, so the
			// link never idles; BBR (this kernel's default) keeps the queue
			// short on purpose and a late ACK on a busy test machine then
			// leaves the link idle for a moment.
			if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, "cubic"); err != nil {
				t.Skipf("cubic congestion control unavailable: %v", err)
			}
			conn.Write([]byte{'b'})
			stop := make(chan struct{})
			go func() {
				buf := make([]byte, 64<<10)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := conn.Write(buf); err != nil {
						return
					}
				}
			}()
			defer close(stop)
			time.Sleep(500 * time.Millisecond) // past slow start and the initial burst
			// Bytes the receiver's kernel acknowledged, read at the sender:
			// unlike the sink's read count, it does not lag when the test
			// machine is busy and the sink goroutine runs late. It is read
			// only while the connection is out of loss recovery: in
			// recovery the cumulative ACK waits behind a hole while the
			// link goes on delivering.
			acked := func() (uint64, time.Time, *unix.TCPInfo) {
				deadline := time.Now().Add(3 * time.Second)
				for {
					info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
					if err != nil {
						t.Fatal(err)
					}
					if info.Ca_state == tcpCAOpen {
						return info.Bytes_acked, time.Now(), info
					}
					if time.Now().After(deadline) {
						t.Fatalf("the connection stayed in congestion state %d for 3 s", info.Ca_state)
					}
					time.Sleep(time.Millisecond)
				}
			}
			// No window may carry more than the link allows: that bound
			// holds whatever the machine's load. A window can carry less
			// when the test machine stalls the sender, so the shaper is
			// exact when one of three windows comes within 2% of the rate;
			// a shaper set too slow fails all three.
			var best float64
			var want, mss float64
			b0, t0, _ := acked()
			for window := 0; window < 3; window++ {
				time.Sleep(2500 * time.Millisecond)
				b1, t1, info := acked()
				goodput := float64(b1-b0) * 8 / t1.Sub(t0).Seconds()
				b0, t0 = b1, t1
				// The link carries rate bits/s of wire, as real Ethernet
				// does; of each frame, MSS bytes are payload. Overhead:
				// Ethernet 14 + 24 on the wire (preamble, FCS, gap), IPv4
				// 20, TCP 20, plus 12 of TCP timestamps when in use: with
				// timestamps, 1448/1538 of the rate.
				overhead := 14.0 + WireOverhead + 20 + 20
				if info.Options&tcpiOptTimestamps != 0 {
					overhead += 12
				}
				mss = float64(info.Snd_mss)
				want = float64(rate) * mss / (mss + overhead)
				if goodput > want*1.02 {
					t.Fatalf("goodput %.3f Mbit/s, more than the %.3f Mbit/s a %.0f Mbit/s link carries with MSS %.0f",
						goodput/1e6, want/1e6, float64(rate)/1e6, mss)
				}
				best = max(best, goodput)
				t.Logf("window %d: goodput %.3f Mbit/s, expected %.3f (link %.0f Mbit/s, MSS %.0f)",
					window+1, goodput/1e6, want/1e6, float64(rate)/1e6, mss)
				if goodput >= want*0.98 {
					break
				}
			}
			if received.Load() == 0 {
				t.Fatal("the sink received nothing")
			}
			if best < want*0.98 {
				t.Fatalf("best goodput %.3f Mbit/s in three windows, expected %.3f Mbit/s on a %.0f Mbit/s link with MSS %.0f (%.1f%% off)",
					best/1e6, want/1e6, float64(rate)/1e6, mss, (want-best)/want*100)
			}
		})
	}
}

func TestDelayNeedsNetem(t *testing.T) {
	requireRoot(t)
	_, err := Up(context.Background(), Config{Name: testName(t) + "n", Shaping: Shaping{Delay: 10 * time.Millisecond}})
	if err == nil {
		Down(testName(t) + "n")
		t.Skip("this kernel has netem: delay works")
	}
	if !errors.Is(err, ErrNoNetem) || !strings.Contains(err.Error(), "need the kernel's netem qdisc") {
		t.Fatalf("err %v", err)
	}
	if left, _ := Namespaces(Prefix + testName(t) + "n-"); len(left) != 0 {
		t.Fatalf("a failed lab up left %v", left)
	}
}

func TestShapingValidation(t *testing.T) {
	cases := map[string]Shaping{
		"below 8 kbit/s":                 {Rate: 100},
		"not a share of packets to drop": {Loss: 101},
		"100 drops every packet":         {Loss: 100},
		"jitter needs a delay":           {Jitter: time.Millisecond},
	}
	for want, s := range cases {
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", s, err, want)
		}
	}
}

// From linux/tcp.h: TCPI_OPT_TIMESTAMPS and TCP_CA_Open.
const (
	tcpiOptTimestamps = 1
	tcpCAOpen         = 0
)

// TestReshapeWhileUp: a running lab's links take a new rate on every end,
// read back from the kernel, and return to unshaped.
func TestReshapeWhileUp(t *testing.T) {
	l := up(t, Config{Shaping: Shaping{Rate: 100e6}})
	rates := map[string]Shaping{}
	for _, name := range LinkNames {
		rates[name] = Shaping{Rate: 10e6}
	}
	got, err := Reshape(l.Name, rates)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*len(LinkNames) {
		t.Fatalf("%d link ends: %v", len(got), got)
	}
	for end, q := range got {
		if q != "tbf 10.0 Mbit/s" {
			t.Errorf("%s: %s", end, q)
		}
	}
	got, err = Reshape(l.Name, map[string]Shaping{"r1-r2": {Rate: 100e6, QueueLimit: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	for end, q := range got {
		want := "tbf" // r1-r2 shaped, the others not
		if !strings.HasPrefix(end, "r1-r2 ") {
			want = ""
		}
		if (want != "") != strings.HasPrefix(q, "tbf") {
			t.Errorf("%s: %s", end, q)
		}
	}
	if _, err := Reshape("no-such-lab", rates); err == nil {
		t.Error("reshaping a lab that is not up succeeded")
	}
}

func TestBurstIsTwoFramesOrAQuarterMillisecond(t *testing.T) {
	for _, c := range []struct {
		rate uint64
		mtu  int
		want uint32
	}{
		{10e6, 1500, 2 * 1538},
		{100e6, 1500, 3125}, // 250 µs of 12.5 MB/s, just over two frames
		{100e6, 9000, 2 * 9038},
		{1e9, 1500, 31250},
		{1e9, 0, 31250},
	} {
		if got := Burst(c.rate, c.mtu); got != c.want {
			t.Errorf("Burst(%d, %d) = %d, want %d", c.rate, c.mtu, got, c.want)
		}
	}
}

// TestAShortTransferGetsNoHeadStart: 64 KiB from the server over a
// 100 Mbit/s lab takes at least its frames' time on the wire less the
// bucket (two frames): the shaper lets no more through at once than that.
// (With the old 1 ms bucket the same transfer took 0.6 ms less.)
func TestAShortTransferGetsNoHeadStart(t *testing.T) {
	const rate, size = 100e6, 64 << 10
	l := up(t, Config{Shaping: Shaping{Rate: rate}})
	dst := serve(t, l, l.Addr.ServerV4, func(c net.Conn) {
		c.Write(make([]byte, size))
		c.Close()
	})
	for range 3 {
		time.Sleep(50 * time.Millisecond) // the bucket fills again
		start := time.Now()
		conn := dialIn(t, l, path.IPv4, netip.Addr{}, dst)
		buf := make([]byte, 64<<10)
		var got int
		for {
			n, err := conn.Read(buf)
			got += n
			if err != nil {
				break
			}
		}
		elapsed := time.Since(start)
		conn.Close()
		if got != size {
			t.Fatalf("read %d bytes", got)
		}
		// Each full segment is 1448 bytes of payload in a frame of 1448
		// + 90 on the wire (Ethernet 14 and 24, IPv4 20, TCP 20 + 12).
		frames := (size + 1447) / 1448
		wire := size + frames*90
		const bucket = 3125 // 250 µs of 100 Mbit/s: what may pass at once
		floor := time.Duration(float64(wire-bucket) / (rate / 8) * float64(time.Second))
		t.Logf("64 KiB in %v, the wire's floor %v", elapsed, floor)
		if elapsed < floor {
			t.Errorf("64 KiB arrived in %v, faster than a 100 Mbit/s wire allows (%v with a full bucket)", elapsed, floor)
		}
	}
}
