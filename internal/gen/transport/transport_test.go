package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/servetest"
)

func startServer(t *testing.T, p path.Path) netip.AddrPort {
	t.Helper()
	r, err := ListenAndServe(context.Background(), []netip.Addr{p.Loopback()}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return netip.AddrPortFrom(p.Loopback(), uint16(r.Port))
}

func TestTCPThroughputOverEachPath(t *testing.T) {
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		t.Run(string(p), func(t *testing.T) {
			srv := startServer(t, p)
			pr := &Probe{Server: srv, Path: p, Opts: Options{Test: "tcp", Duration: 400 * time.Millisecond, Streams: 2,
				Interval: 100 * time.Millisecond, Bottleneck: 10e9}}
			s := pr.Do(context.Background(), 0)
			if !s.OK() {
				t.Fatalf("%s: %s", s.Err, s.Marker)
			}
			m := s.Metrics
			if s.BytesOut == 0 || s.BytesIn != s.BytesOut || m["throughput_mbps"] < 10 {
				t.Errorf("sent %d received %d, %g Mbit/s", s.BytesOut, s.BytesIn, m["throughput_mbps"])
			}
			if len(s.Intervals) < 3 || m["streams"] != 2 || m["rtt_ms"] <= 0 || m["mss"] <= 0 {
				t.Errorf("intervals %d metrics %v", len(s.Intervals), m)
			}
			var acked int64
			for _, iv := range s.Intervals {
				acked += iv.Bytes
			}
			if acked != s.BytesOut {
				t.Errorf("intervals add up to %d bytes, %d were sent", acked, s.BytesOut)
			}
			if e := m["tcp_efficiency_pct"]; e <= 0 || e > 100 {
				t.Errorf("TCP efficiency %g%%", e)
			}
			// The same queueing as a share of the baseline and in ms.
			if pct, ms := m["buffer_delay_pct"], m["buffer_delay_ms"]; ms < 0 || math.Abs(ms/(m["min_rtt_ms"])*100-pct) > 1e-6*max(1, pct) {
				t.Errorf("buffer delay %g%% but %g ms over a baseline of %g ms", pct, ms, m["min_rtt_ms"])
			}
			if r := m["transfer_time_ratio"]; r <= 0 {
				t.Errorf("transfer time ratio %g", r)
			}
			if !strings.Contains(s.Marker, ", cc "+Congestion()) {
				t.Errorf("marker %q does not name the congestion control in use (%s)", s.Marker, Congestion())
			}
			if !strings.Contains(s.Remote, srv.Addr().String()) {
				t.Errorf("remote %s", s.Remote)
			}
		})
	}
}

func TestTCPAmountMSSAndWindow(t *testing.T) {
	srv := startServer(t, path.IPv4)
	pr := &Probe{Server: srv, Path: path.IPv4, Opts: Options{Test: "tcp", Duration: 20 * time.Second, Bytes: 3 << 20,
		MSS: 1000, Window: 64 << 10, RcvBuf: 128 << 10, SndBuf: 256 << 10, Congestion: "reno"}}
	s := pr.Do(context.Background(), 0)
	if !s.OK() || s.BytesOut != 3<<20 || s.BytesIn != 3<<20 {
		t.Fatalf("%s: sent %d received %d", s.Err, s.BytesOut, s.BytesIn)
	}
	if !strings.Contains(s.Marker, "cc reno") {
		t.Errorf("marker %q: --congestion reno not used", s.Marker)
	}
	if mss := s.Metrics["mss"]; mss > 1000 || mss < 500 {
		t.Errorf("MSS %g, asked 1000", mss)
	}
	if s.TotalNS > int64(10*time.Second) {
		t.Errorf("3 MB took %v", time.Duration(s.TotalNS))
	}
}

