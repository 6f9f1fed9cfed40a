package trial

import (
	"strings"
	"testing"

	"v6lab/internal/gen/transport"
	"v6lab/internal/result"
)

// TestTheTrialsCongestionIsNoted: a trial that asks for a congestion
// control says which in the result's notes (the host's default is
// noted beside it); one that asks for none adds nothing.
func TestTheTrialsCongestionIsNoted(t *testing.T) {
	o := &Trial{Test: &transport.Options{Test: "tcp", Congestion: "cubic"}}
	if n := o.Notes(nil); len(n) != 1 || !strings.Contains(n[0], "cubic") {
		t.Errorf("notes %q", n)
	}
	o.Test.Congestion = ""
	if n := o.Notes(nil); len(n) != 0 {
		t.Errorf("notes %q", n)
	}
}

// TestUDPDefaultDatagramIsWholeOnEveryPath (trial 8): a udp trial's
// default payload is one no path fragments (1232: IPv6's minimum MTU
// less its headers), so each path is compared with the same whole
// datagrams; 1460 was two IPv6 fragments and one IPv4 packet. The notes
// say the size, and that a bigger one given can be fragmented.
func TestUDPDefaultDatagramIsWholeOnEveryPath(t *testing.T) {
	o := &UDPOptions{Trial: Trial{kind: "udp"}}
	if err := o.Check(result.Loopback, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if o.Test.Size != 1232 {
		t.Fatalf("default size %d, want 1232", o.Test.Size)
	}
	for _, c := range []struct {
		mtu  int
		ipv6 bool
	}{{1500, false}, {1500, true}, {1480, true}, {1280, true}} { // IPv4, IPv6, a 6in4 tunnel or nat64 route, the minimum
		if f := transport.Fragments(o.Test.Size, c.mtu, c.ipv6); f != 1 {
			t.Errorf("MTU %d (IPv6 %v): %d fragments", c.mtu, c.ipv6, f)
		}
	}
	want := "udp trials: datagrams of 1232 bytes of payload, the largest IPv6's minimum MTU (1280) carries whole: no path of MTU 1280 or more (every IPv6 path's) fragments them"
	if n := o.Notes(nil); len(n) != 1 || n[0] != want {
		t.Errorf("notes %q, want %q", n, want)
	}
	o = &UDPOptions{Trial: Trial{kind: "udp"}, Size: DatagramSize{Bytes: 1460}}
	if err := o.Check(result.Loopback, func(n string) bool { return n == "size" }); err != nil {
		t.Fatal(err)
	}
	if n := o.Notes(nil); len(n) != 1 || !strings.Contains(n[0], "1460 bytes of payload: over 1232, a path of smaller MTU fragments them") {
		t.Errorf("--size 1460: notes %q", n)
	}
}
