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
		`no link named "x"`:                                              {Name: "a", Links: map[string]Link{"x": {}}},
		"link r1-r2: MTU 100 out of range":                               {Name: "a", Links: map[string]Link{"r1-r2": {MTU: 100}}},
		"needs an r1-r2 link MTU of at least 1500":                       {Name: "a", TunnelMTU: 1480, Links: map[string]Link{"r1-r2": {MTU: 1400}}},
		"link r1-r2: MTU 1290 leaves the 6in4 tunnel over it 1270 bytes": {Name: "a", Links: map[string]Link{"r1-r2": {MTU: 1290}}},
		"lab: pmtu: ptb_blackhole: \"ipv5\": want ipv6":                  {Name: "a", PMTU: PMTU{PTBBlackhole: "ipv5"}},
		"lab: pmtu: fragments: \"all\": want drop":                       {Name: "a", PMTU: PMTU{Fragments: "all"}},
		"lab: pmtu: tcp_mtu_probing: 3: want 0":                          {Name: "a", PMTU: PMTU{MTUProbing: ptrInt(3)}},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
	ok := Config{Name: "a", TunnelMTU: 1280, Links: map[string]Link{"r1-r2": {MTU: 1400}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("1280 tunnel over a 1400 link: %v", err)
	}
	// A smaller link between the routers makes the tunnel over it
	// smaller, unless the tunnel's MTU is given.
	for link, want := range map[int]int{1500: 1480, 1400: 1380, 1300: 1280, 9000: 1480} {
		c := Config{Name: "a", Links: map[string]Link{"r1-r2": {MTU: link}}}
		if err := c.Validate(); err != nil || c.TunnelMTU != want {
			t.Errorf("r1-r2 MTU %d: tunnel MTU %d, %v; want %d", link, c.TunnelMTU, err, want)
		}
	}
}

func ptrInt(v int) *int { return &v }

// TestTopologyPMTU: a topology's pmtu section, and the tunnel and nat64
// MTUs that follow a smaller r1-r2 link while the hosts keep 1500.
func TestTopologyPMTU(t *testing.T) {
	cfg, err := ParseTopology("p.yaml", []byte("links:\n  r1-r2: {mtu: 1400}\npmtu:\n  ptb_blackhole: ipv6\n  fragments: drop\n  tcp_mtu_probing: 1\n  mss_clamp: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := PMTU{PTBBlackhole: "ipv6", Fragments: "drop", MTUProbing: ptrInt(1), MSSClamp: true}
	if cfg.PMTU.String() != want.String() || cfg.TunnelMTU != 1380 || cfg.Link("client-r1").MTU != 1500 || cfg.Link("r2-server").MTU != 1500 {
		t.Errorf("config %+v, pmtu %s", cfg, cfg.PMTU)
	}
	if d := cfg.PMTU.Drop(); !d.PTB6 || d.PTB4 || !d.Frag6 || !d.Frag4 {
		t.Errorf("drops %+v", d)
	}
	// The nat64 route follows the smallest link of its path: the client's
	// as IPv6, those past r1 20 bytes shorter as IPv4.
	for _, c := range []struct {
		links map[string]Link
		want  int
	}{
		{nil, 1480},
		{map[string]Link{"r1-r2": {MTU: 1400}}, 1420},
		{map[string]Link{"client-r1": {MTU: 1300}}, 1300},
		{map[string]Link{"r2-server": {MTU: 1280}, "client-r1": {MTU: 1400}}, 1300},
	} {
		if got := Nat64MTU(&Config{Links: c.links}); got != c.want {
			t.Errorf("nat64 route MTU with links %v: %d, want %d", c.links, got, c.want)
		}
	}
	// The CLAT's and the softwire's routes follow the smallest link of
	// their path (the CLAT's IPv6 is 20 bytes longer on client-r1, the
	// softwire's 40 on client-r1 and r1-r2).
	if c, b := ClatMTU(&cfg), B4MTU(&cfg); c != 1400 || b != 1360 {
		t.Errorf("over a 1400 r1-r2: CLAT route MTU %d, softwire %d, want 1400 and 1360", c, b)
	}
	if c, b := ClatMTU(&Config{}), B4MTU(&Config{}); c != 1480 || b != 1460 {
		t.Errorf("at 1500: CLAT route MTU %d, softwire %d, want 1480 and 1460", c, b)
	}
	small := Config{Links: map[string]Link{"client-r1": {MTU: 1450}, "r2-server": {MTU: 1300}}}
	if c, b := ClatMTU(&small), B4MTU(&small); c != 1300 || b != 1300 {
		t.Errorf("client-r1 1450, r2-server 1300: CLAT %d, softwire %d, want 1300 and 1300", c, b)
	}
	jumbo := Config{Links: map[string]Link{"client-r1": {MTU: 9000}, "r1-r2": {MTU: 9000}, "r2-server": {MTU: 9000}}}
	if c, b := ClatMTU(&jumbo), B4MTU(&jumbo); c != 1480 || b != 1460 {
		t.Errorf("jumbo links: CLAT %d, softwire %d, want 1480 and 1460", c, b)
	}
	// A cell group's settings over the lab's own.
	cell := PMTU{Fragments: "ipv6", MTUProbing: ptrInt(0)}
	if got := cell.Over(PMTU{PTBBlackhole: "ipv4", Fragments: "ipv4", MTUProbing: ptrInt(2), MSSClamp: true}).String(); got != "ptb_blackhole ipv4, fragments drop, tcp_mtu_probing 0, mss_clamp" {
		t.Errorf("over: %s", got)
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