// TestReverseTCP: the server sends an amount on the client's two streams;
// the client counts every byte, the server's TCP_INFO gives the sending
// figures, and the sending settings reach the server's side (congestion
// control) or bound it from the client's (MSS announced in the SYN).
func TestReverseTCP(t *testing.T) {
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		t.Run(string(p), func(t *testing.T) {
			srv := startServer(t, p)
			const amount = 3 << 20
			pr := &Probe{Server: srv, Path: p, Opts: Options{Test: "tcp", Reverse: true, Duration: 20 * time.Second, Bytes: amount,
				Streams: 2, Interval: 50 * time.Millisecond, MSS: 1000, Window: 64 << 10, SndBuf: 256 << 10, Congestion: "reno"}}
			s := pr.Do(context.Background(), 0)
			if !s.OK() || s.BytesOut != amount || s.BytesIn != amount {
				t.Fatalf("%s: server sent %d, client received %d", s.Err, s.BytesOut, s.BytesIn)
			}
			if !strings.Contains(s.Marker, "reverse") || !strings.Contains(s.Marker, "server cc reno") {
				t.Errorf("marker %q", s.Marker)
			}
			m := s.Metrics
			if mss := m["mss"]; mss > 1000 || mss < 500 {
				t.Errorf("the server's MSS %g, the client announced 1000", mss)
			}
			if m["rtt_ms"] <= 0 || m["streams"] != 2 || m["bytes_received"] != amount || len(s.Intervals) == 0 {
				t.Errorf("intervals %d metrics %v", len(s.Intervals), m)
			}
			var acked int64
			for _, iv := range s.Intervals {
				acked += iv.Bytes
			}
			if acked != amount {
				t.Errorf("the server's intervals add up to %d bytes, %d were sent", acked, amount)
			}
		})
	}
}

// TestTCPWarmupIsLeftOut runs 0.3 s of warm-up before 0.4 s measured, each
// way: the warm-up's intervals are kept and marked, and the figures are
// the measured part's alone.
func TestTCPWarmupIsLeftOut(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			srv := startServer(t, path.IPv4)
			pr := &Probe{Server: srv, Path: path.IPv4, Opts: Options{Test: "tcp", Reverse: reverse, Duration: 400 * time.Millisecond,
				Omit: 300 * time.Millisecond, Interval: 100 * time.Millisecond}}
			s := pr.Do(context.Background(), 0)
			if !s.OK() {
				t.Fatalf("%s: %s", s.Err, s.Marker)
			}
			m := s.Metrics
			var warm, measured, all int64
			var nWarm, nMeasured int
			for i, iv := range s.Intervals {
				all += iv.Bytes
				if iv.Omitted {
					if nMeasured > 0 {
						t.Fatalf("interval %d is in the warm-up after measured ones: %+v", i, s.Intervals)
					}
					warm += iv.Bytes
					nWarm++
				} else {
					measured += iv.Bytes
					nMeasured++
				}
			}
			if nWarm < 1 || nMeasured < 2 || all != s.BytesOut {
				t.Fatalf("%d warm-up and %d measured intervals adding up to %d of %d bytes: %+v", nWarm, nMeasured, all, s.BytesOut, s.Intervals)
			}
			// The warm-up ends with the first interval that ends at or after
			// 300 ms (a loaded machine wakes the interval timer late).
			end := time.Duration(s.Intervals[nWarm-1].EndNS)
			before := time.Duration(s.Intervals[nWarm-1].StartNS)
			if end < 300*time.Millisecond || before >= 300*time.Millisecond {
				t.Errorf("the warm-up ends at %v (its last interval from %v), asked 300ms", end, before)
			}
			if o := m["omit_s"]; math.Abs(o-end.Seconds()) > 1e-6 || m["omitted_bytes"] != float64(warm) {
				t.Errorf("omit_s %g, omitted_bytes %g, the warm-up's intervals carry %d", o, m["omitted_bytes"], warm)
			}
			// The measured part runs from the warm-up's end (however late
			// the sample that ended it) to the transfer's end, the last
			// interval's, and lasts at least the 0.4 s asked: the writers'
			// end moves with a late warm-up's.
			last := time.Duration(s.Intervals[len(s.Intervals)-1].EndNS)
			if ts := m["transfer_s"]; ts < 0.4 || time.Duration(s.TotalNS) != last-end || math.Abs(ts-(last-end).Seconds()) > 1e-9 {
				t.Errorf("transfer_s %g (total %v), intervals to %v, warm-up to %v: the measured part is 0.4 s after the warm-up",
					ts, time.Duration(s.TotalNS), last, end)
			}
			// Throughput is the measured bytes over the measured time.
			got := m["throughput_mbps"] * 1e6 / 8 * m["transfer_s"]
			if math.Abs(got-float64(measured)) > 2 || m["bytes_received"] != float64(s.BytesOut) {
				t.Errorf("throughput covers %.0f bytes, the measured intervals %d (metrics %v)", got, measured, m)
			}
		})
	}
}

