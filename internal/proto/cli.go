package proto

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/input/units"
)

// Command is how a protocol appears on the command line, as v6lab probe
// NAME ARG and v6lab serve NAME: the CLI builds both from it, so a new
// protocol needs no code in cmd.
type Command struct {
	// Arg names the probe's argument (URL, NAME, HOST[:PORT]; ending in
	// ... when it repeats); SetArg puts each into the options.
	Arg string
	// TopLevel: the command is v6lab NAME, not v6lab probe NAME (tcp,
	// udp).
	TopLevel             bool
	Short, Long, Example string
	// Flags are the probe's own flags (beside the load flags every
	// measuring command has), each setting an option.
	Flags []Flag
	// Serve describes v6lab serve NAME; empty Short: no serve command.
	Serve ServeCommand
}

// ServeCommand is v6lab serve NAME.
type ServeCommand struct {
	Short, Long, Example string
	// Listen is --listen's default.
	Listen []string
	// Flags are its settings (proto.Place.Settings, by option name).
	Flags []Flag
	// Require names a flag that must be given.
	Require string
	// Verbose, when set, adds -v/--verbose (its help): the server logs
	// to standard error.
	Verbose string
}

// Flag is one flag of a protocol's command.
type Flag struct {
	// Name is the flag's name; Option the option (or setting) it sets,
	// by its experiment-file name.
	Name, Option string
	// Kind is string, bool, int, duration or list (repeatable); Short
	// is its one-letter form, if any.
	Kind    string
	Short   string
	Default string
	Usage   string
}

// Flag kinds.
const (
	KindString = "string"
	KindBool   = "bool"
	KindInt    = "int"
	KindList   = "list"
	// KindDuration is a time such as 10s.
	KindDuration = "duration"
)

// ServeCommander is a server with a serve command of its own (one that
// answers several protocols: the transport server).
type ServeCommander interface {
	ServeCommand() ServeCommand
}

// Targeted is a protocol with a probe command: Target puts the command's
// argument into the options.
type Targeted interface {
	Command() Command
	SetArg(o *Options, arg string)
}

