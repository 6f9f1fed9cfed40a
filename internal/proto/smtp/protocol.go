package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// Protocol is SMTP mail submission (proto.Protocol).
type Protocol struct{}

func (Protocol) Name() string { return "smtp" }

func (Protocol) Options() []string {
	return []string{"from", "to", "size", "starttls", proto.OptTLSPin, proto.OptURL, proto.OptDNSServers}
}

// Check applies smtp's rules: a url only with where: hosts, mail
// addresses, a message size the embedded server takes.
func (Protocol) Check(o *proto.Options, where string, given proto.Given) error {
	if err := proto.CheckURLWhere(o, where, "smtp://host[:port]", "v6lab chooses the embedded server's address"); err != nil {
		return err
	}
	if o.URL != "" {
		if !strings.HasPrefix(o.URL, "smtp://") {
			return proto.Errorf(proto.OptURL, "%q: want smtp://host[:port]", o.URL)
		}
	}
	for _, f := range []struct{ name, v string }{{"from", o.From}, {"to", o.To}} {
		if f.v != "" && (!strings.Contains(f.v, "@") || strings.ContainsAny(f.v, "<>\r\n ")) {
			return proto.Errorf(f.name, "%q is not a mail address", f.v)
		}
	}
	if o.Size < 0 || o.Size > MaxMessage {
		return proto.Errorf("size", "%d: want 0 to %d bytes", o.Size, MaxMessage)
	}
	if err := proto.CheckPin(o, where); err != nil {
		return err
	}
	if o.TLSPin != "" && !o.StartTLS {
		return proto.Errorf(proto.OptTLSPin, "pins the certificate of STARTTLS: give starttls too")
	}
	return proto.CheckDNSServers(o, where)
}

// Target is the server the cell's url names.
func (Protocol) Target(o *proto.Options, p path.Path) (proto.Endpoint, error) {
	return proto.HostPortTarget(o.URL, "smtp", 25, o.DNSServers, o.Probe.DNSOver)
}

// Probe sends one message per transaction to the server at ep.
func (Protocol) Probe(o *proto.Options, ep proto.Endpoint, p path.Path) (load.Probe, error) {
	if ep.Host == "" || ep.Port == 0 {
		return nil, errors.New("no SMTP server to measure")
	}
	c := &Client{Host: ep.Host, Port: ep.Port, Path: p, Resolver: ep.Resolver(), Source: ep.Source,
		From: proto.Or(o.From, "v6lab@v6lab.test"), To: proto.Or(o.To, "user%d@v6lab.test"), Size: o.Size, StartTLS: o.StartTLS}
	switch {
	case o.Probe.Insecure:
		c.TLS = &tls.Config{InsecureSkipVerify: true}
	case o.TLSPin != "": // a named server's certificate, as the user pinned it
		c.TLS = proto.Pinned(&tls.Config{ServerName: ep.Host}, o.TLSPin)
	case ep.CertSHA256 != "": // v6lab's own server: its certificate, no other
		c.TLS = proto.Pinned(&tls.Config{ServerName: ep.Host}, ep.CertSHA256)
	}
	return c, nil
}

// RealServer is the lab's real mail server.
func (Protocol) RealServer() string { return "postfix" }

// RealFit says why a cell cannot submit to Postfix.
func (Protocol) RealFit(o *proto.Options) error {
	if o.StartTLS {
		return fmt.Errorf("the real Postfix is set up without TLS: starttls needs servers: embedded or a real host")
	}
	return nil
}

// About describes the embedded server.
func (Protocol) About() string {
	return "embedded (go-smtp, every message kept; STARTTLS with a self-signed certificate v6lab's client pins)"
}

// Serve starts the embedded server.
func (Protocol) Serve(ctx context.Context, at proto.Place) (proto.Running, error) {
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
