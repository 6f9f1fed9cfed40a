package inlab

import (
	"strings"
	"testing"
	"time"

	"v6lab/internal/lab"
	"v6lab/internal/proto"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
)

// TestWirePortsCountEveryPortForDataOnTheirOwnPorts: the wire check counts
// a server's port, or every port for FTP and transport tests (their data
// flows on ports chosen per transaction), real servers included.
func TestWirePortsCountEveryPortForDataOnTheirOwnPorts(t *testing.T) {
	eps := proto.Endpoints{}
	for key, port := range map[string]int{"http": 8080, "dns": 5353, "ftp": 2121, "transport": 5301, "real/ftp": 21, "real/smtp": 25} {
		eps.Set(key, path.IPv4, proto.Endpoint{Host: "h", Port: port})
		eps.Set(key, path.IPv6, proto.Endpoint{Host: "h", Port: port})
	}
	got := wirePorts(eps)
	want := map[string]uint16{"http": 8080, "dns": 5353, "ftp": 0, "transport": 0, "real/ftp": 0, "real/smtp": 25}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: port %d, want %d", k, got[k], v)
		}
	}
}

// TestOwnRatesRefuseEmulatedLinks: link_rate may reshape rate-only links,
// never a link whose delay or loss it would drop.
func TestOwnRatesRefuseEmulatedLinks(t *testing.T) {
	rates, err := ownShaping(&experiment.Experiment{}, lab.Config{Shaping: lab.Shaping{Rate: 100e6, QueueLimit: 64 << 10}})
	if err != nil || len(rates) != len(lab.LinkNames) || rates["r1-r2"].Rate != 100e6 || rates["r1-r2"].QueueLimit != 64<<10 {
		t.Fatalf("%v %v", rates, err)
	}
	_, err = ownShaping(&experiment.Experiment{}, lab.Config{Shaping: lab.Shaping{Rate: 100e6, Delay: time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "emulates delay or loss") {
		t.Errorf("a delayed link: %v", err)
	}
}
