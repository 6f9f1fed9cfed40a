package http

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// TestSyncStampPeekSealed: peekSealed finds a whole record TLS read off
// the socket with the one before it, finds nothing (and reads nothing off
// the socket) when TLS holds none or only part of one, and the connection
// reads on after each of its no-wait reads: crypto/tls took the error as
// temporary and kept the part of a record it had read.
func TestSyncStampPeekSealed(t *testing.T) {
	raw, b := tcpPair(t)
	defer raw.Close()
	cfg, err := proto.SelfSigned([]string{"h2.test"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	held := &heldConn{Conn: b}
	srv := tls.Server(held, cfg)
	done := make(chan error, 1)
	go func() { done <- srv.Handshake() }()
	st := stampH2(raw)
	c := tls.Client(st, &tls.Config{InsecureSkipVerify: true})
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(c, 16)
	if st.peekSealed(br) {
		t.Fatal("peekSealed found a record before the server sent one")
	}
	// One segment: record "one" and the first half of record "two".
	held.hold = true
	srv.Write([]byte("one"))
	n1 := len(held.buf)
	srv.Write([]byte("two"))
	two := held.buf[n1:]
	half := n1 + len(two)/2
	b.Write(held.buf[:half])
	readIs(t, br, "one")
	if st.peekSealed(br) {
		t.Fatal("peekSealed found a record of which TLS holds half")
	}
	// The second half and record "three": in the socket, not in TLS.
	rest := append([]byte(nil), held.buf[half:]...)
	held.buf = held.buf[:0]
	srv.Write([]byte("three"))
	rest = append(rest, held.buf...)
	b.Write(rest)
	inSocket(t, raw, len(rest))
	if st.peekSealed(br) {
		t.Fatal("peekSealed found a record that waits in the socket: it read the socket")
	}
	if n := socketHolds(t, raw); n != len(rest) {
		t.Fatalf("the socket holds %d bytes after peekSealed, want the %d it held before", n, len(rest))
	}
	readIs(t, br, "two") // the half TLS held, then the socket's
	if !st.peekSealed(br) {
		t.Fatal("peekSealed did not find record three, read off the socket with two's end")
	}
	readIs(t, br, "three")
	if st.peekSealed(br) {
		t.Fatal("peekSealed found a record after the last")
	}
	held.hold = false
	srv.Write([]byte("four"))
	readIs(t, br, "four") // a read that waits, after them all
}

// readIs reads len(want) bytes from br and checks them.
func readIs(t *testing.T, br *bufio.Reader, want string) {
	t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

// inSocket waits until the receive queue of c's socket holds n bytes.
func inSocket(t *testing.T, c net.Conn, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); socketHolds(t, c) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the socket holds %d bytes, not %d", socketHolds(t, c), n)
		}
	}
}

// socketHolds is how many bytes wait in the receive queue of c's socket.
func socketHolds(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	n := -1
	rc.Control(func(fd uintptr) { n, err = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// BenchmarkKeptH2Alive is the check before each transaction on a kept
// HTTP/2 connection over TLS (alive: the socket's peek, the look into
// TLS), on an idle connection to the embedded server on loopback, as v6lab
// dials it: what it costs a transaction, alone.
func BenchmarkKeptH2Alive(b *testing.B) {
	srv, err := Listen(context.Background(), tlsConfig(&testing.T{}), []netip.Addr{lo4}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	u, _ := ParseURL("https://" + netip.AddrPortFrom(lo4, uint16(srv.Port)).String() + "/")
	c := &Client{URL: u, Path: path.IPv4, Resolver: &path.Resolver{}, Version: Version2, Keep: true,
		TLS: &tls.Config{InsecureSkipVerify: true}}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	s := c.Do(ctx, 0)
	cancel()
	if !s.OK() {
		b.Fatal(s.Err)
	}
	h, ok := c.kept.take(0).(*h2conn)
	if !ok {
		b.Fatal("no kept HTTP/2 connection after a transaction")
	}
	defer h.close()
	time.Sleep(10 * time.Millisecond) // what the server sends after its reply (a SETTINGS ACK) read
	h.alive()
	b.ReportAllocs()
	for b.Loop() {
		if !h.alive() {
			b.Fatal("the kept connection is not alive")
		}
	}
}
