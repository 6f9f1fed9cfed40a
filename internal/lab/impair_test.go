package lab

import (
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rttMs pings addr from the lab's client three times and returns the mean
// round trip in milliseconds.
func rttMs(t *testing.T, l *Lab, addr string) float64 {
	t.Helper()
	out, err := exec.Command("ip", "netns", "exec", NS(l.Name, Client), "ping", "-q", "-c", "3", "-i", "0.2", "-W", "2", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("ping %s: %v: %s", addr, err, out)
	}
	m := regexp.MustCompile(`= [0-9.]+/([0-9.]+)/`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("ping %s: no round trip in %s", addr, out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestIPv6Delay: where the kernel has netem, IPv6 to the server takes the
// delay more per round trip and IPv4 does not, until the delay is closed;
// without netem, ipv6_delay says so and leaves r1's link as it was.
func TestIPv6Delay(t *testing.T) {
	l := up(t, Config{Name: testName(t) + "d"})
	const v4, v6 = "203.0.113.2", "2001:db8:6:3::2"
	rootQdisc := func() string {
		out, _ := exec.Command("ip", "netns", "exec", NS(l.Name, R1), "tc", "qdisc", "show", "dev", links[0].bIf, "root").CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	before := rootQdisc()
	dl, err := DelayIPv6(l.Name, 30*time.Millisecond)
	if errors.Is(err, ErrNoNetem) {
		if !strings.Contains(err.Error(), "ipv6_delay") || !strings.Contains(err.Error(), "netem") {
			t.Errorf("error does not say what is missing: %v", err)
		}
		if now := rootQdisc(); now != before {
			t.Errorf("r1's qdisc was %q, is %q after the refused delay", before, now)
		}
		t.Logf("this kernel has no netem: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := rttMs(t, l, v6); got < 30 {
		t.Errorf("IPv6 round trip %.2f ms with a 30 ms delay", got)
	}
	if got := rttMs(t, l, v4); got > 10 {
		t.Errorf("IPv4 round trip %.2f ms: the delay is not IPv6's alone", got)
	}
	if err := dl.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rttMs(t, l, v6); got > 10 {
		t.Errorf("IPv6 round trip %.2f ms after the delay was closed", got)
	}
}
