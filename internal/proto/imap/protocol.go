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
	"v6lab/internal/sock/path"
)

// Protocol is IMAP mail retrieval (proto.Protocol).
type Protocol struct{}

func (Protocol) Name() string { return "imap" }

func (Protocol) Options() []string {
	return []string{"users", "user_format", "password", proto.OptURL, proto.OptDNSServers}
}

// Check applies imap's rules: a url, user names and a password only with
// where: hosts; users within the embedded server's.
func (Protocol) Check(o *proto.Options, where string, given proto.Given) error {
	hosts := where == "hosts"
	if hosts && o.URL == "" {
		return proto.Errorf("", "url is required with where: hosts (imap://host[:port])")
	}
	if !hosts && (o.URL != "" || o.UserFormat != "" || o.Password != "") {
		f := "url"
		if o.URL == "" {
			f = map[bool]string{true: "user_format", false: "password"}[o.UserFormat != ""]
		}
		return proto.Errorf(f, "only with where: hosts; the embedded server has users user1…userN with its own password")
	}
	if o.URL != "" && !strings.HasPrefix(o.URL, "imap://") {
		return proto.Errorf(proto.OptURL, "%q: want imap://host[:port]", o.URL)
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
	return proto.CheckDNSServers(o, where)
}

// Target is the server the cell's url names.
func (Protocol) Target(o *proto.Options, p path.Path) (proto.Endpoint, error) {
	e, err := proto.HostPortTarget(o.URL, "imap", 143, o.DNSServers, o.Probe.DNSOver)
	e.User, e.Password = o.UserFormat, o.Password
	return e, err
}

// Probe logs user i in as its own user at the server at ep, selects INBOX
// and fetches message 1.
func (Protocol) Probe(o *proto.Options, ep proto.Endpoint, p path.Path) (load.Probe, error) {
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

// RealServer is the lab's real IMAP server.
func (Protocol) RealServer() string { return "dovecot" }

// RealMailboxes are what Dovecot holds so that a cell sees what the
// embedded server gives: users user1…userN (at least as many as a cell
// asks for), one password, the same message in every INBOX.
func (Protocol) RealMailboxes(users int) (int, string, []byte) {
	return max(users, DefaultUsers), Password, Message(MessageSize)
}

// RealFit: every imap cell fits Dovecot.
func (Protocol) RealFit(*proto.Options) error { return nil }

// MessageSize is the size of the message in every embedded INBOX.
const MessageSize = 4 << 10

// About describes the embedded server.
func (Protocol) About() string {
	return fmt.Sprintf("embedded (go-imap v2, %d users with one message each)", DefaultUsers)
}

// Serve starts the embedded server: settings users (default DefaultUsers)
// and size (of each INBOX's message, default MessageSize).
func (Protocol) Serve(ctx context.Context, at proto.Place) (proto.Running, error) {
	var users int
	if _, err := fmt.Sscan(at.Setting("users", fmt.Sprint(DefaultUsers)), &users); err != nil || users < 1 || users > 100000 {
		return nil, proto.Errorf("users", "want 1 to 100000")
	}
	size, err := units.ParseSize(at.Setting("size", fmt.Sprint(MessageSize)))
	if err != nil || size < 0 || size > 64<<20 {
		return nil, proto.Errorf("size", "want 0 to 64M")
	}
	s, err := proto.Listen(at, func(addrs []netip.Addr, port int) (*Server, error) {
		return Listen(ctx, addrs, port, users, int(size))
	})
	if err != nil {
		return nil, err
	}
	return running{proto.Served(s, s.Port), users}, nil
}

type running struct {
	proto.Running
	users int
}

func (r running) Detail() string {
	return fmt.Sprintf("users user1…user%d, password %s", r.users, Password)
}