func TestUDPWarmupIsLeftOut(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			srv := startServer(t, path.IPv4)
			// 10 Mbit/s of 1000-byte datagrams: 250 in the 0.2 s warm-up,
			// 375 in the 0.3 s measured.
			pr := &Probe{Server: srv, Path: path.IPv4, Opts: Options{Test: "udp", Reverse: reverse, Duration: 300 * time.Millisecond,
				Omit: 200 * time.Millisecond, Rate: 10e6, Size: 1000, RcvBuf: 1 << 20}}
			s := pr.Do(context.Background(), 0)
			if !s.OK() {
				t.Fatalf("%s (%s)", s.Err, s.Marker)
			}
			m := s.Metrics
			if m["omitted_datagrams"] != 250 || m["omit_s"] != 0.2 {
				t.Errorf("omitted %g datagrams in %g s, want 250 in 0.2", m["omitted_datagrams"], m["omit_s"])
			}
			if sent := m["datagrams_sent"]; sent != 375 {
				t.Errorf("sent %g measured datagrams, want 375", sent)
			}
			if m["datagrams_received"]+m["lost"] != m["datagrams_sent"] || m["loss_pct"] > 1 || s.BytesIn != int64(m["datagrams_received"])*1000 {
				t.Errorf("bytes in %d, metrics %v", s.BytesIn, m)
			}
			offeredAsPaced(t, s, 625, 800*time.Microsecond, 200*time.Millisecond)
		})
	}
}

// offeredAsPaced checks a UDP trial's sending time and offered rate
// against the pacing of n datagrams gap apart after a warm-up of omit:
// the last was sent no more than 1 ms before it was due (pace sends what
// is due within a millisecond at once), and after it by no more than
// send_late_ms, the most the sender says it fell behind (a loaded
// machine wakes it late, then it catches up); offered_mbps is the
// measured datagrams over that time.
func offeredAsPaced(t *testing.T, s result.Sample, n int64, gap, omit time.Duration) {
	t.Helper()
	m := s.Metrics
	late, ok := m["send_late_ms"]
	if !ok || late < 0 {
		t.Fatalf("send_late_ms %g (%v): the sender's lateness not recorded", late, ok)
	}
	lastDue := time.Duration(n-1)*gap - omit
	took := time.Duration(s.TotalNS)
	if took < lastDue-time.Millisecond || took > lastDue+time.Duration(late*1e6)+time.Microsecond {
		t.Errorf("sent for %v: the last datagram was due at %v, the sender %g ms late at most", took, lastDue, late)
	}
	if want := m["datagrams_sent"] * float64(m["datagram_size"]) * 8 / took.Seconds() / 1e6; math.Abs(m["offered_mbps"]-want) > 1e-9*want {
		t.Errorf("offered %g Mbit/s, %g sent over %v", m["offered_mbps"], m["datagrams_sent"], took)
	}
}

// TestReverseWithUnknownCongestionControl: the server cannot use the
// algorithm asked for; the trial fails saying so, and nothing is sent.
func TestReverseWithUnknownCongestionControl(t *testing.T) {
	srv := startServer(t, path.IPv4)
	pr := &Probe{Server: srv, Path: path.IPv4, Opts: Options{Test: "tcp", Reverse: true, Duration: time.Second, Congestion: "nosuchcc"}}
	s := pr.Do(context.Background(), 0)
	if s.OK() || !strings.Contains(s.Err, `congestion control "nosuchcc" on the server`) || s.BytesIn != 0 {
		t.Errorf("err %q, %d bytes in", s.Err, s.BytesIn)
	}
}

