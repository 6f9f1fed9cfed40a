// Package trial makes the transport tests, tcp and udp, protocols like any
// other (proto.Protocol): their options decoded and checked by one piece
// of code for experiment files and for the tcp and udp commands' flags,
// their probe and their embedded server from internal/gen/transport.
package trial

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/gen/transport"
	"v6lab/internal/input/units"
	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// Protocol is a transport trial of one kind: Test is "tcp" or "udp".
type Protocol struct{ Test string }

// TCP and UDP are the two trials.
var (
	TCP = Protocol{Test: "tcp"}
	UDP = Protocol{Test: "udp"}
)

func (t Protocol) Name() string { return t.Test }

func (t Protocol) Options() []string {
	if t.Test == "udp" {
		return []string{"time", "omit", "interval", "rate", "size", "sndbuf", "rcvbuf", "reverse", "servers"}
	}
	return []string{"time", "omit", "interval", "bytes", "streams", "window", "sndbuf", "rcvbuf", "mss", "congestion", "bottleneck", "reverse", "servers"}
}

// SingleTest: a trial is one test, never simultaneous users.
func (Protocol) SingleTest() bool { return true }

// Timing says what a trial's time is (proto.Timed): the sender's, as
// iperf3's, with no warming of the client before a barrier and no
// SO_LINGER, the transactions' notes.
func (t Protocol) Timing(*proto.Options) string {
	sent, conns := "the last byte acknowledged (TCP_INFO)", "connections"
	if t.Test == "udp" {
		sent, conns = "its last datagram sent, at the requested rate", "control connection"
	}
	return fmt.Sprintf("timing (%s trials): a trial's time is the sending side's, from its first write to %s, less any omit warm-up, as iperf3's; its %s close with FIN as usual", t.Test, sent, conns)
}

// WireAnyPort: a test's data streams use ports chosen per test.
func (Protocol) WireAnyPort() bool { return true }

// Check decodes the cell's trial (o.Trial, as given) into o.Test, holding
// it to the server's bounds, and checks its servers.
func (t Protocol) Check(o *proto.Options, where string, given proto.Given) error {
	in := o.Trial
	if in == nil {
		in = &proto.TrialInput{}
	}
	test, err := t.decode(in, given)
	if err != nil {
		return err
	}
	o.Test = test
	hosts := where == "hosts"
	if hosts && len(o.Servers) == 0 {
		return proto.Errorf("", "servers is required with where: hosts (the v6lab transport servers, one per family)")
	}
	if !hosts && len(o.Servers) > 0 {
		return proto.Errorf("servers", "only with where: hosts; in the lab and on loopback the embedded server answers")
	}
	for i, a := range o.Servers {
		if _, err := ParseServer(a); err != nil {
			return proto.Errorf(fmt.Sprintf("servers[%d]", i), "%v", err)
		}
	}
	return nil
}