// setters set an option from its text, by option name: what flags give.
var setters = map[string]func(o *Options, v string) error{
	"url":         func(o *Options, v string) error { o.URL = v; return nil },
	"query":       func(o *Options, v string) error { o.Query = v; return nil },
	"dns_servers": func(o *Options, v string) error { o.DNSServers = append(o.DNSServers, v); return nil },
	"transport":   func(o *Options, v string) error { return setBoolText(v, "tcp", &o.Transport) },
	"mode":        func(o *Options, v string) error { o.Mode = v; return nil },
	"expect":      func(o *Options, v string) error { o.Expect = v; return nil },
	"file":        func(o *Options, v string) error { o.File = v; return nil },
	"active":      func(o *Options, v string) error { return setBool(v, &o.Active) },
	"from":        func(o *Options, v string) error { o.From = v; return nil },
	"to":          func(o *Options, v string) error { o.To = v; return nil },
	// size is an SMTP message's, or a UDP trial's datagrams'
	"size": func(o *Options, v string) error {
		n, err := units.ParseSize(v)
		if err != nil || n > math.MaxInt32 {
			return fmt.Errorf("%q: want bytes, such as 4096 or 100K", v)
		}
		o.Size = int(n)
		o.trial().Size = o.Size
		return nil
	},
	"starttls":    func(o *Options, v string) error { return setBool(v, &o.StartTLS) },
	OptTLSPin:     func(o *Options, v string) error { o.TLSPin = v; return nil },
	"users":       func(o *Options, v string) error { return setInt(v, &o.Users) },
	"user_format": func(o *Options, v string) error { o.UserFormat = v; return nil },
	"password":    func(o *Options, v string) error { o.Password = v; return nil },
	"no_objects":  func(o *Options, v string) error { return setBool(v, &o.Probe.NoObjects) },
	"insecure":    func(o *Options, v string) error { return setBool(v, &o.Probe.Insecure) },
	"tls_resume":  func(o *Options, v string) error { return setBool(v, &o.TLSResume) },
	"tls_groups":  func(o *Options, v string) error { o.TLSGroups = v; return nil },
	"max_body":    func(o *Options, v string) error { o.Probe.MaxBody = v; return nil },
	"engine":      func(o *Options, v string) error { o.Probe.Engine = v; return nil },
	"dialer":      func(o *Options, v string) error { o.Dialer = v; return nil },
	"aaaa_delay":  func(o *Options, v string) error { o.AAAADelay = v; return nil },
	"attempt_delay": func(o *Options, v string) error {
		var d time.Duration
		if err := setDuration(v, &d); err != nil {
			return err
		}
		o.AttemptDelay = d.String()
		return nil
	},
	"dns_over": func(o *Options, v string) error { o.Probe.DNSOver = v; return nil },
	"type":     func(o *Options, v string) error { o.Type = v; return nil },
	// a trial's, as given (its Check decodes them)
	"time":       func(o *Options, v string) error { return setDuration(v, &o.trial().Time) },
	"omit":       func(o *Options, v string) error { return setDuration(v, &o.trial().Omit) },
	"interval":   func(o *Options, v string) error { return setDuration(v, &o.trial().Interval) },
	"bytes":      func(o *Options, v string) error { o.trial().Bytes = v; return nil },
	"window":     func(o *Options, v string) error { o.trial().Window = v; return nil },
	"sndbuf":     func(o *Options, v string) error { o.trial().SndBuf = v; return nil },
	"rcvbuf":     func(o *Options, v string) error { o.trial().RcvBuf = v; return nil },
	"bottleneck": func(o *Options, v string) error { o.trial().Bottleneck = v; return nil },
	"rate":       func(o *Options, v string) error { o.trial().Rate = v; return nil },
	"congestion": func(o *Options, v string) error { o.trial().Congestion = v; return nil },
	"streams":    func(o *Options, v string) error { return setInt(v, &o.trial().Streams) },
	"mss":        func(o *Options, v string) error { return setInt(v, &o.trial().MSS) },
	"reverse":    func(o *Options, v string) error { return setBool(v, &o.trial().Reverse) },
	"servers":    func(o *Options, v string) error { o.Servers = append(o.Servers, v); return nil },
	// http's version (h2, h3) and QUIC's 0-RTT
	"http_version": func(o *Options, v string) error { o.HTTPVersion = v; return nil },
	"zero_rtt":     func(o *Options, v string) error { return setBool(v, &o.ZeroRTT) },
	"keepalive":    func(o *Options, v string) error { return setBool(v, &o.Keepalive) },
}

// trial is the options' trial input, made when first set.
func (o *Options) trial() *TrialInput {
	if o.Trial == nil {
		o.Trial = &TrialInput{}
	}
	return o.Trial
}

func setDuration(v string, dst *time.Duration) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 10s", v)
	}
	*dst = d
	return nil
}

// Set sets option name from text, as a flag gives it.
func (o *Options) Set(name, v string) error {
	set, ok := setters[name]
	if !ok {
		return fmt.Errorf("no option %q", name)
	}
	if err := set(o, v); err != nil {
		return Errorf(name, "%v", err)
	}
	return nil
}

// Settable lists the options Set knows.
func Settable() []string {
	var out []string
	for k := range setters {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func setBool(v string, dst *bool) error {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return fmt.Errorf("%q is not true or false", v)
	}
	*dst = b
	return nil
}

// setBoolText sets dst to word when v is true (a --tcp flag for transport:
// tcp).
func setBoolText(v, word string, dst *string) error {
	var b bool
	if err := setBool(v, &b); err != nil {
		return err
	}
	if b {
		*dst = word
	} else if *dst == word {
		*dst = ""
	}
	return nil
}

func setInt(v string, dst *int) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return fmt.Errorf("%q is not a whole number", v)
	}
	*dst = n
	return nil
}

// DNSFlags are the flags of every probe whose server is a name.
func DNSFlags() []Flag {
	return []Flag{
		{Name: "dns-server", Option: "dns_servers", Kind: KindList, Usage: "DNS server ADDR[:PORT] to ask (repeat for each family; a link-local one with its zone, [fe80::1%eth0]:53; default: /etc/resolv.conf)"},
		{Name: "dns-over", Option: "dns_over", Default: "path", Usage: "family that carries the DNS query: path, ipv4 or ipv6"},
	}
}
