package main

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"v6lab/internal/experiment"
	"v6lab/internal/measure"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/proto/trial"
	"v6lab/internal/report"
	"v6lab/internal/transport"
)

// transportFlags are what tcp and udp share: the trial as given, decoded
// and checked by the protocol (trial.Protocol.Check), as a file's cell is.
type transportFlags struct {
	lf loadFlags
	in proto.TrialInput
}

// trialFlags are the flags of the trial options (same names).
var trialFlags = map[string]string{"time": "time", "omit": "omit", "interval": "interval", "bytes": "bytes", "window": "window",
	"sndbuf": "sndbuf", "rcvbuf": "rcvbuf", "mss": "mss", "streams": "streams", "congestion": "congestion",
	"bottleneck": "bottleneck", "reverse": "reverse", "rate": "rate", "size": "size"}

func (f *transportFlags) register(cmd *cobra.Command) {
	f.lf.register(cmd, "1", 10)
	fl := cmd.Flags()
	// A trial is one test; --conns would mean simultaneous tests, which is
	// not what a transport trial is.
	_ = fl.MarkHidden("conns")
	_ = fl.MarkHidden("duration")
	fl.Lookup("runs").Usage = "trials per path, the first --warmup of them not counted"
	// Trials have no warm-up by default, and a timeout that follows --time.
	for name, def := range map[string]string{"warmup": "0", "timeout": "0s"} {
		_ = fl.Set(name, def)
		fl.Lookup(name).DefValue, fl.Lookup(name).Changed = def, false
	}
	fl.Lookup("timeout").Usage = "bound on one trial (default: its length plus 30 s)"
	fl.DurationVarP(&f.in.Time, "time", "t", 10*time.Second, "length of each trial (with --bytes: its bound)")
	fl.DurationVarP(&f.in.Omit, "omit", "O", 0, "warm-up sent before --time and left out of the figures, e.g. 2s past slow start (as iperf3 -O)")
	fl.DurationVarP(&f.in.Interval, "interval", "i", time.Second, "reporting interval")
	fl.StringVar(&f.in.SndBuf, "sndbuf", "", "sending socket's send buffer (SO_SNDBUF), e.g. 64K")
	fl.StringVar(&f.in.RcvBuf, "rcvbuf", "", "receiving socket's receive buffer (SO_RCVBUF), e.g. 100K")
	fl.BoolVarP(&f.in.Reverse, "reverse", "R", false, "the server sends, this host receives (downstream, as iperf3 -R)")
}

func (f *transportFlags) run(cmd *cobra.Command, test string, args []string) error {
	in := f.in
	o := proto.Options{Servers: args, Trial: &in}
	p := all.MustGet(test)
	given := func(opt string) bool { return cmd.Flags().Changed(trialFlags[opt]) }
	if err := p.Check(&o, "hosts", given); err != nil {
		return &exitError{code: 2, err: flagError(err, trialFlags)}
	}
	if !cmd.Flags().Changed("timeout") {
		f.lf.timeout = o.Test.Omit + o.Test.Duration + 30*time.Second
	}
	spec, err := f.lf.spec(test, test, strings.Join(args, " "))
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	spec.Options, spec.Conns = o, []int{1}
	for _, path := range spec.Paths {
		if _, err := p.Target(&spec.Options, path); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("path %s: %w", path, err)}
		}
	}
	spec.Params = trial.Params(*o.Test)
	dir, err := execute(cmd, measure.Job{
		Exp:     experiment.Single(spec, "hosts"),
		Probe:   experiment.Probes(nil),
		Target:  "remote",
		Servers: map[string]string{test: strings.Join(args, " ")},
		Notes:   []string{"congestion control of this host: " + orDefault(transport.Congestion(), "unknown")},
		Results: f.lf.results,
	})
	if dir != "" && !quiet(cmd) {
		report.Intervals(cmd.OutOrStdout(), dir)
	}
	return err
}

func newTCPCmd() *cobra.Command {
	var f transportFlags
	cmd := &cobra.Command{
		Use:   "tcp SERVER...",
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
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, "tcp", args) },
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.in.Bytes, "bytes", "", "amount of data per trial (e.g. 10M, 200M); ends the trial")
	fl.StringVar(&f.in.Window, "window", "", "clamp the receiving side's TCP window (e.g. 10K, 100K)")
	fl.IntVar(&f.in.MSS, "mss", 0, "TCP maximum segment size (TCP_MAXSEG), e.g. 1024 or 2048")
	fl.IntVarP(&f.in.Streams, "streams", "P", 1, "parallel streams")
	fl.StringVar(&f.in.Congestion, "congestion", "", "congestion control (e.g. cubic, bbr, reno)")
	fl.StringVar(&f.in.Bottleneck, "bottleneck", "", "the path's bottleneck rate for the RFC 6349 transfer time ratio (e.g. 100M)")
	return cmd
}

func newUDPCmd() *cobra.Command {
	var f transportFlags
	cmd := &cobra.Command{
		Use:   "udp SERVER...",
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
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, "udp", args)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.in.Rate, "rate", "1M", "target rate (e.g. 1M, 10M, 100M)")
	fl.IntVar(&f.in.Size, "size", 1460, "datagram size in bytes (payload)")
	return cmd
}

func newServeTransportCmd() *cobra.Command {
	var listen []string
	var verbose bool
	var maxTests int
	var requestTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "transport",
		Short: "Answer v6lab tcp and udp tests",
		Long: `serve transport answers v6lab tcp and udp tests on every --listen address until
interrupted. It sends data only in reverse tests, and then only to the client's own
connections (TCP) or the host of its control connection (UDP). It refuses tests longer
than an hour, faster than 100 Gbit/s, or with more than 128 streams; it runs at most
--max-tests tests at once and refuses the excess with a reply saying so; a client must send
its request within --request-timeout, in a line of at most 4 KiB.`,
		Example: `  v6lab serve transport
  v6lab serve transport --listen 0.0.0.0:5301 --listen [::]:5301
  v6lab serve transport --max-tests 4 --request-timeout 3s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addrs, port, err := listenAddrs(listen)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			var log *slog.Logger
			if verbose {
				log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			}
			if maxTests < 1 || maxTests > 10000 {
				return &exitError{code: 2, err: fmt.Errorf("--max-tests: %d is not between 1 and 10000", maxTests)}
			}
			if requestTimeout <= 0 || requestTimeout > time.Hour {
				return &exitError{code: 2, err: fmt.Errorf("--request-timeout: %v is not between 0 and 1h", requestTimeout)}
			}
			srv := &transport.Server{Log: log, MaxTests: maxTests, RequestTimeout: requestTimeout}
			s, err := srv.ListenAndServe(cmd.Context(), addrs, port)
			if err != nil {
				return err
			}
			defer s.Close()
			for _, a := range addrs {
				fmt.Fprintf(cmd.OutOrStdout(), "serving transport tests on %s\n", netip.AddrPortFrom(a, uint16(s.Port)))
			}
			waitSignal(cmd)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&listen, "listen", []string{"127.0.0.1:5301", "[::1]:5301"}, "ADDR:PORT to listen on (repeat; one port for all)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "log refused and failed tests")
	fl.IntVar(&maxTests, "max-tests", transport.DefaultMaxTests, "tests served at once; the excess is refused with a reply")
	fl.DurationVar(&requestTimeout, "request-timeout", 10*time.Second, "time a client may take to send its request")
	return cmd
}
