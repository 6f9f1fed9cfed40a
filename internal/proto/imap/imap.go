// Package imap measures mail retrieval (the MITRE study's IMAP transaction:
// simulated user i of U logs in as its own user, selects INBOX, fetches the
// message, and the transaction ends on the tagged OK of the fetch) and runs
// an embedded server holding U users with the same message in INBOX. The
// client reads responses with bounds on lines and literals, so a server
// whose literal sizes lie, or that never ends a response, fails the
// transaction within its timeout and in bounded memory.
package imap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	goimap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto/converse"
	"v6lab/internal/proto/guard"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/sock/wakeread"
)

// Bounds of what the client reads.
const (
	MaxLine     = 8192
	MaxLiteral  = 64 << 20
	MaxResponse = 100000 // lines per command
)

// ErrResponse is wrapped when a server's response is malformed or a
// command is refused.
var ErrResponse = errors.New("unexpected response")

// DefaultUsers is how many users the embedded server holds (the study's 500).
const DefaultUsers = 500

// Client is an IMAP probe.
type Client struct {
	Host     string
	Port     int
	Path     path.Path
	Resolver *path.Resolver
	Source   netip.Addr
	// Users is U: simulated user i logs in as user(i mod U)+1.
	Users int
	// UserFormat names user n (default "user%d"); Password is everyone's.
	UserFormat, Password string
}

// Do logs in as the user's own account and fetches its message, on the
// event loop (package converse): the loop's thread reads each response
// and sends the next command.
func (c *Client) Do(ctx context.Context, user int) result.Sample {
	format := c.UserFormat
	if format == "" {
		format = "user%d"
	}
	v, err := newSession(fmt.Sprintf(format, user%max(c.Users, 1)+1), c.Password)
	if err != nil {
		return load.Begin("imap", c.Path).Fail(ctx, "protocol", err)
	}
	tr, failed := converse.Run(ctx, "imap", converse.Server{Host: c.Host, Port: c.Port, Path: c.Path, Source: c.Source, Resolver: c.Resolver}, v, ErrResponse)
	if failed != nil {
		return *failed
	}
	return tr.Done(fmt.Sprintf("%s, %d-byte message of %s", strings.Fields(v.done)[0], v.fetched, v.user))
}

// Message is the message every user's INBOX holds.
func Message(size int) []byte {
	var b bytes.Buffer
	b.Grow(size + 256)
	b.WriteString("From: <v6lab@v6lab.test>\r\nTo: <user@v6lab.test>\r\nSubject: v6lab test message\r\nDate: Sun, 22 Nov 2026 12:00:00 +0000\r\nMessage-ID: <v6lab.imap@v6lab.test>\r\n\r\n")
	line := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 3)[:76] + "\r\n"
	for b.Len() < size {
		b.WriteString(line)
	}
	return b.Bytes()
}

// Server is the embedded IMAP server: users user1 … userU, password
// Password, each with the same message in INBOX.
type Server struct {
	srv  *imapserver.Server
	lns  []net.Listener
	Port int
	wg   sync.WaitGroup
}

// Password is every embedded user's password.
const Password = "v6lab"

// Limits are the embedded server's connection timeouts, as a real
// daemon's (RFC 9051: 30 minutes for an idle client; no command line needs
// 30 seconds); tests shorten them.
var Limits = guard.Limits{Idle: 30 * time.Minute, Line: 30 * time.Second, Write: time.Minute}

// Listen starts the server with users accounts on every address, every
// INBOX showing one shared message of size bytes (store).
func Listen(ctx context.Context, addrs []netip.Addr, port, users, size int) (*Server, error) {
	st, err := newStore(users, Password, Message(size))
	if err != nil {
		return nil, err
	}
	s := &Server{srv: imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return &served{st: st}, nil, nil
		},
		Caps:         goimap.CapSet{goimap.CapIMAP4rev1: {}},
		InsecureAuth: true,
		Logger:       log.New(io.Discard, "", 0),
	})}
	lns, got, err := path.ListenSamePort(ctx, addrs, port)
	if err != nil {
		return nil, fmt.Errorf("imap: %w", err)
	}
	s.Port = got
	for _, ln := range lns {
		s.lns = append(s.lns, ln)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.srv.Serve(guard.Listener(wakeread.Listener{Listener: ln}, Limits))
		}()
	}
	return s, nil
}

// Addrs are the addresses served.
func (s *Server) Addrs() []netip.AddrPort {
	return path.ListenerAddrs(s.lns)
}

// Close stops the server.
func (s *Server) Close() {
	s.srv.Close()
	for _, ln := range s.lns {
		ln.Close()
	}
	s.wg.Wait()
}

// Warm warms the lookup and the connection of a first transaction before
// the barrier (load.Warmer).
func (c *Client) Warm(int) {
	c.Resolver.Warm(c.Path)
	path.Warm(c.Path, netip.AddrPort{}, c.Source)
}
