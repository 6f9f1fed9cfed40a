// Package transport measures TCP and UDP over one path, as iperf3 does: a
// control connection negotiates each test with a v6lab transport server,
// the client sends (TCP streams for a duration or an amount of data, or
// UDP datagrams at a rate), the server counts what arrives, and the client
// reports throughput, TCP_INFO figures per interval, the RFC 6349 metrics,
// and UDP loss, duplicates, reordering and jitter (RFC 3550).
//
// The server receives, or in a reverse TCP test (iperf3 -R) sends on the
// streams the client itself opened to it: it never sends to an address
// it was given, so it cannot be made to flood a third host; and every
// test it accepts is bounded in length, rate and streams.
//
// It imports only load, path and result.
package transport

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Magic opens every control message; a peer that does not send it is not a
// v6lab transport server (or client).
const Magic = "v6lab-transport/1"

// DefaultPort is the control port of `v6lab serve transport`.
const DefaultPort = 5301

// Limits every test is held to.
const (
	MaxDuration = time.Hour
	MaxBytes    = int64(1) << 40
	MaxStreams  = 128
	MaxRate     = 100e9 // bits per second
	MinDatagram = 32    // the v6lab header: sequence number and send time, and some
	MaxDatagram = 65507
	// DefaultDatagram is a UDP test's payload unless one is given: the
	// largest that IPv6's minimum MTU (1280, RFC 8200) carries whole
	// (1280 - 40 - 8), so no path of a run fragments it (IPv4 at 1500
	// carries 1472, IPv6 1452, a 1480-byte 6in4 tunnel or nat64 route
	// 1432) and every path is compared with the same whole datagrams.
	DefaultDatagram = 1232
	MaxBuffer       = 256 << 20
	maxCtrlLine     = 1 << 20 // a reverse test's report carries its intervals
	ctrlDeadline    = 10 * time.Second
)

// Request is the client's first control message: the test to run.
type Request struct {
	Magic string `json:"magic"`
	// Test is "tcp" or "udp".
	Test string `json:"test"`
	// Streams is the number of parallel TCP connections.
	Streams int `json:"streams,omitempty"`
	// Duration bounds the test; Bytes ends it when that much is sent.
	Duration time.Duration `json:"duration"`
	Bytes    int64         `json:"bytes,omitempty"`
	// Omit is a warm-up sent before Duration and left out of the
	// figures (iperf3 -O): the test lasts Omit + Duration.
	Omit time.Duration `json:"omit,omitempty"`
	// RcvBuf is the server's receive buffer (SO_RCVBUF), Window its
	// TCP_WINDOW_CLAMP; 0 leaves the kernel's.
	RcvBuf int `json:"rcvbuf,omitempty"`
	Window int `json:"window,omitempty"`
	// Rate (bits/s) and Size (bytes) of UDP datagrams.
	Rate uint64 `json:"rate,omitempty"`
	Size int    `json:"size,omitempty"`
	// Reverse has the server send: on the client's TCP streams, or UDP
	// datagrams to where the client's hello came from (only ever the
	// control connection's host); SndBuf
	// (SO_SNDBUF) and Congestion (TCP_CONGESTION) are then the server's
	// sending side's, and Interval spaces its TCP_INFO samples.
	Reverse    bool          `json:"reverse,omitempty"`
	SndBuf     int           `json:"sndbuf,omitempty"`
	Congestion string        `json:"congestion,omitempty"`
	Interval   time.Duration `json:"interval,omitempty"`
}

// maxIntervals bounds the samples of a reverse test's report.
const maxIntervals = 3600