// openTest opens a control connection to srv and has req accepted.
func openTest(t *testing.T, srv netip.AddrPort, req Request) (net.Conn, *ctrl, Accept) {
	t.Helper()
	c, err := net.Dial("tcp4", srv.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cc := newCtrl(c)
	req.Magic = Magic
	cc.send(req)
	var acc Accept
	if err := cc.recv(&acc); err != nil || acc.Error != "" {
		t.Fatalf("%v %q", err, acc.Error)
	}
	return c, cc, acc
}

// TestReverseSendsOnlyOnTheTestsStreams: a data connection without the
// test's cookie is closed unsent, so a reverse test cannot be turned on
// anyone but the client that asked for it.
func TestReverseSendsOnlyOnTheTestsStreams(t *testing.T) {
	srv := startServer(t, path.IPv4)
	_, _, acc := openTest(t, srv, Request{Test: "tcp", Streams: 1, Duration: time.Second, Reverse: true, Interval: 100 * time.Millisecond})
	d, err := net.Dial("tcp4", netip.AddrPortFrom(srv.Addr(), uint16(acc.Port)).String())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var wrong [8]byte
	binary.BigEndian.PutUint64(wrong[:], acc.Cookie^0xff)
	d.Write(wrong[:])
	d.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(d); len(b) != 0 || err != nil {
		t.Errorf("a stream without the cookie got %d bytes (%v)", len(b), err)
	}
}

// TestUDPLossAndJitter: datagrams at a rate, client to server and reversed
// (the server sends to the client's socket, whose receiver counts as the
// server's would).
func TestUDPLossAndJitter(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		for _, p := range []path.Path{path.IPv4, path.IPv6} {
			t.Run(fmt.Sprintf("%s/reverse=%v", p, reverse), func(t *testing.T) {
				srv := startServer(t, p)
				pr := &Probe{Server: srv, Path: p, Opts: Options{Test: "udp", Reverse: reverse, Duration: 500 * time.Millisecond, Rate: 10e6, Size: 1000, RcvBuf: 1 << 20}}
				s := pr.Do(context.Background(), 0)
				if !s.OK() || strings.Contains(s.Marker, "reverse") != reverse {
					t.Fatalf("%s (%s)", s.Err, s.Marker)
				}
				m := s.Metrics
				// 10 Mbit/s of 1000-byte datagrams for 0.5 s is 625 datagrams,
				// one every 800 µs.
				if sent := m["datagrams_sent"]; sent != 625 {
					t.Errorf("sent %g datagrams", sent)
				}
				if m["loss_pct"] < 0 || m["loss_pct"] > 1 || m["datagrams_received"]+m["lost"] != m["datagrams_sent"] {
					t.Errorf("loss on loopback: %v", m)
				}
				offeredAsPaced(t, s, 625, 800*time.Microsecond, 0)
				if _, ok := m["jitter_ms"]; !ok || m["duplicates"] != 0 || s.BytesIn != int64(m["datagrams_received"])*1000 {
					t.Errorf("bytes in %d, metrics %v", s.BytesIn, m)
				}
			})
		}
	}
}

// TestReverseUDPSendsOnlyToTheClientsHost: a hello from another host (here
// 127.0.0.2, for a control connection from 127.0.0.1) is not answered; the
// server says so instead of sending.
func TestReverseUDPSendsOnlyToTheClientsHost(t *testing.T) {
	defer func(d time.Duration) { helloWait = d }(helloWait)
	helloWait = time.Second
	srv := startServer(t, path.IPv4)
	c, cc, acc := openTest(t, srv, Request{Test: "udp", Rate: 1e6, Size: 100, Duration: time.Second, Reverse: true, Interval: time.Second})
	other, err := net.DialUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.2:0")),
		net.UDPAddrFromAddrPort(netip.AddrPortFrom(srv.Addr(), uint16(acc.Port))))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.Write(helloDatagram(acc.Cookie))
	other.SetReadDeadline(time.Now().Add(3 * time.Second))
	got := make(chan int, 1)
	go func() {
		n, _ := other.Read(make([]byte, 2000))
		got <- n
	}()
	var rep Report
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if err := cc.recv(&rep); err != nil || !strings.Contains(rep.Error, "no hello") || rep.UDPSent != nil {
		t.Errorf("report %+v, %v", rep, err)
	}
	if n := <-got; n > 0 {
		t.Errorf("the other host got a %d-byte datagram", n)
	}
}

