package load

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"time"

	"v6lab/internal/result"
	"v6lab/internal/sock/tcpinfo"
)

// The figures a transaction's sample carries of its TCP connection when
// asked (WithTCPInfo), and of every stalled one (docs/metrics.md).
const (
	// MetricMSS is the segment size the client's connection sent with,
	// MetricRcvMSS the largest it received (the server's), MetricPMTU
	// the path MTU the client's kernel used, MetricRetrans the segments
	// it retransmitted.
	MetricMSS     = "tcp_mss"
	MetricRcvMSS  = "tcp_rcv_mss"
	MetricPMTU    = "path_mtu"
	MetricRetrans = "tcp_retrans"
	// MetricStall is, for a stalled transaction, the time from its start
	// to the last thing that moved on its connection (ms).
	MetricStall = "stall_ms"
)

type tcpInfoKey struct{}

// WithTCPInfo asks the transactions run with ctx to record their TCP
// connection's figures (MetricMSS …) in every sample, completed or not.
func WithTCPInfo(ctx context.Context) context.Context {
	return context.WithValue(ctx, tcpInfoKey{}, true)
}

// WantsTCPInfo says whether ctx asks for the TCP figures (WithTCPInfo):
// an event loop's exchange then reads them before its socket closes
// (evloop.Exchange.TCPInfo).
func WantsTCPInfo(ctx context.Context) bool {
	v, _ := ctx.Value(tcpInfoKey{}).(bool)
	return v
}

// Watch makes c, a TCP connection of the transaction, the one whose
// figures its sample records (the last watched that is still open when
// they are read: a transfer's own, after its control connection's), and
// learns from ctx whether they are wanted. Dial watches what it dials.
func (t *Trace) Watch(ctx context.Context, c net.Conn) {
	if WantsTCPInfo(ctx) {
		t.wantTCP = true
	}
	if sc, ok := c.(syscall.Conn); ok {
		if _, tcp := c.(*net.TCPConn); tcp {
			if raw, err := sc.SyscallConn(); err == nil {
				t.watched = append(t.watched, raw)
			}
		}
	}
}

// TCP records the figures an event loop read of the transaction's
// connection as it ended (evloop.Result.TCP; nil: none).
func (t *Trace) TCP(ctx context.Context, info *tcpinfo.Info) {
	if WantsTCPInfo(ctx) {
		t.wantTCP = true
	}
	if info != nil {
		t.tcp = info
	}
}

// ReadTCP reads now the figures of the last watched connection still
// open (Watch), for a transaction about to close it.
func (t *Trace) ReadTCP() {
	for i := len(t.watched) - 1; i >= 0; i-- {
		var info tcpinfo.Info
		ok := false
		if err := t.watched[i].Control(func(fd uintptr) { info, ok = tcpinfo.Read(int(fd)) }); err != nil || !ok {
			continue // closed
		}
		t.tcp = &info
		return
	}
}

// tcpMetrics puts the connection's figures in the sample.
func (t *Trace) tcpMetrics() {
	if t.tcp == nil {
		return
	}
	if t.S.Metrics == nil {
		t.S.Metrics = map[string]float64{}
	}
	m := t.S.Metrics
	m[MetricMSS], m[MetricPMTU], m[MetricRetrans] = float64(t.tcp.MSS), float64(t.tcp.PMTU), float64(t.tcp.Retrans)
	if t.tcp.RcvMSS > 0 { // else nothing was received: no MSS of the peer's to tell
		m[MetricRcvMSS] = float64(t.tcp.RcvMSS)
	}
}

// ReceivedMSS says what MSS the peer's segments showed: "N received", or
// "none received" when no data arrived.
func ReceivedMSS(rcv int) string {
	if rcv <= 0 {
		return "none received"
	}
	return fmt.Sprintf("%d received", rcv)
}

// done adds the TCP figures to a completed transaction's sample when
// they are wanted.
func (t *Trace) doneTCP() {
	if !t.wantTCP {
		return
	}
	if t.tcp == nil {
		t.ReadTCP()
	}
	t.tcpMetrics()
}

// stall tells, for a failed transaction of kind (its Classify), whether
// its connection stalled: a timeout whose connection was up and quiet
// for tcpinfo.StallQuiet or more. It returns the kind, and the error
// that says what stalled.
func (t *Trace) stall(kind result.ErrKind, err error) (result.ErrKind, error) {
	if t.tcp == nil {
		t.ReadTCP()
	}
	if t.tcp == nil {
		return kind, err
	}
	if kind == result.ErrTimeout && t.tcp.Stalled() {
		at := time.Duration(t.S.TotalNS) - t.tcp.Quiet() - time.Since(t.tcp.At)
		kind = result.ErrStall
		err = fmt.Errorf("stalled after %v: nothing arrived on the connection for %v until the timeout (MSS %d sent, %s, path MTU %d, %d retransmissions): %w",
			max(at, 0).Round(time.Millisecond), t.tcp.Quiet().Round(time.Millisecond), t.tcp.MSS, ReceivedMSS(t.tcp.RcvMSS), t.tcp.PMTU, t.tcp.Retrans, err)
		t.tcpMetrics()
		t.S.Metrics[MetricStall] = float64(max(at, 0)) / 1e6
		return kind, err
	}
	if t.wantTCP {
		t.tcpMetrics()
	}
	return kind, err
}