// Check bounds a request; the error says which field is absurd.
func (r *Request) Check() error {
	switch {
	case r.Magic != Magic:
		return fmt.Errorf("not a v6lab transport request")
	case r.Test != "tcp" && r.Test != "udp":
		return fmt.Errorf("test %q: want tcp or udp", r.Test)
	case r.Duration <= 0 || r.Duration > MaxDuration:
		return fmt.Errorf("duration %v: want more than 0 and at most %v", r.Duration, MaxDuration)
	case r.Bytes < 0 || r.Bytes > MaxBytes:
		return fmt.Errorf("bytes %d: want 0 (no limit) to %d", r.Bytes, MaxBytes)
	case r.Omit < 0 || r.Omit > MaxDuration-r.Duration:
		return fmt.Errorf("omit %v: want 0 to %v, the duration and the omitted warm-up together at most %v", r.Omit, MaxDuration-r.Duration, MaxDuration)
	case r.Omit > 0 && r.Bytes > 0:
		return fmt.Errorf("omit %v: a warm-up is left out of a test bound by its duration, not of one that sends %d bytes", r.Omit, r.Bytes)
	case r.RcvBuf < 0 || r.RcvBuf > MaxBuffer || r.Window < 0 || r.Window > MaxBuffer:
		return fmt.Errorf("buffer and window: want 0 to %d bytes", MaxBuffer)
	}
	if r.Reverse {
		switch {
		case r.SndBuf < 0 || r.SndBuf > MaxBuffer:
			return fmt.Errorf("sndbuf %d: want 0 to %d bytes", r.SndBuf, MaxBuffer)
		case !congestionName(r.Congestion):
			return fmt.Errorf("congestion %q: want a name such as cubic or bbr", printable([]byte(r.Congestion), 20))
		case r.Interval < 10*time.Millisecond:
			return fmt.Errorf("interval %v: want at least 10ms", r.Interval)
		case r.length()/r.Interval > maxIntervals:
			return fmt.Errorf("interval %v: %v of it is %d intervals, at most %d are reported (lengthen the interval)", r.Interval, r.length(), r.length()/r.Interval, maxIntervals)
		}
	} else if r.SndBuf != 0 || r.Congestion != "" || r.Interval != 0 {
		return fmt.Errorf("sndbuf, congestion and interval are the client's own unless the test is reverse")
	}
	if r.Test == "tcp" && (r.Streams < 1 || r.Streams > MaxStreams) {
		return fmt.Errorf("streams %d: want 1 to %d", r.Streams, MaxStreams)
	}
	if r.Test == "udp" {
		switch {
		case r.Rate == 0 || r.Rate > MaxRate:
			return fmt.Errorf("rate %d bit/s: want more than 0 and at most %g", r.Rate, float64(MaxRate))
		case r.Size < MinDatagram || r.Size > MaxDatagram:
			return fmt.Errorf("datagram size %d: want %d to %d bytes", r.Size, MinDatagram, MaxDatagram)
		}
	}
	return nil
}

// length is how long the test sends: its warm-up, then its duration.
func (r *Request) length() time.Duration { return r.Omit + r.Duration }

