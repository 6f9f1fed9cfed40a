package lab

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"v6lab/internal/input/specfile"
	"v6lab/internal/input/units"
)

// topologyFile is the YAML form of a Config (see docs/lab.md).
type topologyFile struct {
	Name   string `yaml:"name"`
	Tunnel struct {
		Implementation string `yaml:"implementation"`
		MTU            int    `yaml:"mtu"`
	} `yaml:"tunnel"`
	// Links holds "all" (every link) and single links by name; a single
	// link's fields override those of "all".
	Links map[string]linkFile `yaml:"links"`
	// Server sets the server host's own TCP stack.
	Server struct {
		TCPOptimizations *bool `yaml:"tcp_optimizations"`
	} `yaml:"server"`
	// Generators adds the background traffic hosts.
	Generators bool `yaml:"generators"`
	// Congestion is every host's TCP congestion control (default cubic).
	Congestion string `yaml:"congestion"`
	// NAT64 is r1's translator (docs/lab.md).
	NAT64 nat64File `yaml:"nat64"`
	// PMTU breaks path MTU discovery or fragments, or mitigates it.
	PMTU pmtuFile `yaml:"pmtu"`
}

type linkFile struct {
	Rate       string   `yaml:"rate"`
	QueueLimit string   `yaml:"queue_limit"`
	Delay      duration `yaml:"delay"`
	Jitter     duration `yaml:"jitter"`
	Loss       percent  `yaml:"loss"`
	MTU        int      `yaml:"mtu"`
}

type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil || v < 0 {
		return fmt.Errorf("want a duration such as 10ms, not %q", b)
	}
	*d = duration(v)
	return nil
}

// percent reads "0.5" or "0.5%".
type percent float64

func (p *percent) UnmarshalText(b []byte) error {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(string(b)), "%"), 64)
	if err != nil || v < 0 || v > 100 {
		return fmt.Errorf("want a percentage from 0 to 100, not %q", b)
	}
	*p = percent(v)
	return nil
}

// LoadTopology reads a topology file. Every problem, in the YAML or in the
// values, is an error naming the file, line and field.
func LoadTopology(file string) (Config, error) {
	data, err := specfile.ReadFile(file)
	if err != nil {
		return Config{}, fmt.Errorf("lab: topology: %w", err)
	}
	return ParseTopology(file, data)
}

// ParseTopology reads a topology from data (the contents of file).
func ParseTopology(file string, data []byte) (Config, error) {
	var f topologyFile
	doc, err := specfile.Decode(file, data, &f)
	if err != nil {
		if isExperiment(data) {
			return Config{}, fmt.Errorf("%s is an experiment file, not a topology (run it with v6lab run %s)", file, file)
		}
		return Config{}, err
	}
	if doc.Has("congestion") && !congestionName.MatchString(f.Congestion) {
		return Config{}, doc.Errorf("congestion", "%q is not a congestion control name (cubic, reno, bbr, …)", f.Congestion)
	}
	cfg := Config{Name: f.Name, Tunnel: f.Tunnel.Implementation, TunnelMTU: f.Tunnel.MTU, Generators: f.Generators, Congestion: f.Congestion,
		BareServer: f.Server.TCPOptimizations != nil && !*f.Server.TCPOptimizations}
	if doc.Has("name") && CheckName(f.Name) != nil {
		return cfg, doc.Errorf("name", "%q is not a lab name: 1-15 lowercase letters, digits or dashes, starting with a letter or digit", f.Name)
	}
	switch cfg.Tunnel {
	case "auto":
		cfg.Tunnel = ""
	case "sit", "bpf", "userspace", "vxlan":
	default:
		if doc.Has("tunnel.implementation") {
			return cfg, doc.Errorf("tunnel.implementation", "%q is not a tunnel: want auto, sit, bpf, userspace or vxlan", cfg.Tunnel)
		}
	}
	if doc.Has("tunnel.mtu") && (cfg.TunnelMTU < 1280 || cfg.TunnelMTU > 1480) {
		return cfg, doc.Errorf("tunnel.mtu", "%d is out of range: IPv6 needs at least 1280, and 1480 fills a 1500-byte link", cfg.TunnelMTU)
	}
	for name := range f.Links {
		if name != "all" && !slices.Contains(LinkNames, name) {
			return cfg, doc.Errorf("links."+name, "no such link (links: all, %s)", strings.Join(LinkNames, ", "))
		}
	}
	all, err := linkFromFile(doc, "links.all", f.Links["all"], Link{MTU: DefaultLinkMTU})
	if err != nil {
		return cfg, err
	}
	cfg.Shaping = all.Shaping
	for _, name := range LinkNames {
		field := "links." + name
		l, err := linkFromFile(doc, field, f.Links[name], all)
		if err != nil {
			return cfg, err
		}
		if l != all {
			if cfg.Links == nil {
				cfg.Links = map[string]Link{}
			}
			cfg.Links[name] = l
		}
		if name == "r1-r2" {
			if err := tunnelFits(doc, &cfg, field, l.MTU); err != nil {
				return cfg, err
			}
		}
	}
	if cfg.NAT64, err = nat64FromFile(doc, f.NAT64); err != nil {
		return cfg, err
	}
	if err := pmtuFromFile(doc, f.PMTU, &cfg.PMTU); err != nil {
		return cfg, err
	}
	check := cfg // the name may come later (lab up --name, run)
	if check.Name == "" {
		check.Name = "default"
	}
	if err := check.Validate(); err != nil {
		return cfg, fmt.Errorf("%s: %w", file, err) // rules with no single field
	}
	return cfg, nil
}

