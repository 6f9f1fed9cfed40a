// Package smtp measures mail submission (the MITRE study's SMTP
// transaction: EHLO, MAIL FROM, RCPT TO, DATA, ending on the server's 250
// acceptance of the message) and runs an embedded server that counts and
// keeps every message it accepts, so that "nothing lost" can be checked.
package smtp

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gosmtp "github.com/emersion/go-smtp"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/proto/guard"
	"v6lab/internal/proto/reply"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/sock/wakeread"
)

// ErrReply is wrapped when the server answers a step with an error code.
var ErrReply = reply.ErrReply

// DefaultMessageSize is the body size of the test message.
const DefaultMessageSize = 4 << 10

// Client is an SMTP probe: one message per Do, on a new connection.
type Client struct {
	// Host is the server's name (looked up with the path's record type) or IP.
	Host     string
	Port     int
	Path     path.Path
	Resolver *path.Resolver
	Source   netip.Addr
	// From and To are the envelope addresses; To may hold %d for the user.
	From, To string
	// Size is the message body size in bytes (default DefaultMessageSize).
	Size int
	// StartTLS upgrades the connection before MAIL FROM; TLS is its
	// configuration (nil: verify the server's name).
	StartTLS bool
	TLS      *tls.Config
	// Helo is the name sent with EHLO (default v6lab.test).
	Helo string
}

type conv struct {
	c    net.Conn
	br   *bufio.Reader
	sent int64
}

func (v *conv) cmd(what, line string, want int) (reply.Reply, error) {
	b, err := reply.Command(line)
	if err != nil {
		return reply.Reply{}, err
	}
	n, err := v.c.Write(b)
	v.sent += int64(n)
	if err != nil {
		return reply.Reply{}, err
	}
	return v.expect(what, want)
}

func (v *conv) expect(what string, want int) (reply.Reply, error) {
	r, err := reply.Read(v.br, "smtp")
	if err != nil {
		return r, err
	}
	if r.Code != want {
		return r, fmt.Errorf("smtp: %s: the server answered %q: %w", what, reply.Printable(r.String()), ErrReply)
	}
	return r, nil
}

// message builds the test message: headers and a body of size bytes in
// lines of 76 characters, dot-stuffing never needed.
func message(from, to string, user, size int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: <%s>\r\nTo: <%s>\r\nSubject: v6lab test message %d\r\nMessage-ID: <v6lab.%d.%d@v6lab.test>\r\n\r\n",
		from, to, user, user, time.Now().UnixNano())
	line := strings.Repeat("abcdefghijklmnopqrstuvwxyz", 3)[:76] + "\r\n"
	for b.Len() < size {
		b.WriteString(line)
	}
	b.WriteString(".\r\n")
	return b.Bytes()
}

// helo is the name EHLO sends.
func (c *Client) helo() string { return cmp.Or(c.Helo, "v6lab.test") }

// recipient is the envelope recipient of user's message.
func (c *Client) recipient(user int) string {
	if strings.Contains(c.To, "%d") {
		return fmt.Sprintf(c.To, user)
	}
	return c.To
}

// message is user's message to to, of the client's size.
func (c *Client) message(to string, user int) []byte {
	size := c.Size
	if size <= 0 {
		size = DefaultMessageSize
	}
	return message(c.From, to, user, size)
}