// congestionName accepts "" and what could name a kernel congestion
// control algorithm (TCP_CA_NAME_MAX is 16 with its NUL).
func congestionName(s string) bool {
	if len(s) > 15 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Accept is the server's answer to a request.
type Accept struct {
	Magic string `json:"magic"`
	// Error, when set, says why the test was refused.
	Error string `json:"error,omitempty"`
	// Port receives the test's data (TCP streams or UDP datagrams).
	Port int `json:"port,omitempty"`
	// Cookie opens every TCP data stream and every datagram's header, so
	// the server counts only this test's data.
	Cookie uint64 `json:"cookie,omitempty"`
	// Kernel facts of the server's side.
	Congestion string `json:"congestion,omitempty"`
}

// Done is the client's last control message: it has stopped sending (or,
// in a reverse test, seen the end of every stream).
type Done struct {
	Magic string `json:"magic"`
	Sent  int64  `json:"sent"`
	// Received is what the client counted in a reverse test.
	Received int64 `json:"received,omitempty"`
	// Datagrams sent (UDP).
	Datagrams int64 `json:"datagrams,omitempty"`
}

// Report is what the server saw, its answer to Done.
type Report struct {
	Magic    string        `json:"magic"`
	Error    string        `json:"error,omitempty"`
	Received int64         `json:"received"`
	Elapsed  time.Duration `json:"elapsed"` // first to last byte received
	UDP      *UDPStats     `json:"udp,omitempty"`
	// Sender are the server's sending figures in a reverse TCP test,
	// UDPSent in a reverse UDP one.
	Sender  *SenderStats `json:"sender,omitempty"`
	UDPSent *UDPSent     `json:"udp_sent,omitempty"`
}

// UDPSent is what a reverse UDP test's server sent.
type UDPSent struct {
	Datagrams  int64         `json:"datagrams"`
	SendErrors int64         `json:"send_errors"`
	Elapsed    time.Duration `json:"elapsed"`
	// Late is the most a datagram after the warm-up left after its due
	// time (pace; nil from a server older than the field).
	Late *time.Duration `json:"late,omitempty"`
	// SndBuf is the sender's SO_SNDBUF as the kernel set it (read back).
	SndBuf int `json:"sndbuf_effective,omitempty"`
}

// UDPStats are the receiver's figures of a UDP test.
type UDPStats struct {
	// RcvBuf is the receiver's SO_RCVBUF as the kernel set it (read back:
	// Linux doubles what was asked, within net.core.rmem_max).
	RcvBuf     int   `json:"rcvbuf_effective,omitempty"`
	Received   int64 `json:"received"`
	Lost       int64 `json:"lost"`
	Duplicates int64 `json:"duplicates"`
	Reordered  int64 `json:"reordered"`
	// HighestSeq is the largest sequence number seen (-1: none).
	HighestSeq int64 `json:"highest_seq"`
	// JitterNS is RFC 3550's interarrival jitter; DelayVarNS the spread of
	// one-way transit times (max - min), which needs no synchronized clocks.
	JitterNS   float64 `json:"jitter_ns"`
	DelayVarNS int64   `json:"delay_var_ns"`
	// Omitted counts the warm-up's datagrams that arrived (left out of
	// the other figures).
	Omitted int64 `json:"omitted,omitempty"`
	// Intervals of received bytes, from the first datagram.
	Intervals []int64 `json:"intervals,omitempty"`
	// IntervalNS is the length of each of Intervals.
	IntervalNS int64 `json:"interval_ns,omitempty"`
	// LastNS is the last datagram's arrival, from the first's: where
	// the last interval really ends.
	LastNS int64 `json:"last_ns,omitempty"`
}

// ErrNotV6lab is wrapped when the peer is not a v6lab transport endpoint.
var ErrNotV6lab = errors.New("the peer is not a v6lab transport server")

// ctrl reads and writes one control connection's JSON lines.
type ctrl struct {
	rw io.ReadWriter
	br *bufio.Reader
	// max is the longest line read: a server reads only small requests
	// (maxRequestLine); a client reads reports that carry intervals.
	max int
}

// maxRequestLine bounds what a server reads from a client per line: a
// request or a done message is a few hundred bytes.
const maxRequestLine = 4 << 10

func newCtrl(rw io.ReadWriter) *ctrl {
	return &ctrl{rw: rw, br: bufio.NewReaderSize(rw, 4096), max: maxCtrlLine}
}

func (c *ctrl) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = c.rw.Write(append(b, '\n'))
	return err
}

// recv reads one message into v, refusing what is not v6lab's.
func (c *ctrl) recv(v any) error {
	var line []byte
	for {
		part, isPrefix, err := c.br.ReadLine()
		line = append(line, part...)
		if len(line) > c.max {
			return fmt.Errorf("%w: a control line longer than %d bytes", ErrNotV6lab, c.max)
		}
		if err != nil {
			if len(line) > 0 && !isPrefix {
				break
			}
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the peer closed the control connection")
			}
			return err
		}
		if !isPrefix {
			break
		}
	}
	var m struct {
		Magic string `json:"magic"`
	}
	if json.Unmarshal(line, &m) != nil || m.Magic != Magic {
		return fmt.Errorf("%w (it said %q)", ErrNotV6lab, printable(line, 60))
	}
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad control message: %w", err)
	}
	return nil
}

func printable(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return strings.Map(func(r rune) rune {
		if r < 32 || r > 126 {
			return '.'
		}
		return r
	}, string(b))
}
