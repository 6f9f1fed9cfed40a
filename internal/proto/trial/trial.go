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
	"strings"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/gen/transport"
	"v6lab/internal/input/units"
	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// TCP and UDP are the two trials, answered by the transport server.
var (
	TCP = proto.Protocol{
		Name:       "tcp",
		New:        func() proto.Options { return &TCPOptions{Trial: Trial{kind: "tcp"}} },
		Command:    command("tcp"),
		ServedBy:   ServerKey,
		SingleTest: true,
	}
	UDP = proto.Protocol{
		Name:       "udp",
		New:        func() proto.Options { return &UDPOptions{Trial: Trial{kind: "udp"}} },
		Command:    command("udp"),
		ServedBy:   ServerKey,
		SingleTest: true,
	}
)

// Trial are the options both trials take, as the user gives them, and
// the test they make once checked.
type Trial struct {
	proto.Common
	Time     proto.Duration `json:"-" opt:"time,short=t,default=10s" usage:"length of each trial (with --bytes: its bound)"`
	Omit     proto.Duration `json:"-" opt:"omit,short=O,default=0s" usage:"warm-up sent before --time and left out of the figures, e.g. 2s past slow start (as iperf3 -O)"`
	Interval proto.Duration `json:"-" opt:"interval,short=i,default=1s" usage:"reporting interval"`
	SndBuf   string         `json:"-" opt:"sndbuf" usage:"sending socket's send buffer (SO_SNDBUF), e.g. 64K"`
	RcvBuf   string         `json:"-" opt:"rcvbuf" usage:"receiving socket's receive buffer (SO_RCVBUF), e.g. 100K"`
	Reverse  bool           `json:"-" opt:"reverse,short=R" usage:"the server sends, this host receives (downstream, as iperf3 -R)"`
	// Servers are the transport servers to test against (where: hosts).
	Servers []string `json:"servers,omitempty" opt:"servers,fileonly"`
	// Test is the trial as Check decoded it.
	Test *transport.Options `json:"test,omitempty"`
	// kind is tcp or udp (New sets it).
	kind string
}

// TCPOptions are a tcp trial's.
type TCPOptions struct {
	Trial
	Bytes      string `json:"-" opt:"bytes" usage:"amount of data per trial (e.g. 10M, 200M); ends the trial"`
	Window     string `json:"-" opt:"window" usage:"clamp the receiving side's TCP window (e.g. 10K, 100K)"`
	MSS        int    `json:"-" opt:"mss" usage:"TCP maximum segment size (TCP_MAXSEG), e.g. 1024 or 2048"`
	Streams    int    `json:"-" opt:"streams,short=P,default=1" usage:"parallel streams"`
	Congestion string `json:"-" opt:"congestion" usage:"congestion control (e.g. cubic, bbr, reno)"`
	Bottleneck string `json:"-" opt:"bottleneck" usage:"the path's bottleneck rate for the RFC 6349 transfer time ratio (e.g. 100M)"`
}

// UDPOptions are a udp trial's.
type UDPOptions struct {
	Trial
	Rate string       `json:"-" opt:"rate,default=1M" usage:"target rate (e.g. 1M, 10M, 100M)"`
	Size DatagramSize `json:"-" opt:"size,default=1232" usage:"datagram size (payload bytes; the default, 1232, is the largest IPv6's minimum MTU 1280 carries whole, so no path fragments it), or max: the largest each path's MTU carries unfragmented (1472 over IPv4, 1452 over IPv6 at 1500, 1432 in a 1480-byte 6in4 tunnel or nat64 route)"`
}

// DatagramSize is a UDP trial's payload size: bytes, or max (the largest
// unfragmented on each path).
type DatagramSize struct {
	Bytes units.Bytes
	Max   bool
}

// UnmarshalText reads max, or a size (1460, 1K).
func (d *DatagramSize) UnmarshalText(b []byte) error {
	if string(b) == "max" {
		*d = DatagramSize{Max: true}
		return nil
	}
	d.Max = false
	if err := d.Bytes.UnmarshalText(b); err != nil {
		return fmt.Errorf("%q: want bytes, such as 1460 or 1K, or max", b)
	}
	return nil
}

// MarshalText writes it as it is given.
func (d DatagramSize) MarshalText() ([]byte, error) {
	if d.Max {
		return []byte("max"), nil
	}
	return []byte(fmt.Sprint(int64(d.Bytes))), nil
}

