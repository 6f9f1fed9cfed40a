// Package imap measures mail retrieval (the MITRE study's IMAP transaction:
// simulated user i of U logs in as its own user, selects INBOX, fetches the
// message, and the transaction ends on the tagged OK of the fetch) and runs
// an embedded server holding U users with the same message in INBOX. The
// client reads responses with bounds on lines and literals, so a server
// whose literal sizes lie, or that never ends a response, fails the
// transaction within its timeout and in bounded memory.
package imap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	goimap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"

	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/proto/guard"
	"v6lab/internal/proto/reply"
	"v6lab/internal/result"
	"v6lab/internal/wakeread"
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

type conn struct {
	c   net.Conn
	br  *bufio.Reader
	tag int
	in  int64
}

func (c *conn) line() (string, error) {
	var b []byte
	for {
		part, isPrefix, err := c.br.ReadLine()
		b = append(b, part...)
		if len(b) > MaxLine {
			return "", fmt.Errorf("imap: a response line longer than %d bytes: %w", MaxLine, ErrResponse)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", fmt.Errorf("imap: the server closed the connection: %w", io.ErrUnexpectedEOF)
			}
			return "", err
		}
		if !isPrefix {
			c.in += int64(len(b)) + 2
			return string(b), nil
		}
	}
}

// literal reads the {N} that ends a line, if any, then its N bytes.
func (c *conn) literal(line string) (int64, error) {
	if !strings.HasSuffix(line, "}") {
		return -1, nil
	}
	open := strings.LastIndexByte(line, '{')
	if open < 0 {
		return -1, nil
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(line[open+1:len(line)-1], "+"), 10, 64)
	if err != nil || n < 0 {
		return -1, fmt.Errorf("imap: bad literal in %q: %w", reply.Printable(line), ErrResponse)
	}
	if n > MaxLiteral {
		return -1, fmt.Errorf("imap: a literal of %d bytes, more than %d: %w", n, MaxLiteral, ErrResponse)
	}
	got, err := io.CopyN(io.Discard, c.br, n)
	c.in += got
	if err != nil {
		return got, fmt.Errorf("imap: a literal of %d bytes ended after %d: %w", n, got, io.ErrUnexpectedEOF)
	}
	return n, nil
}

// cmd sends a tagged command and reads its response up to the tagged
// reply; it returns that line and the literal bytes the response carried.
func (c *conn) cmd(command string) (string, int64, error) {
	c.tag++
	tag := "v" + strconv.Itoa(c.tag)
	if _, err := io.WriteString(c.c, tag+" "+command+"\r\n"); err != nil {
		return "", 0, err
	}
	var lits int64
	for i := 0; i < MaxResponse; i++ {
		line, err := c.line()
		if err != nil {
			return "", lits, err
		}
		n, err := c.literal(line)
		if err != nil {
			return "", lits, err
		}
		if n >= 0 {
			lits += n
			continue
		}
		if rest, ok := strings.CutPrefix(line, tag+" "); ok {
			if !strings.HasPrefix(rest, "OK") {
				verb := strings.Fields(command)[0]
				return rest, lits, fmt.Errorf("imap: %s: the server answered %q: %w", verb, reply.Printable(rest), ErrResponse)
			}
			return rest, lits, nil
		}
		if !strings.HasPrefix(line, "* ") && !strings.HasPrefix(line, "+ ") && !strings.HasPrefix(line, ")") && line != "" {
			// continuation of a literal's line (") FLAGS …") is fine; anything
			// else is not IMAP.
			if !strings.Contains(line, ")") {
				return "", lits, fmt.Errorf("imap: %q is not an IMAP response: %w", reply.Printable(line), ErrResponse)
			}
		}
	}
	return "", lits, fmt.Errorf("imap: a response of more than %d lines: %w", MaxResponse, ErrResponse)
}

// quote makes an IMAP quoted string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// Do logs in as the user's own account and fetches its message.
func (c *Client) Do(ctx context.Context, user int) result.Sample {
	tr := load.Begin("imap", c.Path)
	nc, release, failed := tr.Open(ctx, c.Resolver, c.Host, c.Port, path.Dialer{Path: c.Path, Source: c.Source})
	if failed != nil {
		return *failed
	}
	defer release()
	cn := &conn{c: nc, br: bufio.NewReaderSize(nc, 16<<10)}
	fail := func(err error) result.Sample {
		tr.S.BytesIn = cn.in
		if errors.Is(err, ErrResponse) {
			return tr.Fail(ctx, "protocol", err)
		}
		return tr.Fail(ctx, "io", err)
	}
	greeting, err := cn.line()
	if err != nil {
		return fail(err)
	}
	if !strings.HasPrefix(greeting, "* OK") && !strings.HasPrefix(greeting, "* PREAUTH") {
		return fail(fmt.Errorf("imap: greeting %q: %w", reply.Printable(greeting), ErrResponse))
	}
	tr.Mark(&tr.S.FirstByteNS)
	users := max(c.Users, 1)
	format := c.UserFormat
	if format == "" {
		format = "user%d"
	}
	name := fmt.Sprintf(format, user%users+1)
	if _, _, err := cn.cmd("LOGIN " + quote(name) + " " + quote(c.Password)); err != nil {
		return fail(err)
	}
	if _, _, err := cn.cmd("SELECT INBOX"); err != nil {
		return fail(err)
	}
	done, lits, err := cn.cmd("FETCH 1 (BODY.PEEK[])")
	if err != nil {
		return fail(err)
	}
	if lits <= 0 {
		return fail(fmt.Errorf("imap: FETCH returned no message for %s: %w", name, ErrResponse))
	}
	tr.S.BytesIn = cn.in
	return tr.Done(fmt.Sprintf("%s, %d-byte message of %s", strings.Fields(done)[0], lits, name))
}

// Message is the message every user's INBOX holds.
func Message(size int) []byte {
	var b bytes.Buffer
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

type literal struct{ *bytes.Reader }

func (l literal) Size() int64 { return int64(l.Len()) }

// Limits are the embedded server's connection timeouts (guard.IMAP);
// tests shorten them.
var Limits = guard.IMAP

// Listen starts the server with users accounts on every address.
func Listen(ctx context.Context, addrs []netip.Addr, port, users, size int) (*Server, error) {
	mem := imapmemserver.New()
	msg := Message(size)
	for i := 1; i <= users; i++ {
		u := imapmemserver.NewUser(fmt.Sprintf("user%d", i), Password)
		if err := u.Create("INBOX", nil); err != nil {
			return nil, fmt.Errorf("imap: %w", err)
		}
		if _, err := u.Append("INBOX", literal{bytes.NewReader(msg)}, &goimap.AppendOptions{}); err != nil {
			return nil, fmt.Errorf("imap: %w", err)
		}
		mem.AddUser(u)
	}
	s := &Server{srv: imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
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
