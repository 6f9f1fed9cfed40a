package dns

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"v6lab/internal/sock/path"
)

// Modes of the DNS client.
const (
	// ModeStub sends each query on a socket of its own, as a stub resolver
	// (glibc's) does: what MITRE's transactions include.
	ModeStub = "stub"
	// ModeLoad keeps a few long-lived UDP sockets per path with many
	// queries in flight on each, replies matched to queries by ID, as
	// dnsperf does: a load generator, every query still timed.
	ModeLoad = "load"
)

// LoadSockets is how many sockets a load-mode client keeps per path.
const LoadSockets = 4

// ErrStray is the reason a reply that matches no query in flight is
// dropped (late after its query timed out, or not an answer to us).
var ErrStray = errors.New("a reply matching no query in flight")

// mux carries the queries of one client over LoadSockets connected UDP
// sockets of its path. A reader goroutine per socket takes each reply's
// arrival time at the read that returned it and hands the reply to the
// query with its ID.
type mux struct {
	socks  []*muxSock
	Strays atomic.Int64 // replies that matched no query in flight
}

type muxSock struct {
	conn    net.Conn
	mu      sync.Mutex
	next    uint16
	pending map[uint16]chan arrival
	err     error // set when the reader stopped
}

// arrival is one reply as the reader got it.
type arrival struct {
	msg []byte
	at  time.Time
}

func openMux(ctx context.Context, d path.Dialer, server netip.AddrPort) (*mux, error) {
	m := &mux{}
	for range LoadSockets {
		c, err := d.Dial(ctx, "udp", server)
		if err != nil {
			m.Close()
			return nil, err
		}
		s := &muxSock{conn: c, pending: map[uint16]chan arrival{}}
		m.socks = append(m.socks, s)
		go s.read(m)
	}
	return m, nil
}

// read delivers replies until the socket closes.
func (s *muxSock) read(m *mux) {
	buf := make([]byte, 65535)
	for {
		n, err := s.conn.Read(buf)
		at := time.Now()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				err = errors.New("the client closed")
			}
			s.mu.Lock()
			s.err = err
			for id, ch := range s.pending {
				close(ch)
				delete(s.pending, id)
			}
			s.mu.Unlock()
			return
		}
		if n < 12 {
			m.Strays.Add(1)
			continue
		}
		id := binary.BigEndian.Uint16(buf[:2])
		s.mu.Lock()
		ch, ok := s.pending[id]
		delete(s.pending, id)
		s.mu.Unlock()
		if !ok {
			m.Strays.Add(1)
			continue
		}
		ch <- arrival{msg: append([]byte(nil), buf[:n]...), at: at}
	}
}

// send registers a query with a free ID on the user's socket and sends it;
// the reply (or a closed channel when the socket failed) arrives on the
// returned channel. cancel forgets the query.
func (m *mux) send(user int, wire []byte) (ch chan arrival, cancel func(), err error) {
	s := m.socks[uint(user)%uint(len(m.socks))]
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return nil, nil, s.err
	}
	if len(s.pending) >= 1<<16 {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("65,536 queries in flight on one socket")
	}
	for {
		s.next++
		if _, busy := s.pending[s.next]; !busy {
			break
		}
	}
	id := s.next
	ch = make(chan arrival, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	binary.BigEndian.PutUint16(wire[:2], id)
	cancel = func() {
		s.mu.Lock()
		if s.pending[id] == ch {
			delete(s.pending, id)
		}
		s.mu.Unlock()
	}
	if _, err := s.conn.Write(wire); err != nil {
		cancel()
		return nil, nil, err
	}
	return ch, cancel, nil
}

// local and remote name the user's socket's addresses.
func (m *mux) sock(user int) net.Conn { return m.socks[uint(user)%uint(len(m.socks))].conn }

// Close closes every socket; queries in flight fail.
func (m *mux) Close() error {
	for _, s := range m.socks {
		s.conn.Close()
	}
	return nil
}
