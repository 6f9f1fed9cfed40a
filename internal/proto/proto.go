// Package proto says what a protocol is to v6lab: the Protocol descriptor
// every protocol package (proto/http, proto/dns, …) fills, the typed
// Options each owns (their tags name them for experiment files and flags
// alike), Endpoint (where a server answers on one path), and Place (where
// an embedded server listens). The explicit list of protocols is
// proto/all.
//
// proto imports only what every protocol builds on (load, path, result,
// transport, content, units, specfile, the real servers' starters):
// protocol packages import it, never the reverse.
package proto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"v6lab/internal/gen/content"
	"v6lab/internal/lab/servers"
	"v6lab/internal/sock/path"
)

// Protocol describes one protocol to v6lab, as a plain value in its
// package and one line in proto/all's list: its name, its options, its
// commands, its embedded and real servers, and what it can do.
type Protocol struct {
	// Name is the protocol's name in experiment files and results.
	Name string
	// New makes its options, empty: a pointer to its options struct.
	New func() Options
	// Command is its probe command (v6lab probe NAME, or v6lab NAME);
	// its flags come from the options' tags.
	Command Command
	// Server is its embedded server; nil when another answers it.
	Server *Server
	// ServedBy is the key of the embedded server that answers it when it
	// is not its own (tcp and udp: transport).
	ServedBy string
	// Real is its real Debian server in the lab; nil: it has none.
	Real *Real
	// Races: its client can race the families on the dual path, as a
	// dual-stack client does (Happy Eyeballs).
	Races bool
	// ServerCapture: a capture in the server host can give its
	// transactions' server-side figures, from the request to the client's
	// last ACK (the Towson study's: plain http).
	ServerCapture bool
	// SingleTest: a cell is one test (a transport trial): never
	// simultaneous users, no warm-up by default, a timeout that follows
	// its length.
	SingleTest bool
}

// ServerKey is the key of the embedded server that answers the protocol.
func (p *Protocol) ServerKey() string {
	if p.ServedBy != "" {
		return p.ServedBy
	}
	return p.Name
}

// Options lists the options experiment files may give a cell of the
// protocol.
func (p *Protocol) Options() []string { return FileNames(p.New()) }

// Server describes an embedded server.
type Server struct {
	// Key names it in endpoints and the wire check (a protocol's name,
	// or one several share: transport).
	Key string
	// About describes it for a result's header; AboutAt, when set, at a
	// place (the views of its lab-only paths).
	About   string
	AboutAt func(at Place) string
	// Settings makes its settings at their defaults, a pointer to a
	// struct whose tags name the serve command's flags as options' do;
	// nil: it has none.
	Settings func() any
	// Serve starts it at a place with at.Settings (nil: the defaults);
	// it serves until ctx ends or Close.
	Serve func(ctx context.Context, at Place) (Running, error)
	// Command is v6lab serve KEY; an empty Short: no such command.
	Command ServeCommand
	// Scheme is its endpoints' URL scheme where it is not the
	// protocol's usual one (https).
	Scheme string
	// WireAnyPort: its data flows on ports chosen per transaction (FTP's
	// data connections, transport tests' streams), so the wire check
	// counts every TCP and UDP packet of its runs.
	WireAnyPort bool
	// WireUDP: its measured traffic is UDP alone on its port (HTTP/3's
	// QUIC), so the wire check counts only UDP there: a run that went
	// over TCP proves nothing.
	WireUDP bool
	// ByAddress: clients reach it by its address rather than by name (a
	// DNS server; the transport server, named by address as iperf3's).
	ByAddress bool
	// OwnProcess: its library opens sockets from goroutines of its own
	// (ftpserverlib's passive listeners), so in a network namespace it
	// runs as a process of its own (v6lab serve KEY), never on a thread
	// of the caller.
	OwnProcess bool
}

// Describe describes the server at a place.
func (s *Server) Describe(at Place) string {
	if s.AboutAt != nil {
		return s.AboutAt(at)
	}
	return s.About
}

