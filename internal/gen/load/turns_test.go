package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"

	"v6lab/internal/proto/scripted"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil"
	"v6lab/internal/testutil/losstest"
	"v6lab/internal/testutil/servetest"
)

// slowDNS answers every A query with 127.0.0.1 after wait, on loopback.
func slowDNS(t *testing.T, wait time.Duration) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		b := make([]byte, 512)
		for {
			n, from, err := pc.ReadFromUDP(b)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(b[:n]) != nil || len(q.Question) != 1 {
				continue
			}
			r := new(dns.Msg)
			r.SetReply(q)
			r.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(127, 0, 0, 1)}}
			out, _ := r.Pack()
			time.Sleep(wait)
			pc.WriteToUDP(out, from)
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// TestOpenCountsTheLookupTurn: a probe that counts its turns gets the
// lookup's, from the answer's arrival to the SYN (or the connect call),
// which the DNS server's own time is not part of; one that does not
// count them leaves client_turn_ns unset.
func TestOpenCountsTheLookupTurn(t *testing.T) {
	const wait = 20 * time.Millisecond
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	res := &path.Resolver{Servers: []netip.AddrPort{slowDNS(t, wait)}}
	// The turns are counted when the transaction is done.
	open := func(count bool) result.Sample {
		tr := Begin("x", path.IPv4)
		if count {
			tr.CountTurns()
		}
		_, release, failed := tr.Open(context.Background(), res, "www.v6lab.test", port, path.Dialer{Path: path.IPv4})
		if failed != nil {
			t.Fatal(failed.Err)
		}
		release()
		return tr.Done("")
	}
	if s := open(false); s.ClientTurnNS != 0 {
		t.Errorf("a probe that does not count its turns got %v", time.Duration(s.ClientTurnNS))
	}
	// The first lookup may find the kernel's receive stamps still off
	// (kstamp.Hold): it then counts no turn.
	for range 3 {
		s := open(true)
		if s.ClientTurnNS == 0 {
			continue
		}
		if s.ResolveNS < int64(wait) || s.ClientTurnNS >= int64(wait) {
			t.Errorf("lookup %v, turn %v: want the turn after the answer, not the server's %v", time.Duration(s.ResolveNS), time.Duration(s.ClientTurnNS), wait)
		}
		return
	}
	t.Error("no lookup turn counted")
}

// serveEach listens on 127.0.0.1 until the test ends and serves each
// connection with handle on a goroutine of its own, then closes it.
func serveEach(t *testing.T, handle func(c net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	servetest.Each(t, ln, handle)
	return ln
}

// TestTurnsCountWritesAfterReads: on a connection wrapped by Turns, a
// write after a reply counts the client's time since the reply's
// arrival, not the server's 20 ms before it; a second write with no read
// between counts nothing; without CountTurns nothing is counted.
func TestTurnsCountWritesAfterReads(t *testing.T) {
	// The second write waits long enough after the first that counting it
	// too would show past anything a loaded machine adds to a sleep.
	const serverWait, clientWait, secondWait = 20 * time.Millisecond, 5 * time.Millisecond, 100 * time.Millisecond
	ln := serveEach(t, func(c net.Conn) { // one reply per byte, after serverWait
		b := make([]byte, 1)
		for {
			if _, err := c.Read(b); err != nil {
				return
			}
			time.Sleep(serverWait)
			c.Write(b)
		}
	})
	// converse returns the trace and how long the client itself took
	// between the reply's read and its next write (at least clientWait).
	converse := func(count bool) (*Trace, time.Duration) {
		tr := Begin("x", path.IPv4)
		if count {
			tr.CountTurns()
		}
		raw, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		c := tr.Turns(tr.Stamp(raw))
		b := make([]byte, 1)
		c.Write(b) // the first request: no reply before it
		if _, err := c.Read(b); err != nil {
			t.Fatal(err)
		}
		read := time.Now()
		time.Sleep(clientWait)
		c.Write(b) // a turn of about clientWait
		own := time.Since(read)
		time.Sleep(secondWait)
		c.Write(b) // no reply between: no turn (else secondWait more)
		for range 2 {
			if _, err := c.Read(b); err != nil {
				t.Fatal(err)
			}
		}
		return tr, own
	}
	if tr, _ := converse(false); tr.S.ClientTurnNS != 0 {
		t.Errorf("without CountTurns: %v counted", time.Duration(tr.S.ClientTurnNS))
	}
	for range 3 { // the kernel's receive stamps may come on late (kstamp.Hold)
		tr, own := converse(true)
		if tr.S.ClientTurnNS == 0 {
			continue
		}
		// From the reply's arrival (before the read returned) to the
		// write: the client's own time and the read's wake-up.
		if turn := time.Duration(tr.S.ClientTurnNS); turn < own-time.Millisecond || turn >= own+secondWait/2 {
			t.Errorf("turns %v: want the client's one turn of %v, not the server's %v nor the second write's %v more", turn, own, serverWait, secondWait)
		}
		return
	}
	t.Error("no turn counted")
}

// TestCheckOrderFindsAReplyOutOfOrder: after a turn's send, on a
// connection wrapped by Turns (HTTP's, SMTP's over their timing) or by a
// probe that counts its turns itself and asks CheckOrder (FTP's), a reply
// of 30 segments some of which came out of order (a tenth of the packets
// arriving on loopback dropped) leaves the sample without client_turn_ns;
// in order, it has its turn.
func TestCheckOrderFindsAReplyOutOfOrder(t *testing.T) {
	testutil.InOwnNetns(t, "needs root for a network namespace and a tc BPF program")
	// converse is a request, its reply of 30 segments, and a turn.
	converse := func(wrapped bool) (result.Sample, error) {
		port := scripted.Serve(t, func(c net.Conn, in *bufio.Reader) {
			c.(*net.TCPConn).SetNoDelay(true)
			in.ReadString('\n')
			for range 30 {
				c.Write(make([]byte, 1000))
				time.Sleep(200 * time.Microsecond) // a segment each
			}
			io.Copy(io.Discard, c)
		})
		tr := Begin("x", path.IPv4)
		tr.CountTurns()
		raw, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		raw.SetDeadline(time.Now().Add(5 * time.Second))
		c := timedConn{tr.Stamp(raw), tr} // as Open gives it
		var w net.Conn = c
		if wrapped {
			w = tr.Turns(c)
		}
		w.Write([]byte("a\n"))
		if _, err := io.ReadFull(w, make([]byte, 30*1000)); err != nil {
			return result.Sample{}, err
		}
		if !wrapped {
			tr.Turn(tr.LastRx(), time.Now())
		}
		w.Write([]byte("b\n"))
		if !wrapped {
			tr.CheckOrder()
		}
		return tr.Done("ok"), nil
	}
	for _, wrapped := range []bool{true, false} {
		if s, err := converse(wrapped); err != nil || s.ClientTurnNS == 0 {
			t.Fatalf("in order (Turns %v): err %v, client_turn_ns %d", wrapped, err, s.ClientTurnNS)
		}
	}
	losstest.Arriving(t, 10)
	for _, wrapped := range []bool{true, false} {
		found := false
		for range 5 { // as path's test: a reply may have nothing out of order
			if s, err := converse(wrapped); err == nil && s.ClientTurnNS == 0 {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("Turns %v: replies with a tenth of their packets lost: every one kept its turn", wrapped)
		}
	}
}
