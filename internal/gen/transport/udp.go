package transport

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// udpTest sends datagrams of o.Size bytes at o.Rate for o.Duration, paced
// against the clock (bursts catch up after a late wake-up), then asks the
// server what arrived; or, reversed, has the server send them here.
func udpTest(ctx context.Context, tr *load.Trace, cc *ctrl, c net.Conn, d path.Dialer, data netip.AddrPort, acc Accept, o Options) result.Sample {
	conn, err := d.Dial(ctx, "udp", data)
	if err != nil {
		return tr.Fail(ctx, "connect", fmt.Errorf("data socket: %w", err))
	}
	defer conn.Close()
	uc := conn.(*net.UDPConn)
	if o.Reverse {
		return reverseUDP(ctx, tr, cc, c, uc, acc, o)
	}
	if o.SndBuf > 0 {
		uc.SetWriteBuffer(o.SndBuf)
	}
	sndEff := sockBuf(uc, unix.SO_SNDBUF)
	pd := pace(ctx, func(b []byte) error { _, err := uc.Write(b); return err }, acc.Cookie, o.Size, o.Rate, o.Omit+o.Duration,
		warmupDatagrams(o.Omit, o.Size, o.Rate))
	sent := pd.sent
	c.SetDeadline(time.Now().Add(grace))
	if err := cc.send(Done{Magic: Magic, Sent: sent * int64(o.Size), Datagrams: sent}); err != nil {
		return tr.Fail(ctx, "io", err)
	}
	var rep Report
	if err := cc.recv(&rep); err != nil {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: final report: %w", err))
	}
	if rep.UDP == nil {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: the server's report has no UDP figures"))
	}
	s := tr.Done(fmt.Sprintf("%d of %d datagrams", rep.UDP.Received, sent))
	s = bufMetrics(udpSample(s, o, pd, rep), sndEff, rep.UDP.RcvBuf)
	// What the datagrams were on the wire: whole, or in fragments (a
	// 1460-byte payload is 2 IPv6 fragments over a 1500-byte MTU).
	if ipv6 := data.Addr().Unmap().Is6(); s.Metrics != nil {
		if mtu := pathMTU(uc, ipv6); mtu > 0 {
			s.Metrics["path_mtu"] = float64(mtu)
			s.Metrics["ip_fragments"] = float64(Fragments(o.Size, mtu, ipv6))
		}
	}
	return s
}

// sockBuf reads a socket's buffer size back from the kernel (0 when it
// cannot): what the trial ran with, not what was asked.
func sockBuf(c syscall.Conn, opt int) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0
	}
	v := 0
	raw.Control(func(fd uintptr) { v, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, opt) })
	return v
}

// bufMetrics records the sender's and receiver's buffers as set.
func bufMetrics(s result.Sample, snd, rcv int) result.Sample {
	if s.Metrics == nil {
		return s
	}
	if snd > 0 {
		s.Metrics["sndbuf_effective"] = float64(snd)
	}
	if rcv > 0 {
		s.Metrics["rcvbuf_effective"] = float64(rcv)
	}
	return s
}

