// Package ftp measures FTP file retrieval (the MITRE study's FTP
// transaction: log in, retrieve a file in passive mode, end on "226
// Transfer complete" with every byte in) and serves generated files for it.
// Replies are parsed with bounds, so a server that never ends a multi-line
// reply, or sends megabytes of it, fails the transaction instead of the
// client; a PASV reply naming another host is refused (FTP bounce).
package ftp

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/gen/content"
	"v6lab/internal/gen/load"
	"v6lab/internal/proto/reply"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// ErrReply is wrapped when a server's reply is malformed or not the one
// the transaction needs.
var ErrReply = reply.ErrReply

// ErrBounce is wrapped when a passive reply points at another host.
var ErrBounce = errors.New("FTP bounce refused")

// ReadReply reads one FTP reply (see reply.Read).
func ReadReply(br *bufio.Reader) (reply.Reply, error) { return reply.Read(br, "ftp") }

var printable = reply.Printable

// ParsePASV reads a 227 reply's "h1,h2,h3,h4,p1,p2".
func ParsePASV(text string) (netip.AddrPort, error) {
	open := strings.IndexByte(text, '(')
	end := strings.LastIndexByte(text, ')')
	var fields []string
	if open >= 0 && end > open {
		fields = strings.Split(text[open+1:end], ",")
	} else { // some servers omit the parentheses
		i := strings.IndexFunc(text, func(r rune) bool { return r >= '0' && r <= '9' })
		if i >= 0 {
			fields = strings.Split(strings.TrimRight(text[i:], ". "), ",")
		}
	}
	if len(fields) != 6 {
		return netip.AddrPort{}, fmt.Errorf("ftp: PASV reply %q: %w", printable(text), ErrReply)
	}
	var b [6]byte
	for i, f := range fields {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > 255 {
			return netip.AddrPort{}, fmt.Errorf("ftp: PASV reply %q: %w", printable(text), ErrReply)
		}
		b[i] = byte(n)
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[:4])), uint16(b[4])<<8|uint16(b[5])), nil
}

// ParseEPSV reads a 229 reply's "(|||port|)" (RFC 2428).
func ParseEPSV(text string) (uint16, error) {
	open := strings.IndexByte(text, '(')
	end := strings.LastIndexByte(text, ')')
	if open < 0 || end < open+5 {
		return 0, fmt.Errorf("ftp: EPSV reply %q: %w", printable(text), ErrReply)
	}
	inner := text[open+1 : end]
	d := inner[0]
	parts := strings.Split(inner, string(d))
	if len(parts) != 5 || parts[1] != "" || parts[2] != "" || parts[4] != "" {
		return 0, fmt.Errorf("ftp: EPSV reply %q: %w", printable(text), ErrReply)
	}
	port, err := strconv.Atoi(parts[3])
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("ftp: EPSV reply %q: %w", printable(text), ErrReply)
	}
	return uint16(port), nil
}

// Client is an FTP probe: one transaction per Do, from the name lookup to
// the transfer's completion reply with every byte counted.
type Client struct {
	// Host is a name (looked up with the path's record type) or an IP.
	Host     string
	Port     int
	File     string
	User     string
	Password string
	Path     path.Path
	Resolver *path.Resolver
	Source   netip.Addr
	// Active uses EPRT/PORT (the server connects back) instead of
	// EPSV/PASV.
	Active bool
	// Expect is what the file holds, when known: a body that differs
	// is a failed sample. Every body is summed either way.
	Expect content.Expect
}

// session is one transaction's control connection.
type session struct {
	c  net.Conn
	br *bufio.Reader
	tr *load.Trace
	// data is the data connection's handshake, when the next command
	// follows it rather than a reply: its turn starts at the handshake's
	// end.
	data *load.Handshake
}

// cmd sends a command after the last reply (or the data connection's
// handshake), counting the client's turn to the send, and reads its reply.
func (s *session) cmd(line string, want ...int) (reply.Reply, error) {
	if s.data != nil {
		s.tr.TurnAfter(s.data, time.Now())
		s.data = nil
	} else {
		s.tr.Turn(s.tr.LastRx(), time.Now())
	}
	b, err := reply.Command(line)
	if err != nil {
		return reply.Reply{}, err
	}
	if _, err := s.c.Write(b); err != nil {
		return reply.Reply{}, err
	}
	s.tr.CheckOrder() // a reply out of order (a loss) would make the turn the network's
	return s.expect(strings.Fields(line)[0], want...)
}

