// Package proto says what a protocol is to v6lab: the Protocol interface
// every protocol package (proto/http, proto/dns, …) implements, the cell
// Options they read and check, Endpoint (where a server answers on one
// path), and Place (where an embedded server listens). The explicit list
// of protocols is proto/all.
//
// proto imports nothing of v6lab above load, path, result, transport,
// content and units: protocol packages import it, never the reverse.
package proto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"v6lab/internal/gen/load"
	"v6lab/internal/sock/path"
)

// Protocol is everything v6lab knows about one protocol: its name, the
// cell options it takes and how they are checked (the same code for an
// experiment file and for flags), where its server is when a cell names
// one itself, and the probe that makes one transaction over a pinned path.
type Protocol interface {
	// Name is the protocol's name in experiment files and results.
	Name() string
	// Options are the cell options it takes, by their experiment-file
	// names (flags spell them with - for _).
	Options() []string
	// Check checks a cell's options as the user gave them (given says
	// which) for a place to run (lab, loopback, hosts or auto), and
	// completes them (defaults, decoded values). Its errors name the
	// option: *OptionError.
	Check(o *Options, where string, given Given) error
	// Target is the server a cell names itself (where: hosts, or a probe
	// command) as seen from path p.
	Target(o *Options, p path.Path) (Endpoint, error)
	// Probe makes the probe of a cell over path p to the server at ep.
	Probe(o *Options, ep Endpoint, p path.Path) (load.Probe, error)
}

// Server is a protocol with an embedded server.
type Server interface {
	// Serve starts the embedded server at a place; it serves until ctx
	// ends or Close.
	Serve(ctx context.Context, at Place) (Running, error)
	// About describes the embedded server for a result's header.
	About() string
}

// OwnProcess is a Server whose library opens sockets from goroutines of its
// own (ftpserverlib's passive listeners): in a network namespace it runs as
// a process of its own (v6lab serve NAME), never on a thread of the caller.
type OwnProcess interface {
	OwnProcess() bool
}

// Real is a protocol with a real Debian server the lab can run.
type Real interface {
	// RealServer is the program's name (nginx, unbound, …).
	RealServer() string
	// RealFit says why a cell cannot run against the real server.
	RealFit(o *Options) error
}

// PathFit is a Protocol whose options not every path can meet (a reply
// only some paths' queries get): PathFit says why a cell, checked and
// completed, cannot run over p where it runs (lab, loopback, hosts, auto).
type PathFit interface {
	PathFit(o *Options, where string, p path.Path) error
}

// Timed is a Protocol whose cells may time something other than v6lab's
// own transaction (a transport trial its transfer, curl its download):
// Timing says what, for the notes of a result that holds such a cell, in
// place of the transactions' timing note, which would be wrong for it; ""
// for a cell timed as a transaction.
type Timed interface {
	Timing(o *Options) string
}

// ByAddress is a Server its clients reach by address rather than by name
// (a DNS server; the transport server, named by address on the command
// line as iperf3's).
type ByAddress interface {
	ByAddress() bool
}

// RealFiles is a Real protocol whose server is given files: what the
// embedded server would serve (its page and objects), and where it serves
// a generated file of each size a cell asks for (FileDir).
type RealFiles interface {
	RealFiles() map[string][]byte
	FileDir() string
}

// RealMailboxes is a Real protocol whose server holds mailboxes: how many
// users (at least the most a cell asks for), their password, the message
// in every INBOX.
type RealMailboxes interface {
	RealMailboxes(users int) (int, string, []byte)
}

// WireAnyPort is a protocol whose data flows on ports chosen per
// transaction (FTP's data connections, transport tests' streams): the wire
// check counts every TCP and UDP packet of its runs.
type WireAnyPort interface {
	WireAnyPort() bool
}

// WireUDP is a server whose measured traffic is UDP alone on its port
// (HTTP/3's QUIC): the wire check counts only UDP there, so a run that
// went over TCP proves nothing.
type WireUDP interface {
	WireUDP() bool
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

// Summarized is a Running server that says what it did once closed (the
// SMTP server's accepted and kept messages).
type Summarized interface {
	Summary() string
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
	// Name is the name the embedded DNS server gives the servers.
	Name string
	// In runs fn inside the server's network namespace (nil: here). A
	// server that opens sockets after Serve returns (the transport
	// server's data sockets) opens them through it.
	In func(fn func() error) error
	// Settings are the serve command's flags, by name (--objects 0 is
	// "objects": ["0"]); absent ones take the server's defaults.
	Settings map[string][]string
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

// Setting is the last value given for a serve setting, or def.
func (pl Place) Setting(name, def string) string {
	if v := pl.Settings[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return def
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