// Real describes a protocol's real Debian server in the lab.
type Real struct {
	// Program is the daemon (nginx) and Package its Debian package.
	Program, Package string
	// Port is where it listens in the server host.
	Port int
	// Always: it starts with every run against real servers (the name
	// every real cell looks up: Unbound), not only for its own cells.
	Always bool
	// Uses, when set, says whether cells with options cells need Program
	// itself (nginx: not when every cell fetches from Caddy); nil: they
	// do. Needs names the others.
	Uses func(cells []Options) bool
	// Fit says why a cell with options o cannot measure it.
	Fit func(o Options) error
	// Start starts it (stopping what it started if it fails).
	Start func(ctx context.Context, at RealPlace) (*RealRunning, error)
	// Needs, when set, names the programs beside Program that cells
	// with options cells need (Caddy for HTTP/3), checked before a lab
	// is built.
	Needs func(cells []Options) []servers.Program
	// ForPaths, when set, names the programs it starts for some paths
	// alone (the DNS64 Unbound, for nat64) when real cells run over paths.
	ForPaths func(paths []path.Path) []servers.Program
}

// Programs are the programs cells with options cells, run over paths
// (RealPlace.Paths), need of r: Program (unless Uses says they need it
// not) and those Needs and ForPaths name.
func (r *Real) Programs(cells []Options, paths []path.Path) []servers.Program {
	var out []servers.Program
	if r.Uses == nil || r.Uses(cells) {
		out = append(out, servers.Program{Name: r.Program, Package: r.Package})
	}
	if r.Needs != nil {
		out = append(out, r.Needs(cells)...)
	}
	if r.ForPaths != nil {
		out = append(out, r.ForPaths(paths)...)
	}
	return out
}

// RealPlace is where a real server starts: the lab's server host.
type RealPlace struct {
	// Place is the server's addresses per path (Listen), its name and
	// the DNS64 prefix, as the embedded servers have them.
	Place
	// Sources are the client's addresses per path (a DNS view by client).
	Sources map[path.Path]netip.Addr
	// Daemon says how to run a program there and records what it makes.
	Daemon servers.Place
	// Cells are the options of every cell that measures the server.
	Cells []Options
	// Paths are the paths some cell measured against the real servers
	// runs over: a server for one path alone (the DNS64 Unbound, for
	// nat64) starts only when it is among them.
	Paths []path.Path
}

// RealRunning is a started real server.
type RealRunning struct {
	// Stop ends it and removes its files.
	Stop func()
	// About describes each daemon it started for a result's header, by
	// name ("http (real)").
	About map[string]string
	// Roles names, per key of About that stands for embedded servers of
	// other keys than its own name, those keys (nginx with TLS: http and
	// https; the DNS64 Unbound: dns, whose embedded server answers the
	// nat64 path's lookups itself). A result's header records them, so
	// that compare pairs an embedded result's servers with a real one's.
	Roles map[string][]string
	// Content is what its files hold (nginx: v6lab's generated content;
	// ProFTPD: sparse files, which read as zeros).
	Content content.Expect
	// Ports are the ports of the servers it answers as beside its
	// protocol's own (at Real.Port), by the key of the embedded server
	// they stand for (nginx's TLS as https, Caddy as h3): a cell's
	// endpoint and wire check are real/KEY (all.CellServerKey).
	Ports map[string]int
	// Pins are the SHA-256 of the certificates its TLS servers show, by
	// the same keys: v6lab's clients pin them, as the embedded servers'.
	Pins map[string]string
	// HTTPS are the ports of the TLS servers it started and the ALPN ids
	// each speaks, which the real DNS server started after it gives in
	// HTTPS records (Place.HTTPS).
	HTTPS map[int][]string
}

// Command is how a protocol appears on the command line, as v6lab probe
// NAME ARG (or v6lab NAME ARG): the CLI builds it from the descriptor, so
// a new protocol needs no code in cmd.
type Command struct {
	// Arg names the probe's argument (URL, NAME, HOST[:PORT]; ending in
	// ... when it repeats); SetArg puts each into the options.
	Arg    string
	SetArg func(o Options, arg string)
	// TopLevel: the command is v6lab NAME, not v6lab probe NAME (tcp,
	// udp).
	TopLevel             bool
	Short, Long, Example string
	// Notes, when set, are what the command's results tell their reader
	// (this host's congestion control).
	Notes func() []string
}

// ServeCommand is v6lab serve KEY; its flags come from the server's
// settings' tags.
type ServeCommand struct {
	Short, Long, Example string
	// Listen is --listen's default.
	Listen []string
	// Require names a setting that must be given.
	Require string
	// Verbose, when set, adds -v/--verbose (its help): the server logs
	// to standard error.
	Verbose string
}

// Running is a started embedded server.
type Running interface {
	// Port is the one port it listens on at every address.
	Port() int
	// Addrs are the addresses it listens on, with the port.
	Addrs() []netip.AddrPort
	Close() error
}