// Check decodes the trial into Test, held to the server's bounds, and
// checks its servers.
func (o *TCPOptions) Check(where result.Where, given proto.Given) error {
	// This host's congestion control, unless the server sends (then it
	// is the server's to have).
	if o.Congestion != "" && !o.Reverse {
		if err := path.CheckCongestion(o.Congestion); err != nil {
			return proto.Errorf("congestion", "%v", err)
		}
	}
	in := transport.Options{Test: "tcp", Congestion: o.Congestion, MSS: o.MSS, Streams: o.Streams}
	return o.check(where, given, in, map[string]string{"bytes": o.Bytes, "window": o.Window, "bottleneck": o.Bottleneck})
}

// Check decodes the trial into Test, held to the server's bounds, and
// checks its servers.
func (o *UDPOptions) Check(where result.Where, given proto.Given) error {
	in := transport.Options{Test: "udp", Size: int(o.Size.Bytes), SizeMax: o.Size.Max}
	return o.check(where, given, in, map[string]string{"rate": o.Rate})
}

// check decodes the trial's options (in: those already typed; text: the
// amounts and rates as given) into Test.
func (o *Trial) check(where result.Where, given proto.Given, in transport.Options, text map[string]string) error {
	in.Duration, in.Omit, in.Interval, in.Reverse = time.Duration(o.Time), time.Duration(o.Omit), time.Duration(o.Interval), o.Reverse
	text["sndbuf"], text["rcvbuf"] = o.SndBuf, o.RcvBuf
	test, err := decode(in, text, given)
	if err != nil {
		return err
	}
	o.Test = test
	hosts := where == result.Hosts
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

// decode checks a trial and completes it with its defaults: o holds what
// is typed, text the sizes and rates as given.
func decode(o transport.Options, text map[string]string, given proto.Given) (*transport.Options, error) {
	streams, mss, size := o.Streams, o.MSS, o.Size
	o.Streams, o.MSS, o.Size = 0, 0, 0
	for _, step := range []func() error{
		func() error { return times(&o, given) },
		func() error { return buffers(&o, text) },
		func() error { return amount(&o, text["bytes"], given) },
		func() error { return counts(&o, streams, mss, given) },
		func() error { return rates(&o, text, size, given) },
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	// Held to the server's bounds, which sample a reverse test.
	req := o.Request()
	if err := req.Check(); err != nil {
		return nil, proto.Errorf(map[bool]string{true: "reverse", false: ""}[o.Reverse], "%v", err)
	}
	return &o, nil
}

// times checks the trial's time, warm-up and interval (time 10 s unless
// given).
func times(o *transport.Options, given proto.Given) error {
	if o.Duration == 0 {
		o.Duration = 10 * time.Second
	}
	if o.Duration < 0 || o.Duration > transport.MaxDuration {
		return proto.Errorf("time", "%v: want more than 0 and at most %v", o.Duration, transport.MaxDuration)
	}
	if o.Omit < 0 || o.Omit > transport.MaxDuration-o.Duration {
		return proto.Errorf("omit", "%v: want 0 to %v (time and omit together at most %v)", o.Omit, transport.MaxDuration-o.Duration, transport.MaxDuration)
	}
	// 0 is the default when not given (1 s); given, it is too short.
	if o.Interval < 0 || (o.Interval < 10*time.Millisecond && (o.Interval > 0 || given("interval"))) {
		return proto.Errorf("interval", "%v: want at least 10ms", o.Interval)
	}
	return nil
}

// buffers reads the window and socket buffers, each up to 256M.
func buffers(o *transport.Options, text map[string]string) error {
	for _, f := range []struct {
		name string
		to   *int
	}{{"window", &o.Window}, {"sndbuf", &o.SndBuf}, {"rcvbuf", &o.RcvBuf}} {
		v := text[f.name]
		if v == "" {
			continue
		}
		n, err := units.ParseSize(v)
		if err != nil || n <= 0 || n > transport.MaxBuffer {
			return proto.Errorf(f.name, "want bytes up to 256M, such as 64K, not %q", v)
		}
		*f.to = int(n)
	}
	return nil
}

// amount reads the bytes that end a trial (its time, unless given, then
// only bounds it: 10 minutes).
func amount(o *transport.Options, v string, given proto.Given) error {
	if v == "" {
		return nil
	}
	n, err := units.ParseSize(v)
	if err != nil || n <= 0 || n > transport.MaxBytes {
		return proto.Errorf("bytes", "want an amount such as 10M or 200M, not %q", v)
	}
	o.Bytes = n
	if o.Omit > 0 {
		return proto.Errorf("omit", "a warm-up is left out of a trial bound by its time, not of one that sends bytes")
	}
	if !given("time") {
		o.Duration = 10 * time.Minute // the amount ends the trial; this bounds it
	}
	return nil
}

// counts reads the streams and the MSS, where given.
func counts(o *transport.Options, streams, mss int, given proto.Given) error {
	if given("streams") {
		if streams < 1 || streams > transport.MaxStreams {
			return proto.Errorf("streams", "%d: want 1 to %d", streams, transport.MaxStreams)
		}
		o.Streams = streams
	}
	if given("mss") {
		if mss < 88 || mss > 65495 {
			return proto.Errorf("mss", "%d: want 88 to 65495 bytes", mss)
		}
		o.MSS = mss
	}
	return nil
}

// rates reads the bottleneck and, for UDP, the rate (1M unless given) and
// the datagrams' size (transport.DefaultDatagram unless given).
func rates(o *transport.Options, text map[string]string, size int, given proto.Given) error {
	rate := func(name string, to *uint64) error {
		v := text[name]
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
	if err := rate("bottleneck", &o.Bottleneck); err != nil || o.Test != "udp" {
		return err
	}
	o.Rate, o.Size = 1e6, transport.DefaultDatagram
	if err := rate("rate", &o.Rate); err != nil {
		return err
	}
	if given("size") && !o.SizeMax {
		if size < transport.MinDatagram || size > transport.MaxDatagram {
			return proto.Errorf("size", "%d: want %d to %d bytes", size, transport.MinDatagram, transport.MaxDatagram)
		}
		o.Size = size
	}
	return nil
}

// datagramNote says what a udp trial's datagrams carry.
func datagramNote(n int, max bool) string {
	switch {
	case max:
		return "datagrams of each path's largest unfragmented payload (--size max): the paths' sizes differ"
	case n == transport.DefaultDatagram:
		return fmt.Sprintf("datagrams of %d bytes of payload, the largest IPv6's minimum MTU (1280) carries whole: no path of MTU 1280 or more (every IPv6 path's) fragments them", n)
	case n <= transport.DefaultDatagram:
		return fmt.Sprintf("datagrams of %d bytes of payload: no path fragments them", n)
	default:
		return fmt.Sprintf("datagrams of %d bytes of payload: over %d, a path of smaller MTU fragments them (the report names those that did)", n, transport.DefaultDatagram)
	}
}

// Timing says what a trial's time is: the sender's, as iperf3's, with no
// warming of the client before a barrier and no SO_LINGER, the
// transactions' notes.
func (o *Trial) Timing() string {
	sent, conns := "the last byte acknowledged (TCP_INFO)", "connections"
	if o.kind == "udp" {
		sent, conns = "its last datagram sent, at the requested rate", "control connection"
	}
	return fmt.Sprintf("timing (%s trials): a trial's time is the sending side's, from its first write to %s, less any omit warm-up, as iperf3's; its %s close with FIN as usual", o.kind, sent, conns)
}

// Destination is the transport servers.
func (o *Trial) Destination() string { return strings.Join(o.Servers, " ") }

// Length is the trial's omit and time.
func (o *Trial) Length() time.Duration {
	if o.Test == nil {
		return 0
	}
	return o.Test.Omit + o.Test.Duration
}

// Estimate is the trial's length, or for one that sends bytes the time
// they take at the bottleneck (or 1 Gbit/s), 90% used.
func (o *Trial) Estimate(int, uint64) time.Duration {
	t := o.Test
	switch {
	case t == nil:
		return 0
	case t.Bytes == 0:
		return t.Omit + t.Duration
	}
	rate := float64(max(t.Bottleneck, 1e9)) * 0.9
	if t.Bottleneck > 0 {
		rate = float64(t.Bottleneck) * 0.9
	}
	return min(t.Duration, time.Duration(float64(t.Bytes)*8/rate*float64(time.Second)))
}

// Scale makes the trial shorter and carry less: at least a second and
// 1 MiB.
func (o *Trial) Scale(f float64) {
	if o.Test == nil {
		return
	}
	t := *o.Test
	t.Duration = max(time.Second, time.Duration(float64(t.Duration)*f).Round(time.Second))
	if t.Bytes > 0 {
		t.Bytes = max(1<<20, int64(float64(t.Bytes)*f))
	}
	o.Test = &t
}

// settle is a short trial: enough to warm a path.
func (o *Trial) settle() *Trial {
	s := *o
	if o.Test != nil {
		t := *o.Test
		t.Duration, t.Omit, t.Bytes, t.Interval = 200*time.Millisecond, 0, 0, 100*time.Millisecond
		s.Test = &t
	}
	return &s
}

// Settle is a short trial.
func (o *TCPOptions) Settle(path.Path) (proto.Options, bool) {
	s := *o
	s.Trial = *o.settle()
	return &s, true
}

// Settle is a short trial.
func (o *UDPOptions) Settle(path.Path) (proto.Options, bool) {
	s := *o
	s.Trial = *o.settle()
	return &s, true
}

// Record is the trial's options, units spelled out.
func (o *Trial) Record() map[string]string {
	if o.Test == nil {
		return nil
	}
	return Params(*o.Test)
}

// command is the trial's face on the command line: v6lab tcp and v6lab
// udp, against v6lab serve transport.
func command(kind string) proto.Command {
	c := proto.Command{Arg: "SERVER...", TopLevel: true,
		// A SERVER argument: an address per family.
		SetArg: func(o proto.Options, arg string) {
			t := o.(interface{ trial() *Trial }).trial()
			t.Servers = append(t.Servers, arg)
		},
		Notes: func() []string {
			return []string{"congestion control of this host: " + proto.Or(transport.Congestion(), "unknown")}
		},
	}
	if kind == "udp" {
		c.Short = "Measure UDP loss, jitter, duplicates and reordering at a rate over each path"
		c.Long = `udp sends datagrams of --size bytes at --rate for --time to a v6lab transport server,
paced against the clock, and reports datagrams sent and received, lost and loss % (never
below 0 or above 100), duplicates, reordering, jitter (RFC 3550) and the one-way delay
variation. A trial in which the receiver saw nothing says so and counts as failed.
With --reverse the server sends and this host receives (as iperf3 -R): this host says
hello from its data socket, and the server sends only to the host of the control
connection; --sndbuf then applies to the server, --rcvbuf to this host. --omit sends a
warm-up before --time whose datagrams are left out of every figure (as iperf3 -O).`
		c.Example = `  v6lab udp 192.0.2.1 2001:db8::1 --rate 10M --rcvbuf 64K --time 60s --runs 10
  v6lab udp 127.0.0.1 ::1 --rate 100M
  v6lab udp 192.0.2.1 2001:db8::1 --rate 50M --reverse`
		return c
	}
	c.Short = "Measure TCP throughput, window, MSS and retransmits over each path"
	c.Long = `tcp runs trials against a v6lab transport server (v6lab serve transport): for each path,
streams send for --time or until --bytes are sent, and the trial reports transfer time,
throughput in total and per interval, bytes, retransmits, RTT and cwnd from TCP_INFO, and
the RFC 6349 metrics: TCP efficiency, buffer delay and, given --bottleneck, the transfer
time ratio against the ideal for the path's MTU and headers (IPv4, IPv6 and 6in4 differ).
Give one server address per family (port 5301 unless given). The congestion control in
use is recorded even when not set. With --reverse the server sends and this host receives
(as iperf3 -R), on the connections this host opened: the sending side's figures come
from the server's TCP_INFO; --sndbuf and --congestion then apply to the server, --rcvbuf
and --window to this host. --omit sends a warm-up before --time and leaves it out of every
figure (as iperf3 -O); its intervals are shown, marked (omitted).`
	c.Example = `  v6lab tcp 192.0.2.1 2001:db8::1 --time 60s --runs 10
  v6lab tcp 192.0.2.1 2001:db8::1 --bytes 200M --window 64K --mss 1024 --bottleneck 100M
  v6lab tcp 127.0.0.1 ::1 --streams 4 --congestion cubic
  v6lab tcp 192.0.2.1 2001:db8::1 --reverse --time 30s
  v6lab tcp 192.0.2.1 2001:db8::1 --omit 2s --time 60s --runs 10`
	return c
}

// trial is the options both trials share.
func (o *Trial) trial() *Trial { return o }

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
func (o *Trial) Target(p path.Path) (proto.Endpoint, error) {
	for _, a := range o.Servers {
		if ap, err := ParseServer(a); err == nil && p.Accepts(ap.Addr()) {
			return proto.Endpoint{Host: ap.Addr().String(), Port: int(ap.Port())}, nil
		}
	}
	return proto.Endpoint{}, fmt.Errorf("no %s server address among %v", p.Family(), o.Servers)
}

// Probe runs one trial per transaction against the server at ep.
func (o *Trial) Probe(ep proto.Endpoint, p path.Path) (load.Probe, error) {
	if ep.Host == "" {
		return nil, fmt.Errorf("no %s transport server to test against", p.Family())
	}
	srv, err := ep.AddrPort()
	if err != nil {
		return nil, err
	}
	opts := transport.Options{Test: o.kind}
	if o.Test != nil {
		opts = *o.Test
		opts.Test = o.kind
	}
	return &transport.Probe{Server: srv, Path: p, Source: ep.Source, Opts: opts}, nil
}

// ServerKey is the server tcp and udp share.
const ServerKey = "transport"

// DefaultRequestTimeout is how long a client may take to send its request.
const DefaultRequestTimeout = 10 * time.Second

// Server is the embedded transport server, which answers both trials.
var Server = proto.Server{
	Key:   ServerKey,
	About: "embedded v6lab transport server",
	Settings: func() any {
		return &ServerSettings{MaxTests: transport.DefaultMaxTests, RequestTimeout: proto.Duration(DefaultRequestTimeout)}
	},
	Serve: serve,
	Command: proto.ServeCommand{
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
		Listen:  []string{"127.0.0.1:5301", "[::1]:5301"},
		Verbose: "log refused and failed tests",
	},
	// A test's data streams use ports chosen per test.
	WireAnyPort: true,
	// Transport servers are named by address, as iperf3's.
	ByAddress: true,
}

// ServerSettings are the transport server's.
type ServerSettings struct {
	MaxTests       int            `opt:"max_tests" usage:"tests served at once; the excess is refused with a reply"`
	RequestTimeout proto.Duration `opt:"request_timeout" usage:"time a client may take to send its request"`
}

func defaultSettings() *ServerSettings {
	return &ServerSettings{MaxTests: transport.DefaultMaxTests, RequestTimeout: proto.Duration(DefaultRequestTimeout)}
}

// serve starts it; its data sockets open per test, through the place's
// namespace. With a Log, refused and failed tests are logged.
func serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	set, _ := at.Settings.(*ServerSettings)
	if set == nil {
		set = defaultSettings()
	}
	srv := &transport.Server{In: at.Do, MaxTests: set.MaxTests, RequestTimeout: time.Duration(set.RequestTimeout)}
	if at.Log != nil {
		srv.Log = slog.New(slog.NewTextHandler(at.Log, nil))
	}
	if srv.MaxTests < 1 || srv.MaxTests > 10000 {
		return nil, proto.Errorf("max_tests", "%d is not between 1 and 10000", srv.MaxTests)
	}
	if d := srv.RequestTimeout; d <= 0 || d > time.Hour {
		return nil, proto.Errorf("request_timeout", "%v: want more than 0 and at most 1h", d)
	}
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
	if o.SizeMax {
		m["size"] = "max (the largest unfragmented on each path)"
	}
	add("bottleneck", int64(o.Bottleneck), " bit/s")
	if o.Congestion != "" {
		m["congestion"] = o.Congestion
	}
	if o.Reverse {
		m["direction"] = "reverse (server to client)"
	}
	return m
}

// Transport is the test the trial's options make, once checked.
func (o *Trial) Transport() *transport.Options { return o.Test }

// Notes say the congestion control a TCP trial asked for (the command's
// note gives the host's default beside it), and a UDP trial's datagrams.
func (o *Trial) Notes([]path.Path) []string {
	if o.Test == nil {
		return nil
	}
	var notes []string
	if o.Test.Congestion != "" {
		notes = append(notes, "congestion control of these trials: "+o.Test.Congestion+" (--congestion)")
	}
	if o.Test.Test == "udp" {
		notes = append(notes, "udp trials: "+datagramNote(o.Test.Size, o.Test.SizeMax))
	}
	return notes
}
