package http

import (
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
)

// writesConn records each write it is given.
type writesConn struct {
	net.Conn
	writes []string
}

func (w *writesConn) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

// TestBatchConnSendsAPagesRequestsInOneWrite: from hold on, writes are
// kept until the awaited requests are written, then go in one write, in
// order; a request written after them goes at once; release sends the
// rest and ends the holding; a long reply's held writes never pass
// maxHeld.
func TestBatchConnSendsAPagesRequestsInOneWrite(t *testing.T) {
	w := &writesConn{}
	b := newBatchConn(w)
	write := func(s string) {
		t.Helper()
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	write("page ")
	b.hold(0)
	write("wu ")
	b.hold(2)
	write("req1 ")
	b.wroteHeaders()
	if len(w.writes) != 1 {
		t.Fatalf("a request of two went before the other: %q", w.writes)
	}
	write("req2 ")
	b.wroteHeaders()
	write("wu2 ")
	write("late ")
	b.wroteHeaders()
	write("wu3 ")
	if want := []string{"page ", "wu req1 req2 ", "wu2 late "}; !slices.Equal(w.writes, want) {
		t.Fatalf("writes %q, want %q", w.writes, want)
	}
	b.release()
	write("next")
	if want := []string{"wu3 ", "next"}; !slices.Equal(w.writes[3:], want) {
		t.Fatalf("after release: %q, want %q", w.writes[3:], want)
	}
	w.writes = nil
	b.hold(0)
	wu := strings.Repeat("w", 13)
	for range 2 * maxHeld / len(wu) {
		write(wu)
	}
	if len(w.writes) < 1 || len(w.writes[0]) > maxHeld+len(wu) {
		t.Fatalf("held %d writes of %d bytes, the first %d", len(w.writes), len(wu), len(w.writes[0]))
	}
	b.release()
	if got := strings.Join(w.writes, ""); got != strings.Repeat(wu, 2*maxHeld/len(wu)) {
		t.Fatalf("the held bytes changed: %d bytes", len(got))
	}
	var nb *batchConn
	nb.hold(1) // HTTP/3's: none
	nb.release()
}

// TestBatchConnLetsGoOfItsConnection: detached, a batchConn holds no
// reference to the connection it had (net/http keeps its HTTP/2 client
// connections reachable after Close), and says it is closed.
func TestBatchConnLetsGoOfItsConnection(t *testing.T) {
	a, peer := net.Pipe()
	defer peer.Close()
	b := newBatchConn(a)
	a.Close()
	b.detach()
	if b.conn() == a {
		t.Fatal("the detached batchConn still holds its connection")
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after detach: %v", err)
	}
	if _, err := b.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after detach: %v", err)
	}
	if b.LocalAddr() != a.LocalAddr() || b.RemoteAddr() != a.RemoteAddr() || b.ConnectionState().HandshakeComplete {
		t.Errorf("addresses %v %v, state %+v", b.LocalAddr(), b.RemoteAddr(), b.ConnectionState())
	}
}