// Detailed is a Running server with more to say than its addresses (what
// it serves), printed by v6lab serve.
type Detailed interface {
	Detail() string
}

// Labeled is a Running server that says what it serves when that is not
// its key (http with tls: https).
type Labeled interface {
	Label() string
}

// Summarized is a Running server that says what it did once closed (the
// SMTP server's accepted and kept messages).
type Summarized interface {
	Summary() string
}

// Datagrams is implemented by the options of a protocol that may ask
// over UDP (dns; http's version 3, QUIC): for what path MTU black holes
// and dropped fragments are likely to cost it.
type Datagrams interface {
	// OverUDP says whether its transactions go over UDP, with no TCP
	// connection to stall in a black hole: a dropped Packet Too Big costs
	// them nothing (QUIC finds the path's MTU itself, RFC 9000 §14).
	OverUDP() bool
	// Fragmented says whether an answer may come in IP fragments (an
	// EDNS buffer above what a path carries whole, over UDP).
	Fragmented() bool
}

// Announce is what v6lab serve prints of r, the server of key, once it
// listens: a line per address, with its label and detail if it has them.
func Announce(key string, r Running) []string {
	name, detail := key, ""
	if l, ok := r.(Labeled); ok {
		name = l.Label() // http with --tls: https
	}
	if d, ok := r.(Detailed); ok && d.Detail() != "" {
		detail = " (" + d.Detail() + ")"
	}
	var lines []string
	for _, a := range r.Addrs() {
		lines = append(lines, fmt.Sprintf("serving %s on %s%s", name, a, detail))
	}
	return lines
}

// Place is where an embedded server listens.
type Place struct {
	// Addrs are the server's address on each path; it listens once on
	// each distinct address.
	Addrs map[path.Path]netip.Addr
	// Connect, where set, is where clients reach the server on a path
	// when that is not an address the server holds: a translated path's
	// (nat64) server address embeds its IPv4 one under DNS64. Addrs then
	// holds the path's DNS64 view's address.
	Connect map[path.Path]netip.Addr
	// DNS64 is the prefix the embedded DNS server synthesises AAAA
	// records with on a translated path's view (RFC 6147).
	DNS64 netip.Prefix
	// ListenOn, when set, are the addresses to listen on instead of
	// Addrs' (v6lab serve --listen, any number per family).
	ListenOn []netip.Addr
	// Port is the port at every address (0: one free port for all).
	Port int
	// Measured are the paths the run's cells measure, where a server
	// describes what it serves for them alone (the DNS server's views);
	// nil: every path of Addrs.
	Measured []path.Path
	// Name is the name the embedded DNS server gives the servers.
	Name string
	// HTTPS are the ports of the https servers started before the name
	// server, and the ALPN ids each speaks (Advertised), which the
	// embedded DNS server gives in HTTPS records (RFC 9460).
	HTTPS map[int][]string
	// In runs fn inside the server's network namespace (nil: here). A
	// server that opens sockets after Serve returns (the transport
	// server's data sockets) opens them through it.
	In func(fn func() error) error
	// Settings are the server's settings (its Settings struct, from the
	// serve command's flags); nil: its defaults.
	Settings any
	// Log, when set, receives a server's log (v6lab serve --verbose).
	Log io.Writer
}

