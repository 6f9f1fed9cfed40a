package path_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"v6lab/internal/proto/scripted"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil"
	"v6lab/internal/testutil/losstest"
)

// segmentedReply has a server on 127.0.0.1 send a reply of chunks
// separate segments, and returns the client's stamped connection once it
// has read it all (or a read's error: a lossy loopback may time out).
func segmentedReply(t *testing.T, chunks int) (*path.StampedConn, error) {
	t.Helper()
	port := scripted.Serve(t, func(c net.Conn, _ *bufio.Reader) {
		c.(*net.TCPConn).SetNoDelay(true)
		for range chunks {
			c.Write(make([]byte, 1000))
			time.Sleep(200 * time.Microsecond) // a segment each
		}
		io.Copy(io.Discard, c)
	})
	raw, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	sc, ok := path.Stamped(raw)
	if !ok {
		t.Fatal("not stamped")
	}
	raw.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadFull(sc, make([]byte, chunks*1000))
	return sc, err
}

// TestReorderedSaysASegmentCameOutOfOrder: a reply whose segments all
// came in order is not Reordered; with a tenth of the packets arriving on
// loopback dropped (losstest.Arriving), a reply of 30 segments has
// some arrive after a lost one, before its retransmission, and is.
func TestReorderedSaysASegmentCameOutOfOrder(t *testing.T) {
	testutil.InOwnNetns(t, "needs root for a network namespace and a tc BPF program")
	if sc, err := segmentedReply(t, 30); err != nil {
		t.Fatal(err)
	} else if sc.Reordered() {
		t.Error("a reply in order: Reordered")
	}
	losstest.Arriving(t, 10)
	// A reply with no segment lost before its last (about 5% of them)
	// has nothing out of order, and one may time out: five tries.
	for range 5 {
		if sc, err := segmentedReply(t, 30); err == nil && sc.Reordered() {
			return
		}
	}
	t.Error("replies with a tenth of their packets lost: none Reordered")
}
