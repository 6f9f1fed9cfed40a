// Package tcpinfo reads what the kernel knows of a TCP connection
// (TCP_INFO): the segment size and path MTU it settled on, its
// retransmissions, and how long ago anything moved on it, which tells a
// connection that stalled (a path MTU black hole: the handshake passed,
// the full-sized segments vanish) from one that was merely slow.
//
// It imports nothing of v6lab.
package tcpinfo

import (
	"time"

	"golang.org/x/sys/unix"
)

// Info is a connection's state as the kernel reported it at At.
type Info struct {
	At time.Time
	// Established: the handshake completed (any state past SYN_SENT and
	// SYN_RECV).
	Established bool
	// MSS is the segment size the connection sends (tcpi_snd_mss, after
	// the path MTU and the peer's MSS), PMTU the path MTU it uses
	// (tcpi_pmtu: the route's, or what Packet Too Big, fragmentation
	// needed or MTU probing taught it).
	MSS, PMTU int
	// RcvMSS is the largest segment received so far (tcpi_rcv_mss): the
	// size the peer's kernel settled on, as far as this end can tell; 0
	// when no data has arrived (the kernel's own guess, 536 or less, is
	// not the peer's).
	RcvMSS int
	// Retrans counts the segments it retransmitted (tcpi_total_retrans),
	// Backoff the retransmission timeouts in a row now.
	Retrans, Backoff int
	// Unacked is the segments sent and not yet acknowledged.
	Unacked int
	// SinceData and SinceAck are how long before At the last data and
	// the last acknowledgement arrived (tcpi_last_data_recv,
	// tcpi_last_ack_recv); for a connection that never received one,
	// its whole life.
	SinceData, SinceAck time.Duration
	// BytesIn and BytesAcked are the bytes received and the bytes of
	// its own the peer acknowledged.
	BytesIn, BytesAcked uint64
	// OutOfOrder counts the segments that arrived out of order
	// (tcpi_rcv_ooopack): each one, after a lost segment, waited in the
	// kernel for the retransmission that filled the hole before it.
	OutOfOrder int
}

// Read reads the TCP_INFO of socket fd; ok is false for a socket that is
// not TCP (or closed).
func Read(fd int) (Info, bool) {
	ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return Info{}, false
	}
	rcvMSS := int(ti.Rcv_mss)
	if ti.Bytes_received == 0 {
		rcvMSS = 0
	}
	return Info{
		At:          time.Now(),
		Established: ti.State != unix.BPF_TCP_SYN_SENT && ti.State != unix.BPF_TCP_SYN_RECV && ti.State != unix.BPF_TCP_CLOSE,
		MSS:         int(ti.Snd_mss), PMTU: int(ti.Pmtu), RcvMSS: rcvMSS,
		Retrans: int(ti.Total_retrans), Backoff: int(ti.Backoff), Unacked: int(ti.Unacked),
		SinceData: time.Duration(ti.Last_data_recv) * time.Millisecond,
		SinceAck:  time.Duration(ti.Last_ack_recv) * time.Millisecond,
		BytesIn:   ti.Bytes_received, BytesAcked: ti.Bytes_acked,
		OutOfOrder: int(ti.Rcv_ooopack),
	}, true
}

// Quiet is how long nothing moved on the connection when it was read:
// no data and no acknowledgement arrived (the lesser of the two).
func (i Info) Quiet() time.Duration { return min(i.SinceData, i.SinceAck) }

// StallQuiet is how long a connection that was up must have been quiet
// when its transaction timed out for the failure to be a stall rather
// than a slow transfer cut short: a path MTU black hole is silent from
// its first full-sized segment on, a slow link delivers something every
// few milliseconds.
const StallQuiet = time.Second

// Stalled says whether a connection read when its transaction timed out
// had stalled: it was up, and nothing moved on it for StallQuiet or more.
func (i Info) Stalled() bool { return i.Established && i.Quiet() >= StallQuiet }

// OutOfOrder is a connection's count of segments that arrived out of
// order so far (tcpi_rcv_ooopack), without the rest of Read's work: the
// question a transaction asks of its reply's stamps (ok false: no TCP
// socket, or closed).
func OutOfOrder(fd int) (n int, ok bool) {
	ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return 0, false
	}
	return int(ti.Rcv_ooopack), true
}

// LateRead is how long after its bytes' receive stamp a read may return
// before the stamp is doubted. The kernel stamps a read with its last
// segment's arrival; when a segment was lost, the ones after it arrive
// first and wait for its retransmission, so the read that takes them all
// returns a retransmission's wait (a fast retransmit's round trip, or an
// RTO of 200 ms and more) after that early stamp. A read this late is
// asked about (OutOfOrder); one sooner is taken at its stamp: a client's
// wake-up on an idle host is tens of µs, and a question a read would cost
// every transaction a system call.
const LateRead = 200 * time.Microsecond
