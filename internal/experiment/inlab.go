package experiment

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"

	"v6lab/internal/lab"
	"v6lab/internal/path"
	"v6lab/internal/proto/dns"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/transport"
)

// InLab is the embedded HTTP and DNS servers running inside a lab's server
// namespace, and what a client in the client namespace needs to reach them
// over each path.
type InLab struct {
	HTTP      *httpp.Server
	DNS       *dns.Server
	URL       *url.URL
	Resolvers map[path.Path]*path.Resolver
	Sources   map[path.Path]netip.Addr
	// SMTP accepts and keeps mail; IMAP holds imap.DefaultUsers users.
	SMTP *smtp.Server
	IMAP *imap.Server
	// Transport is the embedded transport server (tcp and udp tests).
	Transport     *transport.Running
	TransportAddr map[path.Path]netip.AddrPort
}

// StartInLab starts the servers on the server's IPv4, IPv6 and 6in4
// addresses (one port each for HTTP and DNS). The name LocalName has an A
// record and an AAAA record for the native IPv6 address; queries that arrive
// on the 6in4 address get the 6in4 address as AAAA (a view), so the
// tunneled path looks its name up through the tunnel, as in the study.
func StartInLab(ctx context.Context, l *lab.Lab, cfg httpp.ServerConfig) (*InLab, error) {
	a := l.Addr
	addrs := []netip.Addr{a.ServerV4, a.ServerV6, a.ServerTun6}
	in := &InLab{}
	err := lab.Do(lab.NS(l.Name, lab.Server), func() error {
		var err error
		if in.HTTP, err = httpp.Listen(ctx, cfg, addrs, 0); err != nil {
			return err
		}
		zone, tunnel := dns.Zone{}, dns.Zone{}
		zone.Add(LocalName, a.ServerV4)
		zone.Add(LocalName, a.ServerV6)
		tunnel.Add(LocalName, a.ServerV4)
		tunnel.Add(LocalName, a.ServerTun6)
		in.DNS, err = dns.ListenViews(ctx, zone, dns.Views{a.ServerTun6: tunnel}, addrs, 0)
		if err != nil {
			in.HTTP.Close()
			return err
		}
		if in.SMTP, err = smtp.Listen(ctx, addrs, 0); err != nil {
			in.HTTP.Close()
			in.DNS.Close()
			return err
		}
		if in.IMAP, err = imap.Listen(ctx, addrs, 0, imap.DefaultUsers, imapMessageSize); err != nil {
			in.HTTP.Close()
			in.DNS.Close()
			in.SMTP.Close()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("experiment: servers in the lab: %w", err)
	}
	// Its data sockets open per test, so it opens them in the namespace too.
	in.Transport, err = transport.ListenAndServeIn(ctx, func(fn func() error) error { return lab.Do(lab.NS(l.Name, lab.Server), fn) }, addrs, 0, nil)
	if err != nil {
		in.HTTP.Close()
		in.DNS.Close()
		in.SMTP.Close()
		in.IMAP.Close()
		return nil, fmt.Errorf("experiment: transport server in the lab: %w", err)
	}
	tp, port := uint16(in.Transport.Port), uint16(in.DNS.Port)
	in.URL = &url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", LocalName, in.HTTP.Port), Path: "/"}
	in.TransportAddr = map[path.Path]netip.AddrPort{}
	in.Resolvers = map[path.Path]*path.Resolver{}
	in.Sources = map[path.Path]netip.Addr{}
	for _, p := range a.Paths() {
		in.TransportAddr[p] = netip.AddrPortFrom(a.Server(p), tp)
		in.Resolvers[p] = &path.Resolver{Servers: []netip.AddrPort{netip.AddrPortFrom(a.Server(p), port)}, Source: a.Source(p)}
		if src := a.Source(p); src.IsValid() {
			in.Sources[p] = src
		}
	}
	return in, nil
}

// Close stops both servers.
func (in *InLab) Close() {
	in.HTTP.Close()
	in.DNS.Close()
	in.SMTP.Close()
	in.IMAP.Close()
	in.Transport.Close()
}
