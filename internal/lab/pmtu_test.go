package lab

import (
	"os/exec"
	"strings"
	"testing"

	"v6lab/internal/lab/bpf"
)

// ping runs ping from the lab's client and returns its output (a ping
// that got no reply is not an error here: the output says what came).
func ping(t *testing.T, l *Lab, args ...string) string {
	t.Helper()
	out, _ := exec.Command("ip", append([]string{"netns", "exec", NS(l.Name, Client), "ping", "-c", "1", "-W", "1"}, args...)...).CombinedOutput()
	return string(out)
}

// counters reads the lab's impairment counters, failing the test on an
// error.
func counters(t *testing.T, l *Lab) []uint64 {
	t.Helper()
	c, err := PMTUCounters(l.Name)
	if err != nil {
		t.Fatal(err)
	}
	if c == nil {
		c = make([]uint64, bpf.NumPMTUCounters)
	}
	return c
}

const (
	server4, server6 = "203.0.113.2", "2001:db8:6:3::2"
	tunnel6          = "2001:db8:46:3::2"
)

// TestPMTUImpairments: in a lab whose r1-r2 link carries 1400 bytes, a
// full-sized packet with DF gets its ICMP error back, unless the cell
// group's ptb_blackhole drops that family's (each dropped one counted,
// the other family's counted as passed); fragments are dropped per
// family; and once the group's settings are closed, all is as before.
func TestPMTUImpairments(t *testing.T) {
	l := up(t, Config{Name: testName(t) + "p", Links: map[string]Link{"r1-r2": {MTU: 1400}}})
	if l.TunnelMTU != 1380 {
		t.Errorf("tunnel MTU %d over a 1400-byte link, want 1380", l.TunnelMTU)
	}
	const tooBig6, tooBig4 = "Packet too big: mtu=1400", "Frag needed and DF set (mtu = 1400)"
	big6 := []string{"-M", "do", "-s", "1452", server6}
	big4 := []string{"-M", "do", "-s", "1472", server4}
	flush := func() {
		if err := FlushPMTU(l.Name); err != nil {
			t.Fatal(err)
		}
	}
	if out := ping(t, l, big6...); !strings.Contains(out, tooBig6) {
		t.Fatalf("healthy: no Packet Too Big from r1:\n%s", out)
	}
	if c := counters(t, l); c[bpf.PTB6Passed] != 0 {
		t.Errorf("counters without an impairment: %v", c)
	}
	// The route cache learnt 1400: the next ping is refused locally,
	// and sends nothing, until the cache is flushed.
	if out := ping(t, l, big6...); !strings.Contains(out, "message too long") {
		t.Errorf("the client did not learn the path MTU:\n%s", out)
	}
	flush()

	t.Run("ptb_blackhole ipv6", func(t *testing.T) {
		st, err := ApplyPMTU(l.Name, PMTU{PTBBlackhole: PMTUIPv6}, PMTU{})
		if err != nil {
			t.Fatal(err)
		}
		before := counters(t, l)
		if out := ping(t, l, big6...); strings.Contains(out, "too big") || !strings.Contains(out, "100% packet loss") {
			t.Errorf("IPv6: Packet Too Big reached the client:\n%s", out)
		}
		if out := ping(t, l, big4...); !strings.Contains(out, tooBig4) {
			t.Errorf("IPv4: fragmentation needed did not reach the client:\n%s", out)
		}
		d := PMTUDelta(before, counters(t, l))
		if d[bpf.PTB6Dropped] != 1 || d[bpf.PTB4Passed] != 1 || d[bpf.PTB6Passed] != 0 || d[bpf.PTB4Dropped] != 0 {
			t.Errorf("counters %s, want one ICMPv6 dropped and one ICMPv4 passed", bpf.PMTUCounts(d))
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		flush()
		if out := ping(t, l, big6...); !strings.Contains(out, tooBig6) {
			t.Errorf("closed: still no Packet Too Big:\n%s", out)
		}
		flush()
	})

	t.Run("ptb_blackhole both, over 6in4", func(t *testing.T) {
		st, err := ApplyPMTU(l.Name, PMTU{PTBBlackhole: PMTUBoth}, PMTU{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		before := counters(t, l)
		// Into the tunnel: r1's Packet Too Big names the tunnel's MTU.
		if out := ping(t, l, "-M", "do", "-s", "1400", tunnel6); strings.Contains(out, "too big") {
			t.Errorf("6in4: Packet Too Big reached the client:\n%s", out)
		}
		if out := ping(t, l, big4...); strings.Contains(out, "Frag needed") {
			t.Errorf("IPv4: fragmentation needed reached the client:\n%s", out)
		}
		if d := PMTUDelta(before, counters(t, l)); d[bpf.PTB6Dropped] != 1 || d[bpf.PTB4Dropped] != 1 {
			t.Errorf("counters %s, want one of each dropped", bpf.PMTUCounts(d))
		}
		st.Close()
		flush()
		if out := ping(t, l, "-M", "do", "-s", "1400", tunnel6); !strings.Contains(out, "Packet too big: mtu=1380") {
			t.Errorf("6in4, closed: r1's Packet Too Big does not name the tunnel's MTU:\n%s", out)
		}
		flush()
	})

	t.Run("fragments", func(t *testing.T) {
		// 2000 bytes: fragmented by the client, the echo reply by the
		// server, each once it has learnt the 1400 bytes between them
		// (the first ones taught them, the second crossed).
		for range 2 {
			ping(t, l, "-s", "2000", server6)
			ping(t, l, "-s", "2000", server4)
		}
		for _, c := range []struct {
			set          string
			lost6, lost4 bool
		}{{PMTUIPv6, true, false}, {PMTUIPv4, false, true}, {FragDrop, true, true}} {
			st, err := ApplyPMTU(l.Name, PMTU{Fragments: c.set}, PMTU{})
			if err != nil {
				t.Fatal(err)
			}
			before := counters(t, l)
			out6, out4 := ping(t, l, "-s", "2000", server6), ping(t, l, "-s", "2000", server4)
			d := PMTUDelta(before, counters(t, l))
			st.Close()
			for _, f := range []struct {
				out             string
				lost            bool
				dropped, passed uint64
				family          string
			}{{out6, c.lost6, d[bpf.Frag6Dropped], d[bpf.Frag6Passed], "IPv6"}, {out4, c.lost4, d[bpf.Frag4Dropped], d[bpf.Frag4Passed], "IPv4"}} {
				replied := strings.Contains(f.out, "1 received")
				switch {
				case f.lost && (replied || f.dropped == 0 || f.passed != 0):
					t.Errorf("fragments %s: %s fragments not dropped (%s):\n%s", c.set, f.family, bpf.PMTUCounts(d), f.out)
				case !f.lost && (!replied || f.dropped != 0 || f.passed < 2):
					t.Errorf("fragments %s: %s fragments not passed and counted (%s):\n%s", c.set, f.family, bpf.PMTUCounts(d), f.out)
				}
			}
		}
		flush()
	})

	t.Run("mitigations", func(t *testing.T) {
		st, err := ApplyPMTU(l.Name, PMTU{MTUProbing: ptrInt(1), MSSClamp: true}, PMTU{})
		if errorsIsNoNft(err) {
			t.Skip(err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, err := MTUProbing(l.Name); err != nil || got[Client] != 1 || got[Server] != 1 {
			t.Errorf("tcp_mtu_probing %v, %v; want 1 in client and server", got, err)
		}
		for _, role := range []string{R1, R2} {
			if m := pmtuOf(role, NS(l.Name, role)); len(m) != 1 || !strings.Contains(m[0], MSSClampRule) {
				t.Errorf("%s: %v, want the MSS clamp", role, m)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if got, _ := MTUProbing(l.Name); got[Client] != 0 || got[Server] != 0 {
			t.Errorf("tcp_mtu_probing %v after close, want 0", got)
		}
		for _, role := range []string{R1, R2, Client} {
			if m := pmtuOf(role, NS(l.Name, role)); len(m) != 0 {
				t.Errorf("%s after close: %v", role, m)
			}
		}
	})
}

func errorsIsNoNft(err error) bool {
	return err != nil && strings.Contains(err.Error(), ErrNoNft.Error())
}

// TestLabWidePMTU: the lab's own path MTU settings are in place as it is
// built and shown by lab status; a cell group's tcp_mtu_probing wins for
// its runs and the lab's returns after them; the lab keeps its clamp.
func TestLabWidePMTU(t *testing.T) {
	requireRoot(t)
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skipf("%v", ErrNoNft)
	}
	own := PMTU{PTBBlackhole: PMTUIPv4, MTUProbing: ptrInt(2), MSSClamp: true}
	l := up(t, Config{Name: testName(t) + "w", Links: map[string]Link{"r1-r2": {MTU: 1400}}, PMTU: own})
	if out := ping(t, l, "-M", "do", "-s", "1472", server4); strings.Contains(out, "Frag needed") {
		t.Errorf("the lab's own ptb_blackhole ipv4 let fragmentation needed through:\n%s", out)
	}
	st, err := Inspect(l.Name)
	if err != nil {
		t.Fatal(err)
	}
	var progs, mitigations []string
	for _, h := range st.Hosts {
		for _, p := range h.BPF {
			if p.Program == bpf.PMTUName {
				progs = append(progs, h.Role+" "+p.Describe())
			}
		}
		for _, m := range h.PMTU {
			mitigations = append(mitigations, h.Role+" "+m)
		}
	}
	if len(progs) != 3 || !strings.Contains(strings.Join(progs, "\n"), "path MTU impairment (drops ICMPv4 fragmentation needed): ICMPv6 Packet Too Big 0 passed; ICMPv4 fragmentation needed 1 dropped;") {
		t.Errorf("lab status: impairment programs\n%s", strings.Join(progs, "\n"))
	}
	want := []string{"client net.ipv4.tcp_mtu_probing = 2", "r1 MSS clamp (nftables, forward): " + MSSClampRule, "r2 MSS clamp (nftables, forward): " + MSSClampRule, "server net.ipv4.tcp_mtu_probing = 2"}
	if strings.Join(mitigations, "\n") != strings.Join(want, "\n") {
		t.Errorf("lab status: mitigations\n%s\nwant\n%s", strings.Join(mitigations, "\n"), strings.Join(want, "\n"))
	}
	cell, err := ApplyPMTU(l.Name, PMTU{MTUProbing: ptrInt(1), MSSClamp: true}, own)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := MTUProbing(l.Name); got[Client] != 1 {
		t.Errorf("the group's tcp_mtu_probing: %v", got)
	}
	cell.Close()
	if got, _ := MTUProbing(l.Name); got[Client] != 2 || got[Server] != 2 {
		t.Errorf("after the group: %v, want the lab's 2", got)
	}
	if m := pmtuOf(R1, NS(l.Name, R1)); len(m) != 1 {
		t.Errorf("after the group the lab lost its own clamp: %v", m)
	}
}