func (s *session) expect(what string, want ...int) (reply.Reply, error) {
	r, err := ReadReply(s.br)
	if err != nil {
		return r, err
	}
	for _, w := range want {
		if r.Code == w || (w < 10 && r.Code/100 == w) {
			return r, nil
		}
	}
	return r, fmt.Errorf("ftp: %s: the server answered %q: %w", what, printable(r.String()), ErrReply)
}

// Do runs one retrieval.
func (c *Client) Do(ctx context.Context, user int) result.Sample {
	tr := load.Begin("ftp", c.Path)
	tr.CountTurns()
	d := path.Dialer{Path: c.Path, Source: c.Source}
	conn, release, failed := tr.Open(ctx, c.Resolver, c.Host, c.Port, d)
	if failed != nil {
		return *failed
	}
	defer release()
	ip := conn.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	s := &session{c: conn, br: bufio.NewReaderSize(conn, 4096), tr: tr}
	if err := c.login(s, user); err != nil {
		return tr.Fail(ctx, "protocol", err)
	}
	want, err := c.size(s)
	if err != nil {
		return tr.Fail(ctx, "io", err)
	}
	data, err := c.openData(ctx, s, d, ip)
	if err != nil {
		phase := "protocol"
		if !errors.Is(err, ErrReply) && !errors.Is(err, ErrBounce) {
			phase = "connect"
		}
		return tr.Fail(ctx, phase, err)
	}
	defer data.Close()
	if _, err := s.cmd("RETR "+c.File, 125, 150); err != nil {
		return tr.Fail(ctx, "protocol", err)
	}
	dc, err := data.conn(ctx)
	if err != nil {
		return tr.Fail(ctx, "connect", fmt.Errorf("ftp: data connection: %w", err))
	}
	defer load.CloseAbort(dc)
	stopData := load.Deadline(ctx, dc)
	defer stopData()
	got, failed := c.readFile(ctx, tr, dc)
	if failed != nil {
		return *failed
	}
	done, err := transferDone(s, dc)
	if err != nil {
		return tr.Fail(ctx, "protocol", err)
	}
	if want >= 0 && got != want {
		return tr.Fail(ctx, "protocol", fmt.Errorf("ftp: short transfer: %d of %d bytes, though the server said %q", got, want, printable(done.String())))
	}
	return tr.Done(fmt.Sprintf("%d %s, %d bytes", done.Code, done.Text(), got))
}

// login reads the greeting, logs in (anonymous unless User is set, with
// a password per user) and asks for binary transfers.
func (c *Client) login(s *session, user int) error {
	if _, err := s.expect("greeting", 220); err != nil {
		return err
	}
	r, err := s.cmd("USER "+cmp.Or(c.User, "anonymous"), 230, 331)
	if err == nil && r.Code == 331 {
		pass := c.Password
		if pass == "" {
			pass = fmt.Sprintf("v6lab-user%d@", user)
		}
		_, err = s.cmd("PASS "+pass, 230, 202)
	}
	if err == nil {
		_, err = s.cmd("TYPE I", 200)
	}
	return err
}

// size asks for the file's size, to check the transfer against: -1 when
// the server does not say (SIZE is optional); only an I/O error fails.
func (c *Client) size(s *session) (int64, error) {
	want := int64(-1)
	if r, err := s.cmd("SIZE "+c.File, 213, 5); err == nil && r.Code == 213 {
		if n, err := strconv.ParseInt(r.Text(), 10, 64); err == nil && n >= 0 {
			want = n
		}
	} else if err != nil && !errors.Is(err, ErrReply) {
		return want, err
	}
	return want, nil
}

// readFile reads the file from the data connection to its end, checking
// its content. The file's bytes are the reply: the wire time runs to the
// later of their last arrival and the 226's (a server may send its 226
// while the file still waits in its send buffer), and its first byte is
// the file's. A failure comes back as its sample.
func (c *Client) readFile(ctx context.Context, tr *load.Trace, dc net.Conn) (int64, *result.Sample) {
	sdc := tr.StampReply(dc)
	buf := make([]byte, 64<<10)
	var got int64
	check := content.NewCheck(c.Expect)
	for {
		n, err := sdc.Read(buf)
		// The file's reads count for the end mark too: a 226 that came
		// in one read with the 150 would otherwise end the transaction
		// before its file.
		tr.Read(n)
		if n > 0 && got == 0 {
			tr.MarkRead(&tr.S.FirstByteNS)
		}
		got += int64(n)
		if _, cerr := check.Write(buf[:n]); cerr != nil {
			tr.S.BytesIn += got
			failed := tr.Fail(ctx, "protocol", fmt.Errorf("ftp: %s: %w", c.File, cerr))
			return got, &failed
		}
		if err == io.EOF {
			tr.ReadTCP() // the data connection's figures, before it closes
			break
		}
		if err != nil {
			failed := tr.Fail(ctx, "io", fmt.Errorf("ftp: data connection after %d bytes: %w", got, err))
			return got, &failed
		}
	}
	tr.S.BytesIn += got
	tr.S.Metrics = map[string]float64{"body_crc32c": float64(check.Sum())}
	return got, nil
}

