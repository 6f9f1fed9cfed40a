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
	base := preambleAcked(streams, sp.Preamble)
	t0 := time.Now()
	w := startWriters(ctx, streams, sp.Bytes, t0.Add(sp.Omit+sp.Duration))
	smp := &sampler{streams: streams, t0: t0, omitEnd: t0.Add(sp.Omit), every: sp.Interval, duration: sp.Duration,
		prev: base, measuring: sp.Omit <= 0, start: base}
	smp.until(w.finished)
	var sent int64
	for _, st := range streams {
		sent += st.sent.Load()
	}
	last := allAcked(ctx, streams, base, sent)
	elapsed := time.Since(t0)
	smp.end(elapsed, last, sent)
	st := SenderStats{Sent: sent, Elapsed: elapsed, Omitted: smp.startAt, Base: base, Start: smp.start, Last: last,
		Intervals: smp.intervals, Congestion: congestionOf(streams[0])}
	if w.err != nil {
		return st, fmt.Errorf("data stream: %w", w.err)
	}
	return st, nil
}

// preambleAcked waits (up to ctrlDeadline) until the preamble bytes of
// every stream are acknowledged, and returns TCP_INFO then: the data's
// count starts there, since the preamble is not data.
func preambleAcked(streams []*tcpStream, preamble int) TCPInfo {
	base := tcpInfos(streams)
	for deadline := time.Now().Add(ctrlDeadline); base.Acked < uint64(preamble*len(streams)) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
		base = tcpInfos(streams)
	}
	return base
}

// writers are the goroutines writing a test's data, one per stream.
type writers struct {
	finished chan struct{} // closed when every writer has stopped
	// err is the first write error that was not the end's deadline; read
	// it once finished is closed.
	err  error
	once sync.Once
}

// startWriters starts a writer on every stream, until end (each stream's
// write deadline), the context's end, an error, or bytes written in all
// (0: no amount); each writer then closes its stream's sending side.
func startWriters(ctx context.Context, streams []*tcpStream, bytes int64, end time.Time) *writers {
	w := &writers{finished: make(chan struct{})}
	var budget atomic.Int64
	budget.Store(bytes)
	var wg sync.WaitGroup
	for _, st := range streams {
		st.c.SetWriteDeadline(end)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.write(ctx, st, bytes, &budget)
			st.c.CloseWrite()
		}()
	}
	go func() {
		wg.Wait()
		close(w.finished)
	}()
	return w
}

// write sends on one stream, taking its share of a byte budget shared by
// all streams when the test has an amount, so the streams together write
// exactly that much.
func (w *writers) write(ctx context.Context, st *tcpStream, bytes int64, budget *atomic.Int64) {
	buf := make([]byte, 128<<10)
	for ctx.Err() == nil {
		n := len(buf)
		if bytes > 0 {
			left := budget.Add(-int64(n))
			if left < 0 {
				n += int(left)
				if n <= 0 {
					return
				}
			}
		}
		m, err := st.c.Write(buf[:n])
		st.sent.Add(int64(m))
		if err != nil {
			if !errors.Is(err, syscall.EAGAIN) && !isTimeout(err) {
				w.once.Do(func() { w.err = err })
			}
			return
		}
	}
}

// sampler takes a send's intervals from TCP_INFO while the writers run:
// every interval through the warm-up, one at its end, then every interval
// after it. The warm-up ends at the sample that ends it, which a loaded
// machine takes late: the measured part then starts there, and the
// writers' end moves with it, so that it still lasts duration.
type sampler struct {
	streams     []*tcpStream
	t0, omitEnd time.Time
	every       time.Duration
	duration    time.Duration
	intervals   []result.Interval
	prev        TCPInfo // at the end of the last interval
	measuring   bool    // the warm-up is over
	// start is TCP_INFO when the warm-up ended, startAt when that was
	// (since t0).
	start   TCPInfo
	startAt time.Duration
}

// until samples on time until finished is closed.
func (s *sampler) until(finished <-chan struct{}) {
	timer := time.NewTimer(s.next())
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			s.sample(time.Since(s.t0))
			timer.Reset(s.next())
		case <-finished:
			return
		}
	}
}