// reverseUDP has the server send the datagrams to this socket: it says
// hello (the cookie) from it until the first datagram arrives, so the
// server learns where to send (only ever to the control connection's own
// host), and counts what arrives as the server would.
func reverseUDP(ctx context.Context, tr *load.Trace, cc *ctrl, c net.Conn, uc *net.UDPConn, acc Accept, o Options) result.Sample {
	if o.RcvBuf > 0 {
		uc.SetReadBuffer(o.RcvBuf)
	}
	rcvEff := sockBuf(uc, unix.SO_RCVBUF)
	kernelStamps(uc)
	rx := newReceiver(acc.Cookie, time.Second, warmupDatagrams(o.Omit, o.Size, o.Rate))
	stop, first := make(chan struct{}), make(chan struct{})
	done := readDatagrams(uc, rx, stop, first)
	hello := helloDatagram(acc.Cookie)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(ctrlDeadline); time.Now().Before(deadline); {
			uc.Write(hello)
			select {
			case <-first:
				return
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	c.SetDeadline(time.Now().Add(o.Omit + o.Duration + grace + ctrlDeadline))
	var rep Report
	err := cc.recv(&rep)
	if err == nil {
		time.Sleep(200 * time.Millisecond) // datagrams still in flight land
	}
	stopReading(uc, stop, done)
	switch {
	case err != nil:
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: the server's report: %w", err))
	case rep.Error != "":
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: the server's sending failed: %s", rep.Error))
	case rep.UDPSent == nil:
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: the server's report has no sending figures (does it support reverse tests?)"))
	}
	snd := rep.UDPSent
	st := rx.stats(snd.Datagrams)
	c.SetDeadline(time.Now().Add(grace))
	if err := cc.send(Done{Magic: Magic, Received: rx.bytes, Datagrams: st.Received}); err != nil {
		return tr.Fail(ctx, "io", err)
	}
	here := Report{Received: rx.bytes, Elapsed: time.Duration(rx.last - rx.first), UDP: &st}
	s := tr.Done(fmt.Sprintf("reverse: %d of %d datagrams", st.Received, snd.Datagrams))
	pd := paced{sent: snd.Datagrams, errs: snd.SendErrors, elapsed: snd.Elapsed, late: -1}
	if snd.Late != nil {
		pd.late = *snd.Late
	}
	return bufMetrics(udpSample(s, o, pd, here), snd.SndBuf, rcvEff)
}

// udpSample fills a completed UDP trial's sample from the sender's counts
// and the receiver's report; a receiver that saw nothing fails it. The
// warm-up's datagrams (sent first, o.Omit long) are left out: sent and
// elapsed become the measured part's.
func udpSample(s result.Sample, o Options, pd paced, rep Report) result.Sample {
	u := rep.UDP
	warm := min(warmupDatagrams(o.Omit, o.Size, o.Rate), pd.sent)
	sent, elapsed := pd.sent-warm, max(pd.elapsed-o.Omit, 0)
	if warm > 0 && sent == 0 {
		s.Err = fmt.Sprintf("the test ended within its %v warm-up", o.Omit)
		s.ErrKind = result.ErrProtocol
		return s
	}
	s.TotalNS = int64(elapsed)
	s.BytesOut, s.BytesIn = sent*int64(o.Size), rep.Received
	s.Metrics = udpMetrics(o, sent, warm, pd.errs, elapsed, rep)
	if pd.late >= 0 { // -1: a server that does not say
		s.Metrics["send_late_ms"] = float64(pd.late) / 1e6
	}
	s.Intervals = udpIntervals(u)
	if u.Received == 0 {
		s.Err = fmt.Sprintf("the receiver saw none of the %d datagrams sent", sent)
		s.ErrKind = result.ErrLoss
	}
	return s
}

// udpIntervals are the receiver's intervals as a sample holds them. The
// last ends at the last arrival, not a whole interval later; when that
// leaves it under a tenth of an interval (the datagrams still on their way
// as the sender stopped) it joins the one before, so that a few late
// datagrams are not shown as an interval of their own, nearly empty or, over
// its few µs, of an absurd rate.
func udpIntervals(u *UDPStats) []result.Interval {
	var out []result.Interval
	for i, b := range u.Intervals {
		out = append(out, result.Interval{StartNS: int64(i) * u.IntervalNS, EndNS: int64(i+1) * u.IntervalNS, Bytes: b})
	}
	n := len(out)
	if n == 0 || u.LastNS <= 0 || u.LastNS >= out[n-1].EndNS || u.LastNS < out[n-1].StartNS {
		return out // a receiver that does not say where it ended (an older v6lab), or a lost count
	}
	out[n-1].EndNS = u.LastNS
	if n > 1 && u.LastNS-out[n-1].StartNS < u.IntervalNS/10 {
		out[n-2].EndNS, out[n-2].Bytes = u.LastNS, out[n-2].Bytes+out[n-1].Bytes
		out = out[:n-1]
	}
	return out
}

// paced is what pace did: datagrams sent, and refused by the kernel
// (ENOBUFS, or ECONNREFUSED after an ICMP error: lost); elapsed, from the
// first one's due time to the last one's send (its write returned); and
// late, the most any datagram from the warm-up's end on was sent after
// its due time (0 when none was).
type paced struct {
	sent, errs    int64
	elapsed, late time.Duration
}

// pace sends datagrams of size bytes at rate for duration through write,
// each stamped with the cookie, its sequence number and its send time.
// It sleeps only when the next is due more than a millisecond ahead, so
// a datagram leaves up to 1 ms early; after a late wake-up, those due
// meanwhile leave at once (a burst) and late says by how much the sender
// fell behind, from datagram number from on: a sender slower than its
// rate is v6lab's, not the path's.
func pace(ctx context.Context, write func([]byte) error, cookie uint64, size int, rate uint64, duration time.Duration, from int64) paced {
	buf := make([]byte, size)
	binary.BigEndian.PutUint64(buf[0:8], cookie)
	gap := datagramGap(size, rate)
	var p paced
	t0 := time.Now()
	end := t0.Add(duration)
	for seq := int64(0); ctx.Err() == nil; seq++ {
		due := t0.Add(time.Duration(seq) * gap)
		if !due.Before(end) {
			break
		}
		if wait := time.Until(due); wait > time.Millisecond {
			time.Sleep(wait)
		}
		binary.BigEndian.PutUint64(buf[8:16], uint64(seq))
		binary.BigEndian.PutUint64(buf[16:24], uint64(time.Now().UnixNano()))
		if write(buf) != nil {
			p.errs++
		}
		p.sent++
		now := time.Now()
		if late := now.Sub(due); seq >= from && late > p.late {
			p.late = late
		}
		p.elapsed = now.Sub(t0)
	}
	return p
}

// datagramGap is the time between datagrams of size bytes at rate bits/s.
func datagramGap(size int, rate uint64) time.Duration {
	return max(time.Duration(float64(size*8)/float64(rate)*1e9), 1)
}

// warmupDatagrams is how many datagrams pace sends in a warm-up of omit:
// those due before it ends (sequence numbers below the result). Sender and
// receiver both compute it from the request.
func warmupDatagrams(omit time.Duration, size int, rate uint64) int64 {
	if omit <= 0 || rate == 0 {
		return 0
	}
	gap := datagramGap(size, rate)
	return int64((omit + gap - 1) / gap)
}

// helloDatagram is what a reverse UDP client sends to be sent to: the
// cookie and "hello", shorter than a test datagram so that no receiver
// can take it for one.
func helloDatagram(cookie uint64) []byte {
	b := binary.BigEndian.AppendUint64(nil, cookie)
	return append(b, "hello"...)
}

// isHello tells whether b is the hello of the test with this cookie.
func isHello(b []byte, cookie uint64) bool {
	return len(b) == 13 && binary.BigEndian.Uint64(b[0:8]) == cookie && string(b[8:]) == "hello"
}

// udpMetrics are a UDP test's figures over the measured part: sent
// counts the datagrams after the warm-up's warm; loss is clamped to 0..100%.
func udpMetrics(o Options, sent, warm, sendErrs int64, elapsed time.Duration, rep Report) map[string]float64 {
	u := rep.UDP
	m := map[string]float64{
		"datagrams_sent":     float64(sent),
		"datagrams_received": float64(u.Received),
		"send_errors":        float64(sendErrs),
		"lost":               float64(u.Lost),
		"duplicates":         float64(u.Duplicates),
		"reordered":          float64(u.Reordered),
		"offered_mbps":       float64(sent*int64(o.Size)) * 8 / elapsed.Seconds() / 1e6,
		"datagram_size":      float64(o.Size),
	}
	m["rate_set_mbps"] = float64(o.Rate) / 1e6
	for k, v := range map[string]int{"sndbuf_set": o.SndBuf, "rcvbuf_set": o.RcvBuf} {
		if v > 0 {
			m[k] = float64(v)
		}
	}
	m["loss_pct"] = LossPct(u.Lost, max(sent, u.HighestSeq+1-warm))
	if warm > 0 {
		m["omit_s"] = o.Omit.Seconds()
		m["omitted_datagrams"] = float64(warm)
	}
	if u.Received > 1 {
		m["jitter_ms"] = u.JitterNS / 1e6
		m["delay_var_ms"] = float64(u.DelayVarNS) / 1e6
	}
	if rep.Elapsed > 0 {
		m["throughput_mbps"] = float64(rep.Received) * 8 / rep.Elapsed.Seconds() / 1e6
	}
	return m
}

// LossPct is lost out of expected in percent, never below 0 or above 100.
func LossPct(lost, expected int64) float64 {
	if expected <= 0 {
		return 0
	}
	return min(max(float64(lost)/float64(expected)*100, 0), 100)
}
