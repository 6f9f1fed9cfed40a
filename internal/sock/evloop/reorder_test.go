package evloop

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"v6lab/internal/proto/scripted"
	"v6lab/internal/sock/tcpinfo"
	"v6lab/internal/testutil"
	"v6lab/internal/testutil/losstest"
)

// TestReorderedReplyIsSaid: a conversation whose replies came in order is
// not Reordered; on a loopback that drops a tenth of the packets arriving
// (as the lab routers' loss is to the hosts), replies of 30 segments have
// some arrive after a lost one, before its retransmission, and the
// exchange says so, so that its turns are not used. In a network
// namespace of its own: the test runs itself again under unshare --net.
func TestReorderedReplyIsSaid(t *testing.T) {
	if os.Getenv("V6LAB_EVLOOP_NETNS") == "" {
		testutil.RequireRoot(t, "needs root for a network namespace and a tc BPF program")
		unshare, err := exec.LookPath("unshare")
		if err != nil {
			t.Skip("unshare (util-linux) is not installed")
		}
		cmd := exec.Command(unshare, "--net", os.Args[0], "-test.run=^TestReorderedReplyIsSaid$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "V6LAB_EVLOOP_NETNS=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "--- PASS: TestReorderedReplyIsSaid") {
			t.Fatalf("in its own network namespace: %v\n%s", err, out)
		}
		return
	}
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		t.Fatal(err)
	}
	e := engine(t)
	converse := func(reqs ...string) Result {
		port := scripted.Serve(t, func(c net.Conn, in *bufio.Reader) {
			c.(*net.TCPConn).SetNoDelay(true)
			for {
				if _, err := in.ReadString('\n'); err != nil {
					return
				}
				for i := range 30 { // a segment each
					chunk := strings.Repeat("x", 1000)
					if i == 29 {
						chunk = chunk[:996] + " ok\n"
					}
					c.Write([]byte(chunk))
					time.Sleep(200 * time.Microsecond)
				}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return e.Do(ctx, &Exchange{Remote: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)),
			Request: []byte("a\n"), Reply: &lines{reqs: reqs}})
	}
	if r := converse("b", "c"); r.Err != nil || r.Reordered || r.ClientTurns == 0 {
		t.Fatalf("in order: err %v, reordered %v, turns %v", r.Err, r.Reordered, r.ClientTurns)
	}
	losstest.Arriving(t, 10)
	// Two replies before turns with no segment lost before their last
	// (about 0.2% of them) have nothing out of order: five tries.
	// One reply alone, no turn: a last read that returned long after its
	// stamp is asked about, so that the wire's end is not taken at an
	// early stamp. (A late read may also be a busy client's, in order:
	// not every late one is Reordered, but some of a lossy few are.)
	said := false
	// (A loss in a reply's last few segments makes one: a try in ten to
	// forty here, so up to 150 tries, which stop at the first.)
	for try := 0; try < 150 && !said; try++ {
		r := converse()
		said = r.Err == nil && !r.LastRx.IsZero() && r.LastRead.Sub(r.LastRx) > tcpinfo.LateRead && r.Reordered
	}
	if !said {
		t.Error("150 replies of 30 segments with a tenth lost, no turn: none read late after its stamp said Reordered")
	}
	for range 5 {
		if r := converse("b", "c"); r.Err == nil && r.Reordered {
			return
		}
	}
	t.Error("conversations with a tenth of their packets lost: none Reordered")
}
