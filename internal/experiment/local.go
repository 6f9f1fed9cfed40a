package experiment

import (
	"context"

	"fmt"
	"net/netip"
	"net/url"

	"v6lab/internal/path"
	"v6lab/internal/proto/dns"
	"v6lab/internal/proto/ftp"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/transport"
)

// imapMessageSize is the size of the message in every embedded IMAP INBOX.
const imapMessageSize = 4 << 10

// LocalName is the name the embedded DNS server gives the embedded servers.
const LocalName = "www.v6lab.test"

// Local is the embedded HTTP and DNS servers on the loopback addresses of
// the paths to measure — what the main job runs against when no lab or
// remote host is given.
type Local struct {
	HTTP     *httpp.Server
	DNS      *dns.Server
	URL      *url.URL
	Resolver *path.Resolver
	// FTP serves generated files; SMTP accepts and keeps mail.
	FTP  *ftp.Server
	SMTP *smtp.Server
	IMAP *imap.Server
	// Transport answers tcp and udp tests; TransportAddr per path.
	Transport     *transport.Running
	TransportAddr map[path.Path]netip.AddrPort
}

// StartLocal starts both servers on 127.0.0.1 and/or ::1 (one port per
// server for both families) and names them LocalName.
func StartLocal(ctx context.Context, paths []path.Path, cfg httpp.ServerConfig) (*Local, error) {
	var addrs []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, p := range paths {
		if p.Kind().LabOnly {
			return nil, fmt.Errorf("experiment: path %s needs the lab (between its namespaces); on loopback only ipv4 and ipv6 exist", p)
		}
		if a := p.Loopback(); !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	l := &Local{}
	var err error
	if l.HTTP, err = httpp.Listen(ctx, cfg, addrs, 0); err != nil {
		return nil, fmt.Errorf("experiment: embedded HTTP server: %w", err)
	}
	zone := dns.Zone{}
	for _, a := range addrs {
		zone.Add(LocalName, a)
	}
	if l.DNS, err = dns.Listen(ctx, zone, addrs, 0); err != nil {
		l.HTTP.Close()
		return nil, fmt.Errorf("experiment: embedded DNS server: %w", err)
	}
	if l.FTP, err = ftp.Listen(ctx, addrs, 0); err != nil {
		l.HTTP.Close()
		l.DNS.Close()
		return nil, fmt.Errorf("experiment: embedded FTP server: %w", err)
	}
	if l.SMTP, err = smtp.Listen(ctx, addrs, 0); err != nil {
		l.HTTP.Close()
		l.DNS.Close()
		l.FTP.Close()
		return nil, fmt.Errorf("experiment: embedded SMTP server: %w", err)
	}
	if l.IMAP, err = imap.Listen(ctx, addrs, 0, imap.DefaultUsers, imapMessageSize); err != nil {
		l.HTTP.Close()
		l.DNS.Close()
		l.FTP.Close()
		l.SMTP.Close()
		return nil, fmt.Errorf("experiment: embedded IMAP server: %w", err)
	}
	if l.Transport, err = transport.ListenAndServe(ctx, addrs, 0, nil); err != nil {
		l.HTTP.Close()
		l.DNS.Close()
		l.FTP.Close()
		l.SMTP.Close()
		l.IMAP.Close()
		return nil, fmt.Errorf("experiment: embedded transport server: %w", err)
	}
	l.TransportAddr = map[path.Path]netip.AddrPort{}
	for _, p := range paths {
		l.TransportAddr[p] = netip.AddrPortFrom(p.Loopback(), uint16(l.Transport.Port))
	}
	l.URL = &url.URL{Scheme: "http", Host: fmt.Sprintf("%s:%d", LocalName, l.HTTP.Port), Path: "/"}
	l.Resolver = &path.Resolver{Servers: l.DNS.Addrs()}
	return l, nil
}

// Close stops both servers.
func (l *Local) Close() {
	l.HTTP.Close()
	l.DNS.Close()
	l.FTP.Close()
	l.SMTP.Close()
	l.IMAP.Close()
	l.Transport.Close()
}
