package ftp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/proto/extclient"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Protocol is FTP file retrieval: its options, commands and servers.
var Protocol = proto.Protocol{
	Name: "ftp",
	New:  func() proto.Options { return &Options{} },
	Command: proto.Command{
		Arg:    "URL",
		SetArg: func(o proto.Options, arg string) { o.(*Options).URL = arg },
		Short:  "Measure FTP file retrieval, DNS lookup included, over each path",
		Long: `probe ftp times file retrievals from URL (ftp://[user[:password]@]host[:port]/file): the
host name is looked up with the path's record type, a new control connection pinned to
the path logs in (anonymous unless the URL names a user), asks SIZE, opens a passive data
connection (EPSV on IPv6, PASV on IPv4, RFC 2428; a PASV reply naming another host is
refused), retrieves the file, and the transaction ends on the 226 reply with every byte
in. --active uses EPRT/PORT instead.`,
		Example: `  v6lab probe ftp ftp://ftp.example.test/pub/1M --paths ipv4,ipv6 --conns 1,10,100 --runs 11
  v6lab probe ftp ftp://v6lab:secret@127.0.0.1:2121/1M --paths ipv4 --active`,
	},
	Server: &proto.Server{
		Key:   "ftp",
		About: "embedded (ftpserverlib, generated files)",
		Serve: serve,
		Command: proto.ServeCommand{
			Short: "Serve generated files over FTP (any user logs in)",
			Long: `serve ftp answers FTP on every --listen address until interrupted. Any user name and
password log in; every file is generated on the fly, never stored: its name is its size
(/1M, /64K, /5879824, /files/2G). Passive (EPSV, PASV) and active (EPRT, PORT) transfers
work; uploads are refused.`,
			Example: `  v6lab serve ftp
  v6lab serve ftp --listen 0.0.0.0:2121 --listen [::]:2121`,
			Listen: []string{"127.0.0.1:2121", "[::1]:2121"},
		},
		// Passive data connections use ports chosen per transfer.
		WireAnyPort: true,
		// ftpserverlib opens passive listeners from its own goroutines,
		// so in a namespace the server is a process of its own.
		OwnProcess: true,
	},
	Real: &proto.Real{Program: "proftpd", Package: "proftpd-core", Port: RealPort, Fit: realFit, Start: startReal},
}

// RealPort is the real ProFTPD's port in the lab's server host.
const RealPort = 21

// Options are an ftp cell's options.
type Options struct {
	proto.Common
	proto.Named
	proto.Fetch
	extclient.Choice
	Active bool `json:"active,omitempty" opt:"active" usage:"active mode: EPRT/PORT, the server connects back"`
}

// Check applies ftp's rules: a url only with where: hosts, a file the
// embedded server can generate, the client.
func (o *Options) Check(where result.Where, given proto.Given) error {
	if err := o.CheckURL(where, "ftp://[user[:password]@]host[:port]/file", "the embedded server serves any size as a file name"); err != nil {
		return err
	}
	if o.URL != "" {
		u, err := ParseURL(o.URL)
		if err != nil {
			return proto.Errorf(proto.OptURL, "%v", err)
		}
		// Each goes on a command line: USER, PASS, SIZE and RETR.
		for _, v := range []string{u.User, u.Password, u.File} {
			if err := proto.CheckLine(proto.OptURL, v); err != nil {
				return err
			}
		}
	}
	if o.File != "" {
		if err := proto.CheckFile(o.File, where); err != nil {
			return err
		}
	}
	if err := o.Choice.Check(o.File, o.URL); err != nil {
		return err
	}
	if o.External() && o.Active {
		return proto.Errorf("active", "active mode is v6lab's own FTP client's option")
	}
	return nil
}

// Settle fetches a small file; over a translated path active mode is
// left unsettled: EPRT/PORT through a stateless translator fails as in
// the field, and its runs record it (the notes say why).
func (o *Options) Settle(p path.Path) (proto.Options, bool) {
	if p.Kind().NATed && o.Active {
		return nil, false
	}
	s := *o
	s.File = proto.SettleFile
	return &s, true
}

