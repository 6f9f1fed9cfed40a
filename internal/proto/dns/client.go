package dns

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"sync"
	"time"

	mdns "github.com/miekg/dns"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
	"v6lab/internal/sock/evloop"
	"v6lab/internal/sock/path"
)

// ErrReply is wrapped when the server's reply is not an answer.
var ErrReply = errors.New("bad reply")

// Client is a DNS probe: each Do sends one query for Name on a new socket
// pinned to Path and ends when a matching reply of the expected kind (by
// default NOERROR with at least one record of the asked type) has arrived
// (truncated UDP replies are retried
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
	// Mode is ModeStub (the default: a socket per query) or ModeLoad
	// (LoadSockets long-lived sockets, queries matched by ID; UDP only).
	Mode string
	// Expect is the reply that completes a query (ExpectAnswer …;
	// "": ExpectAnswer).
	Expect string
	// EDNS, when above 0, is the UDP payload size the query advertises
	// (an OPT record, RFC 6891); Resend, when above 0, sends a stub's UDP
	// query again after that wait without a reply, doubled each time.
	EDNS   uint16
	Resend time.Duration

	once   sync.Once
	mux    *mux // the load engine's sockets
	muxErr error
}

// Close closes a load-mode client's sockets.
func (c *Client) Close() error {
	if c.mux != nil {
		return c.mux.Close()
	}
	return nil
}

// Strays counts load-mode replies that matched no query in flight.
func (c *Client) Strays() int64 {
	if c.mux == nil {
		return 0
	}
	return c.mux.Strays.Load()
}

func (c *Client) qtype() uint16 {
	if c.Type != 0 {
		return c.Type
	}
	return c.Path.RecordType()
}

// Do performs one query.
func (c *Client) Do(ctx context.Context, user int) result.Sample {
	if c.Mode == ModeLoad && !c.TCP {
		return c.doLoad(ctx, user)
	}
	tr := load.Begin("dns", c.Path)
	q := new(mdns.Msg)
	q.SetQuestion(mdns.Fqdn(c.Name), c.qtype())
	q.Id = uint16(user) ^ mdns.Id()
	q.RecursionDesired = true
	if c.EDNS > 0 {
		q.SetEdns0(c.EDNS, false)
	}
	wire, err := q.Pack()
	if err != nil {
		return tr.Fail(ctx, "query", err)
	}
	w := &answerWire{want: c.EDNS > 0 || load.WantsTCPInfo(ctx), tcp: c.TCP}
	tr.Restart() // the query is built: its first system call is next
	reply, err := c.exchange(ctx, tr, wire, c.TCP, w)
	if err == nil && reply.Truncated && !c.TCP {
		w.tcp = true
		reply, err = c.exchange(ctx, tr, wire, true, w)
	}
	if err != nil {
		phase := "io"
		if errors.Is(err, ErrReply) {
			phase = "reply"
		}
		return w.record(tr.Fail(ctx, phase, err))
	}
	if err := check(q, reply, c.Expect); err != nil {
		return w.record(tr.Fail(ctx, "reply", err))
	}
	return w.record(tr.Done(marker(reply, c.qtype()) + w.how()))
}

// answerWire is how a stub query's answer came: over TCP (asked so, or
// after a truncated one), and over UDP in how many IP fragments, after
// how many resends.
type answerWire struct {
	want bool // the sample records it (EDNS, or a path MTU run)
	tcp  bool
	// fragments of the UDP answer (1: whole; 0: none came), resent the
	// query's resends.
	fragments, resent int
}

// udp takes what the event loop saw of a UDP exchange whose reply
// (n bytes, over IPv6 or not) came in fragments of at most fragSize.
func (w *answerWire) udp(r evloop.Result, n int, ipv6 bool) {
	w.resent += r.Resent
	if r.Err != nil {
		return
	}
	w.fragments = 1
	if f := r.FragSize; f > 0 {
		per := f - 20 // IPv4: every fragment has the header
		if ipv6 {
			per = f - 40 - 8 // IPv6: and the Fragment Header
		}
		if per > 0 {
			w.fragments = (n + 8 + per - 1) / per // the UDP header is in the first
		}
	}
}

// how is what the marker adds: ", over TCP" or ", in N fragments".
func (w *answerWire) how() string {
	switch {
	case !w.want:
		return ""
	case w.tcp:
		return ", over TCP"
	case w.fragments > 1:
		return fmt.Sprintf(", in %d IP fragments", w.fragments)
	}
	return ""
}

// record puts how the answer came in the sample's figures (dns_tcp,
// ip_fragments, dns_resent) when wanted.
func (w *answerWire) record(s result.Sample) result.Sample {
	if !w.want {
		return s
	}
	if s.Metrics == nil {
		s.Metrics = map[string]float64{}
	}
	s.Metrics[MetricTCP] = 0
	if w.tcp {
		s.Metrics[MetricTCP] = 1
	}
	if w.fragments > 0 {
		s.Metrics[MetricFragments] = float64(w.fragments)
	}
	s.Metrics[MetricResent] = float64(w.resent)
	return s
}

