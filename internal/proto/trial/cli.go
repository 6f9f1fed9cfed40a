package trial

import (
	"v6lab/internal/gen/transport"
	"v6lab/internal/proto"
)

// Command is the trial's face on the command line: v6lab tcp and v6lab
// udp, against v6lab serve transport.
func (t Protocol) Command() proto.Command {
	common := []proto.Flag{
		{Name: "time", Short: "t", Option: "time", Kind: proto.KindDuration, Default: "10s", Usage: "length of each trial (with --bytes: its bound)"},
		{Name: "omit", Short: "O", Option: "omit", Kind: proto.KindDuration, Default: "0s", Usage: "warm-up sent before --time and left out of the figures, e.g. 2s past slow start (as iperf3 -O)"},
		{Name: "interval", Short: "i", Option: "interval", Kind: proto.KindDuration, Default: "1s", Usage: "reporting interval"},
		{Name: "sndbuf", Option: "sndbuf", Usage: "sending socket's send buffer (SO_SNDBUF), e.g. 64K"},
		{Name: "rcvbuf", Option: "rcvbuf", Usage: "receiving socket's receive buffer (SO_RCVBUF), e.g. 100K"},
		{Name: "reverse", Short: "R", Option: "reverse", Kind: proto.KindBool, Default: "false", Usage: "the server sends, this host receives (downstream, as iperf3 -R)"},
	}
	if t.Test == "udp" {
		return proto.Command{Arg: "SERVER...", TopLevel: true,
			Short: "Measure UDP loss, jitter, duplicates and reordering at a rate over each path",
			Long: `udp sends datagrams of --size bytes at --rate for --time to a v6lab transport server,
paced against the clock, and reports datagrams sent and received, lost and loss % (never
below 0 or above 100), duplicates, reordering, jitter (RFC 3550) and the one-way delay
variation. A trial in which the receiver saw nothing says so and counts as failed.
With --reverse the server sends and this host receives (as iperf3 -R): this host says
hello from its data socket, and the server sends only to the host of the control
connection; --sndbuf then applies to the server, --rcvbuf to this host. --omit sends a
warm-up before --time whose datagrams are left out of every figure (as iperf3 -O).`,
			Example: `  v6lab udp 192.0.2.1 2001:db8::1 --rate 10M --size 1460 --rcvbuf 64K --time 60s --runs 10
  v6lab udp 127.0.0.1 ::1 --rate 100M
  v6lab udp 192.0.2.1 2001:db8::1 --rate 50M --reverse`,
			Flags: append(common,
				proto.Flag{Name: "rate", Option: "rate", Default: "1M", Usage: "target rate (e.g. 1M, 10M, 100M)"},
				proto.Flag{Name: "size", Option: "size", Default: "1460", Usage: "datagram size (payload bytes)"}),
		}
	}
	return proto.Command{Arg: "SERVER...", TopLevel: true,
		Short: "Measure TCP throughput, window, MSS and retransmits over each path",
		Long: `tcp runs trials against a v6lab transport server (v6lab serve transport): for each path,
streams send for --time or until --bytes are sent, and the trial reports transfer time,
throughput in total and per interval, bytes, retransmits, RTT and cwnd from TCP_INFO, and
the RFC 6349 metrics: TCP efficiency, buffer delay and, given --bottleneck, the transfer
time ratio against the ideal for the path's MTU and headers (IPv4, IPv6 and 6in4 differ).
Give one server address per family (port 5301 unless given). The congestion control in
use is recorded even when not set. With --reverse the server sends and this host receives
(as iperf3 -R), on the connections this host opened: the sending side's figures come
from the server's TCP_INFO; --sndbuf and --congestion then apply to the server, --rcvbuf
and --window to this host. --omit sends a warm-up before --time and leaves it out of every
figure (as iperf3 -O); its intervals are shown, marked (omitted).`,
		Example: `  v6lab tcp 192.0.2.1 2001:db8::1 --time 60s --runs 10
  v6lab tcp 192.0.2.1 2001:db8::1 --bytes 200M --window 64K --mss 1024 --bottleneck 100M
  v6lab tcp 127.0.0.1 ::1 --streams 4 --congestion cubic
  v6lab tcp 192.0.2.1 2001:db8::1 --reverse --time 30s
  v6lab tcp 192.0.2.1 2001:db8::1 --omit 2s --time 60s --runs 10`,
		Flags: append(common,
			proto.Flag{Name: "bytes", Option: "bytes", Usage: "amount of data per trial (e.g. 10M, 200M); ends the trial"},
			proto.Flag{Name: "window", Option: "window", Usage: "clamp the receiving side's TCP window (e.g. 10K, 100K)"},
			proto.Flag{Name: "mss", Option: "mss", Kind: proto.KindInt, Default: "0", Usage: "TCP maximum segment size (TCP_MAXSEG), e.g. 1024 or 2048"},
			proto.Flag{Name: "streams", Short: "P", Option: "streams", Kind: proto.KindInt, Default: "1", Usage: "parallel streams"},
			proto.Flag{Name: "congestion", Option: "congestion", Usage: "congestion control (e.g. cubic, bbr, reno)"},
			proto.Flag{Name: "bottleneck", Option: "bottleneck", Usage: "the path's bottleneck rate for the RFC 6349 transfer time ratio (e.g. 100M)"}),
	}
}

// SetArg adds a SERVER argument (an address per family).
func (Protocol) SetArg(o *proto.Options, arg string) { o.Servers = append(o.Servers, arg) }

// Record is what a trial command's result records: its options, units
// spelled out.
func (Protocol) Record(o *proto.Options) map[string]string {
	if o.Test == nil {
		return nil
	}
	return Params(*o.Test)
}

// Notes say which congestion control this host used unless set.
func (Protocol) Notes() []string {
	return []string{"congestion control of this host: " + proto.Or(transport.Congestion(), "unknown")}
}