// tunnelFits gives the tunnel its MTU from the r1-r2 link's, mtu, when
// the file sets none (TunnelMTUFor), and checks that the tunnel fits the
// link; field is the link's.
func tunnelFits(doc *specfile.Doc, cfg *Config, field string, mtu int) error {
	at := field + ".mtu"
	if !doc.Has(at) {
		at = "links.all.mtu"
	}
	if cfg.Tunnel == "vxlan" {
		return nil
	}
	if cfg.TunnelMTU == 0 {
		if cfg.TunnelMTU = TunnelMTUFor(mtu); cfg.TunnelMTU < 1280 {
			return doc.Errorf(at, "%d leaves the 6in4 tunnel over it %d bytes, less than the 1280 IPv6 needs: at least 1300 (or build the lab without the tunnel's path)", mtu, cfg.TunnelMTU)
		}
		return nil
	}
	if mtu < cfg.TunnelMTU+20 {
		if !doc.Has(at) {
			at = "tunnel.mtu"
		}
		return doc.Errorf(at, "the tunnel (MTU %d) needs an r1-r2 link MTU of at least %d, one 20-byte IPv4 header more, but it is %d", cfg.TunnelMTU, cfg.TunnelMTU+20, mtu)
	}
	return nil
}

// pmtuFile is a topology's pmtu section.
type pmtuFile struct {
	PTBBlackhole string `yaml:"ptb_blackhole"`
	Fragments    string `yaml:"fragments"`
	MTUProbing   *int   `yaml:"tcp_mtu_probing"`
	MSSClamp     bool   `yaml:"mss_clamp"`
}

// pmtuFromFile checks and takes a topology's pmtu section.
func pmtuFromFile(doc *specfile.Doc, f pmtuFile, p *PMTU) error {
	for _, v := range []struct {
		field, value string
		check        func(string) error
	}{{"pmtu.ptb_blackhole", f.PTBBlackhole, CheckPTBBlackhole}, {"pmtu.fragments", f.Fragments, CheckFragments}} {
		if !doc.Has(v.field) {
			continue
		}
		if err := v.check(v.value); err != nil {
			return doc.Errorf(v.field, "%v", err)
		}
	}
	if f.MTUProbing != nil {
		if err := CheckMTUProbing(*f.MTUProbing); err != nil {
			return doc.Errorf("pmtu.tcp_mtu_probing", "%v", err)
		}
	}
	*p = PMTU(f)
	return nil
}

// linkFromFile applies the fields the file gave for one link (at field)
// over base, checking each.
func linkFromFile(doc *specfile.Doc, field string, f linkFile, base Link) (Link, error) {
	l := base
	has := func(k string) bool { return doc.Has(field + "." + k) }
	if has("rate") {
		r, err := units.ParseRate(f.Rate)
		if err != nil {
			return l, doc.Errorf(field+".rate", "%v", err)
		}
		if r != 0 && r < 8000 {
			return l, doc.Errorf(field+".rate", "%s is below 8 kbit/s", f.Rate)
		}
		l.Shaping.Rate = r
	}
	if has("queue_limit") {
		q, err := units.ParseSize(f.QueueLimit)
		if err != nil || q > 1<<30 {
			return l, doc.Errorf(field+".queue_limit", "want bytes up to 1G, such as 64K, not %q", f.QueueLimit)
		}
		if err := checkQueue(uint32(q), l.MTU); err != nil {
			return l, doc.Errorf(field+".queue_limit", "%v", err)
		}
		l.Shaping.QueueLimit = uint32(q)
	}
	if has("delay") {
		l.Shaping.Delay = time.Duration(f.Delay)
	}
	if has("jitter") {
		l.Shaping.Jitter = time.Duration(f.Jitter)
	}
	if has("loss") {
		l.Shaping.Loss = float64(f.Loss)
	}
	if l.Shaping.Jitter > 0 && l.Shaping.Delay == 0 {
		return l, doc.Errorf(field+".jitter", "jitter needs a delay to vary around (set delay too)")
	}
	if has("mtu") {
		if f.MTU < 1280 || f.MTU > 9000 {
			return l, doc.Errorf(field+".mtu", "%d is out of range: 1280 (the IPv6 minimum) to 9000", f.MTU)
		}
		l.MTU = f.MTU
	}
	return l, nil
}

// isExperiment says whether data is an experiment file (it has cells, which
// no topology has) given where a topology was wanted.
func isExperiment(data []byte) bool {
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	_, cells := top["cells"]
	return cells
}
