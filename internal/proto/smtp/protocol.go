package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"v6lab/internal/gen/load"
	"v6lab/internal/input/units"
	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Protocol is SMTP mail submission: its options, commands and servers.
var Protocol = proto.Protocol{
	Name: "smtp",
	New:  func() proto.Options { return &Options{} },
	Command: proto.Command{
		Arg:    "HOST[:PORT]|smtp://HOST[:PORT]",
		SetArg: func(o proto.Options, arg string) { o.(*Options).URL = proto.ServerURL("smtp", arg) },
		Short:  "Measure SMTP mail submission, DNS lookup included, over each path",
		Long: `probe smtp times sending one message per transaction to HOST (port 25 unless given): the
name is looked up with the path's record type, a new connection pinned to the path reads
the greeting, then EHLO, MAIL FROM, RCPT TO and DATA; the transaction ends on the server's
250 acceptance of the message ("250 ok queued as …"). A refusal at any step (4xx, 5xx)
is a failed transaction that keeps the server's reply. --to may hold %d, replaced by the
simulated user's number.`,
		Example: `  v6lab probe smtp mx.example.test --paths ipv4,ipv6 --conns 1,10,100,500 --to postmaster@example.test
  v6lab probe smtp 127.0.0.1:2525 --paths ipv4 --to 'user%d@v6lab.test' --size 64000
  v6lab probe smtp mx.example.test:587 --starttls
  v6lab probe smtp 192.0.2.25:2525 --starttls --tls-pin SHA256   # the SHA-256 v6lab serve smtp printed`,
	},
	Server: &proto.Server{
		Key:   "smtp",
		About: "embedded (go-smtp, every message kept; STARTTLS with a self-signed certificate v6lab's client pins)",
		Serve: serve,
		Command: proto.ServeCommand{
			Short: "Accept mail over SMTP, keeping and counting every message",
			Long: `serve smtp accepts any envelope on every --listen address until interrupted, keeps
every message it accepts (its Message-ID and size) and answers "250 2.0.0 OK: queued as
N". It offers STARTTLS with a fresh self-signed certificate, whose SHA-256 it prints
(a client elsewhere pins it: probe smtp --starttls --tls-pin SHA256). On exit it prints how many
messages it accepted and kept, so a run can be checked for lost mail.`,
			Example: `  v6lab serve smtp
  v6lab serve smtp --listen 0.0.0.0:2525 --listen [::]:2525
  v6lab probe smtp 192.0.2.25:2525 --starttls --tls-pin SHA256   # from the client host`,
			Listen: []string{"127.0.0.1:2525", "[::1]:2525"},
		},
	},
	Real: &proto.Real{Program: "postfix", Package: "postfix", Port: RealPort, Fit: realFit, Start: startReal},
}

// RealPort is the real Postfix's port in the lab's server host.
const RealPort = 25

// Options are an smtp cell's options.
type Options struct {
	proto.Common
	proto.Named
	proto.TLSClient
	From     string      `json:"from,omitempty" opt:"from,default=v6lab@v6lab.test" usage:"envelope sender"`
	To       string      `json:"to,omitempty" opt:"to,default=user%d@v6lab.test" usage:"envelope recipient (%d: the simulated user's number)"`
	Size     units.Bytes `json:"size,omitempty" opt:"size,default=4096" usage:"message body size (bytes, or such as 100K)"`
	StartTLS bool        `json:"starttls,omitempty" opt:"starttls" usage:"upgrade with STARTTLS before MAIL FROM"`
}

