package run

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"v6lab/internal/input/units"
	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/host"
	"v6lab/internal/run/measure"
	"v6lab/internal/sock/path"
)

// Probe is a probe command's measurement of a server the user names
// (v6lab probe http URL): one cell group, its options checked as an
// experiment file's are.
type Probe struct {
	Protocol *proto.Protocol
	Options  proto.Options
	// Load is the command's load (paths, connections, runs…);
	// TimeoutGiven says its timeout was given, not the default.
	Load         Load
	TimeoutGiven bool
	// Given are the options given on the command line.
	Given proto.Given
	// Target is what the user named, password masked.
	Target string
	// Params are the option flags' values, recorded as the cell's.
	Params map[string]string
	// DNSFlag says the DNS servers were given (--dns-server), not read
	// from /etc/resolv.conf.
	DNSFlag  bool
	Override experiment.Override
	Results  string
}

// Job makes the probe's job: every path fits and has its server. Its
// errors are bad input, found before anything is created.
func (pr Probe) Job() (measure.Job, error) {
	o, name := pr.Options, pr.Protocol.Name
	if err := result.CheckRoot(pr.Results); err != nil {
		return measure.Job{}, err
	}
	if pr.Load.Name != "" {
		if err := experiment.CheckName(pr.Load.Name); err != nil {
			return measure.Job{}, fmt.Errorf("--name: %w", err)
		}
	}
	if paths, err := path.ParseList(pr.Load.Paths); err == nil { // a bad list is the cell's error
		o.Base().RacesFamilies = (&experiment.CellGroup{Paths: paths}).RacesFamilies()
	}
	if err := o.Check(result.Hosts, pr.Given); err != nil {
		return measure.Job{}, proto.FlagError(err, o)
	}
	if length := o.Length(); length > 0 && !pr.TimeoutGiven {
		pr.Load.Timeout = length + 30*time.Second // a trial's follows its length
	}
	spec, err := pr.Load.Cell(name, name, pr.Target)
	if err != nil {
		return measure.Job{}, err
	}
	spec.Options = o
	for _, p := range spec.Paths {
		if err := o.PathFit(result.Hosts, p); err != nil {
			return measure.Job{}, proto.FlagError(err, o)
		}
	}
	if pr.Protocol.SingleTest {
		spec.Conns = []int{1}
	}
	servers, err := pr.servers(&spec)
	if err != nil {
		return measure.Job{}, err
	}
	o.Base().RacesFamilies = spec.RacesFamilies()
	for k, v := range o.Record() {
		spec.Params[k] = v
	}
	notes := o.Notes(spec.Paths)
	if pr.Protocol.Command.Notes != nil {
		notes = append(notes, pr.Protocol.Command.Notes()...)
	}
	exp := experiment.Single(spec, result.Hosts)
	if err := exp.Override(pr.Override); err != nil {
		return measure.Job{}, err
	}
	if err := exp.Validate(); err != nil { // the cell's every value is a flag's
		return measure.Job{}, experiment.FlagError(err, func(string) bool { return true })
	}
	if err := exp.CheckOpenFiles(host.NoFileHard(), 0); err != nil { // as run's: bad input
		return measure.Job{}, fmt.Errorf("--conns: %w", err)
	}
	return measure.Job{Exp: exp, Probe: experiment.Probes(nil), Target: result.Hosts,
		Servers: map[string]string{name: proto.Or(strings.Join(servers, " "), pr.Target)}, Notes: notes, Results: pr.Results}, nil
}