func TestNotAV6labServer(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	servetest.Each(t, ln, func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH_9.2\r\n") })
	pr := &Probe{Server: ln.Addr().(*net.TCPAddr).AddrPort(), Path: path.IPv4, Opts: Options{Test: "tcp", Duration: time.Second}}
	s := pr.Do(context.Background(), 0)
	if s.OK() || !strings.Contains(s.Err, "not a v6lab transport server") || !strings.Contains(s.Err, "SSH-2.0") {
		t.Errorf("err %q", s.Err)
	}
}

func TestServerRefusesAbsurdTests(t *testing.T) {
	srv := startServer(t, path.IPv4)
	for want, req := range map[string]Request{
		"streams 1000: want 1 to 128":       {Test: "tcp", Streams: 1000, Duration: time.Second},
		"duration 2h0m0s":                   {Test: "tcp", Streams: 1, Duration: 2 * time.Hour},
		"rate 1000000000000 bit/s":          {Test: "udp", Rate: 1e12, Size: 1000, Duration: time.Second},
		"datagram size 8: want 32 to 65507": {Test: "udp", Rate: 1e6, Size: 8, Duration: time.Second},
		`test "icmp": want tcp or udp`:      {Test: "icmp", Duration: time.Second},
		"buffer and window: want 0 to":      {Test: "tcp", Streams: 1, Duration: time.Second, Window: 1 << 30},
		`congestion "cubic;rm -r"`:          {Test: "tcp", Streams: 1, Duration: time.Second, Reverse: true, Interval: time.Second, Congestion: "cubic;rm -r"},
		"interval 1ms: want at least 10ms":  {Test: "tcp", Streams: 1, Duration: time.Second, Reverse: true, Interval: time.Millisecond},
		"at most 3600 are reported":         {Test: "tcp", Streams: 1, Duration: time.Hour, Reverse: true, Interval: 10 * time.Millisecond},
		"unless the test is reverse":        {Test: "tcp", Streams: 1, Duration: time.Second, SndBuf: 1 << 20},
		"omit -1s: want 0 to 59m59s":        {Test: "tcp", Streams: 1, Duration: time.Second, Omit: -time.Second},
		"omit 1h0m0s: want 0 to 59m59s":     {Test: "tcp", Streams: 1, Duration: time.Second, Omit: time.Hour},
		"not of one that sends 1000 bytes":  {Test: "tcp", Streams: 1, Duration: time.Second, Omit: time.Second, Bytes: 1000},
	} {
		c, err := net.Dial("tcp4", srv.String())
		if err != nil {
			t.Fatal(err)
		}
		cc := newCtrl(c)
		req.Magic = Magic
		cc.send(req)
		var acc Accept
		if err := cc.recv(&acc); err != nil || !strings.Contains(acc.Error, want) {
			t.Errorf("%+v: %v, %q; want %q", req, err, acc.Error, want)
		}
		c.Close()
	}
	// Garbage on the control port is dropped without an answer.
	c, _ := net.Dial("tcp4", srv.String())
	io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if b, _ := io.ReadAll(c); len(b) != 0 {
		t.Errorf("the server answered garbage with %q", b)
	}
	c.Close()
}

func datagram(cookie uint64, seq, sent int64) []byte {
	b := make([]byte, 100)
	binary.BigEndian.PutUint64(b[0:8], cookie)
	binary.BigEndian.PutUint64(b[8:16], uint64(seq))
	binary.BigEndian.PutUint64(b[16:24], uint64(sent))
	return b
}

func TestReceiverCountsLossDuplicatesReorderingAndJitter(t *testing.T) {
	r := newReceiver(7, time.Second, 0)
	now := int64(1e9)
	// seq 0..9, with 3 lost, 5 arriving after 6, 2 twice, and a foreign one.
	for i, seq := range []int64{0, 1, 2, 2, 4, 6, 5, 7, 8, 9} {
		transit := int64(1e6 + 2e6*(i%2)) // 1 or 3 ms
		r.datagram(datagram(7, seq, now-transit), now)
		now += 1e6
	}
	r.datagram(datagram(8, 3, now), now)
	st := r.stats(10)
	if st.Received != 9 || st.Duplicates != 1 || st.Reordered != 1 || st.Lost != 1 || st.HighestSeq != 9 || r.foreign != 1 {
		t.Errorf("stats %+v foreign %d", st, r.foreign)
	}
	if st.DelayVarNS != 2e6 {
		t.Errorf("delay variation %d ns, want 2 ms", st.DelayVarNS)
	}
	// More sent than seen: the tail counts as lost, never above 100%.
	if st := r.stats(20); st.Lost != 11 || math.Abs(LossPct(st.Lost, 20)-55) > 1e-9 {
		t.Errorf("tail loss %+v", st)
	}
	if LossPct(50, 10) != 100 || LossPct(-1, 10) != 0 || LossPct(0, 0) != 0 {
		t.Error("loss percentage out of 0..100")
	}
}

// TestReaderTakesWhatArrivedBeforeItsEnd: datagrams queued in the socket
// when the test ends (here all of them: the end came before the reader
// first ran, as on a loaded machine) are counted, not lost; and a reader
// waiting on an empty socket stops when told.
func TestReaderTakesWhatArrivedBeforeItsEnd(t *testing.T) {
	pc, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	kernelStamps(pc)
	out, err := net.DialUDP("udp4", nil, pc.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	const n = 50
	for seq := range int64(n) {
		out.Write(datagram(7, seq, time.Now().UnixNano()))
	}
	rx := newReceiver(7, time.Second, 0)
	stop := make(chan struct{})
	close(stop)
	<-readDatagrams(pc, rx, stop, nil)
	if st := rx.stats(n); st.Received != n || st.Lost != 0 {
		t.Errorf("%d of %d queued datagrams counted, %d lost", st.Received, n, st.Lost)
	}
	rx = newReceiver(7, time.Second, 0)
	stop = make(chan struct{})
	stopReading(pc, stop, readDatagrams(pc, rx, stop, nil))
	if rx.received != 0 {
		t.Errorf("%d datagrams from an empty socket", rx.received)
	}
}

func TestReceiverLeavesTheWarmupOut(t *testing.T) {
	r := newReceiver(7, time.Second, 3)
	now := int64(1e9)
	for _, seq := range []int64{0, 1, 2, 3, 5, 6} { // 4 lost
		r.datagram(datagram(7, seq, now-1e6), now)
		now += 1e6
	}
	st := r.stats(7)
	if st.Received != 3 || st.Omitted != 3 || st.Lost != 1 || r.bytes != 300 {
		t.Fatalf("%+v, bytes %d", st, r.bytes)
	}
	if got := LossPct(st.Lost, 7-3); got != 25 {
		t.Errorf("loss %g%%, 1 of the 4 measured", got)
	}
}

// TestPaceCatchesUpAfterAStall: on a clock of the test's (a synctest
// bubble), the sender stalls 60 ms in datagram 300's write, as a loaded
// machine stalls it; the datagrams due meanwhile leave at once when it
// resumes, none leaves more than 1 ms early, all 625 are sent, and late
// says by how much it fell behind, counting from the warm-up's end only.
func TestPaceCatchesUpAfterAStall(t *testing.T) {
	const gap = 800 * time.Microsecond // 1000 bytes at 10 Mbit/s
	for _, c := range []struct {
		from int64
		late time.Duration
	}{{250, 60 * time.Millisecond}, {400, 0}} {
		t.Run(fmt.Sprintf("from=%d", c.from), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var at []time.Duration
				t0 := time.Now()
				write := func(b []byte) error {
					at = append(at, time.Since(t0))
					if binary.BigEndian.Uint64(b[8:16]) == 300 {
						time.Sleep(60 * time.Millisecond)
					}
					return nil
				}
				p := pace(context.Background(), write, 7, 1000, 10e6, 500*time.Millisecond, c.from)
				if p.sent != 625 || p.errs != 0 || p.late != c.late || p.elapsed < 624*gap-time.Millisecond || p.elapsed > 624*gap {
					t.Errorf("%+v, want 625 sent, the last at %v (up to 1 ms early), %v late", p, 624*gap, c.late)
				}
				for seq, sent := range at {
					due := time.Duration(seq) * gap
					if sent < due-time.Millisecond || (seq > 300 && due < 300*time.Millisecond && sent != 300*time.Millisecond) {
						t.Errorf("datagram %d due at %v sent at %v", seq, due, sent)
					}
				}
			})
		})
	}
}

