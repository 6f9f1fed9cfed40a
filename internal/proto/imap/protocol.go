package imap

import (
	"context"
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

// Protocol is IMAP mail retrieval: its options, commands and servers.
var Protocol = proto.Protocol{
	Name: "imap",
	New:  func() proto.Options { return &Options{} },
	Command: proto.Command{
		Arg:    "HOST[:PORT]|imap://HOST[:PORT]",
		SetArg: func(o proto.Options, arg string) { o.(*Options).URL = proto.ServerURL("imap", arg) },
		Short:  "Measure IMAP mail retrieval, DNS lookup included, over each path",
		Long: `probe imap times mail retrievals from HOST (port 143 unless given): the name is looked up
with the path's record type, then simulated user i logs in as its own user (--user-format
with i mod --users + 1), selects INBOX and fetches message 1; the transaction ends on the
tagged OK of the FETCH. Literal sizes are checked against what arrives and bounded.`,
		Example: `  v6lab probe imap 127.0.0.1:1143 --paths ipv4 --conns 1,10,100,200 --users 500
  v6lab probe imap mail.example.test --user-format 'test%d' --password secret --users 50`,
	},
	Server: &proto.Server{
		Key:      "imap",
		About:    fmt.Sprintf("embedded (go-imap v2, %d users, every INBOX showing one shared read-only message)", DefaultUsers),
		Settings: func() any { return &ServerSettings{Users: DefaultUsers, Size: MessageSize} },
		Serve:    serve,
		Command: proto.ServeCommand{
			Short: "Serve IMAP: users user1…userN, each with the same message in INBOX",
			Long: `serve imap holds --users users named user1 … userN, password "v6lab", each with the same
message of --size bytes in INBOX (the study's IMAP server), on every --listen address until
interrupted. The users share that one message: the server holds it once, whatever --users,
and INBOX is read-only (APPEND, STORE, EXPUNGE, COPY and CREATE are refused; SEARCH too).
Plaintext LOGIN is allowed: it is a test server.`,
			Example: `  v6lab serve imap
  v6lab serve imap --listen 0.0.0.0:1143 --listen [::]:1143 --users 500`,
			Listen: []string{"127.0.0.1:1143", "[::1]:1143"},
		},
	},
	Real: &proto.Real{Program: "dovecot", Package: "dovecot-imapd", Port: RealPort, Start: startReal},
}

// RealPort is the real Dovecot's port in the lab's server host.
const RealPort = 143

// Options are an imap cell's options.
type Options struct {
	proto.Common
	proto.Named
	Users      int    `json:"users,omitempty" opt:"users,default=500" usage:"users on the server: simulated user i logs in as user (i mod users)+1"`
	UserFormat string `json:"user_format,omitempty" opt:"user_format,default=user%d" usage:"user names, %d being the user's number"`
	Password   string `json:"password,omitempty" opt:"password,default=v6lab,secret" usage:"every user's password"`
}

// Check applies imap's rules: a url, user names and a password only with
// where: hosts; users within the embedded server's.
func (o *Options) Check(where result.Where, given proto.Given) error {
	hosts := where == result.Hosts
	const own = "the embedded server has users user1…userN with its own password"
	if err := o.CheckURL(where, "imap://host[:port]", own); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"user_format", o.UserFormat}, {"password", o.Password}} {
		if f.v != "" && !hosts {
			return proto.Errorf(f.name, "only with where: hosts; %s", own)
		}
		if err := proto.CheckLine(f.name, f.v); err != nil {
			return err
		}
	}
	if o.URL != "" {
		if err := proto.CheckHostPortURL(o.URL, "imap"); err != nil {
			return err
		}
	}
	if o.UserFormat != "" && strings.Count(o.UserFormat, "%d") != 1 {
		return proto.Errorf("user_format", "%q must hold %%d once, for the user's number", o.UserFormat)
	}
	if given("users") && o.Users < 1 {
		return proto.Errorf("users", "%d: want at least 1", o.Users)
	}
	if given("users") && !hosts && o.Users > DefaultUsers {
		return proto.Errorf("users", "%d: want 1 to %d (the embedded server's users)", o.Users, DefaultUsers)
	}
	return nil
}

// Target is the server the cell's url names.
func (o *Options) Target(p path.Path) (proto.Endpoint, error) {
	e, err := proto.HostPortTarget(&o.Named, "imap", 143, p)
	e.User, e.Password = o.UserFormat, o.Password
	return e, err
}

// Probe logs user i in as its own user at the server at ep, selects INBOX
// and fetches message 1.
func (o *Options) Probe(ep proto.Endpoint, p path.Path) (load.Probe, error) {
	if ep.Host == "" || ep.Port == 0 {
		return nil, errors.New("no IMAP server to measure")
	}
	c := &Client{Host: ep.Host, Port: ep.Port, Path: p, Resolver: ep.Resolver(), Source: ep.Source, Users: DefaultUsers,
		UserFormat: ep.User, Password: proto.Or(ep.Password, Password)}
	if o.Users > 0 {
		c.Users = o.Users
	}
	return c, nil
}

// startReal starts Dovecot holding what the embedded server holds: users
// user1…userN (at least as many as a cell asks for), one password, the
// same message in every INBOX.
func startReal(ctx context.Context, at proto.RealPlace) (*proto.RealRunning, error) {
	users := DefaultUsers
	for _, c := range at.Cells {
		users = max(users, c.(*Options).Users)
	}
	dv, err := startDovecot(ctx, at.Daemon, at.Listen(), RealPort, users, Password, Message(MessageSize))
	if err != nil {
		return nil, err
	}
	return &proto.RealRunning{Stop: dv.Stop, About: map[string]string{
		"imap (real)": proto.RealAbout(dv, fmt.Sprintf(", %d Maildir users", users))}}, nil
}

// MessageSize is the size of the message in every embedded INBOX.
const MessageSize = 4 << 10

// ServerSettings are the embedded server's: how many users, and the size
// of each INBOX's message.
type ServerSettings struct {
	Users int         `opt:"users" usage:"number of users"`
	Size  units.Bytes `opt:"size" usage:"size of the message in each INBOX (bytes, or such as 4K)"`
}

// serve starts the embedded server.
func serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	set, _ := at.Settings.(*ServerSettings)
	if set == nil {
		set = &ServerSettings{Users: DefaultUsers, Size: MessageSize}
	}
	if set.Users < 1 || set.Users > 100000 {
		return nil, proto.Errorf("users", "want 1 to 100000")
	}
	if set.Size < 0 || set.Size > 64<<20 {
		return nil, proto.Errorf("size", "want 0 to 64M")
	}
	s, err := proto.Listen(at, func(addrs []netip.Addr, port int) (*Server, error) {
		return Listen(ctx, addrs, port, set.Users, int(set.Size))
	})
	if err != nil {
		return nil, err
	}
	return running{proto.Served(s, s.Port), set.Users}, nil
}

type running struct {
	proto.Running
	users int
}

func (r running) Detail() string {
	return fmt.Sprintf("users user1…user%d, password %s", r.users, Password)
}
