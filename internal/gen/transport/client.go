package transport

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Options shape a test.
type Options struct {
	// Test is "tcp" or "udp".
	Test string
	// Duration bounds the test (default 10 s); Bytes (TCP) ends it when
	// that much is sent.
	Duration time.Duration
	Bytes    int64
	// Omit is a warm-up sent before Duration and left out of the figures
	// (iperf3 -O: past slow start); its TCP intervals are kept, marked.
	Omit time.Duration
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
	// Congestion sets TCP_CONGESTION on the sending streams.
	Congestion string
	// Reverse has the server send and the client receive (iperf3 -R), on
	// the streams the client opened; SndBuf and Congestion then apply to
	// the server's side, RcvBuf and Window to the client's.
	Reverse bool
	// Rate (bits/s) and Size (bytes) of UDP datagrams; SizeMax makes
	// Size the largest payload the path's MTU leaves unfragmented, found
	// per trial.
	Rate    uint64
	Size    int
	SizeMax bool `json:",omitempty"`
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
		o.Size = DefaultDatagram
	}
}

// Request is the control request for a test of these options (after
// their defaults): what the server is told, and what its Check bounds.
func (o Options) Request() Request {
	o.defaults()
	req := Request{Magic: Magic, Test: o.Test, Streams: o.Streams, Duration: o.Duration, Bytes: o.Bytes, Omit: o.Omit,
		RcvBuf: o.RcvBuf, Window: o.Window, Rate: o.Rate, Size: o.Size}
	if o.Test == "udp" {
		req.Streams = 0
	}
	if o.Reverse {
		// The server sends: it takes the sender's settings, and samples
		// TCP_INFO at the client's interval; the receiving side's are
		// the client's own.
		req.Reverse, req.SndBuf, req.Congestion, req.Interval = true, o.SndBuf, o.Congestion, o.Interval
		req.RcvBuf, req.Window = 0, 0
	}
	return req
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
	if o.Test == "udp" && o.SizeMax {
		if o.Size, err = maxDatagram(ctx, d, pr.Server); err != nil {
			return tr.Fail(ctx, "connect", fmt.Errorf("data socket: %w", err))
		}
	}
	req := o.Request()
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
			// -w sizes both ends, as in iperf: here the sending one, or
			// the receiving one in a reverse test (before the handshake,
			// which fixes the window scale).
			if o.Reverse {
				set(unix.SOL_SOCKET, unix.SO_RCVBUF, cmp.Or(o.RcvBuf, o.Window))
			} else {
				set(unix.SOL_SOCKET, unix.SO_SNDBUF, cmp.Or(o.SndBuf, o.Window))
			}
			// Before connecting, TCP_MAXSEG also bounds the MSS this end
			// announces, so it holds for the server's sending too.
			set(unix.IPPROTO_TCP, unix.TCP_MAXSEG, o.MSS)
			if serr == nil && o.Congestion != "" && !o.Reverse {
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
		st := newStream(conn.(*net.TCPConn))
		streams = append(streams, st)
		if o.Reverse && o.Window > 0 && st.fd >= 0 {
			unix.SetsockoptInt(st.fd, unix.IPPROTO_TCP, unix.TCP_WINDOW_CLAMP, o.Window)
		}
		var cookie [8]byte
		binary.BigEndian.PutUint64(cookie[:], acc.Cookie)
		if _, err := st.c.Write(cookie[:]); err != nil {
			return tr.Fail(ctx, "io", err)
		}
	}
	if o.Reverse {
		return reverseTCP(ctx, tr, cc, c, streams, data, o)
	}
	snd, err := send(ctx, streams, sendSpec{Bytes: o.Bytes, Duration: o.Duration, Omit: o.Omit, Interval: o.Interval, Preamble: 8})
	if err != nil {
		return tr.Fail(ctx, "io", err)
	}
	c.SetDeadline(time.Now().Add(grace))
	if err := cc.send(Done{Magic: Magic, Sent: snd.Sent}); err != nil {
		return tr.Fail(ctx, "io", err)
	}
	var rep Report
	if err := cc.recv(&rep); err != nil {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: final report: %w", err))
	}
	s := tr.Done(fmt.Sprintf("received %d of %d bytes, cc %s", rep.Received, snd.Sent, snd.Congestion))
	return tcpSample(s, o, snd, rep.Received, data.Addr())
}