func (t Protocol) decode(in *proto.TrialInput, given proto.Given) (*transport.Options, error) {
	o := &transport.Options{Test: t.Test, Duration: in.Time, Omit: in.Omit, Interval: in.Interval,
		Congestion: in.Congestion, Reverse: in.Reverse}
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Duration < 0 || o.Duration > transport.MaxDuration {
		return nil, proto.Errorf("time", "%v: want more than 0 and at most %v", o.Duration, transport.MaxDuration)
	}
	if o.Omit < 0 || o.Omit > transport.MaxDuration-o.Duration {
		return nil, proto.Errorf("omit", "%v: want 0 to %v (time and omit together at most %v)", o.Omit, transport.MaxDuration-o.Duration, transport.MaxDuration)
	}
	if o.Interval < 0 || (o.Interval > 0 && o.Interval < 10*time.Millisecond) {
		return nil, proto.Errorf("interval", "%v: want at least 10ms", o.Interval)
	}
	for _, f := range []struct {
		name, v string
		to      *int
	}{{"window", in.Window, &o.Window}, {"sndbuf", in.SndBuf, &o.SndBuf}, {"rcvbuf", in.RcvBuf, &o.RcvBuf}} {
		if f.v == "" {
			continue
		}
		n, err := units.ParseSize(f.v)
		if err != nil || n <= 0 || n > transport.MaxBuffer {
			return nil, proto.Errorf(f.name, "want bytes up to 256M, such as 64K, not %q", f.v)
		}
		*f.to = int(n)
	}
	if in.Bytes != "" {
		n, err := units.ParseSize(in.Bytes)
		if err != nil || n <= 0 || n > transport.MaxBytes {
			return nil, proto.Errorf("bytes", "want an amount such as 10M or 200M, not %q", in.Bytes)
		}
		o.Bytes = n
		if o.Omit > 0 {
			return nil, proto.Errorf("omit", "a warm-up is left out of a trial bound by its time, not of one that sends bytes")
		}
		if !given("time") {
			o.Duration = 10 * time.Minute // the amount ends the trial; this bounds it
		}
	}
	if given("streams") {
		if in.Streams < 1 || in.Streams > transport.MaxStreams {
			return nil, proto.Errorf("streams", "%d: want 1 to %d", in.Streams, transport.MaxStreams)
		}
		o.Streams = in.Streams
	}
	if given("mss") {
		if in.MSS < 88 || in.MSS > 65495 {
			return nil, proto.Errorf("mss", "%d: want 88 to 65495 bytes", in.MSS)
		}
		o.MSS = in.MSS
	}
	rate := func(name, v string, to *uint64) error {
		if v == "" {
			return nil
		}
		r, err := units.ParseRate(v)
		if err != nil || r == 0 || r > transport.MaxRate {
			return proto.Errorf(name, "want a rate such as 10M, up to 100G, not %q", v)
		}
		*to = r
		return nil
	}
	if err := rate("bottleneck", in.Bottleneck, &o.Bottleneck); err != nil {
		return nil, err
	}
	if t.Test == "udp" {
		o.Rate, o.Size = 1e6, 1460
		if err := rate("rate", in.Rate, &o.Rate); err != nil {
			return nil, err
		}
		if given("size") {
			if in.Size < transport.MinDatagram || in.Size > transport.MaxDatagram {
				return nil, proto.Errorf("size", "%d: want %d to %d bytes", in.Size, transport.MinDatagram, transport.MaxDatagram)
			}
			o.Size = in.Size
		}
	}
	// Held to the server's bounds, which sample a reverse test.
	req := o.Request()
	if err := req.Check(); err != nil {
		return nil, proto.Errorf(map[bool]string{true: "reverse", false: ""}[o.Reverse], "%v", err)
	}
	return o, nil
}

// ParseServer reads ADDR or ADDR:PORT ([IPV6]:PORT); the port is
// transport.DefaultPort unless given.
func ParseServer(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	ip, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("transport server %q: want ADDR or ADDR:PORT (IPv6 as [ADDR]:PORT)", s)
	}
	return netip.AddrPortFrom(ip, transport.DefaultPort), nil
}

// Target is the cell's server of path p's family.
func (t Protocol) Target(o *proto.Options, p path.Path) (proto.Endpoint, error) {
	for _, a := range o.Servers {
		if ap, err := ParseServer(a); err == nil && p.Accepts(ap.Addr()) {
			return proto.Endpoint{Host: ap.Addr().String(), Port: int(ap.Port())}, nil
		}
	}
	return proto.Endpoint{}, fmt.Errorf("no %s server address among %v", p.Family(), o.Servers)
}

// Probe runs one trial per transaction against the server at ep.
func (t Protocol) Probe(o *proto.Options, ep proto.Endpoint, p path.Path) (load.Probe, error) {
	if ep.Host == "" {
		return nil, fmt.Errorf("no %s transport server to test against", p.Family())
	}
	srv, err := ep.AddrPort()
	if err != nil {
		return nil, err
	}
	opts := transport.Options{Test: t.Test}
	if o.Test != nil {
		opts = *o.Test
		opts.Test = t.Test
	}
	return &transport.Probe{Server: srv, Path: p, Source: ep.Source, Opts: opts}, nil
}

