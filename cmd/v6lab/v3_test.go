package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/report"
)

// TestHappyEyeballsV3InTheLab: in the lab, the https server speaks TLS on
// TCP and HTTP/3 on the same UDP port, and the embedded DNS server gives
// it an HTTPS record (alpn h3,h2). dialer: v3 asks HTTPS, AAAA and A and
// wins over QUIC on IPv6 at its first attempt, beside v2 (TCP over IPv6).
// With the client's IPv6 UDP dropped at r1 but DNS (ipv6_udp_loss: 100,
// envoy#40703's case) every transaction still succeeds: the QUIC attempt
// over IPv6 hears nothing and one Connection Attempt Delay later (250 ms)
// QUIC over IPv4 wins, the IPv6 attempt cancelled; the run records say
// what was dropped, and the report says who won with its interval. With
// all of IPv6 blackholed it is the same. (Once the cell has measured
// IPv6's RTT by a TCP handshake, the delay is the 100 ms minimum.) The
// cells with whatif: true have every sample's two families timed, and
// their report a what-if table and plot: with QUIC blocked over IPv6
// (silent, timed up to its horizon) every attempt delay ends on IPv4,
// never the slower family, losing about the delay itself.
func TestHappyEyeballsV3InTheLab(t *testing.T) {
	dir, f, s, out, err := labRun(t, `name: v3
paths: [ipv4, dual]
runs: 2
warmup: 0
pause: 0s
timeout: 5s
cells:
  - {protocol: http, label: v2, conns: [1, 3], tls: true, whatif: true}
  - {protocol: http, label: v3, conns: [1, 3], tls: true, dialer: v3}
  - {protocol: http, label: v3-quic6-blocked, conns: [1, 3], tls: true, dialer: v3, ipv6_udp_loss: 100, whatif: true}
  - {protocol: http, label: v3-ipv6-blackholed, conns: [1], tls: true, dialer: v3, ipv6_loss: 100}
`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, c := range s.Cells {
		if c.Failed != 0 || c.Completed != 2*c.Conns {
			t.Errorf("%s/%s/%d: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
		if c.Path != "dual" {
			continue
		}
		won6, quic, attempts, start := metricOf(c, "ipv6_won"), metricOf(c, "quic_won"), metricOf(c, "he_attempts"), metricOf(c, "he_winner_start_ms")
		switch c.Protocol {
		case "v2":
			if won6 != 1 || c.Winners["ipv6/tcp"] != c.Completed {
				t.Errorf("v2/%d: ipv6_won %v, winners %v", c.Conns, won6, c.Winners)
			}
		case "v3":
			if won6 != 1 || quic != 1 || attempts != 1 || c.Winners["ipv6/quic"] != c.Completed || metricOf(c, "he_https_ms") <= 0 {
				t.Errorf("v3/%d: ipv6_won %v, quic_won %v, attempts %v, winners %v, HTTPS answer at %v ms", c.Conns, won6, quic, attempts, c.Winners, metricOf(c, "he_https_ms"))
			}
		case "v3-quic6-blocked", "v3-ipv6-blackholed":
			// The next endpoint is QUIC over IPv4 (§5.3), one delay in:
			// attempt_delay (250 ms) while the cell knows no RTT of the
			// IPv6 address, the 100 ms minimum once it does (a TCP
			// handshake over IPv6 measured). On a loaded machine a QUIC
			// handshake over IPv4 slower than its own delay lets TCP over
			// IPv6 (not blocked by UDP's loss) win a transaction: never
			// QUIC over IPv6, never before the minimum.
			if c.Winners["ipv6/quic"] != 0 || attempts < 2 || start < 100 || start > 600 || c.Winners["ipv4/quic"]*2 < c.Completed ||
				(c.Protocol == "v3-ipv6-blackholed" && won6 != 0) {
				t.Errorf("%s/%d: ipv6_won %v, quic_won %v, attempts %v, winner started at %v ms (want QUIC over IPv4 mostly, 100 to 250 ms in), winners %v",
					c.Protocol, c.Conns, won6, quic, attempts, start, c.Winners)
			}
		}
	}
	for _, smp := range f.Samples {
		if smp.Path == "dual" && strings.HasPrefix(smp.Cell, "v3-quic6-blocked/") && !strings.Contains(smp.Marker, "v3: quic [2001:db8:6:3::2]:") {
			t.Errorf("sample %s: marker %q, want the IPv6 QUIC attempt first", smp.Cell, smp.Marker)
		}
	}
	for _, r := range f.Runs {
		drop := r.Links["r1 eth-client ingress"]
		switch {
		case r.Protocol == "v3-quic6-blocked" && r.Path == "dual" && (!strings.HasPrefix(drop, "IPv6 UDP loss 100%, DNS spared (UDP ports 53, ") || !strings.Contains(drop, "(the lab's DNS); tc BPF): ") || strings.Contains(drop, ": 0 IPv6")):
			t.Errorf("run %s#%d: %q", r.Cell, r.Run, drop)
		case (r.Protocol == "v2" || r.Protocol == "v3") && drop != "":
			t.Errorf("a healthy run had a loss: %s", drop)
		}
	}
	for _, c := range s.Cells {
		checkWhatIf(t, c)
	}
	txt, err := os.ReadFile(filepath.Join(dir, report.TextFile))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, report.HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"V3-QUIC6-BLOCKED: timer what-if of the dual path", "V2: timer what-if of the dual path"} {
		if !strings.Contains(string(txt), want) {
			t.Errorf("report.txt lacks %q", want)
		}
	}
	if !strings.Contains(string(page), `data-plot="whatif-v3-quic6-blocked-dual-1"`) {
		t.Error("report.html has no what-if plot of v3-quic6-blocked")
	}
	if !strings.Contains(string(txt), "V3-QUIC6-BLOCKED: a dual-stack client (Happy Eyeballs, dialer v3)") || !strings.Contains(string(txt), "ipv4/quic 100% (") {
		t.Errorf("the report does not say who won under QUIC blocked over IPv6:\n%s", txt)
	}
}

// checkWhatIf: a dual cell with whatif: true replayed every sample (both
// families known); under QUIC blocked over IPv6 the rule never ends on
// the slower family (IPv6, silent) and loses about the delay (250 ms at
// 250 ms, the handshake over IPv4 aside).
func checkWhatIf(t *testing.T, c report.Cell) {
	t.Helper()
	whatif := c.Path == "dual" && (c.Protocol == "v2" || c.Protocol == "v3-quic6-blocked")
	switch {
	case !whatif:
		return
	case c.WhatIf == nil || c.WhatIf.N != c.Completed+c.Failed || c.WhatIf.Missing != 0 || len(c.WhatIf.Points) != 51:
		t.Errorf("%s/%d: what-if %+v, want every one of %d samples replayed", c.Protocol, c.Conns, c.WhatIf, c.Completed+c.Failed)
		return
	}
	if c.Protocol != "v3-quic6-blocked" {
		return
	}
	p := c.WhatIf.Points[25]
	if p.DelayMS != 250 || p.Slower != 0 || *p.IPv6Share != 0 || *p.LostMeanMS < 250 || *p.LostMeanMS > 300 {
		t.Errorf("%s/%d at 250 ms: %+v lost %v", c.Protocol, c.Conns, p, *p.LostMeanMS)
	}
}

// TestQUICBlockedOverIPv6SparesTheLabsDNS: ipv6_udp_loss drops the
// client's IPv6 UDP but DNS, and the lab's DNS server answers on a port
// of its own, not 53: on the ipv6 path the lookups still pass (a TCP
// cell completes, its names looked up over IPv6) while HTTP/3 fails as
// QUIC blocked, never as a lookup timed out; the run record names the
// ports spared.
func TestQUICBlockedOverIPv6SparesTheLabsDNS(t *testing.T) {
	_, f, s, out, _ := labRun(t, `name: quic6-blocked
paths: [ipv6]
baseline: ipv6
runs: 1
warmup: 0
pause: 0s
timeout: 5s
cells:
  - {protocol: http, label: h2, conns: [1], http_version: 2, ipv6_udp_loss: 100}
  - {protocol: http, label: h3, conns: [1], http_version: 3, ipv6_udp_loss: 100}
`)
	if len(s.Cells) != 2 {
		t.Fatalf("%d cells\n%s", len(s.Cells), out)
	}
	for _, c := range s.Cells {
		switch c.Protocol {
		case "h2":
			if c.Completed != 1 || c.Failed != 0 {
				t.Errorf("h2 over ipv6 with its UDP dropped but DNS: %d completed, %d failed (%s)", c.Completed, c.Failed, c.FirstError)
			}
		case "h3":
			if c.Completed != 0 || !strings.Contains(c.FirstError, "no QUIC answer over ipv6") {
				t.Errorf("h3 over ipv6 with its UDP dropped: %d completed, first error %q", c.Completed, c.FirstError)
			}
		}
	}
	spared := 0
	for _, r := range f.Runs {
		if l := r.Links["r1 eth-client ingress"]; strings.Contains(l, "DNS spared (UDP ports 53, ") && strings.Contains(l, "(the lab's DNS)") {
			spared++
		}
	}
	if spared != len(f.Runs) || spared == 0 {
		t.Errorf("%d of %d run records name the lab's DNS port as spared", spared, len(f.Runs))
	}
}

// TestV3CellAloneInTheLab (trial8 F10, F11, F4): a file whose only https
// cell races with dialer v3 (trial8's v3x.yaml) runs: the server its
// pinned ipv4 path needs is the one its dual path races to, and it is
// started. The unlabelled cell is named v3, not h3; its ipv4 row speaks
// HTTP/1.1 over TLS, its dual row what won (h3 here), and the dual table
// says so. With -q nothing but the results line reaches the terminal:
// not net/http's log of the losing attempts it resets.
func TestV3CellAloneInTheLab(t *testing.T) {
	dir, f, s, out, err := labRun(t, `name: v3x
where: lab
paths: [ipv4, dual]
runs: 3
warmup: 1
timeout: 10s
cells:
  - {protocol: http, conns: [1], tls: true, dialer: v3}
`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if strings.Contains(out, "http2:") || strings.Count(strings.TrimSpace(out), "\n") > 0 {
		t.Errorf("with -q the run printed more than its results line:\n%s", out)
	}
	spoke := map[string]map[string]int{}
	for _, c := range s.Cells {
		if c.Protocol != "v3" || c.Failed != 0 || c.Completed != 2 {
			t.Errorf("%s/%s/%d: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
		spoke[c.Path] = c.Negotiated
	}
	if spoke["ipv4"]["http/1.1"] != 2 || spoke["dual"]["h3"] != 2 {
		t.Errorf("spoke %v, want HTTP/1.1 on ipv4, h3 on dual", spoke)
	}
	// The pinned row goes over TCP to the HTTP/3 server's port: the wire
	// check counts that port's TCP there (a handshake, TLS, a page and 3
	// objects: 30-odd packets), not its UDP alone (the lookup's 2).
	for _, r := range f.Runs {
		if r.Path == "ipv4" && (r.Wire == nil || r.Wire.IPv4 < 15) {
			t.Errorf("run %s#%d: wire %+v, want the TCP connection's packets counted", r.Cell, r.Run, r.Wire)
		}
	}
	txt, err := os.ReadFile(filepath.Join(dir, report.TextFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(txt), "V3: increase over ipv4") ||
		!strings.Contains(string(txt), "dual at 1 spoke h3, ipv4 (the baseline) http/1.1: the difference is the versions' as well as the path's") {
		t.Errorf("the dual table does not say the rows spoke different versions:\n%s", txt)
	}
}