// reverseTCP is a test in which the server sends on the client's streams
// (iperf3 -R): the client counts what arrives, and the figures of the
// sending side come from the server's TCP_INFO, in its report.
func reverseTCP(ctx context.Context, tr *load.Trace, cc *ctrl, c net.Conn, streams []*tcpStream, data netip.AddrPort, o Options) result.Sample {
	var k counter
	var wg sync.WaitGroup
	bound := time.Now().Add(o.Omit + o.Duration + grace)
	for _, st := range streams {
		st.c.SetReadDeadline(bound)
		wg.Add(1)
		go func() {
			defer wg.Done()
			k.drain(st.c)
		}()
	}
	wg.Wait() // every stream read to the server's FIN (or the bound)
	received := k.bytes.Load()
	c.SetDeadline(time.Now().Add(grace))
	if err := cc.send(Done{Magic: Magic, Received: received}); err != nil {
		return tr.Fail(ctx, "io", err)
	}
	var rep Report
	if err := cc.recv(&rep); err != nil {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: final report: %w", err))
	}
	if rep.Error != "" {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: the server's sending failed: %s", rep.Error))
	}
	if rep.Sender == nil {
		return tr.Fail(ctx, "protocol", fmt.Errorf("transport: the server's report has no sender figures (does it support reverse tests?)"))
	}
	snd := *rep.Sender
	s := tr.Done(fmt.Sprintf("reverse: received %d of %d bytes, server cc %s", received, snd.Sent, snd.Congestion))
	return tcpSample(s, o, snd, received, data.Addr())
}

// tcpSample fills a completed TCP trial's sample from the sender's
// figures and the bytes the receiver counted; a short transfer fails it.
// Its times are the measured part's, after any warm-up.
func tcpSample(s result.Sample, o Options, snd SenderStats, received int64, dst netip.Addr) result.Sample {
	if snd.Omitted > 0 && snd.Elapsed <= snd.Omitted {
		s.Err = fmt.Sprintf("the test ended within its %v warm-up (%d bytes sent)", o.Omit, snd.Sent)
		s.ErrKind = result.ErrProtocol
		return s
	}
	s.TotalNS = int64(snd.Elapsed - snd.Omitted)
	s.BytesOut, s.BytesIn = snd.Sent, received // the sender's and the receiver's counts, whichever way
	s.Intervals = snd.Intervals
	s.Metrics = tcpMetrics(o, snd, received, dst)
	if received != snd.Sent {
		who := "the server"
		if o.Reverse {
			who = "this client"
		}
		s.Err = fmt.Sprintf("short transfer: %s received %d of the %d bytes sent", who, received, snd.Sent)
		s.ErrKind = result.ErrProtocol
	}
	return s
}

// tcpMetrics computes a TCP test's figures, RFC 6349 included, over the
// measured part: the warm-up's bytes, time, retransmits and RTTs are left
// out (bytes_sent and bytes_received stay the whole test's).
func tcpMetrics(o Options, snd SenderStats, received int64, dst netip.Addr) map[string]float64 {
	start, last := snd.Start, snd.Last
	warm := int64(start.Acked - snd.Base.Acked) // delivered in the warm-up
	elapsed := snd.Elapsed - snd.Omitted
	sent := snd.Sent - warm
	m := map[string]float64{
		"bytes_sent":      float64(snd.Sent),
		"bytes_received":  float64(received),
		"transfer_s":      elapsed.Seconds(),
		"throughput_mbps": float64(received-warm) * 8 / elapsed.Seconds() / 1e6,
		"retransmits":     float64(last.Retrans - start.Retrans),
		"streams":         float64(o.Streams),
		"mss":             float64(last.MSS),
		"cwnd":            float64(last.Cwnd),
	}
	if snd.Omitted > 0 {
		m["omit_s"] = snd.Omitted.Seconds()
		m["omitted_bytes"] = float64(warm)
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
	for _, iv := range snd.Intervals {
		if iv.RTTUS > 0 && !iv.Omitted {
			rttSum += float64(iv.RTTUS)
			rttN++
		}
	}
	if rttN > 0 {
		m["rtt_ms"] = rttSum / rttN / 1000
	}
	if last.MinRTT > 0 {
		m["min_rtt_ms"] = float64(last.MinRTT) / 1000
		if rttN > 0 {
			// RFC 6349 5.3: buffer delay % = (average RTT - baseline RTT) / baseline RTT.
			// Over a baseline of microseconds (loopback, a lab without
			// delay) the share is huge by construction: the milliseconds
			// the queues added say it plainly.
			m["buffer_delay_pct"] = (rttSum/rttN - float64(last.MinRTT)) / float64(last.MinRTT) * 100
			m["buffer_delay_ms"] = (rttSum/rttN - float64(last.MinRTT)) / 1000
		}
	}
	if tx := last.SentBytes - start.SentBytes; tx > 0 {
		// RFC 6349 5.2: TCP efficiency % = (transmitted - retransmitted) / transmitted.
		m["tcp_efficiency_pct"] = float64(tx-(last.RetransBytes-start.RetransBytes)) / float64(tx) * 100
	}
	if o.Bottleneck > 0 && last.MSS > 0 {
		ideal := IdealTCPRate(o.Bottleneck, int(last.MSS), path.OfAddr(dst), last.Timestamps)
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
	ip := p.Kind().HeaderBytes
	payload := mss
	return float64(rate) * float64(payload) / float64(payload+tcp+ip+38)
}

// tcpiOptTimestamps is TCPI_OPT_TIMESTAMPS from linux/tcp.h.
const tcpiOptTimestamps = 1
