package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/result"
)

// tcpStream is one data connection and what has been written on it.
type tcpStream struct {
	c    *net.TCPConn
	fd   int
	sent atomic.Int64
}

func newStream(c *net.TCPConn) *tcpStream {
	st := &tcpStream{c: c, fd: -1}
	if rc, err := c.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { st.fd = int(fd) })
	}
	return st
}

// SenderStats are a TCP test's figures as its sending side measured them
// from its streams' TCP_INFO: the client's in a normal test, the server's
// (sent in its Report) in a reverse one.
type SenderStats struct {
	Sent    int64         `json:"sent"`
	Elapsed time.Duration `json:"elapsed"` // first write to last byte acknowledged
	// Omitted is the warm-up at the start of Elapsed that the figures
	// leave out (0: none).
	Omitted time.Duration `json:"omitted,omitempty"`
	// Base, Start and Last are TCP_INFO summed over the streams when
	// sending began, when the warm-up ended (Base without one) and when
	// the last byte was acknowledged.
	Base      TCPInfo           `json:"base"`
	Start     TCPInfo           `json:"start"`
	Last      TCPInfo           `json:"last"`
	Intervals []result.Interval `json:"intervals,omitempty"`
	// Congestion is the congestion control the streams used.
	Congestion string `json:"congestion,omitempty"`
}

// sendSpec is what a sender is asked to do.
type sendSpec struct {
	// Bytes ends sending when that much is written (0: no amount);
	// Duration bounds it, after a warm-up of Omit whose intervals are
	// marked omitted; Interval spaces the TCP_INFO samples.
	Bytes                    int64
	Duration, Omit, Interval time.Duration
	// Preamble bytes were written on each stream before the test (the
	// client's cookies): they are not data, so counting starts when they
	// are acknowledged.
	Preamble int
}

// send writes on every stream until the spec's amount or time is reached,
// samples TCP_INFO per interval, and waits (up to grace) until every byte
// is acknowledged: the transfer's end, as RFC 6349 times it.
func send(ctx context.Context, streams []*tcpStream, sp sendSpec) (SenderStats, error) {
	base := tcpInfos(streams)
	for deadline := time.Now().Add(ctrlDeadline); base.Acked < uint64(sp.Preamble*len(streams)) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
		base = tcpInfos(streams)
	}
	t0 := time.Now()
	end := t0.Add(sp.Omit + sp.Duration)
	var budget atomic.Int64
	budget.Store(sp.Bytes)
	var wg sync.WaitGroup
	var writeErr error
	var errOnce sync.Once
	for _, st := range streams {
		st.c.SetWriteDeadline(end)
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 128<<10)
			for ctx.Err() == nil {
				n := len(buf)
				if sp.Bytes > 0 {
					left := budget.Add(-int64(n))
					if left < 0 {
						n += int(left)
						if n <= 0 {
							break
						}
					}
				}
				w, err := st.c.Write(buf[:n])
				st.sent.Add(int64(w))
				if err != nil {
					if !errors.Is(err, syscall.EAGAIN) && !isTimeout(err) {
						errOnce.Do(func() { writeErr = err })
					}
					break
				}
			}
			st.c.CloseWrite()
		}()
	}
	// Intervals from TCP_INFO while the writers run: every Interval
	// through the warm-up, one at its end, then every Interval after it.
	var intervals []result.Interval
	prev := base
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	omitEnd := t0.Add(sp.Omit)
	measuring := sp.Omit <= 0
	start, startAt := base, time.Duration(0)
	sample := func() {
		now := tcpInfos(streams)
		iv := result.Interval{StartNS: 0, EndNS: int64(time.Since(t0)), Omitted: !measuring}
		if len(intervals) > 0 {
			iv.StartNS = intervals[len(intervals)-1].EndNS
		}
		iv.Bytes = int64(now.Acked - prev.Acked)
		iv.Retrans = now.Retrans - prev.Retrans
		iv.RTTUS, iv.Cwnd = now.RTT, now.Cwnd
		intervals = append(intervals, iv)
		prev = now
		if !measuring && !time.Now().Before(omitEnd) {
			measuring, start, startAt = true, now, time.Duration(iv.EndNS)
		}
	}
	nextSample := func() time.Duration {
		now := time.Now()
		if now.Before(omitEnd) {
			next := t0.Add((now.Sub(t0)/sp.Interval + 1) * sp.Interval)
			if next.After(omitEnd) {
				next = omitEnd
			}
			return time.Until(next)
		}
		return time.Until(omitEnd.Add((now.Sub(omitEnd)/sp.Interval + 1) * sp.Interval))
	}
	timer := time.NewTimer(nextSample())