// sample ends an interval at at (since t0); the first to end at or past
// the warm-up's end starts the measured part: the grid of intervals and
// the writers' end, duration later, are moved to it.
func (s *sampler) sample(at time.Duration) {
	now := tcpInfos(s.streams)
	iv := result.Interval{StartNS: 0, EndNS: int64(at), Omitted: !s.measuring}
	if len(s.intervals) > 0 {
		iv.StartNS = s.intervals[len(s.intervals)-1].EndNS
	}
	iv.Bytes = int64(now.Acked - s.prev.Acked)
	iv.Retrans = now.Retrans - s.prev.Retrans
	iv.RTTUS, iv.Cwnd = now.RTT, now.Cwnd
	s.intervals = append(s.intervals, iv)
	s.prev = now
	if end := s.t0.Add(at); !s.measuring && !end.Before(s.omitEnd) {
		s.measuring, s.start, s.startAt, s.omitEnd = true, now, at, end
		for _, st := range s.streams {
			st.c.SetWriteDeadline(end.Add(s.duration))
		}
	}
}

// next is the time to the next interval's end: on the grid from t0
// through the warm-up (whose end is one), on the grid from its end after.
func (s *sampler) next() time.Duration {
	now := time.Now()
	if now.Before(s.omitEnd) {
		next := s.t0.Add((now.Sub(s.t0)/s.every + 1) * s.every)
		if next.After(s.omitEnd) {
			next = s.omitEnd
		}
		return time.Until(next)
	}
	return time.Until(s.omitEnd.Add((now.Sub(s.omitEnd)/s.every + 1) * s.every))
}

// end closes the intervals once every byte sent is acknowledged (or the
// wait gave up): a last interval up to elapsed, a last sliver joined to
// the interval before it, the streams' FINs taken out of the bytes, and a
// send that ended within the warm-up measured from its end.
func (s *sampler) end(elapsed time.Duration, last TCPInfo, sent int64) {
	if len(s.intervals) == 0 || s.intervals[len(s.intervals)-1].EndNS < int64(elapsed) {
		s.sample(elapsed)
	}
	intervals := s.intervals
	// A last sliver of an interval joins the one before (of its kind).
	if n := len(intervals); n > 1 && intervals[n-1].EndNS-intervals[n-1].StartNS < int64(s.every/10) && intervals[n-1].Omitted == intervals[n-2].Omitted {
		tail, prev := intervals[n-1], &intervals[n-2]
		prev.EndNS, prev.Bytes, prev.Retrans = tail.EndNS, prev.Bytes+tail.Bytes, prev.Retrans+tail.Retrans
		prev.RTTUS, prev.Cwnd = tail.RTTUS, tail.Cwnd
		intervals = intervals[:n-1]
	}
	// Each stream's FIN counts one byte in bytes_acked: it is not data.
	var acked int64
	for _, iv := range intervals {
		acked += iv.Bytes
	}
	if over := acked - sent; over > 0 && over <= int64(len(s.streams)) {
		intervals[len(intervals)-1].Bytes -= over
	}
	s.intervals = intervals
	if !s.measuring { // sending ended within the warm-up
		s.start, s.startAt = last, elapsed
	}
}

// allAcked waits (up to grace, or the context's end) until the streams'
// acknowledged bytes since base reach sent: the transfer ends there.
func allAcked(ctx context.Context, streams []*tcpStream, base TCPInfo, sent int64) TCPInfo {
	for deadline := time.Now().Add(grace); ; time.Sleep(200 * time.Microsecond) {
		last := tcpInfos(streams)
		if int64(last.Acked-base.Acked) >= sent || time.Now().After(deadline) || ctx.Err() != nil {
			return last
		}
	}
}

// congestionOf is the congestion control a stream uses ("?" when it
// cannot be read).
func congestionOf(st *tcpStream) string {
	if st.fd >= 0 {
		if v, err := unix.GetsockoptString(st.fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err == nil {
			return strings.TrimRight(v, "\x00")
		}
	}
	return "?"
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
