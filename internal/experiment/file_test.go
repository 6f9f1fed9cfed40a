package experiment

import (
	"strings"
	"testing"
	"time"

	"v6lab/experiments"
	"v6lab/internal/path"
	"v6lab/internal/specfile/specfiletest"
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
	if e.Name != "full" || e.Where != "lab" || e.Topology != "testdata/topology.yaml" || e.Order != OrderShuffled || e.Seed != 42 || len(e.Cells) != 3 {
		t.Fatalf("experiment %+v", e)
	}
	http, big, dns := e.Cells[0], e.Cells[1], e.Cells[2]
	if http.CellName() != "http" || len(http.Paths) != 3 || http.Runs != 11 || http.Warmup != 1 || time.Duration(http.Timeout) != 30*time.Second {
		t.Errorf("http cell %+v", http)
	}
	if big.CellName() != "bigpage" || *big.Objects != 20 || big.Runs != 5 {
		t.Errorf("bigpage cell %+v", big)
	}
	if dns.Transport != "tcp" || len(dns.Paths) != 2 || dns.Paths[1] != path.SixIn4 || time.Duration(dns.Timeout) != 5*time.Second ||
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
	if len(h.Cells[0].Paths) != 2 || h.Cells[0].URL == "" || len(h.Cells[1].DNSServers) != 1 {
		t.Errorf("hosts experiment %+v", h)
	}
	if _, err := Load("testdata/nope.yaml"); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestBuiltinExperimentsParseAndScale(t *testing.T) {
	names := experiments.Names()
	if len(names) < 2 || names[0] != "mitre2004" {
		t.Fatalf("built-ins %v", names)
	}
	for _, n := range names {
		b, err := experiments.Get(n)
		if err != nil {
			t.Fatal(err)
		}
		e, err := Parse(n, b)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if e.Name != n || e.Description == "" {
			t.Errorf("%s: name %q, description %q", n, e.Name, e.Description)
		}
	}
	b, _ := experiments.Get("rubio")
	r, err := Parse("rubio", b)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cells) != 23 || r.Topology != "rubio.yaml" || r.Cells[6].Test.Bytes != 200<<20 || r.Cells[13].Test.MSS != 2048 ||
		r.Cells[22].Test.Rate != 100e6 || r.Cells[22].Test.RcvBuf != 100<<10 || r.Cells[22].Test.Duration != time.Minute {
		t.Errorf("rubio cells %+v", r.Cells[22].Test)
	}
	if _, err := experiments.Lab(r.Topology); err != nil {
		t.Error(err)
	}
	if err := r.Scale(0.1); err != nil || r.Cells[22].Test.Duration != 6*time.Second || r.Cells[6].Test.Bytes != 20<<20 {
		t.Errorf("scaled rubio: %v %+v", err, r.Cells[22].Test)
	}
	b, _ = experiments.Get("mitre2004")
	e, _ := Parse("mitre2004", b)
	if got := e.Cells[0].Conns; len(got) != 6 || got[5] != 5000 || e.Cells[0].Runs != 11 {
		t.Errorf("mitre2004 http cells %v", got)
	}
	if err := e.Scale(0.1); err != nil {
		t.Fatal(err)
	}
	if got := e.Cells[0].Conns; len(got) != 5 || got[0] != 1 || got[4] != 500 || e.Cells[0].Runs != 3 {
		t.Errorf("scaled: conns %v runs %d", got, e.Cells[0].Runs)
	}
	for _, bad := range []float64{0, -1, 1.5} {
		if err := e.Scale(bad); err == nil {
			t.Errorf("scale %g accepted", bad)
		}
	}
	if _, err := experiments.Get("nope"); err == nil || !strings.Contains(err.Error(), "mitre2004") {
		t.Errorf("unknown built-in: %v", err)
	}
}

func TestTrialWarmupReachesItsOptionsAndTimeout(t *testing.T) {
	e, err := Parse("omit.yaml", []byte("name: x\ncells:\n  - protocol: tcp\n    time: 20s\n    omit: 5s\n  - protocol: udp\n    omit: 1s\n"))
	if err != nil {
		t.Fatal(err)
	}
	tcp, udp := e.Cells[0], e.Cells[1]
	if tcp.Test.Omit != 5*time.Second || udp.Test.Omit != time.Second || udp.Test.Duration != 10*time.Second {
		t.Fatalf("options %+v, %+v", tcp.Test, udp.Test)
	}
	// The timeout covers the warm-up too.
	if time.Duration(tcp.Timeout) != 55*time.Second {
		t.Errorf("timeout %v, want 5s + 20s + 30s", time.Duration(tcp.Timeout))
	}
	// Scaling shortens the measured time, not the warm-up past slow start.
	if err := e.Scale(0.1); err != nil || e.Cells[0].Test.Omit != 5*time.Second || e.Cells[0].Test.Duration != 2*time.Second ||
		time.Duration(e.Cells[0].Timeout) != 37*time.Second {
		t.Errorf("scaled: %v %+v timeout %v", err, e.Cells[0].Test, time.Duration(e.Cells[0].Timeout))
	}
}

// FuzzParse reads arbitrary experiment files: any input gives an
// experiment that validates, or an error naming the file; never a panic,
// and never an error quoting more than a short excerpt of the input.
func FuzzParse(f *testing.F) {
	for _, n := range experiments.Names() {
		b, _ := experiments.Get(n)
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
	for data, want := range map[string]string{
		"name: c\nwhere: loopback\ncongestion: reno\ncells: [{protocol: http, conns: [1]}]\n": "c.yaml:3: congestion: sets the lab's hosts, but where is loopback",
		"name: c\ncongestion: Reno!\ncells: [{protocol: http, conns: [1]}]\n":                 `c.yaml:2: congestion: "Reno!" is not a congestion control name`,
	} {
		if _, err := Parse("c.yaml", []byte(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", data, err, want)
		}
	}
}

func TestDNSModeIsChecked(t *testing.T) {
	e, err := Parse("d.yaml", []byte("name: d\ncells: [{protocol: dns, mode: load, conns: [10]}]\n"))
	if err != nil || e.Cells[0].Mode != "load" {
		t.Fatalf("%v", err)
	}
	for data, want := range map[string]string{
		"name: d\ncells: [{protocol: dns, mode: fast, conns: [1]}]\n":                 `d.yaml:2: cells[0].mode: "fast": want stub or load`,
		"name: d\ncells: [{protocol: dns, mode: load, transport: tcp, conns: [1]}]\n": "cells[0].mode: the load engine sends over UDP",
	} {
		if _, err := Parse("d.yaml", []byte(data)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", data, err, want)
		}
	}
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
