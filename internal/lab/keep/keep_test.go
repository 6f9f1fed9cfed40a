package keep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/lab"
	"v6lab/internal/lab/bpf"
	"v6lab/internal/testutil"
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
		"lab \"t\": tunnel bpf, kept by process 42\n  configured: links tbf 100.0 Mbit/s; loss 1% of every packet on r1-r2 (r1's egress); path MTU impairment drops ICMPv6 Packet Too Big; tunnel bpf, MTU 1480; nat64 stateless (tc BPF translator at r1)\n",
		"path MTU impairment (drops ICMPv6 Packet Too Big): ICMPv6 Packet Too Big 3 dropped; ICMPv4 fragmentation needed 5 passed; IPv6 fragments 7 passed; IPv4 fragments 0 passed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// TestStatusSaysTheLabServesSites (trial): a lab up with --sites says so,
// and how to survey it; one without says nothing of sites.
func TestStatusSaysTheLabServesSites(t *testing.T) {
	st := testStatus()
	var b bytes.Buffer
	WriteStatus(&b, st)
	if strings.Contains(b.String(), "sites") {
		t.Errorf("a lab without sites:\n%s", b.String())
	}
	st.Sites = "/srv/lab.sites"
	b.Reset()
	WriteStatus(&b, st)
	if want := "  serves the sites of /srv/lab.sites (survey them: v6lab survey --lab t /srv/lab.sites)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, b.String())
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

// writeDeadRecord writes an owner record of lab name whose owner process
// is gone (a pid beyond pid_max stands for it).
func writeDeadRecord(t *testing.T, name string, kept bool) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "pid": 1 << 30, "start": 1, "kept": kept, "namespaces": []string{}})
	if err := os.WriteFile(filepath.Join(lab.StateDir, name+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLabUpRemovesOnlyItsOwnStaleLab (review): lab up removed every lab
// on the machine whose owner was gone, another user's too. Now it
// removes only a stale lab of its own name, says so, and names the
// others; lab down --orphans removes them, each named.
func TestLabUpRemovesOnlyItsOwnStaleLab(t *testing.T) {
	testutil.RequireRoot(t, "lab up's checks run as root")
	old := lab.StateDir
	lab.StateDir = t.TempDir()
	t.Cleanup(func() { lab.StateDir = old })
	mine, other, kept := fmt.Sprintf("ku%d", os.Getpid()%100000), fmt.Sprintf("ko%d", os.Getpid()%100000), fmt.Sprintf("kk%d", os.Getpid()%100000)
	writeDeadRecord(t, mine, false)
	writeDeadRecord(t, other, false)
	writeDeadRecord(t, kept, true)
	var b bytes.Buffer
	if err := CanKeep(mine, &b, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("v6lab: removed lab %q left by process %d, which is gone\n", mine, 1<<30),
		fmt.Sprintf("left by killed processes and not removed: lab %s (", other),
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("lab up says no %q:\n%s", want, b.String())
		}
	}
	if _, err := lab.ReadRecord(mine); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its own stale lab is left: %v", err)
	}
	for _, n := range []string{other, kept} {
		if _, err := lab.ReadRecord(n); err != nil {
			t.Errorf("lab up removed lab %s: %v", n, err)
		}
	}
	b.Reset()
	if err := RemoveOrphans(&b, false); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("lab %q is down (its owner process was gone)\n", other); b.String() != want {
		t.Errorf("lab down --orphans says %q, want %q", b.String(), want)
	}
	if _, err := lab.ReadRecord(kept); err != nil {
		t.Errorf("lab down --orphans removed a kept lab: %v", err)
	}
}

// TestAnOrphanDoesNotClaimToServeSites (trial4 F8): an orphan's status
// said it "serves the sites" and told to survey it; its keeper, which
// served them, is gone.
func TestAnOrphanDoesNotClaimToServeSites(t *testing.T) {
	st := testStatus()
	st.Owner, st.Tunnel, st.Sites = 0, "missing", "/srv/lab.sites"
	var b bytes.Buffer
	writeStatus(&b, st, &lab.Orphan{Name: "t", PID: 42})
	out := b.String()
	if strings.Contains(out, "serves the sites") || strings.Contains(out, "survey --lab") || !strings.Contains(out, "does not serve the sites of /srv/lab.sites now") {
		t.Errorf("an orphan's status:\n%s", out)
	}
}
