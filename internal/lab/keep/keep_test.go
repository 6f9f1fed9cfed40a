package keep

import (
	"bytes"
	"strings"
	"testing"

	"v6lab/internal/lab"
	"v6lab/internal/lab/bpf"
)

// testStatus is a lab as Inspect reads it: links at 100 Mbit/s, 1% loss
// and an ICMPv6 Packet Too Big black hole at r1, the bpf tunnel at 1480.
func testStatus() *lab.Status {
	pmtu := make([]uint64, bpf.NumPMTUCounters)
	pmtu[bpf.PTB6Dropped], pmtu[bpf.PTB4Passed], pmtu[bpf.Frag6Passed] = 3, 5, 7
	return &lab.Status{Name: "t", Tunnel: lab.TunnelBPF, Owner: 42, Hosts: []lab.HostStatus{
		{Role: lab.Client, Namespace: "v6lab-t-client", Ifaces: []lab.Iface{{Name: "eth-r1", Type: "veth", MTU: 1500, Up: true, Qdisc: "tbf 100.0 Mbit/s"}}},
		{Role: lab.R1, Namespace: "v6lab-t-r1",
			Ifaces: []lab.Iface{{Name: "eth-client", Type: "veth", MTU: 1500, Up: true, Qdisc: "tbf 100.0 Mbit/s"}},
			Routes: []lab.Route{{Dst: "2001:db8:46:3::/64", Via: "2001:db8:6:2::2", Dev: "eth-r2", MTU: 1480}},
			BPF: []lab.BPFProgram{
				{Iface: "eth-r2", Counts: bpf.Counts{Program: bpf.LossName, Egress: true, Counters: []uint64{1, 99}, Setting: 10000, HasSetting: true}},
				{Iface: "eth-client", Counts: bpf.Counts{Program: bpf.PMTUName, Egress: true, Counters: pmtu, Setting: 1, HasSetting: true}},
				{Iface: "eth-client", Counts: bpf.Counts{Program: bpf.Nat64Name, Counters: make([]uint64, 16)}},
			}},
	}}
}

// TestStatusSaysWhatIsConfiguredAndLabelsEveryCount (trial 10): a line at
// the top says the lab's rate, loss, path MTU impairment, tunnel and MTU
// and nat64 mode; the path MTU line says dropped only of the kinds it
// drops, and labels every number.
func TestStatusSaysWhatIsConfiguredAndLabelsEveryCount(t *testing.T) {
	var b bytes.Buffer
	WriteStatus(&b, testStatus())
	out := b.String()
	for _, want := range []string{
		"lab \"t\": tunnel bpf, kept by process 42\n  configured: links tbf 100.0 Mbit/s; loss 1% of every packet; path MTU impairment drops ICMPv6 Packet Too Big; tunnel bpf, MTU 1480; nat64 stateless (tc BPF translator at r1)\n",
		"path MTU impairment (drops ICMPv6 Packet Too Big): ICMPv6 Packet Too Big 3 dropped; ICMPv4 fragmentation needed 5 passed; IPv6 fragments 7 passed; IPv4 fragments 0 passed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// TestAnOrphansStatusIsShownOnce (trial 10): an orphan that still has its
// namespaces is one block: the orphan line, then its hosts; its name was
// followed by a second block that named it again.
func TestAnOrphansStatusIsShownOnce(t *testing.T) {
	st := testStatus()
	st.Owner, st.Tunnel = 0, "missing"
	var b bytes.Buffer
	writeStatus(&b, st, &lab.Orphan{Name: "t", PID: 42, Namespaces: []string{"v6lab-t-client", "v6lab-t-r1"}})
	out := b.String()
	if n := strings.Count(out, `lab "t"`); n != 1 || !strings.HasPrefix(out, `lab "t": orphan (owner process 42 is gone)`) {
		t.Errorf("the lab is named %d times:\n%s", n, out)
	}
	if strings.Contains(out, "namespaces:") || strings.Count(out, "v6lab-t-r1") != 1 {
		t.Errorf("namespaces listed twice:\n%s", out)
	}
}