// The figures of how an answer came (answerWire).
const (
	MetricTCP       = "dns_tcp"
	MetricFragments = "ip_fragments"
	MetricResent    = "dns_resent"
)

// marker describes a completed query: its rcode and records of the type.
func marker(reply *mdns.Msg, qt uint16) string {
	return mdns.RcodeToString[reply.Rcode] + ", " + strconv.Itoa(answers(reply, qt)) + " " + mdns.TypeToString[qt]
}

// check decides whether reply completes the query q: a reply to its
// question of the kind expect asks for.
func check(q, reply *mdns.Msg, expect string) error {
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
	return meets(q, reply, expect)
}

func (c *Client) exchange(ctx context.Context, tr *load.Trace, wire []byte, tcp bool, w *answerWire) (*mdns.Msg, error) {
	if !tcp {
		return c.exchangeUDP(ctx, tr, wire, w)
	}
	raw, err := path.Dialer{Path: c.Path, Source: c.Source}.Dial(ctx, "tcp", c.Server)
	if err != nil {
		return nil, err
	}
	defer load.CloseAbort(raw)
	tr.Watch(ctx, raw)
	defer tr.ReadTCP() // before the close: a stall is told by it
	// The kernel stamps the reply (wire_ns); the SYN starts the wire time
	// when no earlier query did.
	conn := tr.Stamp(raw)
	if tr.S.ConnectNS == 0 {
		tr.Mark(&tr.S.ConnectNS)
		tr.Conn(conn)
	}
	stop := load.Deadline(ctx, conn)
	defer stop()
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
	buf := make([]byte, binary.BigEndian.Uint16(l[:]))
	if _, err := io.ReadFull(conn, buf); err != nil {
		return nil, fmt.Errorf("reply cut short: %w", err)
	}
	tr.Read(len(buf) + 2) // the transaction ends at the read that completed the reply
	tr.S.BytesIn += int64(2 + len(buf))
	return Parse(buf)
}

// exchangeUDP runs the query on the event loop (evloop), as stub queries
// are many and short: its raw socket sends the query as the transaction's
// first system calls, and the loop reads the reply and marks the end
// before it does anything else of the batch (Go's poller would wake this
// goroutine through the scheduler first, which at 100 users put hundreds
// of microseconds of v6lab's own into every query's time).
func (c *Client) exchangeUDP(ctx context.Context, tr *load.Trace, wire []byte, w *answerWire) (*mdns.Msg, error) {
	if err := (path.Dialer{Path: c.Path, Source: c.Source}).Check(c.Server.Addr()); err != nil {
		return nil, err
	}
	eng, err := evloop.Default()
	if err != nil {
		return nil, err
	}
	f := &replyFeeder{}
	r := eng.Do(ctx, &evloop.Exchange{Remote: c.Server, Source: c.Source, Request: wire, Reply: f, UDP: true, FragSize: w.want, Resend: c.Resend})
	w.udp(r, len(f.reply), c.Server.Addr().Unmap().Is6())
	tr.S.BytesOut += r.BytesOut
	if !r.Connected.IsZero() && tr.S.ConnectNS == 0 {
		tr.At(&tr.S.ConnectNS, r.Connected) // the socket is made and the query sent
		tr.S.Local, tr.S.Remote = r.Local.String(), c.Server.String()
	}
	if r.Err != nil {
		return nil, r.Err
	}
	// The socket's family is the path's by construction; the check keeps
	// the promise every other dialer keeps.
	if err := c.Path.CheckAddr("local", r.Local.Addr()); err != nil {
		return nil, err
	}
	tr.Received(r.LastRead, r.LastRx) // the end, and the wire's: the reply's read and stamp
	tr.FirstReceived(r.LastRx)
	tr.MarkRead(&tr.S.FirstByteNS)
	tr.Sent(r.FirstTx)
	tr.S.BytesIn += int64(len(f.reply))
	return Parse(f.reply)
}

// replyFeeder takes the first datagram back: on a socket of its own a
// query has no earlier query's late reply to skip, so whatever comes is
// its reply, checked after the end mark (a wrong ID is the server's error).
type replyFeeder struct{ reply []byte }

func (f *replyFeeder) Feed(b []byte, _ bool) (bool, error) {
	f.reply = append(f.reply[:0], b...)
	return true, nil
}

// Parse decodes a DNS message from the wire.
func Parse(b []byte) (*mdns.Msg, error) {
	m := new(mdns.Msg)
	if err := m.Unpack(b); err != nil {
		return nil, fmt.Errorf("undecodable reply of %d bytes: %v: %w", len(b), err, ErrReply)
	}
	return m, nil
}

// Warm warms a stub query's socket before the barrier (load.Warmer); the
// load engine's sockets are open already.
func (c *Client) Warm(int) {
	if c.Mode != ModeLoad || c.TCP {
		path.Warm(c.Path, c.Server, c.Source)
	}
	if c.Mode != ModeLoad && !c.TCP {
		_, _ = evloop.Default() // started before the first query, not in it
	}
}