wait:
	for {
		select {
		case <-timer.C:
			sample()
			timer.Reset(nextSample())
		case <-finished:
			break wait
		}
	}
	timer.Stop()
	var sent int64
	for _, st := range streams {
		sent += st.sent.Load()
	}
	// The transfer ends when every byte sent is acknowledged.
	var last TCPInfo
	for deadline := time.Now().Add(grace); ; time.Sleep(200 * time.Microsecond) {
		last = tcpInfos(streams)
		if int64(last.Acked-base.Acked) >= sent || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
	}
	elapsed := time.Since(t0)
	if len(intervals) == 0 || intervals[len(intervals)-1].EndNS < int64(elapsed) {
		sample()
	}
	// A last sliver of an interval joins the one before (of its kind).
	if n := len(intervals); n > 1 && intervals[n-1].EndNS-intervals[n-1].StartNS < int64(sp.Interval/10) && intervals[n-1].Omitted == intervals[n-2].Omitted {
		last, prev := intervals[n-1], &intervals[n-2]
		prev.EndNS, prev.Bytes, prev.Retrans = last.EndNS, prev.Bytes+last.Bytes, prev.Retrans+last.Retrans
		prev.RTTUS, prev.Cwnd = last.RTTUS, last.Cwnd
		intervals = intervals[:n-1]
	}
	// Each stream's FIN counts one byte in bytes_acked: it is not data.
	var acked int64
	for _, iv := range intervals {
		acked += iv.Bytes
	}
	if over := acked - sent; over > 0 && over <= int64(len(streams)) {
		intervals[len(intervals)-1].Bytes -= over
	}
	if !measuring { // sending ended within the warm-up
		start, startAt = last, elapsed
	}
	st := SenderStats{Sent: sent, Elapsed: elapsed, Omitted: startAt, Base: base, Start: start, Last: last, Intervals: intervals, Congestion: "?"}
	if streams[0].fd >= 0 {
		if v, err := unix.GetsockoptString(streams[0].fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err == nil {
			st.Congestion = strings.TrimRight(v, "\x00")
		}
	}
	if writeErr != nil {
		return st, fmt.Errorf("data stream: %w", writeErr)
	}
	return st, nil
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TCPInfo is TCP_INFO summed over a test's streams.
type TCPInfo struct {
	Acked        uint64 `json:"acked"`
	SentBytes    uint64 `json:"sent_bytes"`
	RetransBytes uint64 `json:"retrans_bytes"`
	Retrans      uint32 `json:"retrans"`
	// RTT is the mean smoothed RTT over streams, MinRTT the least (µs).
	RTT        uint32 `json:"rtt_us"`
	MinRTT     uint32 `json:"min_rtt_us"`
	Cwnd       uint32 `json:"cwnd"`
	MSS        uint32 `json:"mss"`
	Timestamps bool   `json:"timestamps"`
}

func tcpInfos(streams []*tcpStream) TCPInfo {
	var t TCPInfo
	n := 0
	for _, s := range streams {
		if s.fd < 0 {
			continue
		}
		i, err := unix.GetsockoptTCPInfo(s.fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		if err != nil {
			continue
		}
		n++
		t.Acked += i.Bytes_acked
		t.SentBytes += i.Bytes_sent
		t.RetransBytes += i.Bytes_retrans
		t.Retrans += i.Total_retrans
		t.RTT += i.Rtt
		t.Cwnd += i.Snd_cwnd
		t.MSS = i.Snd_mss
		t.Timestamps = i.Options&tcpiOptTimestamps != 0
		if t.MinRTT == 0 || (i.Min_rtt > 0 && i.Min_rtt < t.MinRTT) {
			t.MinRTT = i.Min_rtt
		}
	}
	if n > 0 {
		t.RTT /= uint32(n) // mean smoothed RTT over streams
	}
	return t
}
