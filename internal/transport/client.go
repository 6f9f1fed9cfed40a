package transport

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/result"
)

// Options shape a test.
type Options struct {
	// Test is "tcp" or "udp".
	Test string
	// Duration bounds the test (default 10 s); Bytes (TCP) ends it when
	// that much is sent.
	Duration time.Duration
	Bytes    int64
	// Streams is the number of parallel TCP connections (default 1).
	Streams int
	// SndBuf is the client's SO_SNDBUF; RcvBuf the server's SO_RCVBUF.
	SndBuf, RcvBuf int
	// Window is the TCP window, as iperf's -w: it clamps the server's
	// advertised window (TCP_WINDOW_CLAMP) and sizes the server's receive
	// and the client's send buffer unless RcvBuf and SndBuf are given.
	Window int
	// MSS sets TCP_MAXSEG on the client's streams.
	MSS int
	// Congestion sets TCP_CONGESTION on the client's streams.
	Congestion string
	// Rate (bits/s) and Size (bytes) of UDP datagrams.
	Rate uint64
	Size int
	// Interval between per-interval reports (default 1 s).
	Interval time.Duration
	// Bottleneck is the path's bottleneck rate in bits/s, for the RFC 6349
	// transfer time ratio; 0 leaves that figure out.
	Bottleneck uint64
}

