// Package cli is v6lab survey's command: its flags, the lab of sites'
// namespace, the survey, and its errors typed for the exit code
// (cmd/v6lab maps them).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"v6lab/internal/proto"
	"v6lab/internal/report/sites"
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/run/survey"
	"v6lab/internal/run/survey/sitelab"
)

type surveyOpts struct {
	results, name, segment, startAt, resume, labSites, version string
	labName                                                    string
	dryRun                                                     bool
}

// Exit is an error with its exit code: 2 bad input, 130 interrupted, or
// the code of the re-run in the lab of sites' namespace, which said what
// went wrong itself (Err nil).
type Exit struct {
	Code int
	Err  error
}

// Error is "" when the re-run said what went wrong (nothing to print).
func (e *Exit) Error() string {
	if e.Err == nil {
		return ""
	}
	return e.Err.Error()
}

// ExitCode is the process's exit code.
func (e *Exit) ExitCode() int { return e.Code }

func (e *Exit) Unwrap() error { return e.Err }

// typed gives err its exit code.
func typed(err error) error {
	var bad *survey.InputError
	var cut *survey.InterruptedError
	switch {
	case errors.As(err, &bad):
		return &Exit{Code: 2, Err: err}
	case errors.As(err, &cut):
		return &Exit{Code: 130, Err: err}
	}
	return err
}

// IsSurvey says whether v6lab merge's first directory is a survey's.
func IsSurvey(dir string) bool { return survey.IsSurvey(dir) }

// Command is v6lab survey; version is the tool's, for results and the
// User-Agent. Its errors carry their exit codes (Exit).
func Command(version string) *cobra.Command {
	o := surveyOpts{version: version}
	cmd := &cobra.Command{
		Use:   "survey SITES",
		Short: "Who connects faster? Many sites, each measured over IPv4 and IPv6, a verdict each",
		Long:  survey.Help,
		Example: `  v6lab survey top1k.csv --contact mailto:me@example.org --runs 6
  v6lab survey --lab-sites docs/examples/lab.sites --threshold 5ms
  v6lab survey --resume results/top1k-20261126T190000Z`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return typed(o.run(cmd, args)) },
	}
	fl := cmd.Flags()
	proto.RegisterFlags(fl, survey.Defaults())
	fl.StringVar(&o.results, "results", "results", "directory that receives the result directory (made if missing; its parent must exist)")
	fl.StringVar(&o.name, "name", "", "name of the survey (default: the list's file name)")
	fl.StringVar(&o.segment, "segment", "", "survey segment `I/N` of the list: the sites i with i mod N = I")
	fl.StringVar(&o.startAt, "start-at", "", "start at `TIME` (RFC 3339)")
	fl.StringVar(&o.resume, "resume", "", "continue the interrupted survey in result directory `DIR`")
	fl.BoolVar(&o.dryRun, "dry-run", false, "check the list, the options and the exclusion list, say what the survey would do, and send nothing")
	fl.StringVar(&o.labSites, "lab-sites", "", "survey the lab of sites `FILE` lists, in a network namespace of its own (docs/survey.md)")
	fl.StringVar(&o.labName, "lab", "", "survey from the client host of kept lab `NAME`, which serves sites (v6lab lab up --sites FILE; docs/survey.md)")
	return cmd
}

