package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"v6lab/internal/input/specfile/specfiletest"
	"v6lab/internal/sock/path"
)

// Each invalid-*.yaml names on its first line the exact error it must give.
func TestInvalidExperimentsNameFileLineAndField(t *testing.T) {
	specfiletest.Invalid(t, "testdata/invalid-*.yaml", 25, func(name string, data []byte) error {
		_, err := Parse(name, data)
		return err
	})
}

func TestFullExperimentFile(t *testing.T) {
	e, err := Load("testdata/valid-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "full" || e.Where != "lab" || e.Topology != "testdata/topology.yaml" || e.Order != OrderShuffled || e.Seed != 42 || len(e.Groups) != 3 ||
		e.Spin == nil || time.Duration(*e.Spin) != time.Millisecond {
		t.Fatalf("experiment %+v", e)
	}
	http, big, dns := e.Groups[0], e.Groups[1], e.Groups[2]
	if http.CellName() != "http" || len(http.Paths) != 3 || http.Runs != 11 || http.Warmup != 1 || time.Duration(http.Timeout) != 30*time.Second {
		t.Errorf("http cell %+v", http)
	}
	if big.CellName() != "bigpage" || opt(&big, "objects") != "20" || big.Runs != 5 {
		t.Errorf("bigpage cell %+v", big)
	}
	if opt(&dns, "transport") != "tcp" || len(dns.Paths) != 2 || dns.Paths[1] != path.SixIn4 || time.Duration(dns.Timeout) != 5*time.Second ||
		dns.Pause != 0 || time.Duration(dns.Duration) != 2*time.Second {
		t.Errorf("dns cell %+v", dns)
	}
	if n := len(e.Plan()); n != 3*3*11+1*3*5+2*2*11 {
		t.Errorf("plan has %d steps", n)
	}
	h, err := Load("testdata/valid-hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Groups[0].Paths) != 2 || opt(&h.Groups[0], "url") == "" || len(recorded(&h.Groups[1])["dns_servers"].([]any)) != 1 {
		t.Errorf("hosts experiment %+v", h)
	}
	if _, err := Load("testdata/nope.yaml"); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestTrialWarmupReachesItsOptionsAndTimeout(t *testing.T) {
	e, err := Parse("omit.yaml", []byte("name: x\ncells:\n  - protocol: tcp\n    time: 20s\n    omit: 5s\n  - protocol: udp\n    omit: 1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	tcp, udp := e.Groups[0], e.Groups[1]
	if trialOf(&tcp).Omit != 5*time.Second || trialOf(&udp).Omit != time.Second || trialOf(&udp).Duration != 10*time.Second {
		t.Fatalf("options %+v, %+v", trialOf(&tcp), trialOf(&udp))
	}
	// The timeout covers the warm-up too.
	if time.Duration(tcp.Timeout) != 55*time.Second {
		t.Errorf("timeout %v, want 5s + 20s + 30s", time.Duration(tcp.Timeout))
	}
	// Scaling shortens the measured time, not the warm-up past slow start.
	if err := e.Scale(0.1); err != nil || trialOf(&e.Groups[0]).Omit != 5*time.Second || trialOf(&e.Groups[0]).Duration != 2*time.Second ||
		time.Duration(e.Groups[0].Timeout) != 37*time.Second {
		t.Errorf("scaled: %v %+v timeout %v", err, trialOf(&e.Groups[0]), time.Duration(e.Groups[0].Timeout))
	}
}

// FuzzParse reads arbitrary experiment files: any input gives an
// experiment that validates, or an error naming the file; never a panic,
// and never an error quoting more than a short excerpt of the input.
func FuzzParse(f *testing.F) {
	builtins, _ := filepath.Glob("../../experiments/*.yaml")
	for _, name := range builtins {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: x\ncells: [{protocol: http, conns: [1, 1]}]\n"))
	f.Add([]byte("name: x\nruns: 3\nwarmup: 5\ncells: [{protocol: tcp, time: 1s, reverse: true}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Parse("f.yaml", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.yaml") && !strings.HasPrefix(err.Error(), "experiment: ") {
				t.Fatalf("error without the file: %v", err)
			}
			if len(err.Error()) > 2000 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
			return
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("a parsed experiment does not validate: %v", err)
		}
	})
}

func TestCongestionIsALabSetting(t *testing.T) {
	e, err := Parse("c.yaml", []byte("name: c\nwhere: lab\ncongestion: reno\ncells: [{protocol: http, conns: [1]}]\n"))
	if err != nil || e.Congestion != "reno" {
		t.Fatalf("%v %+v", err, e)
	}
	parseErrorsIn(t, "c.yaml", map[string]string{
		"name: c\nwhere: loopback\ncongestion: reno\ncells: [{protocol: http, conns: [1]}]\n": "c.yaml:3: congestion: reno sets the TCP congestion control of the lab's hosts, but where is loopback: no lab is built",
		"name: c\nwhere: loopback\ncells: [{protocol: http, conns: [1], link_rate: 10M}]\n":   "c.yaml:3: cells[0].link_rate: 10M reshapes the lab's links, but where is loopback: no lab is built",
		"name: c\ncongestion: Reno!\ncells: [{protocol: http, conns: [1]}]\n":                 `c.yaml:2: congestion: "Reno!" is not a congestion control name`,
	})
}

func TestDNSModeIsChecked(t *testing.T) {
	e, err := Parse("d.yaml", []byte("name: d\ncells: [{protocol: dns, mode: load, conns: [10]}]\n"))
	if err != nil || opt(&e.Groups[0], "mode") != "load" {
		t.Fatalf("%v", err)
	}
	parseErrorsIn(t, "d.yaml", map[string]string{
		"name: d\ncells: [{protocol: dns, mode: fast, conns: [1]}]\n":                 `d.yaml:2: cells[0].mode: "fast": want stub or load`,
		"name: d\ncells: [{protocol: dns, mode: load, transport: tcp, conns: [1]}]\n": "cells[0].mode: the load engine sends over UDP",
	})
}

func TestHTTPURLMustBeHTTP(t *testing.T) {
	for _, u := range []string{"file:///etc/passwd", "gopher://h/", "http://", "/relative"} {
		_, err := Parse("u.yaml", []byte("name: u\nwhere: hosts\ncells:\n  - {protocol: http, url: \""+u+"\", conns: [1]}\n"))
		if err == nil || !strings.Contains(err.Error(), "u.yaml:4: cells[0].url: ") || !strings.Contains(err.Error(), "want http:// or https:// and a host") {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, err := Parse("u.yaml", []byte("name: u\nwhere: hosts\ncells:\n  - {protocol: http, url: \"https://www.example.org/\", conns: [1]}\n")); err != nil {
		t.Errorf("an https URL: %v", err)
	}
}

// TestUnknownPathNamesEveryPath: a file's unknown path, in paths or as
// the baseline, is refused with the list of every path there is (the
// path table's, dual included).
func TestUnknownPathNamesEveryPath(t *testing.T) {
	parseErrorsIn(t, "p.yaml", map[string]string{
		"name: p\npaths: [ipv4, ipv7]\ncells: [{protocol: http, conns: [1]}]\n": `p.yaml:2: paths[1]: "ipv7" is not a path (ipv4, ipv6, 6in4, nat64, 464xlat, dslite or dual)`,
		"name: p\nbaseline: v4\ncells: [{protocol: http, conns: [1]}]\n":        `p.yaml:2: baseline: "v4" is not a path (ipv4, ipv6, 6in4, nat64, 464xlat, dslite or dual)`,
	})
}

// TestSizeTakesUnits: size (an SMTP message's, a UDP trial's datagrams')
// takes bytes as a number or with a unit, as file, bytes and window do;
// anything else is refused at its line.
func TestSizeTakesUnits(t *testing.T) {
	e, err := Parse("s.yaml", []byte("name: s\nwhere: lab\ncells:\n  - {protocol: smtp, size: 100K, conns: [1]}\n  - {protocol: udp, size: 1K, conns: [1]}\n  - {protocol: smtp, label: plain, size: 4096, conns: [1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if opt(&e.Groups[0], "size") != "102400" || trialOf(&e.Groups[1]).Size != 1<<10 || opt(&e.Groups[2], "size") != "4096" {
		t.Errorf("sizes %s, %d, %s", opt(&e.Groups[0], "size"), trialOf(&e.Groups[1]).Size, opt(&e.Groups[2], "size"))
	}
	parseErrorsIn(t, "s.yaml", map[string]string{
		"name: s\ncells:\n  - {protocol: smtp, size: 10Q, conns: [1]}\n": `s.yaml:3: cells[0].size: "10Q": want bytes, such as 4096 or 100K`,
		"name: s\ncells:\n  - {protocol: smtp, size: 1G, conns: [1]}\n":  `s.yaml:3: cells[0].size: 1073741824: want 0 to`,
	})
}

// TestDNSExpect: a dns cell's expect is recorded, and an expectation its
// servers cannot meet is refused with file, line and field.
func TestDNSExpect(t *testing.T) {
	e, err := Parse("t.yaml", []byte("name: t\ncells:\n  - {protocol: dns, query: nosuch.v6lab.test, expect: nxdomain, conns: [1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := opt(&e.Groups[0], "expect"); got != "nxdomain" {
		t.Errorf("expect %q", got)
	}
	parseErrors(t, map[string]string{
		"name: t\ncells:\n  - {protocol: dns, expect: nxdomain, conns: [1]}\n":                           "t.yaml:3: cells[0].expect: nxdomain: v6lab's DNS servers (lab and loopback) answer www.v6lab.test; give a query they do not know",
		"name: t\ncells:\n  - {protocol: dns, query: WWW.v6lab.test., expect: nxdomain, conns: [1]}\n":   "t.yaml:3: cells[0].expect: nxdomain: v6lab's DNS servers (lab and loopback) answer www.v6lab.test",
		"name: t\ncells:\n  - {protocol: dns, query: nosuch.v6lab.test, expect: nodata, conns: [1]}\n":   "t.yaml:3: cells[0].expect: nodata: v6lab's DNS servers (lab and loopback) do not know nosuch.v6lab.test, so it gets NXDOMAIN",
		"name: t\ncells:\n  - {protocol: dns, expect: nodata, paths: [ipv4, ipv6], conns: [1]}\n":        "t.yaml:3: cells[0].expect: nodata over ipv4: its query asks for the A record, which www.v6lab.test has (v4only.v6lab.test has an A record alone",
		"name: t\ncells:\n  - {protocol: dns, query: v4only.v6lab.test, expect: nxdomain, conns: [1]}\n": "t.yaml:3: cells[0].expect: nxdomain: v6lab's DNS servers (lab and loopback) answer v4only.v6lab.test;",
		// The IPv4-only name's AAAA is empty, its A is not.
		"name: t\ncells:\n  - {protocol: dns, query: v4only.v6lab.test, expect: nodata, conns: [1]}\n":                                                "t.yaml:3: cells[0].expect: nodata over ipv4: its query asks for the A record, which v4only.v6lab.test has",
		"name: t\nbaseline: ipv6\ncells:\n  - {protocol: dns, query: v4only.v6lab.test, type: a, expect: nodata, paths: [ipv6, nat64], conns: [1]}\n": "t.yaml:4: cells[0].expect: nodata over ipv6: its query asks for the A record",
		"name: t\ncells:\n  - {protocol: dns, type: nosuch, conns: [1]}\n":                                                                            `t.yaml:3: cells[0].type: unknown record type "nosuch"`,
		"name: t\ncells:\n  - {protocol: dns, expect: refused, conns: [1]}\n":                                                                         `t.yaml:3: cells[0].expect: "refused": want answer, nodata, nxdomain or any`,
		"name: t\ncells:\n  - {protocol: http, expect: nxdomain, conns: [1]}\n":                                                                       "t.yaml:3: cells[0].expect: does not apply to protocol http",
	})
	// A type neither name has is an empty answer for either.
	if _, err := Parse("t.yaml", []byte("name: t\ncells:\n  - {protocol: dns, type: MX, expect: nodata, conns: [1]}\n")); err != nil {
		t.Errorf("nodata for www's MX: %v", err)
	}
	// Over every path when the type is AAAA (recorded as the type's name).
	e, err = Parse("t.yaml", []byte("name: t\ncells:\n  - {protocol: dns, query: v4only.v6lab.test, type: aaaa, expect: nodata, paths: [ipv4, ipv6, 6in4, nat64], conns: [1]}\n"))
	if err != nil || opt(&e.Groups[0], "expect") != "nodata" || opt(&e.Groups[0], "type") != "AAAA" {
		t.Errorf("nodata for the IPv4-only name's AAAA: %v", err)
	}
	e, err = Parse("t.yaml", []byte("name: t\nbaseline: ipv6\ncells:\n  - {protocol: dns, query: v4only.v6lab.test, expect: nodata, paths: [ipv6, 6in4, nat64], type: path, conns: [1]}\n"))
	if err != nil || opt(&e.Groups[0], "type") != "" {
		t.Errorf("nodata over the IPv6 paths, type path: %v", err)
	}
	// With where: hosts the servers are the user's: any expectation goes.
	if _, err := Parse("t.yaml", []byte("name: t\nwhere: hosts\ncells:\n  - {protocol: dns, query: v4only.example.org, dns_servers: [192.0.2.53], expect: nodata, conns: [1]}\n")); err != nil {
		t.Errorf("hosts, nodata: %v", err)
	}
}

// TestTLSCellsUseTheEmbeddedHTTPSServer: tls picks the https server (its
// own key, so its own port on the wire) and names the group after it;
// where it cannot work it is refused with file, line and field.
func TestTLSCellsUseTheEmbeddedHTTPSServer(t *testing.T) {
	e, err := Parse("t.yaml", []byte("name: t\ncells:\n  - {protocol: http, conns: [1]}\n  - {protocol: http, tls: true, conns: [1]}\n  - {protocol: http, label: big, tls: true, file: 1M, conns: [1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range e.Groups {
		got = append(got, c.CellName()+":"+c.WireKey())
	}
	if want := []string{"http:http", "https:https", "big:https"}; !slices.Equal(got, want) {
		t.Errorf("cells %v, want %v", got, want)
	}
	if s := e.EmbeddedServers(); !slices.Equal(s, []string{"http", "https"}) {
		t.Errorf("embedded servers %v", s)
	}
	parseErrors(t, map[string]string{
		"name: t\nwhere: hosts\ncells:\n  - {protocol: http, url: \"https://www.example.org/\", tls: true, conns: [1]}\n":                    "t.yaml:4: cells[0].tls: asks for v6lab's own https server; with where: hosts the url's scheme says https",
		"name: t\ncells:\n  - {protocol: http, tls: true, file: 1M, client: curl, conns: [1]}\n":                                             "t.yaml:3: cells[0].tls: is v6lab's own client's: curl cannot pin",
		"name: t\ncells:\n  - {protocol: http, http_version: 2, tls: false, server: real, conns: [1]}\n":                                     "t.yaml:3: cells[0].server: http_version 2 in the clear (h2c): the lab's nginx speaks HTTP/2 over TLS",
		"name: t\nwhere: lab\ncells:\n  - {protocol: http, tls: true, file: 320K, server_capture: true, conns: [1]}\n":                       "t.yaml:4: cells[0].server_capture: the capture's request is the client's first data, which over tls is its ClientHello",
		"name: t\ncells:\n  - {protocol: dns, tls: true, conns: [1]}\n":                                                                      "t.yaml:3: cells[0].tls: does not apply to protocol dns",
		"name: t\ncells:\n  - {protocol: http, tls_resume: true, conns: [1]}\n":                                                              "t.yaml:3: cells[0].tls_resume: resumes TLS sessions: give tls too",
		"name: t\nwhere: hosts\ncells:\n  - {protocol: http, url: \"http://www.example.org/\", tls_resume: true, conns: [1]}\n":              "t.yaml:4: cells[0].tls_resume: resumes TLS sessions, but the url is not https://",
		"name: t\ncells:\n  - {protocol: http, tls_groups: pq, conns: [1]}\n":                                                                "t.yaml:3: cells[0].tls_groups: chooses the TLS key exchange: give tls too",
		"name: t\ncells:\n  - {protocol: http, tls: true, tls_groups: quantum, conns: [1]}\n":                                                `t.yaml:3: cells[0].tls_groups: http: unknown TLS groups "quantum" (want classic or pq)`,
		"name: t\nwhere: hosts\ncells:\n  - {protocol: http, url: \"http://www.example.org/\", tls_groups: pq, conns: [1]}\n":                "t.yaml:4: cells[0].tls_groups: chooses the TLS key exchange, but the url is not https://",
		"name: t\nwhere: hosts\ncells:\n  - {protocol: http, url: \"https://www.example.org/\", client: curl, tls_groups: pq, conns: [1]}\n": "t.yaml:4: cells[0].tls_groups: is v6lab's own client's: curl offers its own key exchange",
	})
}

func TestTLSPinIsForNamedServers(t *testing.T) {
	pin := strings.Repeat("AB:", 31) + "AB"
	e, err := Parse("t.yaml", []byte("name: t\nwhere: hosts\ncells:\n  - {protocol: http, url: \"https://www.example.org/\", tls_pin: \""+pin+"\", conns: [1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := opt(&e.Groups[0], "tls_pin"); got != strings.Repeat("ab", 32) {
		t.Errorf("pin %q", got)
	}
	parseErrors(t, map[string]string{
		"name: t\ncells:\n  - {protocol: http, tls_pin: \"" + pin + "\", conns: [1]}\n":                                               "t.yaml:3: cells[0].tls_pin: pins a real server's certificate (where: hosts)",
		"name: t\nwhere: hosts\ncells:\n  - {protocol: smtp, url: \"smtp://mx.example.org\", tls_pin: \"" + pin + "\", conns: [1]}\n": "t.yaml:4: cells[0].tls_pin: pins the certificate of STARTTLS: give starttls too",
		"name: t\nwhere: hosts\ncells:\n  - {protocol: http, url: \"https://www.example.org/\", tls_pin: 12ab, conns: [1]}\n":         `t.yaml:4: cells[0].tls_pin: "12ab": want a certificate's SHA-256`,
		"name: t\ncells:\n  - {protocol: dns, tls_pin: \"" + pin + "\", conns: [1]}\n":                                                "t.yaml:3: cells[0].tls_pin: does not apply to protocol dns",
	})
}

// parseErrors parses each file (named t.yaml) and wants its error to hold
// the text given for it.
func parseErrors(t *testing.T, cases map[string]string) {
	t.Helper()
	parseErrorsIn(t, "t.yaml", cases)
}

// parseErrorsIn is parseErrors for a file of another name.
func parseErrorsIn(t *testing.T, name string, cases map[string]string) {
	t.Helper()
	for data, want := range cases {
		if _, err := Parse(name, []byte(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", data, err, want)
		}
	}
}

// TestLineValuesRefuseControlCharacters: a file's value that goes on a
// protocol's command line (an IMAP password, an FTP url's user) cannot
// hold a line break, named at its line and field.
func TestLineValuesRefuseControlCharacters(t *testing.T) {
	parseErrorsIn(t, "i.yaml", map[string]string{
		"name: i\nwhere: hosts\ncells:\n  - {protocol: imap, url: \"imap://127.0.0.1\", password: \"x\\r\\nA2 LOGOUT\", conns: [1]}\n": `i.yaml:4: cells[0].password: "x\r\nA2 LOGOUT" holds a control character (U+000D)`,
		"name: i\nwhere: hosts\ncells:\n  - {protocol: ftp, url: \"ftp://u:p%0aDELE@h/1M\", conns: [1]}\n":                             `i.yaml:4: cells[0].url: "p\nDELE" holds a control character (U+000A)`,
	})
}

// TestTimesAreBounded: a pause, timeout or sustained duration past its
// bound is refused at its line (a plan of 100000 h pauses estimated a
// negative time).
func TestTimesAreBounded(t *testing.T) {
	parseErrorsIn(t, "b.yaml", map[string]string{
		"name: b\npause: 100000h\ncells: [{protocol: http, conns: [1]}]\n":         "b.yaml:2: pause: 100000h0m0s is more than 1h0m0s",
		"name: b\ntimeout: 8760h\ncells: [{protocol: http, conns: [1]}]\n":         "b.yaml:2: timeout: 8760h0m0s is more than 2h0m0s",
		"name: b\ncells: [{protocol: http, conns: [1], duration: 25h}]\n":          "b.yaml:2: cells[0].duration: 25h0m0s is more than 24h0m0s",
		"name: b\ncells: [{protocol: http, conns: [1], pause: 2h, timeout: 1s}]\n": "b.yaml:2: cells[0].pause: 2h0m0s is more than 1h0m0s",
	})
}

// TestPMTUCellFields: a cell group's path MTU settings are read, recorded
// in the spec (a result's header holds them) and read back, and need the
// lab.
func TestPMTUCellFields(t *testing.T) {
	e, err := Parse("p.yaml", []byte("name: p\ncells:\n  - {protocol: http, conns: [1], file: 1M, ptb_blackhole: ipv6, tcp_mtu_probing: 1}\n  - {protocol: dns, label: d, conns: [1], query: large.v6lab.test, type: TXT, edns: 1232, resend: 1s, fragments: drop, mss_clamp: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Groups[0].PMTU.String(); got != "ptb_blackhole ipv6, tcp_mtu_probing 1" {
		t.Errorf("http group: %q", got)
	}
	if got := e.Groups[1].PMTU.String(); got != "fragments drop, mss_clamp" {
		t.Errorf("dns group: %q", got)
	}
	if !e.PMTU() || !strings.Contains(e.NeedsLab(), "ptb_blackhole") {
		t.Errorf("PMTU %v, needs the lab: %q", e.PMTU(), e.NeedsLab())
	}
	b, err := json.Marshal(e.Groups[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"pmtu":{"fragments":"drop","mss_clamp":true}`, `"edns":1232`, `"resend":"1s"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("recorded %s, lacks %s", b, want)
		}
	}
	var back CellGroup
	if err := json.Unmarshal(b, &back); err != nil || back.PMTU.String() != e.Groups[1].PMTU.String() {
		t.Errorf("read back %+v, %v", back.PMTU, err)
	}
	plain, _ := Parse("q.yaml", []byte("name: q\ncells:\n  - {protocol: http, conns: [1]}\n"))
	if plain.PMTU() {
		t.Error("a group without path MTU settings has them")
	}
}

// TestPMTUWait: a plan's estimate counts a path MTU black hole's wait:
// the timeout where nothing mends it, the detection with tcp_mtu_probing
// 1, nothing with a clamp or on a path it does not break; a DNS answer in
// dropped fragments waits out its timeout unless it is asked for small
// or over TCP; an HTTP/3 transfer loses nothing to either (QUIC), a DNS
// answer over TCP stalls in a black hole as any TCP transfer.
func TestPMTUWait(t *testing.T) {
	e, err := Parse("w.yaml", []byte(`name: w
where: lab
paths: [ipv4, ipv6, 6in4, nat64]
timeout: 10s
cells:
  - {protocol: http, label: a, conns: [1], ptb_blackhole: ipv6}
  - {protocol: http, label: b, conns: [1], ptb_blackhole: ipv6, tcp_mtu_probing: 1}
  - {protocol: http, label: c, conns: [1], ptb_blackhole: both, mss_clamp: true}
  - {protocol: http, label: d, conns: [1], ptb_blackhole: ipv4, timeout: 3s}
  - {protocol: dns, label: e, conns: [1], edns: 4096, fragments: ipv6}
  - {protocol: dns, label: f, conns: [1], edns: 1232, fragments: drop}
  - {protocol: dns, label: g, conns: [1], transport: tcp, fragments: drop}
  - {protocol: http, label: h, conns: [1], http_version: "3", ptb_blackhole: both, fragments: drop}
  - {protocol: dns, label: i, conns: [1], transport: tcp, ptb_blackhole: ipv6}
  - {protocol: dns, label: j, conns: [1], edns: 4096, ptb_blackhole: ipv6}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][4]time.Duration{
		"a": {0, 10 * time.Second, 10 * time.Second, 0},
		"b": {0, BlackHoleDetect, BlackHoleDetect, 0},
		"c": {},
		"d": {3 * time.Second, 0, 0, 3 * time.Second},
		"e": {0, 10 * time.Second, 10 * time.Second, 10 * time.Second},
		"f": {},
		"g": {},
		"h": {},
		"i": {0, 10 * time.Second, 10 * time.Second, 0},
		"j": {},
	}
	for i := range e.Groups {
		g := &e.Groups[i]
		for j, p := range g.Paths {
			if got := g.pmtuWait(p); got != want[g.CellName()][j] {
				t.Errorf("%s over %s: %v, want %v", g.CellName(), p, got, want[g.CellName()][j])
			}
		}
	}
}

// TestCheckNameSaysTheFirstCharacterRule: "-x" is made of allowed
// characters only; the error says the rule it breaks (trial4 F6).
func TestCheckNameSaysTheFirstCharacterRule(t *testing.T) {
	for _, name := range []string{"-x", ".x", "_x"} {
		if err := CheckName(name); err == nil || !strings.Contains(err.Error(), "the first a letter or digit") {
			t.Errorf("%q: %v", name, err)
		}
	}
	if err := CheckName("x-1.2_3"); err != nil {
		t.Errorf("x-1.2_3: %v", err)
	}
}

// TestKeepaliveWantsAWarmup: keepalive without a warm-up run would count
// each user's first, new connection among the kept ones (trial6 F18): a
// file refuses it at the warm-up it gave (the cell's, the file's), else at
// the keepalive; a cell group given --warmup 0 names the flag. A
// sustained cell (duration) may run without one, as the benches do.
func TestKeepaliveWantsAWarmup(t *testing.T) {
	parseErrorsIn(t, "k.yaml", map[string]string{
		"name: k\ncells:\n  - {protocol: http, http_version: 2, keepalive: true, warmup: 0, conns: [1]}\n": "k.yaml:3: cells[0].warmup: 0 with keepalive: each user's first transaction opens its connection",
		"name: k\nwarmup: 0\ncells:\n  - {protocol: http, http_version: 2, keepalive: true, conns: [1]}\n": "k.yaml:2: warmup: 0 with keepalive",
	})
	if _, err := Parse("k.yaml", []byte("name: k\nwarmup: 0\ncells:\n  - {protocol: http, http_version: 2, keepalive: true, warmup: 1, conns: [1]}\n  - {protocol: http, label: h1, conns: [1]}\n  - {protocol: http, label: s, http_version: 2, keepalive: true, duration: 10s, conns: [1]}\n")); err != nil {
		t.Errorf("a kept cell with its warm-up, a new-connection cell and a sustained kept cell without: %v", err)
	}
	e, err := Parse("k.yaml", []byte("name: k\ncells:\n  - {protocol: http, http_version: 2, keepalive: true, conns: [1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	zero := 0
	err = e.Override(Override{Warmup: &zero})
	if err == nil || !strings.Contains(err.Error(), "--warmup: 0 with keepalive: each") {
		t.Errorf("--warmup 0 over a kept cell: %v", err)
	}
}

// TestHostsURLFitsEveryPath: where: hosts, a url's IP literal of the other
// family (or IPv4-mapped), or a resolve: giving no address of a path's
// family, fails every run over that path; the file is refused when read,
// naming its line and field, as probe refuses the same (trial9 N2, N6).
func TestHostsURLFitsEveryPath(t *testing.T) {
	const head = "name: h\nwhere: hosts\npaths: [ipv4, ipv6]\ncells:\n  - protocol: http\n    conns: [1]\n"
	parseErrorsIn(t, "h.yaml", map[string]string{
		head + "    url: \"https://[::1]:8443/\"\n":                                                                             "h.yaml:7: cells[0].url: path ipv4: ::1 is an IPv6 address, which is not looked up: give an IPv4 one, or a name (with resolve: for an address of each family)",
		head + "    url: \"http://127.0.0.1:8080/\"\n":                                                                          "h.yaml:7: cells[0].url: path ipv6: 127.0.0.1 is an IPv4 address, which is not looked up: give an IPv6 one",
		head + "    url: \"http://[::ffff:127.0.0.1]:8080/\"\n":                                                                 "h.yaml:7: cells[0].url: path ipv4: ::ffff:127.0.0.1 is an IPv4-mapped IPv6 address, which is IPv4: give 127.0.0.1",
		head + "    url: \"http://www.x.test/\"\n    resolve: [www.x.test=127.0.0.1]\n":                                         "h.yaml:8: cells[0].resolve[0]: path ipv6: www.x.test: resolve: gives it no IPv6 address ([127.0.0.1])",
		"name: h\nwhere: hosts\npaths: [ipv6]\ncells:\n  - {protocol: ftp, url: \"ftp://[::ffff:127.0.0.1]/1M\", conns: [1]}\n": "h.yaml:5: cells[0].url: path ipv6: ::ffff:127.0.0.1 is an IPv4-mapped IPv6 address, which is IPv4: give an IPv6 address, or a name (with resolve: for an address of each family)",
	})
	for _, ok := range []string{
		"name: h\nwhere: hosts\npaths: [ipv4]\ncells:\n  - {protocol: http, url: \"http://127.0.0.1:8080/\", conns: [1]}\n",
		"name: h\nwhere: hosts\npaths: [ipv6]\nbaseline: ipv6\ncells:\n  - {protocol: smtp, url: \"smtp://[::1]:2525\", conns: [1]}\n",
		"name: h\nwhere: hosts\npaths: [ipv4, ipv6]\ncells:\n  - {protocol: http, url: \"http://www.x.test/\", resolve: [\"www.x.test=127.0.0.1,::1\"], conns: [1]}\n",
	} {
		if _, err := Parse("h.yaml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
