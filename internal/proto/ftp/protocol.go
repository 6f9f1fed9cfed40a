package ftp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/proto/extclient"
	"v6lab/internal/sock/path"
)

// Protocol is FTP file retrieval (proto.Protocol).
type Protocol struct{}

func (Protocol) Name() string { return "ftp" }

// Timing: a cell downloading with curl or wget is timed by the program
// (proto.Timed).
func (Protocol) Timing(o *proto.Options) string { return extclient.Timing(o) }

func (Protocol) Options() []string {
	return []string{"file", "active", extclient.OptClient, proto.OptURL, proto.OptDNSServers}
}

// Check applies ftp's rules: a url only with where: hosts, a file the
// embedded server can generate, the client.
func (Protocol) Check(o *proto.Options, where string, given proto.Given) error {
	if err := proto.CheckURLWhere(o, where, "ftp://[user[:password]@]host[:port]/file", "the embedded server serves any size as a file name"); err != nil {
		return err
	}
	if o.URL != "" {
		if _, err := ParseURL(o.URL); err != nil {
			return proto.Errorf(proto.OptURL, "%v", err)
		}
	}
	if o.File != "" {
		if err := proto.CheckFile(o.File, where); err != nil {
			return err
		}
	}
	if err := extclient.CheckClient(o); err != nil {
		return err
	}
	return proto.CheckDNSServers(o, where)
}

// URL is what an ftp:// URL names.
type URL struct {
	Host           string
	Port           int
	File           string
	User, Password string
}

// ParseURL reads ftp://[user[:password]@]host[:port]/path.
func ParseURL(s string) (URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "ftp" || u.Hostname() == "" || u.Path == "" || u.Path == "/" {
		return URL{}, fmt.Errorf("ftp URL %q: want ftp://[user[:password]@]host[:port]/file", s)
	}
	f := URL{Host: u.Hostname(), Port: 21, File: u.Path}
	if ps := u.Port(); ps != "" {
		if f.Port, err = strconv.Atoi(ps); err != nil || f.Port < 1 || f.Port > 65535 {
			return URL{}, fmt.Errorf("ftp URL %q: bad port", s)
		}
	}
	if u.User != nil {
		f.User = u.User.Username()
		f.Password, _ = u.User.Password()
	}
	return f, nil
}

// Target is the server and file the cell's url names.
func (Protocol) Target(o *proto.Options, p path.Path) (proto.Endpoint, error) {
	u, err := ParseURL(o.URL)
	if err != nil {
		return proto.Endpoint{}, err
	}
	dns, err := proto.HostResolver(u.Host, o.DNSServers)
	if err != nil {
		return proto.Endpoint{}, err
	}
	return proto.Endpoint{Host: u.Host, Port: u.Port, Resource: u.File, User: u.User, Password: u.Password, DNS: dns,
		DNSOver: path.Path(strings.TrimPrefix(o.Probe.DNSOver, "path"))}, nil
}

// Probe retrieves the cell's file (default 1M) from the server at ep, or
// the file its url names.
func (Protocol) Probe(o *proto.Options, ep proto.Endpoint, p path.Path) (load.Probe, error) {
	if ep.Host == "" || ep.Port == 0 {
		return nil, errors.New("no FTP server to measure")
	}
	file := ep.Resource
	if file == "" {
		file = proto.FileResource("/", proto.Or(o.File, "1M"))
	}
	if extclient.External(o) {
		u := &url.URL{Scheme: "ftp", Host: net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), Path: file}
		if o.URL != "" {
			u, _ = url.Parse(o.URL)
		}
		return extclient.ExternalProbe(o, ep, u, p)
	}
	c := &Client{Host: ep.Host, Port: ep.Port, File: file, User: ep.User, Password: ep.Password, Path: p,
		Resolver: ep.Resolver(), Source: ep.Source, Active: o.Active, Expect: ep.Content}
	if o.File != "" {
		return proto.Bulk(c), nil
	}
	return c, nil
}

// RealServer is the lab's real FTP server.
func (Protocol) RealServer() string { return "proftpd" }

// RealFit says why a cell cannot retrieve from ProFTPD.
func (Protocol) RealFit(o *proto.Options) error {
	if extclient.External(o) {
		return fmt.Errorf("with real servers an ftp cell uses v6lab's own client")
	}
	return nil
}

// WireAnyPort: passive data connections use ports chosen per transfer.
func (Protocol) WireAnyPort() bool { return true }

// OwnProcess: ftpserverlib opens passive listeners from its own
// goroutines, so in a namespace the server is a process of its own.
func (Protocol) OwnProcess() bool { return true }

// About describes the embedded server.
func (Protocol) About() string { return "embedded (ftpserverlib, generated files)" }

// Serve starts the embedded server.
func (Protocol) Serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	s, err := proto.Listen(at, func(addrs []netip.Addr, port int) (*Server, error) { return Listen(ctx, addrs, port) })
	if err != nil {
		return nil, err
	}
	return proto.Served(s, s.Port), nil
}
