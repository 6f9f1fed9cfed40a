package smtp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"

	"v6lab/internal/evloop"
	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/proto/reply"
	"v6lab/internal/result"
)

// A plain submission (no STARTTLS) runs on the event loop: the
// conversation's five turns (each server reply, then the next command)
// are taken by the loop's thread as the reply is read, not by a goroutine
// woken through Go's scheduler, whose wake-up would be in the response
// time and in its wire time alike.

// Record says which engine the client's transactions run on, for the
// result's record (proto.Recorder): the event loop, or Go's net package
// with STARTTLS.
func (c *Client) Record() map[string]string {
	if c.StartTLS {
		return map[string]string{"engine": "go"}
	}
	return map[string]string{"engine": "evloop"}
}

// step is one server reply the conversation waits for, and the command
// sent once it came.
type step struct {
	what string // names the step in errors: greeting, EHLO, …
	want int
	then []byte // nil after the last reply
}

// conversation is a submission's replies and commands (evloop.Continuer).
type conversation struct {
	p     reply.Parser
	steps []step
	i     int // the step whose reply is being read
	last  reply.Reply
}

func (v *conversation) Feed(b []byte, eof bool) (bool, error) {
	var r reply.Reply
	if eof {
		var err error
		if r, err = v.p.End(); err != nil {
			return false, err
		}
	} else {
		got, used, done, err := v.p.Feed(b)
		switch {
		case err != nil:
			return false, err
		case !done:
			return false, nil
		case used < len(b):
			// Nothing was pipelined: a server that answers ahead is broken.
			return false, fmt.Errorf("smtp: %s: more bytes after the reply %q: %w", v.steps[v.i].what, reply.Printable(got.String()), ErrReply)
		}
		r = got
	}
	s := v.steps[v.i]
	if r.Code != s.want {
		return false, fmt.Errorf("smtp: %s: the server answered %q: %w", s.what, reply.Printable(r.String()), ErrReply)
	}
	v.last = r
	return true, nil
}

func (v *conversation) Next() ([]byte, bool) {
	s := v.steps[v.i]
	v.i++
	return s.then, false
}

// doEvloop sends one message on the event loop (see above): lookup,
// connect pinned to the path, the greeting, EHLO, MAIL FROM, RCPT TO,
// DATA, the message, and its 250; every command built before the start.
func (c *Client) doEvloop(ctx context.Context, user int) result.Sample {
	to := c.recipient(user)
	v := &conversation{p: reply.Parser{Proto: "smtp"}, steps: []step{
		{"greeting", 220, []byte("EHLO " + c.helo() + "\r\n")},
		{"EHLO", 250, []byte("MAIL FROM:<" + c.From + ">\r\n")},
		{"MAIL FROM", 250, []byte("RCPT TO:<" + to + ">\r\n")},
		{"RCPT TO", 250, []byte("DATA\r\n")},
		{"DATA", 354, c.message(to, user)},
		{"message", 250, nil},
	}}
	eng, err := evloop.Default()
	tr := load.Begin("smtp", c.Path)
	if err != nil {
		return tr.Fail(ctx, "connect", err)
	}
	ip, err := tr.Lookup(ctx, c.Resolver, c.Host, c.Path)
	tr.Mark(&tr.S.ResolveNS)
	if err != nil {
		return tr.Fail(ctx, "resolve", err)
	}
	addr := netip.AddrPortFrom(ip, uint16(c.Port))
	if err := (path.Dialer{Path: c.Path, Source: c.Source}).Check(addr.Addr()); err != nil {
		return tr.Fail(ctx, "connect", err)
	}
	// The server speaks first: no request until its greeting.
	x := evloop.Exchange{Remote: addr, Source: c.Source, Reply: v, Cookie: tr.WantsSYN() && path.SYNReady()}
	r := eng.Do(ctx, &x)
	if !r.Connected.IsZero() {
		tr.At(&tr.S.ConnectNS, r.Connected)
		tr.S.Local, tr.S.Remote = r.Local.String(), addr.String()
	}
	if !r.FirstByte.IsZero() {
		tr.At(&tr.S.FirstByteNS, r.FirstByte) // the greeting's, as the Go engine's
	}
	tr.S.BytesIn, tr.S.BytesOut = r.BytesIn, r.BytesOut
	if r.Err != nil {
		phase := r.Phase
		switch {
		case phase == "reply" && errors.Is(r.Err, ErrReply):
			phase = "protocol"
		case phase == "reply" && errors.Is(r.Err, io.ErrUnexpectedEOF):
			phase = "io"
		}
		return tr.Fail(ctx, phase, r.Err)
	}
	if err := c.Path.CheckAddr("local", r.Local.Addr()); err != nil {
		return tr.Fail(ctx, "connect", err)
	}
	tr.Received(r.LastRead, r.LastRx) // the end, and the wire's, at the 250
	tr.FirstReceived(r.FirstRx)
	tr.SYN(r.Cookie)
	return tr.Done("250 " + v.last.Text())
}