// run runs the survey (in the lab of sites' namespace, re-running itself
// there first when --lab-sites is given).
func (o *surveyOpts) run(cmd *cobra.Command, args []string) error {
	if (o.labSites != "" || o.labName != "") && !sitelab.InNamespace() {
		return o.reexec()
	}
	j, err := o.job(cmd, args)
	if err != nil {
		return &survey.InputError{Err: err}
	}
	if o.labName != "" {
		j.Lab, j.Spec.Insecure = "lab:"+o.labName, true
	}
	if o.labSites != "" {
		l, err := sitelab.Up(o.labSites)
		if err != nil {
			return &survey.InputError{Err: err}
		}
		defer l.Close()
		j.Lab, j.Spec.Insecure = "sites:"+o.labSites, true
		for _, d := range l.DNS {
			j.Spec.DNSServers = append(j.Spec.DNSServers, d.String())
		}
	}
	if o.dryRun {
		return flagError(survey.DryRun(*j), j)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	_, err = survey.Run(ctx, *j)
	return flagError(err, j)
}

// flagError names a refused option by its flag (--site-conns), as the
// command line gave it, rather than by its file key.
func flagError(err error, j *survey.Job) error {
	var bad *survey.InputError
	if errors.As(err, &bad) {
		return &survey.InputError{Err: proto.FlagError(bad.Err, &j.Spec.Options)}
	}
	return err
}

// reexec runs the survey again where its lab of sites is: a network
// namespace of its own (--lab-sites), or a kept lab's client host (--lab).
func (o *surveyOpts) reexec() error {
	if o.labSites != "" && o.labName != "" {
		return &Exit{Code: 2, Err: errors.New("survey: give --lab-sites FILE (a lab of sites of its own) or --lab NAME (a kept lab's), not both")}
	}
	code, err := 0, error(nil)
	if o.labName != "" {
		if err := sitelab.CheckLab(o.labName); err != nil {
			return &Exit{Code: 2, Err: err}
		}
		code, err = sitelab.ReexecInLab(o.labName)
	} else {
		code, err = sitelab.Reexec()
	}
	if err == nil && code != 0 {
		return &Exit{Code: code}
	}
	return err
}

// spec is the survey of a survey file (its options, then the flags
// given over them) or of a list (the flags).
func (o *surveyOpts) spec(cmd *cobra.Command, list string) (*survey.Spec, error) {
	if survey.IsFile(list) {
		sp, err := survey.LoadFile(list)
		if err != nil {
			return nil, err
		}
		if o.name != "" {
			sp.Name = o.name
		}
		return sp, sp.Options.SetFlags(cmd.Flags())
	}
	opts := survey.Defaults()
	if err := opts.SetFlags(cmd.Flags()); err != nil {
		return nil, err
	}
	return survey.NewSpec(o.name, list, *opts)
}

// job reads the list, the flags, or the directory to resume.
func (o *surveyOpts) job(cmd *cobra.Command, args []string) (*survey.Job, error) {
	j := &survey.Job{Results: o.results, ToolVersion: o.version, Out: cmd.OutOrStdout(), Err: cmd.ErrOrStderr(), Quiet: quiet(cmd)}
	if o.resume != "" {
		return j, o.resumeJob(cmd, args, j)
	}
	list := o.labSites
	if len(args) == 1 {
		list = args[0]
	}
	if list == "" {
		return nil, errors.New("survey: give SITES, the list of sites (or --lab-sites FILE)")
	}
	sp, err := o.spec(cmd, list)
	if err != nil {
		return nil, err
	}
	j.Spec = sp
	if err := result.CheckRoot(o.results); err != nil {
		return nil, err
	}
	j.Segment, j.StartAt, err = survey.ParseSplit(o.segment, o.startAt)
	return j, err
}

// withResume are the flags --resume takes: the rest are the survey's
// own, which it continues with as it began.
var withResume = map[string]bool{"resume": true, "lab": true, "lab-sites": true, "dry-run": true, "quiet": true}

// resumeJob is the survey in the directory to resume, refusing a flag or
// a list it would not use, and asking for the lab of sites it measured.
func (o *surveyOpts) resumeJob(cmd *cobra.Command, args []string, j *survey.Job) error {
	if len(args) > 0 {
		return fmt.Errorf("survey: --resume continues %s with the list it began with: give no SITES (%s)", o.resume, args[0])
	}
	var bad []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !withResume[f.Name] {
			bad = append(bad, "--"+f.Name)
		}
	})
	if len(bad) > 0 {
		return fmt.Errorf("survey: --resume continues %s with the options it began with: %s cannot be given with it (start a new survey for other options)", o.resume, strings.Join(bad, ", "))
	}
	sp, seg, lab, err := survey.ResumableIn(o.resume)
	if err != nil {
		return err
	}
	j.Spec, j.Segment, j.Resume = sp, seg, o.resume
	return o.sameLab(lab, sp.Contact)
}

// sameLab asks for the lab of sites a resumed survey measured.
func (o *surveyOpts) sameLab(lab, contact string) error {
	kind, name, _ := strings.Cut(lab, ":")
	switch {
	case lab == "" && contact == "" && o.labName == "" && o.labSites == "":
		return fmt.Errorf("survey: %s names no contact, so it was taken in a lab of sites: give --lab NAME or --lab-sites FILE as it was begun", o.resume)
	case kind == "lab" && o.labName != name:
		return fmt.Errorf("survey: %s was taken in lab %s: give --lab %s", o.resume, name, name)
	case kind == "sites" && o.labSites == "":
		return fmt.Errorf("survey: %s was taken in a lab of sites of its own: give --lab-sites %s", o.resume, name)
	}
	return nil
}

func quiet(cmd *cobra.Command) bool {
	q, _ := cmd.Flags().GetBool("quiet")
	return q
}

// Merge is v6lab merge of a survey's segments (v6lab survey --segment I/N).
func Merge(cmd *cobra.Command, args []string, results, name string) error {
	dir, s, err := survey.Merge(args, results, name, os.Args)
	if err != nil {
		return &Exit{Code: 2, Err: err}
	}
	out := cmd.OutOrStdout()
	if !quiet(cmd) {
		if err := sites.Text(out, s); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintf(out, "merged %s: %s (samples.jsonl.zst, summary.json, report.txt, results.csv, report.html)\n", stats.Count(len(s.Merged), "segment"), dir)
	return nil
}

// Report is v6lab report of a survey's result directory: rewrite its
// reports (write), or render one to w (format text, json, csv or html).
func Report(w io.Writer, dir, format string, write bool) error {
	render := map[string]func(io.Writer, *sites.Summary) error{"text": sites.Text, "json": sites.JSON, "html": sites.HTML}[format]
	switch {
	case write:
		if _, err := sites.WriteAll(dir); err != nil {
			return err
		}
		fmt.Fprintf(w, "rewrote %s: %s, %s, %s, %s\n", dir, sites.SummaryFile, sites.TextFile, sites.CSVFile, sites.HTMLFile)
		return nil
	case format == "csv":
		_, err := sites.WriteCSV(w, dir)
		return err
	case render == nil:
		return &Exit{Code: 2, Err: fmt.Errorf("--format: %q is not text, json, csv or html", format)}
	}
	s, err := sites.Scan(dir, nil)
	if err != nil {
		return err
	}
	return render(w, s)
}

// Compare is v6lab compare of two surveys' result directories (either
// being one: cmd/v6lab asks IsSurvey), in format text or json.
func Compare(w io.Writer, a, b, format string) error {
	for _, d := range []string{a, b} {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			return &Exit{Code: 2, Err: fmt.Errorf("compare: %s does not exist", d)}
		}
		if !survey.IsSurvey(d) {
			return &Exit{Code: 2, Err: fmt.Errorf("compare: %s is not a survey's result: compare a survey with a survey", d)}
		}
	}
	v, err := sites.Compare(a, b)
	if err != nil {
		return err
	}
	if format == "json" {
		return sites.VersusJSON(w, v)
	}
	return sites.VersusText(w, v)
}