func TestWarmupDatagrams(t *testing.T) {
	for _, c := range []struct {
		omit time.Duration
		size int
		rate uint64
		want int64
	}{
		{0, 1000, 1e6, 0},
		{time.Second, 1000, 8e6, 1000}, // the one due at exactly 1 s is measured
		{time.Second + 1, 1000, 8e6, 1001},
		{10 * time.Millisecond, 1460, 1e6, 1},
	} {
		if got := warmupDatagrams(c.omit, c.size, c.rate); got != c.want {
			t.Errorf("%v at %d bit/s of %d bytes: %d, want %d", c.omit, c.rate, c.size, got, c.want)
		}
	}
}

func TestReceiverJitterIsRFC3550(t *testing.T) {
	r := newReceiver(7, time.Second, 0)
	now := int64(1e9)
	for seq := range int64(10) {
		transit := 1e6 + 2e6*(seq%2) // 1 or 3 ms: |D| = 2 ms at every arrival after the first
		r.datagram(datagram(7, seq, now-transit), now)
		now += 1e6
	}
	// J = J + (|D| - J)/16 from 0, nine times with |D| = 2 ms.
	want := 2e6 * (1 - math.Pow(15.0/16, 9))
	if st := r.stats(10); math.Abs(st.JitterNS-want) > 1 || st.Lost != 0 || st.Reordered != 0 {
		t.Errorf("jitter %g ns, want %g; %+v", st.JitterNS, want, st)
	}
}

