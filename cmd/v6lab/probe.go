package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/report"
	"v6lab/internal/run"
)

func newProbeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Measure a real host: " + all.ProbeNames() + " transactions over each path",
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
	nargs := func(_ *cobra.Command, args []string) error {
		if len(args) == 0 || len(args) > 1 && !strings.HasSuffix(c.Arg, "...") {
			return fmt.Errorf("give one %s (v6lab probe %s %s; --help has examples), not %d arguments", strings.TrimSuffix(c.Arg, "..."), p.Name, c.Arg, len(args))
		}
		return nil
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
		lf.registerTrial(cmd, p.Races)
	} else {
		lf.register(cmd, "1,10,100", 11, p.Races)
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
	fl := cmd.Flags()
	pr := run.Probe{Protocol: pt.p, Options: pt.opts, Load: pt.lf.Load, TimeoutGiven: fl.Changed("timeout"), Target: pt.target,
		Given: proto.GivenFlags(fl, pt.opts), Params: proto.FlagParams(fl, pt.opts), DNSFlag: fl.Changed("dns-server"), Results: pt.lf.results}
	if fl.Changed("spin") {
		pr.Override.Spin = &pt.lf.spin
	}
	if fl.Changed("sample-every") {
		pr.Override.SampleEvery = &pt.lf.every
	}
	job, err := pr.Job()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	dir, err := execute(cmd, job)
	if pt.p.SingleTest && dir != "" && !quiet(cmd) {
		report.Intervals(cmd.OutOrStdout(), dir)
	}
	return err
}