// Listen lists the addresses to listen on: ListenOn, or Addrs' distinct
// addresses in path order.
func (pl Place) Listen() []netip.Addr {
	if len(pl.ListenOn) > 0 {
		return pl.ListenOn
	}
	var out []netip.Addr
	for _, k := range path.Kinds {
		if a, ok := pl.Addrs[k.Path]; ok && !contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Do runs fn in the place's namespace (here when In is nil).
func (pl Place) Do(fn func() error) error {
	if pl.In != nil {
		return pl.In(fn)
	}
	return fn()
}

// Listen starts a server at the place with listen (its package's Listen on
// addresses and a port), inside the place's namespace.
func Listen[S any](at Place, listen func(addrs []netip.Addr, port int) (S, error)) (S, error) {
	var s S
	err := at.Do(func() error {
		var err error
		s, err = listen(at.Listen(), at.Port)
		return err
	})
	return s, err
}

// Served adapts a started server whose Close returns nothing, on port.
func Served(s interface {
	Addrs() []netip.AddrPort
	Close()
}, port int) Running {
	return served{s, port}
}

type served struct {
	s interface {
		Addrs() []netip.AddrPort
		Close()
	}
	port int
}

func (s served) Port() int               { return s.port }
func (s served) Addrs() []netip.AddrPort { return s.s.Addrs() }
func (s served) Close() error {
	s.s.Close()
	return nil
}

// LocalName is the name the embedded DNS server gives the embedded servers.
const LocalName = "www.v6lab.test"

// V4OnlyName is the same server as an IPv4-only host: v6lab's DNS servers
// (lab and loopback) give it an A record and no AAAA, so an AAAA query
// gets an empty answer (NODATA); the nat64 path's lookups, which go to a
// DNS64 view, get one synthesised.
const V4OnlyName = "v4only.v6lab.test"

// LargeName is a name with a large answer: v6lab's DNS servers (lab and
// loopback) give it the server's addresses, as LocalName, and TXT records
// that make a TXT answer LargeAnswer bytes long with an EDNS OPT record:
// over UDP it needs EDNS and comes in IP fragments (1548 bytes on the
// wire over IPv6, 1528 over IPv4, more than a 1500-byte link carries),
// or truncated and then over TCP (RFC 7766).
const LargeName = "large.v6lab.test"

// LargeAnswer is the size of the TXT answer of LargeName, its OPT record
// included.
const LargeAnswer = 1500

// LargeTXT are LargeName's TXT records, a string each: with the 12-byte
// header, the 22-byte question, 12 bytes of each record's own (its name
// compressed to a pointer) and the 11-byte OPT record, the answer is
// LargeAnswer bytes.
func LargeTXT() []string {
	const n = 6
	text := LargeAnswer - 12 - (len(LargeName) + 2 + 4) - 11 - n*(12+1)
	out := make([]string, n)
	for i := range out {
		size := text / n
		if i < text%n {
			size++
		}
		head := fmt.Sprintf("v6lab large answer, record %d of %d: ", i+1, n)
		out[i] = head + strings.Repeat("x", size-len(head))
	}
	return out
}

func contains(as []netip.Addr, a netip.Addr) bool {
	for _, b := range as {
		if a == b {
			return true
		}
	}
	return false
}

// Given says whether the user gave an option, by its experiment-file name.
type Given func(option string) bool

// OptionError is a bad option: Option names it (empty: the cell as a
// whole, such as a required option that is missing).
type OptionError struct {
	Option string
	Err    error
	// Need lists the options that are required and missing, when that
	// is the error (a command line names their flags).
	Need []string
	// Why says what the needed options are for.
	Why string
	// Give is the option the error asks for with this one (Needs), and
	// Reason the error's words before it: a command line names its flag.
	Give   *Give
	Reason string
}

// Give is an option an error asks to be given: Option at Value ("": a
// switch, given too), and why, if more is to be said.
type Give struct{ Option, Value, Why string }

// Say is the request as a file says it (name "": the option's key, as
// "http_version: 2") or a command line (name "--http-version": "--http-version 2").
func (g Give) Say(name string) string {
	sep := " "
	if name == "" {
		name, sep = g.Option, ": "
	}
	out := "give " + name + sep + g.Value
	if g.Value == "" {
		out = "give " + name + " too"
	}
	if g.Why != "" {
		out += " (" + g.Why + ")"
	}
	return out
}

// Needs makes the *OptionError of option, which needs give: its reason,
// then what to give.
func Needs(option string, give Give, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	return &OptionError{Option: option, Give: &give, Reason: reason, Err: errors.New(reason + ": " + give.Say(""))}
}

func (e *OptionError) Error() string {
	if e.Option == "" {
		return e.Err.Error()
	}
	return e.Option + ": " + e.Err.Error()
}

func (e *OptionError) Unwrap() error { return e.Err }

// Errorf makes an *OptionError for option.
func Errorf(option, format string, args ...any) error {
	return &OptionError{Option: option, Err: fmt.Errorf(format, args...)}
}

// Require is the error of options required with where: hosts; why says
// what they are for.
func Require(why string, options ...string) error {
	return &OptionError{Need: options, Why: why,
		Err: fmt.Errorf("%s %s required with where: hosts (%s)", strings.Join(options, " and "), map[bool]string{true: "is", false: "are"}[len(options) == 1], why)}
}

// AsOptionError finds the *OptionError in err.
func AsOptionError(err error) (*OptionError, bool) {
	var oe *OptionError
	ok := errors.As(err, &oe)
	return oe, ok
}

// RealAbout describes a started real daemon in the lab's server host for
// a result's header: its version, and what more to say.
func RealAbout(s *servers.Server, more string) string {
	return s.Version + " in the server namespace" + more
}