// Do sends one message: on the event loop, or with STARTTLS on Go's net
// package (the TLS handshake is Go's).
func (c *Client) Do(ctx context.Context, user int) result.Sample {
	if !c.StartTLS {
		return c.doEvloop(ctx, user)
	}
	tr := load.Begin("smtp", c.Path)
	tr.CountTurns() // the lookup's, and each command after a reply, TLS's flights too
	conn, release, failed := tr.Open(ctx, c.Resolver, c.Host, c.Port, path.Dialer{Path: c.Path, Source: c.Source})
	if failed != nil {
		return *failed
	}
	defer release() // closes the TCP connection under any TLS
	conn = tr.Turns(conn)
	v := &conv{c: conn, br: bufio.NewReaderSize(conn, 4096)}
	fail := func(err error) result.Sample {
		tr.S.BytesOut += v.sent
		if errors.Is(err, ErrReply) {
			return tr.Fail(ctx, "protocol", err)
		}
		return tr.Fail(ctx, "io", err)
	}
	if _, err := v.expect("greeting", 220); err != nil {
		return fail(err)
	}
	tr.Mark(&tr.S.FirstByteNS)
	helo, to := c.helo(), c.recipient(user)
	ehlo, err := v.cmd("EHLO", "EHLO "+helo, 250)
	if err != nil {
		return fail(err)
	}
	if c.StartTLS {
		if !strings.Contains(strings.ToUpper(ehlo.String()), "STARTTLS") {
			return fail(fmt.Errorf("smtp: STARTTLS asked, but the server does not offer it (EHLO: %q): %w", reply.Printable(ehlo.String()), ErrReply))
		}
		if _, err := v.cmd("STARTTLS", "STARTTLS", 220); err != nil {
			return fail(err)
		}
		cfg := c.TLS
		if cfg == nil {
			cfg = &tls.Config{ServerName: c.Host}
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return tr.Fail(ctx, "tls", err)
		}
		tr.Mark(&tr.S.TLSNS)
		conn = tc
		v.c, v.br = tc, bufio.NewReaderSize(tc, 4096)
		if _, err := v.cmd("EHLO", "EHLO "+helo, 250); err != nil {
			return fail(err)
		}
	}
	if _, err := v.cmd("MAIL FROM", "MAIL FROM:<"+c.From+">", 250); err != nil {
		return fail(err)
	}
	if _, err := v.cmd("RCPT TO", "RCPT TO:<"+to+">", 250); err != nil {
		return fail(err)
	}
	if _, err := v.cmd("DATA", "DATA", 354); err != nil {
		return fail(err)
	}
	msg := c.message(to, user)
	n, err := conn.Write(msg)
	v.sent += int64(n)
	if err != nil {
		return fail(err)
	}
	done, err := v.expect("message", 250)
	if err != nil {
		return fail(err)
	}
	tr.S.BytesOut += v.sent
	return tr.Done("250 " + done.Text())
}

// Server is the embedded SMTP server: it accepts any envelope and keeps
// every message (its size and Message-ID), counting them.
type Server struct {
	srvs []*gosmtp.Server
	lns  []net.Listener
	// Port is the port shared by every address.
	Port int
	// TLS is the server's STARTTLS: a self-signed certificate, which
	// v6lab's clients pin (CertSHA256).
	TLS *tls.Config
	// Accepted counts messages accepted with a 250.
	Accepted atomic.Int64
	mu       sync.Mutex
	kept     map[string]int // Message-ID -> size
	seq      atomic.Int64
	wg       sync.WaitGroup
}

// Limits are the embedded server's connection timeouts, as a real
// daemon's (RFC 5321 §4.5.3.2: 5 minutes between commands; no command line
// needs 30 seconds); tests shorten them.
var Limits = guard.Limits{Idle: 5 * time.Minute, Line: 30 * time.Second, Write: time.Minute}

// MaxMessage bounds one message the embedded server accepts.
const MaxMessage = 64 << 20

// Listen starts the server on port (0 picks one) on every address.
func Listen(ctx context.Context, addrs []netip.Addr, port int) (*Server, error) {
	cfg, err := proto.SelfSigned([]string{"localhost"}, addrs)
	if err != nil {
		return nil, fmt.Errorf("smtp: %w", err)
	}
	s := &Server{kept: map[string]int{}, TLS: cfg}
	lns, got, err := path.ListenSamePort(ctx, addrs, port)
	if err != nil {
		return nil, fmt.Errorf("smtp: %w", err)
	}
	s.Port = got
	for _, ln := range lns {
		srv := gosmtp.NewServer(backend{s})
		srv.Domain = "v6lab.test"
		srv.MaxMessageBytes = MaxMessage
		srv.MaxRecipients = 100
		srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
		srv.ErrorLog = discard{}
		srv.TLSConfig = cfg // offers STARTTLS
		s.srvs = append(s.srvs, srv)
		s.lns = append(s.lns, ln)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			srv.Serve(guard.Listener(wakeread.Listener{Listener: ln}, Limits))
		}()
	}
	return s, nil
}

type discard struct{}

func (discard) Printf(string, ...any) {}
func (discard) Println(...any)        {}

