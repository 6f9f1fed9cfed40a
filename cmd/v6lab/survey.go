package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"v6lab/internal/proto"
	"v6lab/internal/run/survey"
	"v6lab/internal/run/survey/sitelab"
)

type surveyOpts struct {
	results, name, segment, startAt, resume, labSites string
}

func newSurveyCmd() *cobra.Command {
	var o surveyOpts
	cmd := &cobra.Command{
		Use:   "survey SITES",
		Short: "Who connects faster? Many sites, each measured over IPv4 and IPv6, a verdict each",
		Long:  survey.Help,
		Example: `  v6lab survey top1k.csv --contact mailto:me@example.org --runs 6
  v6lab survey --lab-sites docs/examples/lab.sites --threshold 5ms
  v6lab survey --resume results/top1k-20261126T190000Z`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	fl := cmd.Flags()
	proto.RegisterFlags(fl, survey.Defaults())
	fl.StringVar(&o.results, "results", "results", "directory that receives the result directory")
	fl.StringVar(&o.name, "name", "", "name of the survey (default: the list's file name)")
	fl.StringVar(&o.segment, "segment", "", "survey segment `I/N` of the list: the sites i with i mod N = I")
	fl.StringVar(&o.startAt, "start-at", "", "start at `TIME` (RFC 3339)")
	fl.StringVar(&o.resume, "resume", "", "continue the interrupted survey in result directory `DIR`")
	fl.StringVar(&o.labSites, "lab-sites", "", "survey the lab of sites `FILE` lists, in a network namespace of its own (docs/survey.md)")
	return cmd
}

// run runs the survey (in the lab of sites' namespace, re-running itself
// there first when --lab-sites is given).
func (o *surveyOpts) run(cmd *cobra.Command, args []string) error {
	if o.labSites != "" && !sitelab.InNamespace() {
		code, err := sitelab.Reexec()
		if err == nil && code != 0 {
			return &exitError{code: code, err: errSilent}
		}
		return err
	}
	j, err := o.job(cmd, args)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if o.labSites != "" {
		l, err := sitelab.Up(o.labSites)
		if err != nil {
			return &exitError{code: 2, err: err}
		}
		defer l.Close()
		j.Lab, j.Spec.Insecure = "sites:"+o.labSites, true
		for _, d := range l.DNS {
			j.Spec.DNSServers = append(j.Spec.DNSServers, d.String())
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = survey.Run(ctx, *j)
	var ie *survey.InterruptedError
	var bad *survey.InputError
	switch {
	case errors.As(err, &ie):
		return &exitError{code: 130, err: err}
	case errors.As(err, &bad):
		return &exitError{code: 2, err: proto.FlagError(bad.Err, &j.Spec.Options)}
	}
	return err
}

// job reads the list, the flags, or the directory to resume.
func (o *surveyOpts) job(cmd *cobra.Command, args []string) (*survey.Job, error) {
	j := &survey.Job{Results: o.results, ToolVersion: toolVersion(), Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr(), Quiet: quiet(cmd)}
	if o.resume != "" {
		sp, seg, err := survey.Resumable(o.resume)
		j.Spec, j.Segment, j.Resume = sp, seg, o.resume
		return j, err
	}
	list := o.labSites
	if len(args) == 1 {
		list = args[0]
	}
	if list == "" {
		return nil, errors.New("survey: give SITES, the list of sites (or --lab-sites FILE)")
	}
	opts := survey.Defaults()
	if err := opts.SetFlags(cmd.Flags()); err != nil {
		return nil, err
	}
	sp, err := survey.NewSpec(o.name, list, *opts)
	if err != nil {
		return nil, err
	}
	j.Spec = sp
	j.Segment, j.StartAt, err = survey.ParseSplit(o.segment, o.startAt)
	return j, err
}