// Notes say why active mode fails over nat64, and the names resolve gave.
func (o *Options) Notes(paths []path.Path) []string {
	notes := o.Named.Notes(paths)
	if o.Active && slices.ContainsFunc(paths, func(p path.Path) bool { return p.Kind().Translated }) {
		notes = append(notes, "FTP's active mode over nat64 sends the client's IPv6 address in EPRT, which a stateless translator does not rewrite (it has no FTP helper): the server refuses it or cannot connect back, as in the field, so those transactions fail")
	}
	if o.Active && slices.ContainsFunc(paths, func(p path.Path) bool { return p.Kind().NATed && !p.Kind().Translated }) {
		notes = append(notes, "FTP's active mode over 464xlat or dslite sends the client's own IPv4 address (192.0.0.x) in PORT, behind a NAT with no FTP helper: the server cannot connect back, as in the field, so those transactions fail")
	}
	return notes
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
func (o *Options) Target(p path.Path) (proto.Endpoint, error) {
	u, err := ParseURL(o.URL)
	if err != nil {
		return proto.Endpoint{}, err
	}
	e, err := o.Endpoint(u.Host, p)
	e.Port, e.Resource, e.User, e.Password = u.Port, u.File, u.User, u.Password
	return e, err
}

// Probe retrieves the cell's file (default 1M) from the server at ep, or
// the file its url names.
func (o *Options) Probe(ep proto.Endpoint, p path.Path) (load.Probe, error) {
	if ep.Host == "" || ep.Port == 0 {
		return nil, errors.New("no FTP server to measure")
	}
	file := ep.Resource
	if file == "" {
		file = proto.FileResource("/", proto.Or(o.File, "1M"))
	}
	if o.External() {
		u := &url.URL{Scheme: "ftp", Host: net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), Path: file}
		var size int64
		if o.URL != "" {
			u, _ = url.Parse(o.URL)
		} else {
			size, _ = proto.FileSize(o.File) // v6lab's own file: its size is its name
		}
		return o.Choice.Probe(ep, u, p, "", size)
	}
	c := &Client{Host: ep.Host, Port: ep.Port, File: file, User: ep.User, Password: ep.Password, Path: p,
		Resolver: ep.Resolver(), Source: ep.Source, Active: o.Active, Expect: ep.Content}
	if o.File != "" {
		return proto.Bulk(c), nil
	}
	return c, nil
}

// realFit says why a cell cannot retrieve from ProFTPD.
func realFit(o proto.Options) error {
	if o.(*Options).External() {
		return fmt.Errorf("with real servers an ftp cell uses v6lab's own client")
	}
	return nil
}

// startReal starts ProFTPD, anonymous, serving sparse files of the sizes
// the cells fetch (and the one Settle fetches); they read as zeros.
func startReal(ctx context.Context, at proto.RealPlace) (*proto.RealRunning, error) {
	files := map[string]int64{strings.TrimPrefix(proto.SettleFile, "/"): 1 << 10}
	for _, c := range at.Cells {
		name := strings.TrimPrefix(proto.Or(c.(*Options).File, "1M"), "/")
		size, err := proto.FileSize(name)
		if err != nil {
			return nil, err
		}
		files[name] = size
	}
	pf, err := startProFTPD(ctx, at.Daemon, at.Listen(), RealPort, files)
	if err != nil {
		return nil, err
	}
	return &proto.RealRunning{Stop: pf.Stop, Content: content.Zeros,
		About: map[string]string{"ftp (real)": proto.RealAbout(pf, ", anonymous, sparse files")}}, nil
}

// serve starts the embedded server.
func serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	s, err := proto.Listen(at, func(addrs []netip.Addr, port int) (*Server, error) { return Listen(ctx, addrs, port) })
	if err != nil {
		return nil, err
	}
	return proto.Served(s, s.Port), nil
}