// CertSHA256 is the hex SHA-256 of the STARTTLS certificate (proto.Pinner).
func (s *Server) CertSHA256() string { return proto.CertSHA256(s.TLS) }

// Addrs are the addresses served.
func (s *Server) Addrs() []netip.AddrPort {
	return path.ListenerAddrs(s.lns)
}

// Kept returns how many distinct messages were kept and their total size.
func (s *Server) Kept() (int, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var total int64
	for _, n := range s.kept {
		total += int64(n)
	}
	return len(s.kept), total
}

// Close stops the server.
func (s *Server) Close() {
	for _, srv := range s.srvs {
		srv.Close()
	}
	s.wg.Wait()
}

type backend struct{ s *Server }

func (b backend) NewSession(*gosmtp.Conn) (gosmtp.Session, error) { return &session{s: b.s}, nil }

type session struct {
	s       *Server
	from    string
	rcpts   int
	gotMail bool
}

func (ss *session) Reset()        { ss.from, ss.rcpts, ss.gotMail = "", 0, false }
func (ss *session) Logout() error { return nil }

func (ss *session) Mail(from string, _ *gosmtp.MailOptions) error {
	ss.from, ss.gotMail = from, true
	return nil
}

func (ss *session) Rcpt(string, *gosmtp.RcptOptions) error {
	ss.rcpts++
	return nil
}

// Data keeps the message (its Message-ID and size) and answers "250 2.0.0
// OK: queued as N". It reads in slices of a fixed buffer and keeps at most
// MaxID bytes of an ID, so what a connection and each kept message hold is
// bounded whatever the sizes clients send.
func (ss *session) Data(r io.Reader) error {
	size, id, err := readMessage(r)
	if err != nil {
		return err
	}
	n := ss.s.seq.Add(1)
	if id == "" {
		id = fmt.Sprintf("<no-id-%d>", n)
	}
	ss.s.mu.Lock()
	ss.s.kept[id] = size
	ss.s.mu.Unlock()
	ss.s.Accepted.Add(1)
	return &gosmtp.SMTPError{Code: 250, EnhancedCode: gosmtp.EnhancedCode{2, 0, 0}, Message: fmt.Sprintf("OK: queued as %d", n)}
}

// MaxID is the longest Message-ID kept as it is (RFC 5322's line limit).
const MaxID = 998

// readMessage reads a message to its end: its size and its Message-ID.
func readMessage(r io.Reader) (size int, id string, err error) {
	br := bufio.NewReaderSize(r, 4096)
	inHeaders, lineStart := true, true
	var field []byte // the Message-ID field read so far, bounded
	for {
		chunk, err := br.ReadSlice('\n')
		size += len(chunk)
		if inHeaders {
			if lineStart && len(bytes.TrimSpace(chunk)) == 0 && (err == nil || err == io.EOF) {
				inHeaders = false
			} else if lineStart || field != nil {
				field = idField(field, chunk, lineStart)
			}
			lineStart = err != bufio.ErrBufferFull
			if lineStart && field != nil {
				id, field = keptID(field), nil
			}
		}
		if err == io.EOF {
			return size, id, nil
		}
		if err != nil && err != bufio.ErrBufferFull {
			return size, id, err
		}
	}
}

// idField adds a header line's chunk to a Message-ID field being read: a
// line that starts one begins it; at most MaxID+64 bytes are kept (the
// field's blanks trimmed, MaxID are left).
func idField(field, chunk []byte, lineStart bool) []byte {
	if lineStart {
		k, v, ok := bytes.Cut(chunk, []byte(":"))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(k), []byte("Message-ID")) {
			return nil
		}
		field, chunk = []byte{}, v
	}
	return append(field, chunk[:min(len(chunk), max(0, MaxID+64-len(field)))]...)
}

// keptID is the key a Message-ID is kept under: itself, its first MaxID
// bytes when longer (such IDs are told apart by those bytes alone).
func keptID(field []byte) string {
	v := bytes.TrimSpace(field)
	return string(v[:min(len(v), MaxID)])
}

// Warm warms the lookup and the connection of a first transaction before
// the barrier (load.Warmer).
func (c *Client) Warm(int) {
	c.Resolver.Warm(c.Path)
	path.Warm(c.Path, netip.AddrPort{}, c.Source)
}