func TestIdealTCPRate(t *testing.T) {
	// RFC 6349 3.3.1's example shape: 100 Mbit/s Ethernet, MSS 1460, IPv4, no timestamps: 94.9 Mbit/s.
	if got := IdealTCPRate(100e6, 1460, path.IPv4, false) / 1e6; math.Abs(got-94.93) > 0.01 {
		t.Errorf("ipv4 %g", got)
	}
	v4 := IdealTCPRate(100e6, 1400, path.IPv4, true)
	v6 := IdealTCPRate(100e6, 1400, path.IPv6, true)
	t4 := IdealTCPRate(100e6, 1400, path.SixIn4, true)
	if !(v4 > v6 && v6 > t4) {
		t.Errorf("header overhead order: %g %g %g", v4, v6, t4)
	}
}

// FuzzControlRecv reads arbitrary bytes as control messages, as a server
// reads a request (lines of at most maxRequestLine) and as a client reads
// an accept. Seeds stay small: the engine mutates every byte of a seed,
// and a seed of tens of KiB slowed it to a few hundred inputs a second;
// one seed just over the server's line cap covers the cap.
func FuzzControlRecv(f *testing.F) {
	f.Add([]byte(`{"magic":"v6lab-transport/1","port":5,"cookie":3}` + "\n"))
	f.Add([]byte(`{"magic":"v6lab-transport/1","test":"tcp","streams":1,"duration":1000000000}` + "\n"))
	f.Add([]byte("SSH-2.0\r\n"))
	f.Add(bytes.Repeat([]byte("a"), maxRequestLine+1))
	f.Fuzz(func(t *testing.T, b []byte) {
		rw := struct {
			io.Reader
			io.Writer
		}{bytes.NewReader(b), io.Discard}
		server := newCtrl(rw)
		server.max = maxRequestLine
		var req Request
		if err := server.recv(&req); err == nil {
			_ = req.Check()
		}
		var acc Accept
		rw.Reader = bytes.NewReader(b)
		_ = newCtrl(rw).recv(&acc)
	})
}