// ServerKey is the server tcp and udp share.
const ServerKey = "transport"

// DefaultRequestTimeout is how long a client may take to send its request.
const DefaultRequestTimeout = 10 * time.Second

// ServeCommand is v6lab serve transport.
func (Server) ServeCommand() proto.ServeCommand {
	return proto.ServeCommand{
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
		Listen: []string{"127.0.0.1:5301", "[::1]:5301"},
		Flags: []proto.Flag{
			{Name: "max-tests", Option: "max_tests", Kind: proto.KindInt, Default: strconv.Itoa(transport.DefaultMaxTests), Usage: "tests served at once; the excess is refused with a reply"},
			{Name: "request-timeout", Option: "request_timeout", Kind: proto.KindDuration, Default: DefaultRequestTimeout.String(), Usage: "time a client may take to send its request"},
		},
		Verbose: "log refused and failed tests",
	}
}

// ServedBy names the embedded server that answers trials.
func (Protocol) ServedBy() string { return ServerKey }

// Server is the embedded transport server, which answers both trials.
type Server struct{}

// WireAnyPort: a test's data streams use ports chosen per test.
func (Server) WireAnyPort() bool { return true }

// ByAddress: transport servers are named by address.
func (Server) ByAddress() bool { return true }

// About describes the embedded server.
func (Server) About() string { return "embedded v6lab transport server" }

// Serve starts it; its data sockets open per test, through the place's
// namespace. Settings: max_tests, request_timeout; with a Log, refused and
// failed tests are logged.
func (Server) Serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	srv := &transport.Server{In: at.Do, MaxTests: transport.DefaultMaxTests, RequestTimeout: DefaultRequestTimeout}
	if at.Log != nil {
		srv.Log = slog.New(slog.NewTextHandler(at.Log, nil))
	}
	if _, err := fmt.Sscan(at.Setting("max_tests", fmt.Sprint(srv.MaxTests)), &srv.MaxTests); err != nil || srv.MaxTests < 1 || srv.MaxTests > 10000 {
		return nil, proto.Errorf("max_tests", "%s is not between 1 and 10000", at.Setting("max_tests", ""))
	}
	d, err := time.ParseDuration(at.Setting("request_timeout", DefaultRequestTimeout.String()))
	if err != nil || d <= 0 || d > time.Hour {
		return nil, proto.Errorf("request_timeout", "%s is not between 0 and 1h", at.Setting("request_timeout", ""))
	}
	srv.RequestTimeout = d
	r, err := srv.ListenAndServe(ctx, at.Listen(), at.Port) // binds through srv.In
	if err != nil {
		return nil, err
	}
	return running{r, at.Listen()}, nil
}

type running struct {
	*transport.Running
	addrs []netip.Addr
}

func (r running) Port() int { return r.Running.Port }

func (r running) Addrs() []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range r.addrs {
		out = append(out, netip.AddrPortFrom(a, uint16(r.Running.Port)))
	}
	return out
}

func (r running) Close() error {
	r.Running.Close()
	return nil
}

// Params are a trial's options as a result records them (its spec's
// params), units spelled out.
func Params(o transport.Options) map[string]string {
	m := map[string]string{"time": o.Duration.String(), "interval": o.Interval.String()}
	if o.Omit > 0 {
		m["omit"] = o.Omit.String()
	}
	add := func(k string, v int64, unit string) {
		if v > 0 {
			m[k] = fmt.Sprint(v) + unit
		}
	}
	add("bytes", o.Bytes, " B")
	add("streams", int64(o.Streams), "")
	add("sndbuf", int64(o.SndBuf), " B")
	add("rcvbuf", int64(o.RcvBuf), " B")
	add("window", int64(o.Window), " B")
	add("mss", int64(o.MSS), " B")
	add("rate", int64(o.Rate), " bit/s")
	add("size", int64(o.Size), " B")
	add("bottleneck", int64(o.Bottleneck), " bit/s")
	if o.Congestion != "" {
		m["congestion"] = o.Congestion
	}
	if o.Reverse {
		m["direction"] = "reverse (server to client)"
	}
	return m
}
