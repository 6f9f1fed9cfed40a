package transport

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/result"
)

// udpTest sends datagrams of o.Size bytes at o.Rate for o.Duration, paced
// against the clock (bursts catch up after a late wake-up), then asks the
// server what arrived.
func udpTest(ctx context.Context, tr *load.Trace, cc *ctrl, c net.Conn, d path.Dialer, data netip.AddrPort, acc Accept, o Options) result.Sample {
	conn, err := d.Dial(ctx, "udp", data)
	if err != nil {
		return tr.Fail(ctx, "connect", fmt.Errorf("data socket: %w", err))
	}
	defer conn.Close()
	uc := conn.(*net.UDPConn)
	if o.SndBuf > 0 {
		uc.SetWriteBuffer(o.SndBuf)
	}
	buf := make([]byte, o.Size)
	binary.BigEndian.PutUint64(buf[0:8], acc.Cookie)
	gap := time.Duration(float64(o.Size*8) / float64(o.Rate) * 1e9)
	t0 := time.Now()
	end := t0.Add(o.Duration)
	var sent, sendErrs int64
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
		if _, err := uc.Write(buf); err != nil {
			sendErrs++ // ENOBUFS, ECONNREFUSED from an ICMP error: the datagram is lost
		}
		sent++
	}
	elapsed := time.Since(t0)
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
	u := rep.UDP
	s := tr.Done(fmt.Sprintf("%d of %d datagrams", u.Received, sent))
	s.TotalNS = int64(elapsed)
	s.BytesOut, s.BytesIn = sent*int64(o.Size), rep.Received
	s.Metrics = udpMetrics(o, sent, sendErrs, elapsed, rep)
	for i, b := range u.Intervals {
		s.Intervals = append(s.Intervals, result.Interval{StartNS: int64(i) * u.IntervalNS, EndNS: int64(i+1) * u.IntervalNS, Bytes: b})
	}
	if u.Received == 0 {
		s.Err = fmt.Sprintf("the receiver saw none of the %d datagrams sent", sent)
		s.ErrKind = "loss"
	}
	return s
}

// udpMetrics are a UDP test's figures; loss is clamped to 0..100%.
func udpMetrics(o Options, sent, sendErrs int64, elapsed time.Duration, rep Report) map[string]float64 {
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
	m["loss_pct"] = LossPct(u.Lost, max(sent, u.HighestSeq+1))
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