func FuzzReceiver(f *testing.F) {
	f.Add(datagram(1, 0, 5), datagram(1, 1<<40, 0))
	f.Add(datagram(1, 1<<61, 5), datagram(1, 3, -9))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		r := newReceiver(1, time.Millisecond, 0)
		r.datagram(a, 10)
		r.datagram(b, 1e12)
		r.datagram(a, 2e12)
		st := r.stats(5)
		if st.Lost < 0 || LossPct(st.Lost, 5) > 100 || len(r.perInterval) > r.maxIntervals {
			t.Fatalf("stats %+v", st)
		}
	})
}

// The last interval ends at the last arrival: the few datagrams still on
// their way when the sender stopped join the interval before instead of
// being shown as one of their own; a longer tail keeps its own interval, cut
// to its real length. An interval's figures are its bytes over its time.
func TestUDPIntervalsEndAtTheLastArrival(t *testing.T) {
	r := newReceiver(7, time.Second, 0)
	t0 := int64(1e9)
	arrive := func(at int64, seqs ...int64) {
		for _, seq := range seqs {
			r.datagram(datagram(7, seq, t0+at), t0+at)
		}
	}
	arrive(0, 0, 1)        // interval 0
	arrive(999e6, 2)       // still interval 0
	arrive(1000e6+40e3, 3) // 40 µs late: joins interval 0
	st := r.stats(4)
	if st.LastNS != 1000e6+40e3 {
		t.Fatalf("last arrival %d ns after the first", st.LastNS)
	}
	iv := udpIntervals(&st)
	if len(iv) != 1 || iv[0].EndNS != st.LastNS || iv[0].Bytes != 400 {
		t.Errorf("a 40 µs tail: %+v, want one interval of 400 bytes to %d", iv, st.LastNS)
	}
	arrive(1500e6, 4) // half an interval more: an interval of its own, half as long
	st = r.stats(5)
	iv = udpIntervals(&st)
	if len(iv) != 2 || iv[0].EndNS != 1e9 || iv[0].Bytes != 300 || iv[1].StartNS != 1e9 || iv[1].EndNS != 1500e6 || iv[1].Bytes != 200 {
		t.Errorf("a half-interval tail: %+v", iv)
	}
	// A receiver that does not say where it ended: whole intervals.
	st.LastNS = 0
	if iv := udpIntervals(&st); len(iv) != 2 || iv[1].EndNS != 2e9 {
		t.Errorf("without last_ns: %+v", iv)
	}
}

// TestFragmentsOfADatagram: a payload fits one packet up to the MTU less
// the headers (1472 over IPv4, 1452 over IPv6 at 1500), and past that
// leaves as fragments of 8-byte multiples.
func TestFragmentsOfADatagram(t *testing.T) {
	for _, c := range []struct {
		size, mtu int
		ipv6      bool
		want      int
	}{
		{1472, 1500, false, 1}, {1473, 1500, false, 2}, {1452, 1500, true, 1}, {1460, 1500, true, 2},
		{1460, 1280, true, 2}, {1232, 1280, true, 1}, {3000, 1500, false, 3}, {100, 0, true, 1},
	} {
		if got := Fragments(c.size, c.mtu, c.ipv6); got != c.want {
			t.Errorf("%d bytes over %d (ipv6 %v): %d fragments, want %d", c.size, c.mtu, c.ipv6, got, c.want)
		}
	}
	if MaxPayload(1500, false) != 1472 || MaxPayload(1500, true) != 1452 {
		t.Error("max payloads")
	}
}
