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
		if t, ok := p.(proto.Targeted); ok && !t.Command().TopLevel {
			cmd.AddCommand(newProbeProtoCmd(p, t))
		}
	}
	return cmd
}

// probeNames lists the protocols of v6lab probe.
func probeNames() string {
	var n []string
	for _, p := range all.List {
		if t, ok := p.(proto.Targeted); ok && !t.Command().TopLevel {
			n = append(n, p.Name())
		}
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// topLevelProbes are the protocols measured by v6lab NAME (tcp, udp).
func topLevelProbes() []*cobra.Command {
	var out []*cobra.Command
	for _, p := range all.List {
		if t, ok := p.(proto.Targeted); ok && t.Command().TopLevel {
			out = append(out, newProbeProtoCmd(p, t))
		}
	}
	return out
}

// singleTest is a protocol whose cell is one test (a transport trial): no
// simultaneous users, no warm-up by default, a timeout that follows its
// length.
func singleTest(p proto.Protocol) bool {
	_, ok := p.(interface{ SingleTest() bool })
	return ok
}

// newProbeProtoCmd is v6lab probe NAME ARG, built from the protocol's
// Command: its flags set the cell's options, which the protocol checks as
// it checks an experiment file's.
func newProbeProtoCmd(p proto.Protocol, t proto.Targeted) *cobra.Command {
	c := t.Command()
	var lf loadFlags
	nargs := cobra.ExactArgs(1)
	if strings.HasSuffix(c.Arg, "...") {
		nargs = cobra.MinimumNArgs(1)
	}
	cmd := &cobra.Command{
		Use: p.Name() + " " + c.Arg, Short: c.Short, Long: c.Long, Example: c.Example,
		Args: nargs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var o proto.Options
			for _, a := range args {
				t.SetArg(&o, a)
			}
			if err := setOptions(cmd, c.Flags, o.Set); err != nil {
				return &exitError{code: 2, err: err}
			}
			return probeTarget{lf: &lf, p: p, target: strings.Join(args, " "), opts: o, flags: c.Flags}.run(cmd)
		},
	}
	if singleTest(p) {
		lf.registerTrial(cmd)
	} else {
		lf.register(cmd, "1,10,100", 11)
	}
	registerFlags(cmd, c.Flags)
	return cmd
}

// registerFlags declares a protocol's flags.
func registerFlags(cmd *cobra.Command, flags []proto.Flag) {
	fl := cmd.Flags()
	for _, f := range flags {
		switch f.Kind {
		case proto.KindBool:
			fl.BoolP(f.Name, f.Short, f.Default == "true", f.Usage)
		case proto.KindInt:
			n, _ := strconv.Atoi(f.Default)
			fl.IntP(f.Name, f.Short, n, f.Usage)
		case proto.KindDuration:
			d, _ := time.ParseDuration(f.Default)
			fl.DurationP(f.Name, f.Short, d, f.Usage)
		case proto.KindList:
			fl.StringArrayP(f.Name, f.Short, nil, f.Usage)
		default:
			fl.StringP(f.Name, f.Short, f.Default, f.Usage)
		}
	}
}

// setOptions hands each flag's value (its default unless given; a list
// only when given) to set, by option name.
func setOptions(cmd *cobra.Command, flags []proto.Flag, set func(option, v string) error) error {
	for _, f := range flags {
		var vals []string
		if f.Kind == proto.KindList {
			vals, _ = cmd.Flags().GetStringArray(f.Name)
		} else {
			vals = []string{cmd.Flags().Lookup(f.Name).Value.String()}
		}
		for _, v := range vals {
			if err := set(f.Option, v); err != nil {
				return flagError(err, flags)
			}
		}
	}
	return nil
}

// probeTarget is a probe command's measurement of a server it names: the
// cell's options checked by the protocol, every path's server found, then
// run.
type probeTarget struct {
	lf     *loadFlags
	p      proto.Protocol
	target string
	opts   proto.Options
	flags  []proto.Flag
}

func (pt probeTarget) run(cmd *cobra.Command) error {
	name := pt.p.Name()
	o := pt.opts
	given := func(opt string) bool {
		i := slices.IndexFunc(pt.flags, func(f proto.Flag) bool { return f.Option == opt })
		return i >= 0 && cmd.Flags().Changed(pt.flags[i].Name)
	}
	if paths, err := path.ParseList(pt.lf.paths); err == nil { // a bad list is the spec's error
		o.RacesFamilies = (&experiment.Spec{Paths: paths}).RacesFamilies()
	}
	if err := pt.p.Check(&o, "hosts", given); err != nil {
		return &exitError{code: 2, err: flagError(err, pt.flags)}
	}
	if o.Test != nil && !cmd.Flags().Changed("timeout") {
		pt.lf.timeout = o.Test.Omit + o.Test.Duration + 30*time.Second // a trial's follows its length
	}
	spec, err := pt.lf.spec(name, name, pt.target)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	spec.Options = o
	for _, p := range spec.Paths {
		if err := experiment.ProtocolPathFits(p, name, &spec.Options, "hosts"); err != nil {
			return &exitError{code: 2, err: flagError(err, pt.flags)}
		}
	}
	if singleTest(pt.p) {
		spec.Conns = []int{1}
	}
	var servers []string
	spec.Params = map[string]string{}
	for _, path := range spec.Paths {
		ep, err := pt.p.Target(&spec.Options, path)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("path %s: %w", path, err)}
		}
		if s := net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)); ep.Port != 0 && !slices.Contains(servers, s) {
			servers = append(servers, s)
		}
		if _, named := spec.Params["dns_source"]; !named && slices.ContainsFunc(pt.flags, func(f proto.Flag) bool { return f.Name == "dns-server" }) {
			spec.Params["dns_servers"], spec.Params["dns_source"] = fmt.Sprint(ep.DNS), dnsSource(ep, spec.Options)
		}
	}
	for _, f := range pt.flags {
		if v := cmd.Flags().Lookup(f.Name).Value.String(); f.Kind != proto.KindList && v != "" {
			spec.Params[f.Option] = v
		}
	}
	if r, ok := pt.p.(interface {
		Record(o *proto.Options) map[string]string
	}); ok {
		spec.Options.RacesFamilies = spec.RacesFamilies()
		for k, v := range r.Record(&spec.Options) {
			spec.Params[k] = v
		}
	}
	var notes []string
	if n, ok := pt.p.(interface{ Notes() []string }); ok {
		notes = n.Notes()
	}
	exp := experiment.Single(spec, "hosts")
	var ov experiment.Override
	if cmd.Flags().Changed("spin") {
		ov.Spin = &pt.lf.spin
	}
	if err := exp.Override(ov); err != nil {
		return &exitError{code: 2, err: err}
	}
	dir, err := execute(cmd, measure.Job{Exp: exp, Probe: experiment.Probes(nil), Target: "remote",
		Servers: map[string]string{name: proto.Or(strings.Join(servers, " "), pt.target)}, Notes: notes, Results: pt.lf.results})
	if singleTest(pt.p) && dir != "" && !quiet(cmd) {
		report.Intervals(cmd.OutOrStdout(), dir)
	}
	return err
}

// dnsSource says where the DNS servers of ep came from.
func dnsSource(ep proto.Endpoint, o proto.Options) string {
	switch {
	case len(ep.DNS) == 0:
		return "none (IP literal)"
	case len(o.DNSServers) > 0:
		return "--dns-server"
	}
	return "/etc/resolv.conf"
}

// flagError names the flag of a bad option.
func flagError(err error, flags []proto.Flag) error {
	oe, ok := proto.AsOptionError(err)
	if ok && len(oe.Need) > 0 {
		var need []string
		for _, f := range flags {
			if slices.Contains(oe.Need, f.Option) {
				need = append(need, "--"+f.Name)
			}
		}
		if len(need) > 0 {
			return fmt.Errorf("%s %s required (%s)", strings.Join(need, " and "), map[bool]string{true: "is", false: "are"}[len(need) == 1], oe.Why)
		}
	}
	if !ok || oe.Option == "" {
		return err
	}
	name, _, _ := strings.Cut(oe.Option, "[")
	for _, f := range flags {
		if f.Option == name {
			return fmt.Errorf("--%s: %w", f.Name, oe.Err)
		}
	}
	return err
}