// servers finds every path's server, and records the cell's params: the
// option flags' and where the DNS servers that name the host came from.
func (pr Probe) servers(spec *experiment.CellGroup) ([]string, error) {
	o := pr.Options
	var servers []string
	spec.Params = map[string]string{}
	_, namesHost := proto.FieldOf(o, proto.OptDNSServers)
	for _, path := range spec.Paths {
		ep, err := o.Target(path)
		if err != nil {
			return nil, fmt.Errorf("path %s: %w", path, err)
		}
		if s := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)); ep.Port != 0 && !slices.Contains(servers, s) {
			servers = append(servers, s)
		}
		if _, named := spec.Params["dns_source"]; !named && namesHost && pr.Protocol.Server != nil && !pr.Protocol.Server.ByAddress {
			spec.Params["dns_servers"], spec.Params["dns_source"] = fmt.Sprint(ep.DNS), pr.dnsSource(ep)
		}
	}
	for k, v := range pr.Params {
		spec.Params[k] = v
	}
	return servers, nil
}

// dnsSource says where the DNS servers of ep came from, or, when none
// was asked, why: the host's addresses were given (--resolve), or it is
// an IP literal.
func (pr Probe) dnsSource(ep proto.Endpoint) string {
	given := false
	for name := range ep.Hosts {
		given = given || strings.EqualFold(strings.TrimSuffix(name, "."), strings.TrimSuffix(ep.Host, "."))
	}
	_, literal := netip.ParseAddr(strings.Trim(ep.Host, "[]"))
	switch {
	case given:
		return "none (--resolve gave " + ep.Host + "'s addresses)"
	case len(ep.DNS) == 0 && literal == nil:
		return "none (IP literal)"
	case len(ep.DNS) == 0:
		return "none"
	case pr.DNSFlag:
		return "--dns-server"
	case ep.DNSStub != path.Stub{}:
		return "/etc/resolv.conf (" + ep.DNSStub.String() + ")" // how a lost query went again
	}
	return "/etc/resolv.conf"
}

// Load is what a measuring command's flags say of its load.
type Load struct {
	Paths, Conns             string
	Runs, Warmup             int
	Timeout, Pause, Duration time.Duration
	// Name names the result directory (default: the command's).
	Name string
}

// Cell is the probe's cell group of protocol against target: its paths
// exist off the lab, its counts parse, and it validates.
func (l Load) Cell(name, protocol, target string) (experiment.CellGroup, error) {
	paths, err := path.ParseList(l.Paths)
	if err != nil {
		return experiment.CellGroup{}, fmt.Errorf("--paths: %w", err)
	}
	for _, p := range paths {
		if err := p.OffLabOf("a probe's host", experiment.DualFits(path.Dual, protocol) == nil); err != nil {
			return experiment.CellGroup{}, fmt.Errorf("--paths: %w (v6lab run measures it in a lab of its own)", err)
		}
	}
	conns, err := units.ParseCounts(l.Conns)
	if err != nil {
		return experiment.CellGroup{}, fmt.Errorf("--conns: %w", err)
	}
	s := experiment.CellGroup{Name: proto.Or(l.Name, name), Protocol: protocol, Target: target, Paths: paths, Conns: conns,
		Runs: l.Runs, Warmup: l.Warmup, Timeout: experiment.Duration(l.Timeout), Pause: experiment.Duration(l.Pause),
		Duration: experiment.Duration(l.Duration), Baseline: paths[0]}
	if l.Duration < 0 {
		return s, fmt.Errorf("--duration must not be negative")
	}
	return s, experiment.FlagError(s.Validate(), func(string) bool { return true })
}

// PathsUsage is a probe command's --paths usage: the dual path is listed
// only for a protocol whose client races the families (races), else said
// to be another's (trial7 F8: udp and tcp listed it).
func PathsUsage(races bool) string {
	const lab = "6in4, nat64, 464xlat and dslite exist only in a lab (v6lab run), so a probe refuses them"
	if races {
		return "paths to measure, comma-separated: ipv4, ipv6, dual (a dual-stack client racing both by Happy Eyeballs); " + lab
	}
	return "paths to measure, comma-separated: ipv4, ipv6 (not dual: it races the families by Happy Eyeballs, which only " + experiment.RacingCells() + " cells do); " + lab
}
