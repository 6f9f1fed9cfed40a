package main

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/report"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/measure"
	"v6lab/internal/sock/path"
)

func newProbeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Measure a real host: " + probeNames() + " transactions over each path",
		Example: `  v6lab probe http http://www.example.test/ --conns 1,10,100 --runs 11
  v6lab probe dns www.example.test --server 192.0.2.53 --server [2001:db8::53]:53`,
	}
	for _, p := range all.List {
		if p.Command.Short != "" && !p.Command.TopLevel {
			cmd.AddCommand(newProbeProtoCmd(p))
		}
	}
	return cmd
}

// probeNames lists the protocols of v6lab probe.
func probeNames() string {
	var n []string
	for _, p := range all.List {
		if p.Command.Short != "" && !p.Command.TopLevel {
			n = append(n, p.Name)
		}
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// topLevelProbes are the protocols measured by v6lab NAME (tcp, udp).
func topLevelProbes() []*cobra.Command {
	var out []*cobra.Command
	for _, p := range all.List {
		if p.Command.TopLevel {
			out = append(out, newProbeProtoCmd(p))
		}
	}
	return out
}

// newProbeProtoCmd is v6lab probe NAME ARG, built from the protocol's
// Command and its options' tags: its flags set the cell's options, which
// the options check as they check an experiment file's.
func newProbeProtoCmd(p *proto.Protocol) *cobra.Command {
	c := p.Command
	var lf loadFlags
	nargs := cobra.ExactArgs(1)
	if strings.HasSuffix(c.Arg, "...") {
		nargs = cobra.MinimumNArgs(1)
	}
	cmd := &cobra.Command{
		Use: p.Name + " " + c.Arg, Short: c.Short, Long: c.Long, Example: c.Example,
		Args: nargs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o := p.New()
			for _, a := range args {
				if strings.TrimSpace(a) == "" {
					return &exitError{code: 2, err: fmt.Errorf("%s is empty", strings.TrimSuffix(c.Arg, "..."))}
				}
				c.SetArg(o, a)
			}
			if err := proto.ApplyFlags(cmd.Flags(), o); err != nil {
				return &exitError{code: 2, err: err}
			}
			return probeTarget{lf: &lf, p: p, target: proto.Redact(strings.Join(args, " ")), opts: o}.run(cmd)
		},
	}
	if p.SingleTest {
		lf.registerTrial(cmd)
	} else {
		lf.register(cmd, "1,10,100", 11)
	}
	proto.RegisterFlags(cmd.Flags(), p.New())
	return cmd
}

// probeTarget is a probe command's measurement of a server it names: the
// cell's options checked, every path's server found, then run.
type probeTarget struct {
	lf     *loadFlags
	p      *proto.Protocol
	target string
	opts   proto.Options
}

func (pt probeTarget) run(cmd *cobra.Command) error {
	name := pt.p.Name
	o := pt.opts
	if paths, err := path.ParseList(pt.lf.paths); err == nil { // a bad list is the spec's error
		o.Base().RacesFamilies = (&experiment.CellGroup{Paths: paths}).RacesFamilies()
	}
	if err := o.Check(result.Hosts, proto.GivenFlags(cmd.Flags(), o)); err != nil {
		return &exitError{code: 2, err: proto.FlagError(err, o)}
	}
	if length := o.Length(); length > 0 && !cmd.Flags().Changed("timeout") {
		pt.lf.timeout = length + 30*time.Second // a trial's follows its length
	}
	spec, err := pt.lf.spec(name, name, pt.target)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	spec.Options = o
	for _, p := range spec.Paths {
		if err := o.PathFit(result.Hosts, p); err != nil {
			return &exitError{code: 2, err: proto.FlagError(err, o)}
		}
	}
	if pt.p.SingleTest {
		spec.Conns = []int{1}
	}
	var servers []string
	spec.Params = map[string]string{}
	_, namesHost := proto.FieldOf(o, proto.OptDNSServers)
	for _, path := range spec.Paths {
		ep, err := o.Target(path)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("path %s: %w", path, err)}
		}
		if s := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)); ep.Port != 0 && !slices.Contains(servers, s) {
			servers = append(servers, s)
		}
		if _, named := spec.Params["dns_source"]; !named && namesHost && pt.p.Server != nil && !pt.p.Server.ByAddress {
			spec.Params["dns_servers"], spec.Params["dns_source"] = fmt.Sprint(ep.DNS), dnsSource(ep, cmd)
		}
	}
	for _, f := range proto.Fields(o) {
		if v := cmd.Flags().Lookup(f.Flag); f.Flag != "" && f.Kind() != proto.KindList && v.Value.String() != "" {
			spec.Params[f.Name] = v.Value.String()
		}
	}
	o.Base().RacesFamilies = spec.RacesFamilies()
	for k, v := range o.Record() {
		spec.Params[k] = v
	}
	notes := o.Notes(spec.Paths)
	if pt.p.Command.Notes != nil {
		notes = append(notes, pt.p.Command.Notes()...)
	}
	exp := experiment.Single(spec, result.Hosts)
	var ov experiment.Override
	if cmd.Flags().Changed("spin") {
		ov.Spin = &pt.lf.spin
	}
	if cmd.Flags().Changed("sample-every") {
		ov.SampleEvery = &pt.lf.every
	}
	if err := exp.Override(ov); err != nil {
		return &exitError{code: 2, err: err}
	}
	dir, err := execute(cmd, measure.Job{Exp: exp, Probe: experiment.Probes(nil), Target: result.Hosts,
		Servers: map[string]string{name: proto.Or(strings.Join(servers, " "), pt.target)}, Notes: notes, Results: pt.lf.results})
	if pt.p.SingleTest && dir != "" && !quiet(cmd) {
		report.Intervals(cmd.OutOrStdout(), dir)
	}
	return err
}

// dnsSource says where the DNS servers of ep came from.
func dnsSource(ep proto.Endpoint, cmd *cobra.Command) string {
	switch {
	case len(ep.DNS) == 0:
		return "none (IP literal)"
	case cmd.Flags().Changed("dns-server"):
		return "--dns-server"
	}
	return "/etc/resolv.conf"
}
