package smtp

import (
	"context"
	"fmt"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto/converse"
	"v6lab/internal/proto/reply"
	"v6lab/internal/result"
)

// A plain submission (no STARTTLS) runs on the event loop (package
// converse): the conversation's five turns (each server reply, then the
// next command) are taken by the loop's thread as the reply is read.

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
	lines, err := commands("EHLO "+c.helo(), "MAIL FROM:<"+c.From+">", "RCPT TO:<"+to+">", "DATA")
	if err != nil {
		tr := load.Begin("smtp", c.Path)
		return tr.Fail(ctx, "protocol", err)
	}
	v := &conversation{p: reply.Parser{Proto: "smtp"}, steps: []step{
		{"greeting", 220, lines[0]},
		{"EHLO", 250, lines[1]},
		{"MAIL FROM", 250, lines[2]},
		{"RCPT TO", 250, lines[3]},
		{"DATA", 354, c.message(to, user)},
		{"message", 250, nil},
	}}
	tr, failed := converse.Run(ctx, "smtp", converse.Server{Host: c.Host, Port: c.Port, Path: c.Path, Source: c.Source, Resolver: c.Resolver}, v, ErrReply)
	if failed != nil {
		return *failed
	}
	return tr.Done("250 " + v.last.Text())
}

// commands are the conversation's command lines, each refused if it would
// hold a line break of its own (reply.Command).
func commands(lines ...string) ([][]byte, error) {
	var out [][]byte
	for _, l := range lines {
		b, err := reply.Command(l)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
