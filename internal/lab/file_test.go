package lab

import (
	"os"
	"strings"
	"testing"

	"v6lab/internal/input/specfile/specfiletest"
)

// Each invalid-*.yaml names on its first line the exact error it must give.
func TestInvalidTopologiesNameFileLineAndField(t *testing.T) {
	specfiletest.Invalid(t, "testdata/invalid-*.yaml", 10, func(name string, data []byte) error {
		_, err := ParseTopology(name, data)
		return err
	})
}

func TestTopologyFileSetsEveryLink(t *testing.T) {
	cfg, err := LoadTopology("testdata/topology-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "study" || cfg.Tunnel != "userspace" || cfg.TunnelMTU != 1280 || !cfg.Generators || !cfg.BareServer {
		t.Errorf("config %+v", cfg)
	}
	for name, rate := range map[string]uint64{"client-r1": 100e6, "r1-r2": 10e6, "r2-server": 100e6} {
		l := cfg.Link(name)
		if l.Shaping.Rate != rate || l.Shaping.QueueLimit != 128<<10 || l.MTU != 1500 {
			t.Errorf("link %s: %+v", name, l)
		}
	}
	// A file with nothing in it but a name is the default lab.
	cfg, err = ParseTopology("min.yaml", []byte("name: x\n"))
	if err != nil || cfg.TunnelMTU != DefaultTunnelMTU || cfg.Links != nil || cfg.Shaping != (Shaping{}) {
		t.Errorf("minimal file: %+v, %v", cfg, err)
	}
	if _, err := LoadTopology("testdata/nope.yaml"); err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestConfigValidateChecksLinks(t *testing.T) {
	for want, c := range map[string]Config{
		`no link named "x"`:                        {Name: "a", Links: map[string]Link{"x": {}}},
		"link r1-r2: MTU 100 out of range":         {Name: "a", Links: map[string]Link{"r1-r2": {MTU: 100}}},
		"needs an r1-r2 link MTU of at least 1500": {Name: "a", Links: map[string]Link{"r1-r2": {MTU: 1400}}},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
	ok := Config{Name: "a", TunnelMTU: 1280, Links: map[string]Link{"r1-r2": {MTU: 1400}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("1280 tunnel over a 1400 link: %v", err)
	}
}

// FuzzParseTopology reads arbitrary topology files: a config that
// validates, or an error; never a panic.
func FuzzParseTopology(f *testing.F) {
	for _, n := range []string{"topology-full.yaml", "invalid-queue-limit.yaml", "invalid-tunnel-mtu.yaml"} {
		b, err := os.ReadFile("testdata/" + n)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("tunnel: {implementation: bpf, mtu: 1280}\nlinks: {all: {rate: 10M, loss: 1%}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseTopology("t.yaml", b)
		if err != nil {
			if len(err.Error()) > 2000 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
			return
		}
		if cfg.Name == "" {
			cfg.Name = "x"
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("a parsed topology does not validate: %v", err)
		}
	})
}