func (o *Options) defaults() {
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Streams == 0 {
		o.Streams = 1
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Test == "udp" && o.Size == 0 {
		o.Size = 1460
	}
}

// Probe runs one test per Do against a v6lab transport server: a trial.
type Probe struct {
	Server netip.AddrPort
	Path   path.Path
	Source netip.Addr
	Opts   Options
}

// Do runs one trial and describes it as a sample: TotalNS is the transfer
// time, Metrics and Intervals hold the test's figures.
func (pr *Probe) Do(ctx context.Context, _ int) result.Sample {
	o := pr.Opts
	o.defaults()
	tr := load.Begin(o.Test, pr.Path)
	d := path.Dialer{Path: pr.Path, Source: pr.Source}
	cctx, cancel := context.WithTimeout(ctx, ctrlDeadline)
	c, err := d.Dial(cctx, "tcp", pr.Server)
	cancel()
	if err != nil {
		return tr.Fail(ctx, "connect", err)
	}
	defer c.Close()
	tr.Conn(c)
	stop := load.Deadline(ctx, c)
	defer stop()
	cc := newCtrl(c)
	c.SetDeadline(time.Now().Add(ctrlDeadline))
	req := Request{Magic: Magic, Test: o.Test, Streams: o.Streams, Duration: o.Duration, Bytes: o.Bytes,
		RcvBuf: o.RcvBuf, Window: o.Window, Rate: o.Rate, Size: o.Size}
	if o.Test == "udp" {
		req.Streams = 0
	}
	if err := req.Check(); err != nil {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: %w", err))
	}
	if err := cc.send(req); err != nil {
		return tr.Fail(ctx, "io", err)
	}
	var acc Accept
	if err := cc.recv(&acc); err != nil {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: %s: %w", pr.Server, err))
	}
	if acc.Error != "" {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: the server refused the test: %s", acc.Error))
	}
	if acc.Port <= 0 || acc.Port > 65535 {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: the server gave data port %d", acc.Port))
	}
	data := netip.AddrPortFrom(pr.Server.Addr(), uint16(acc.Port))
	c.SetDeadline(time.Time{})
	var s result.Sample
	if o.Test == "udp" {
		s = udpTest(ctx, tr, cc, c, d, data, acc, o)
	} else {
		s = tcpTest(ctx, tr, cc, c, d, data, acc, o)
	}
	if s.Metrics != nil && acc.Congestion != "" {
		s.Marker += ", server cc " + acc.Congestion
	}
	return s
}

// tcpStream is one data connection and what has been written on it.
type tcpStream struct {
	c    *net.TCPConn
	fd   int
	sent atomic.Int64
}

func tcpTest(ctx context.Context, tr *load.Trace, cc *ctrl, c net.Conn, d path.Dialer, data netip.AddrPort, acc Accept, o Options) result.Sample {
	d.Control = func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) {
			set := func(level, opt, v int) {
				if serr == nil && v > 0 {
					if err := unix.SetsockoptInt(int(fd), level, opt, v); err != nil {
						serr = fmt.Errorf("setsockopt %d: %w", opt, err)
					}
				}
			}
			set(unix.SOL_SOCKET, unix.SO_SNDBUF, cmp.Or(o.SndBuf, o.Window)) // -w sizes both ends, as in iperf
			set(unix.IPPROTO_TCP, unix.TCP_MAXSEG, o.MSS)
			if serr == nil && o.Congestion != "" {
				if err := unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.Congestion); err != nil {
					serr = fmt.Errorf("congestion control %q: %w (see /proc/sys/net/ipv4/tcp_allowed_congestion_control)", o.Congestion, err)
				}
			}
		})
		return serr
	}
	var streams []*tcpStream
	defer func() {
		for _, s := range streams {
			s.c.Close()
		}
	}()
	for range o.Streams {
		dctx, cancel := context.WithTimeout(ctx, ctrlDeadline)
		conn, err := d.Dial(dctx, "tcp", data)
		cancel()
		if err != nil {
			return tr.Fail(ctx, "connect", fmt.Errorf("data stream: %w", err))
		}
		tc := conn.(*net.TCPConn)
		st := &tcpStream{c: tc, fd: -1}
		if rc, err := tc.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { st.fd = int(fd) })
		}
		streams = append(streams, st)
		var cookie [8]byte
		binary.BigEndian.PutUint64(cookie[:], acc.Cookie)
		if _, err := tc.Write(cookie[:]); err != nil {
			return tr.Fail(ctx, "io", err)
		}
	}
	// The cookies' bytes are not data: start counting once they are acked.
	base := tcpInfos(streams)
	for deadline := time.Now().Add(ctrlDeadline); base.acked < uint64(8*len(streams)) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
		base = tcpInfos(streams)
	}
	t0 := time.Now()
	end := t0.Add(o.Duration)
	var budget atomic.Int64
	budget.Store(o.Bytes)
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
				if o.Bytes > 0 {
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
	// Intervals from TCP_INFO while the writers run.
	var intervals []result.Interval
	prev := base
	tick := time.NewTicker(o.Interval)
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	sample := func() {
		now := tcpInfos(streams)
		iv := result.Interval{StartNS: 0, EndNS: int64(time.Since(t0))}
		if len(intervals) > 0 {
			iv.StartNS = intervals[len(intervals)-1].EndNS
		}
		iv.Bytes = int64(now.acked - prev.acked)
		iv.Retrans = now.retrans - prev.retrans
		iv.RTTUS, iv.Cwnd = now.rtt, now.cwnd
		intervals = append(intervals, iv)
		prev = now
	}
wait:
	for {
		select {
		case <-tick.C:
			sample()
		case <-finished:
			break wait
		}
	}
	tick.Stop()
	var sent int64
	for _, st := range streams {
		sent += st.sent.Load()
	}
	// The transfer ends when every byte sent is acknowledged.
	var last tcpInfo
	for deadline := time.Now().Add(grace); ; time.Sleep(200 * time.Microsecond) {
		last = tcpInfos(streams)
		if int64(last.acked-base.acked) >= sent || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
	}
	elapsed := time.Since(t0)
	if len(intervals) == 0 || intervals[len(intervals)-1].EndNS < int64(elapsed) {
		sample()
	}
	// A last sliver of an interval joins the one before.
	if n := len(intervals); n > 1 && intervals[n-1].EndNS-intervals[n-1].StartNS < int64(o.Interval/10) {
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
	if writeErr != nil {
		return tr.Fail(ctx, "io", fmt.Errorf("data stream: %w", writeErr))
	}
	c.SetDeadline(time.Now().Add(grace))
	if err := cc.send(Done{Magic: Magic, Sent: sent}); err != nil {
		return tr.Fail(ctx, "io", err)
	}
	var rep Report
	if err := cc.recv(&rep); err != nil {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: final report: %w", err))
	}
	algo := "?"
	if streams[0].fd >= 0 {
		if v, err := unix.GetsockoptString(streams[0].fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION); err == nil {
			algo = strings.TrimRight(v, "\x00")
		}
	}
	s := tr.Done(fmt.Sprintf("received %d of %d bytes, cc %s", rep.Received, sent, algo))
	s.TotalNS = int64(elapsed)
	s.BytesOut, s.BytesIn = sent, rep.Received
	s.Intervals = intervals
	s.Metrics = tcpMetrics(o, sent, rep.Received, elapsed, base, last, intervals, data.Addr())
	if rep.Received != sent {
		s.Err = fmt.Sprintf("short transfer: the server received %d of the %d bytes sent", rep.Received, sent)
		s.ErrKind = "protocol"
	}
	return s
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// tcpInfo sums TCP_INFO over a test's streams.
type tcpInfo struct {
	acked, sentBytes, retransBytes uint64
	retrans                        uint32
	rtt, minRTT, cwnd, mss         uint32
	timestamps                     bool
}

func tcpInfos(streams []*tcpStream) tcpInfo {
	var t tcpInfo
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
		t.acked += i.Bytes_acked
		t.sentBytes += i.Bytes_sent
		t.retransBytes += i.Bytes_retrans
		t.retrans += i.Total_retrans
		t.rtt += i.Rtt
		t.cwnd += i.Snd_cwnd
		t.mss = i.Snd_mss
		t.timestamps = i.Options&tcpiOptTimestamps != 0
		if t.minRTT == 0 || (i.Min_rtt > 0 && i.Min_rtt < t.minRTT) {
			t.minRTT = i.Min_rtt
		}
	}
	if n > 0 {
		t.rtt /= uint32(n) // mean smoothed RTT over streams
	}
	return t
}

// tcpMetrics computes a TCP test's figures, RFC 6349 included.
func tcpMetrics(o Options, sent, received int64, elapsed time.Duration, base, last tcpInfo, ivs []result.Interval, dst netip.Addr) map[string]float64 {
	m := map[string]float64{
		"bytes_sent":      float64(sent),
		"bytes_received":  float64(received),
		"transfer_s":      elapsed.Seconds(),
		"throughput_mbps": float64(received) * 8 / elapsed.Seconds() / 1e6,
		"retransmits":     float64(last.retrans - base.retrans),
		"streams":         float64(o.Streams),
		"mss":             float64(last.mss),
		"cwnd":            float64(last.cwnd),
	}
	// The trial's settings, for tables keyed by them (the study's).
	for k, v := range map[string]int{"window_set": o.Window, "mss_set": o.MSS, "sndbuf_set": o.SndBuf, "rcvbuf_set": o.RcvBuf} {
		if v > 0 {
			m[k] = float64(v)
		}
	}
	if o.Bytes > 0 {
		m["bytes_set"] = float64(o.Bytes)
	}
	var rttSum, rttN float64
	for _, iv := range ivs {
		if iv.RTTUS > 0 {
			rttSum += float64(iv.RTTUS)
			rttN++
		}
	}
	if rttN > 0 {
		m["rtt_ms"] = rttSum / rttN / 1000
	}
	if last.minRTT > 0 {
		m["min_rtt_ms"] = float64(last.minRTT) / 1000
		if rttN > 0 {
			// RFC 6349 5.3: buffer delay % = (average RTT - baseline RTT) / baseline RTT.
			m["buffer_delay_pct"] = (rttSum/rttN - float64(last.minRTT)) / float64(last.minRTT) * 100
		}
	}
	if tx := last.sentBytes - base.sentBytes; tx > 0 {
		// RFC 6349 5.2: TCP efficiency % = (transmitted - retransmitted) / transmitted.
		m["tcp_efficiency_pct"] = float64(tx-(last.retransBytes-base.retransBytes)) / float64(tx) * 100
	}
	if o.Bottleneck > 0 && last.mss > 0 {
		ideal := IdealTCPRate(o.Bottleneck, int(last.mss), path.OfAddr(dst), last.timestamps)
		m["ideal_mbps"] = ideal / 1e6
		// RFC 6349 5.1: TCP transfer time ratio = actual / ideal transfer time.
		m["transfer_time_ratio"] = elapsed.Seconds() / (float64(sent) * 8 / ideal)
	}
	return m
}

// IdealTCPRate is RFC 6349's maximum achievable TCP throughput on a link of
// rate bits/s: the rate times the share of each Ethernet frame that is TCP
// payload. The headers differ per path: IPv4 20 bytes, IPv6 40, 6in4 60
// (IPv6 inside IPv4); TCP 20, plus 12 with timestamps; Ethernet 38 on the
// wire (header 14, FCS 4, preamble 8, inter-frame gap 12).
func IdealTCPRate(rate uint64, mss int, p path.Path, timestamps bool) float64 {
	tcp := 20
	if timestamps {
		tcp += 12
	}
	ip := map[path.Path]int{path.IPv4: 20, path.IPv6: 40, path.SixIn4: 60}[p]
	payload := mss
	return float64(rate) * float64(payload) / float64(payload+tcp+ip+38)
}

// tcpiOptTimestamps is TCPI_OPT_TIMESTAMPS from linux/tcp.h.
const tcpiOptTimestamps = 1