// transferDone closes the data connection and reads the transfer's
// completion reply. Our end is closed now because servers such as
// ProFTPD wait for the data connection to be closed before they send
// 226. The close runs on another goroutine: its FIN's trip through the
// lab would otherwise run in this thread ahead of the read of a 226 that
// is often here already (the embedded server sends it as the data ends),
// and the transaction's end would carry that trip.
func transferDone(s *session, dc net.Conn) (reply.Reply, error) {
	closed := make(chan struct{})
	go func() { dc.Close(); close(closed) }()
	done, err := s.expect("transfer", 226, 250)
	<-closed
	return done, err
}

// dataConn is a data connection to be made (passive) or accepted (active).
type dataConn struct {
	c  net.Conn // passive: connected before the command
	ln net.Listener
}

func (d *dataConn) conn(ctx context.Context) (net.Conn, error) {
	if d.ln != nil {
		if dl, ok := ctx.Deadline(); ok {
			d.ln.(*net.TCPListener).SetDeadline(dl)
		}
		return d.ln.Accept()
	}
	return d.c, nil
}

func (d *dataConn) Close() {
	if d.ln != nil {
		d.ln.Close()
	}
	if d.c != nil {
		d.c.Close() // a second close of a used connection is harmless
	}
}

// openData negotiates the data connection: EPSV on IPv6 and PASV on IPv4
// (RFC 2428), or EPRT/PORT in active mode.
func (c *Client) openData(ctx context.Context, s *session, d path.Dialer, server netip.Addr) (*dataConn, error) {
	local := s.c.LocalAddr().(*net.TCPAddr).AddrPort()
	if c.Active {
		ln, err := path.Listen(ctx, c.Path, netip.AddrPortFrom(local.Addr(), 0).String())
		if err != nil {
			return nil, err
		}
		ap := ln.Addr().(*net.TCPAddr).AddrPort()
		var cmd string
		if ap.Addr().Is4() {
			a := ap.Addr().As4()
			cmd = fmt.Sprintf("PORT %d,%d,%d,%d,%d,%d", a[0], a[1], a[2], a[3], ap.Port()>>8, ap.Port()&0xff)
		} else {
			cmd = fmt.Sprintf("EPRT |2|%s|%d|", ap.Addr(), ap.Port())
		}
		if _, err := s.cmd(cmd, 200); err != nil {
			ln.Close()
			return nil, err
		}
		return &dataConn{ln: ln}, nil
	}
	var at netip.AddrPort
	if server.Is4() {
		r, err := s.cmd("PASV", 227)
		if err != nil {
			return nil, err
		}
		if at, err = ParsePASV(r.Text()); err != nil {
			return nil, err
		}
		if at.Addr() != server.Unmap() {
			return nil, fmt.Errorf("ftp: the PASV reply points at %s, not the server %s: %w", at.Addr(), server, ErrBounce)
		}
	} else {
		r, err := s.cmd("EPSV", 229)
		if err != nil {
			return nil, err
		}
		port, err := ParseEPSV(r.Text())
		if err != nil {
			return nil, err
		}
		at = netip.AddrPortFrom(server, port)
	}
	// Connect now: servers send their 150 only once the data connection
	// is up. The turn to the SYN is the client's, the handshake the
	// network's, and RETR's turn starts at the handshake's end.
	dc, handshake, err := s.tr.Dial(ctx, d, at, s.tr.LastRx())
	if err != nil {
		return nil, fmt.Errorf("ftp: data connection to %s: %w", at, err)
	}
	s.data = handshake
	return &dataConn{c: dc}, nil
}

// Warm warms the lookup and the connection of a first transaction before
// the barrier (load.Warmer).
func (c *Client) Warm(int) {
	c.Resolver.Warm(c.Path)
	path.Warm(c.Path, netip.AddrPort{}, c.Source)
	path.SYNReady() // the data connection's turns end at its SYN's stamp
}