// Check applies smtp's rules: a url only with where: hosts, mail
// addresses, a message size the embedded server takes.
func (o *Options) Check(where result.Where, given proto.Given) error {
	if err := o.CheckURL(where, "smtp://host[:port]", "v6lab chooses the embedded server's address"); err != nil {
		return err
	}
	if o.URL != "" {
		if err := proto.CheckHostPortURL(o.URL, "smtp"); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"from", o.From}, {"to", o.To}} {
		if err := proto.CheckLine(f.name, f.v); err != nil {
			return err
		}
		if f.v == "" && given(f.name) {
			return proto.Errorf(f.name, "is empty: give a mail address")
		}
		if f.v != "" && (!strings.Contains(f.v, "@") || strings.ContainsAny(f.v, "<> ")) {
			return proto.Errorf(f.name, "%q is not a mail address", f.v)
		}
	}
	if o.Size < 0 || o.Size > MaxMessage {
		return proto.Errorf("size", "%d: want 0 to %d bytes", o.Size, MaxMessage)
	}
	if err := o.CheckPin(where); err != nil {
		return err
	}
	if o.TLSPin != "" && !o.StartTLS {
		return proto.Errorf(proto.OptTLSPin, "pins the certificate of STARTTLS: give starttls too")
	}
	return nil
}

// Target is the server the cell's url names.
func (o *Options) Target(p path.Path) (proto.Endpoint, error) {
	return proto.HostPortTarget(&o.Named, "smtp", 25, p)
}

// Probe sends one message per transaction to the server at ep.
func (o *Options) Probe(ep proto.Endpoint, p path.Path) (load.Probe, error) {
	if ep.Host == "" || ep.Port == 0 {
		return nil, errors.New("no SMTP server to measure")
	}
	c := &Client{Host: ep.Host, Port: ep.Port, Path: p, Resolver: ep.Resolver(), Source: ep.Source,
		From: proto.Or(o.From, "v6lab@v6lab.test"), To: proto.Or(o.To, "user%d@v6lab.test"), Size: int(o.Size), StartTLS: o.StartTLS}
	switch {
	case o.Insecure:
		c.TLS = &tls.Config{InsecureSkipVerify: true}
	case o.TLSPin != "": // a named server's certificate, as the user pinned it
		c.TLS = proto.Pinned(&tls.Config{ServerName: ep.Host}, o.TLSPin)
	case ep.CertSHA256 != "": // v6lab's own server: its certificate, no other
		c.TLS = proto.Pinned(&tls.Config{ServerName: ep.Host}, ep.CertSHA256)
	}
	return c, nil
}

// realFit says why a cell cannot submit to Postfix.
func realFit(o proto.Options) error {
	if o.(*Options).StartTLS {
		return fmt.Errorf("the real Postfix is set up without TLS: starttls needs servers: embedded or a real host")
	}
	return nil
}

// startReal starts Postfix, an instance of its own, in the lab's server
// host.
func startReal(ctx context.Context, at proto.RealPlace) (*proto.RealRunning, error) {
	pf, err := startPostfix(ctx, at.Daemon, at.Listen(), RealPort, "v6lab.test")
	if err != nil {
		return nil, err
	}
	return &proto.RealRunning{Stop: pf.Stop, About: map[string]string{
		"smtp (real)": proto.RealAbout(pf, ", an instance of its own; accepted mail is discarded")}}, nil
}

// serve starts the embedded server.
func serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	s, err := proto.Listen(at, func(addrs []netip.Addr, port int) (*Server, error) { return Listen(ctx, addrs, port) })
	if err != nil {
		return nil, err
	}
	return running{proto.Served(s, s.Port), s}, nil
}

type running struct {
	proto.Running
	s *Server
}

// CertSHA256 pins the server's STARTTLS certificate (proto.Pinner).
func (r running) CertSHA256() string { return r.s.CertSHA256() }

// Detail names the STARTTLS certificate (proto.Detailed).
func (r running) Detail() string {
	return "STARTTLS with a self-signed certificate, SHA-256 " + r.s.CertSHA256()
}

// Summary says how many messages it accepted and kept.
func (r running) Summary() string {
	kept, bytes := r.s.Kept()
	return fmt.Sprintf("accepted %d messages, kept %d distinct (%d bytes)", r.s.Accepted.Load(), kept, bytes)
}
