package dns

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"

	mdns "github.com/miekg/dns"

	"v6lab/internal/load"
	"v6lab/internal/path"
	"v6lab/internal/result"
)

// ErrReply is wrapped when the server's reply is not an answer.
var ErrReply = errors.New("bad reply")

// Client is a DNS probe: each Do sends one query for Name on a new socket
// pinned to Path and ends when a matching NOERROR reply with at least one
// record of the asked type has arrived (truncated UDP replies are retried
// over TCP, as a resolver would).
type Client struct {
	Name   string
	Server netip.AddrPort
	Path   path.Path
	// Type is the record type asked; 0 means the path's own (A or AAAA).
	Type uint16
	// TCP sends the query over TCP instead of UDP.
	TCP    bool
	Source netip.Addr
}

func (c *Client) qtype() uint16 {
	if c.Type != 0 {
		return c.Type
	}
	return c.Path.RecordType()
}

// Do performs one query.
func (c *Client) Do(ctx context.Context, user int) result.Sample {
	tr := load.Begin("dns", c.Path)
	q := new(mdns.Msg)
	q.SetQuestion(mdns.Fqdn(c.Name), c.qtype())
	q.Id = uint16(user) ^ mdns.Id()
	q.RecursionDesired = true
	wire, err := q.Pack()
	if err != nil {
		return tr.Fail(ctx, "query", err)
	}
	reply, err := c.exchange(ctx, tr, wire, c.TCP)
	if err == nil && reply.Truncated && !c.TCP {
		reply, err = c.exchange(ctx, tr, wire, true)
	}
	if err != nil {
		phase := "io"
		if errors.Is(err, ErrReply) {
			phase = "reply"
		}
		return tr.Fail(ctx, phase, err)
	}
	if err := check(q, reply); err != nil {
		return tr.Fail(ctx, "reply", err)
	}
	n := 0
	for _, rr := range reply.Answer {
		if rr.Header().Rrtype == c.qtype() {
			n++
		}
	}
	return tr.Done("NOERROR, " + strconv.Itoa(n) + " " + mdns.TypeToString[c.qtype()])
}

// check decides whether reply completes the query q.
func check(q, reply *mdns.Msg) error {
	if reply.Id != q.Id {
		return fmt.Errorf("reply id %d does not match query id %d: %w", reply.Id, q.Id, ErrReply)
	}
	if !reply.Response {
		return fmt.Errorf("message is not a response: %w", ErrReply)
	}
	if len(reply.Question) != 1 || !mdns.IsFqdn(reply.Question[0].Name) ||
		mdns.CanonicalName(reply.Question[0].Name) != mdns.CanonicalName(q.Question[0].Name) ||
		reply.Question[0].Qtype != q.Question[0].Qtype {
		return fmt.Errorf("reply is for another question: %w", ErrReply)
	}
	if reply.Rcode != mdns.RcodeSuccess {
		return fmt.Errorf("server answered %s: %w", mdns.RcodeToString[reply.Rcode], ErrReply)
	}
	qt := q.Question[0].Qtype
	for _, rr := range reply.Answer {
		if rr.Header().Rrtype == qt {
			return nil
		}
	}
	return fmt.Errorf("%s has no %s record: %w", q.Question[0].Name, mdns.TypeToString[qt], ErrReply)
}

func (c *Client) exchange(ctx context.Context, tr *load.Trace, wire []byte, tcp bool) (*mdns.Msg, error) {
	proto := "udp"
	if tcp {
		proto = "tcp"
	}
	conn, err := path.Dialer{Path: c.Path, Source: c.Source}.Dial(ctx, proto, c.Server)
	if err != nil {
		return nil, err
	}
	defer func() {
		if tcp {
			load.CloseAbort(conn)
		} else {
			conn.Close()
		}
	}()
	if tr.S.ConnectNS == 0 {
		tr.Mark(&tr.S.ConnectNS)
		tr.Conn(conn)
	}
	stop := load.Deadline(ctx, conn)
	defer stop()
	var buf []byte
	if tcp {
		out := make([]byte, 2+len(wire))
		binary.BigEndian.PutUint16(out, uint16(len(wire)))
		copy(out[2:], wire)
		n, err := conn.Write(out)
		tr.S.BytesOut += int64(n)
		if err != nil {
			return nil, err
		}
		var l [2]byte
		if _, err := io.ReadFull(conn, l[:]); err != nil {
			return nil, err
		}
		tr.Mark(&tr.S.FirstByteNS)
		buf = make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(conn, buf); err != nil {
			return nil, fmt.Errorf("reply cut short: %w", err)
		}
		tr.S.BytesIn += int64(2 + len(buf))
	} else {
		n, err := conn.Write(wire)
		tr.S.BytesOut += int64(n)
		if err != nil {
			return nil, err
		}
		buf = make([]byte, 65535)
		n, err = conn.Read(buf)
		if err != nil {
			return nil, err
		}
		tr.Mark(&tr.S.FirstByteNS)
		buf = buf[:n]
		tr.S.BytesIn += int64(n)
	}
	m, err := Parse(buf)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Parse decodes a DNS message from the wire.
func Parse(b []byte) (*mdns.Msg, error) {
	m := new(mdns.Msg)
	if err := m.Unpack(b); err != nil {
		return nil, fmt.Errorf("undecodable reply of %d bytes: %v: %w", len(b), err, ErrReply)
	}
	return m, nil
}
