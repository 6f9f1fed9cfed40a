package experiments

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"v6lab/internal/gen/transport"
	"v6lab/internal/run/experiment"
)

func TestBuiltinExperimentsParseAndScale(t *testing.T) {
	names := Names()
	if len(names) < 2 || names[0] != "eyeballs" || names[1] != "ipv6only" || names[2] != "mitre2004" {
		t.Fatalf("built-ins %v", names)
	}
	for _, n := range names {
		b, err := Get(n)
		if err != nil {
			t.Fatal(err)
		}
		e, err := experiment.Parse(n, b)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if e.Name != n || e.Description == "" {
			t.Errorf("%s: name %q, description %q", n, e.Name, e.Description)
		}
	}
	b, _ := Get("rubio")
	r, err := experiment.Parse("rubio", b)
	if err != nil {
		t.Fatal(err)
	}
	cell := func(label string) *experiment.CellGroup {
		for i := range r.Groups {
			if r.Groups[i].CellName() == label {
				return &r.Groups[i]
			}
		}
		t.Fatalf("rubio has no cell group %s", label)
		return nil
	}
	udp := cell("udp-100m-buf100k")
	// 2 MSS x 4 windows x 7 amounts of TCP, 3 rates x 3 buffers of UDP.
	if len(r.Groups) != 65 || r.Topology != "rubio.yaml" || trialOf(cell("tcp-200m-mss1k")).Bytes != 200<<20 || trialOf(cell("tcp-10m-mss2k")).MSS != 2048 ||
		trialOf(cell("tcp-50m-w56k-mss2k")).Window != 56<<10 ||
		trialOf(udp).Rate != 100e6 || trialOf(udp).RcvBuf != 100<<10 || trialOf(udp).Duration != time.Minute {
		t.Errorf("rubio: %d cell groups, %+v", len(r.Groups), trialOf(udp))
	}
	if _, err := Lab(r.Topology); err != nil {
		t.Error(err)
	}
	if err := r.Scale(0.1); err != nil || trialOf(udp).Duration != 6*time.Second || trialOf(cell("tcp-200m-mss1k")).Bytes != 20<<20 {
		t.Errorf("scaled rubio: %v %+v", err, trialOf(udp))
	}
	b, _ = Get("mitre2004")
	e, _ := experiment.Parse("mitre2004", b)
	if got := e.Groups[0].Conns; len(got) != 6 || got[5] != 5000 || e.Groups[0].Runs != 11 {
		t.Errorf("mitre2004 http cells %v", got)
	}
	if err := e.Scale(0.1); err != nil {
		t.Fatal(err)
	}
	if got := e.Groups[0].Conns; len(got) != 5 || got[0] != 1 || got[4] != 500 || e.Groups[0].Runs != 3 {
		t.Errorf("scaled: conns %v runs %d", got, e.Groups[0].Runs)
	}
	for _, bad := range []float64{0, -1, 1.5} {
		if err := e.Scale(bad); err == nil {
			t.Errorf("scale %g accepted", bad)
		}
	}
	if _, err := Get("nope"); err == nil || !strings.Contains(err.Error(), "mitre2004") {
		t.Errorf("unknown built-in: %v", err)
	}
}

func TestListNamesEveryBuiltin(t *testing.T) {
	var b strings.Builder
	if err := List(&b); err != nil {
		t.Fatal(err)
	}
	for _, n := range Names() {
		if !strings.Contains(b.String(), "\n"+n+" ") {
			t.Errorf("%s missing from\n%s", n, b.String())
		}
	}
	if !strings.Contains(b.String(), "http×1 ftp×1 smtp×1 imap×1") {
		t.Errorf("mitre2004's cells are not summed up by protocol:\n%s", b.String())
	}
}

// trialOf is a trial cell group's test.
func trialOf(c *experiment.CellGroup) *transport.Options {
	if t, ok := c.Options.(interface{ Transport() *transport.Options }); ok && t.Transport() != nil {
		return t.Transport()
	}
	return &transport.Options{}
}

// TestIPv6OnlyPresetMeasuresEveryAccessPath: MITRE's four applications
// over the five paths, in its own lab, whose NAT64 is stateful.
func TestIPv6OnlyPresetMeasuresEveryAccessPath(t *testing.T) {
	b, _ := Get("ipv6only")
	e, err := experiment.Parse("ipv6only", b)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(e.Paths(), e.Protocols()); got != "[ipv4 ipv6 nat64 464xlat dslite] [http ftp smtp imap]" || e.Topology != "ipv6only.yaml" {
		t.Errorf("ipv6only: %s, topology %q", got, e.Topology)
	}
	cfg, err := Topology(BuiltinLab+e.Topology, "x")
	if err != nil || !cfg.NAT64.Stateful || cfg.NAT64.Pool.String() != "198.18.0.2/32" || cfg.NAT64.Ports != [2]uint16{1024, 65535} {
		t.Errorf("its lab: %+v, %v", cfg.NAT64, err)
	}
}
