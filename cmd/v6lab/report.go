package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"v6lab/internal/report"
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/run/survey/cli"
)

var renderers = map[string]func(io.Writer, *report.Summary) error{
	"text": report.Text, "json": report.JSON, "csv": report.CSV, "html": report.HTML,
}

func newReportCmd() *cobra.Command {
	var format string
	var write bool
	cmd := &cobra.Command{
		Use:   "report RESULTS_DIR",
		Short: "Re-render a result directory's tables and plots from its raw samples",
		Long: `report recomputes every figure from RESULTS_DIR's samples alone (samples.jsonl.zst, or
samples.jsonl of older versions) and prints it as text (the study's tables), json, csv or html
(summary.json, results.csv, report.html: tables and plots in one page). --write refreshes all
four files in the directory instead. Memory grows with cells and runs, not samples. A file
cut off by a killed run is read up to its last complete line; one a running v6lab still
writes is "still being written by a running v6lab (pid N): figures so far".`,
		Example: `  v6lab report results/quick-20261122T141949Z
  v6lab report results/quick-20261122T141949Z --format csv > quick.csv
  v6lab report results/quick-20261122T141949Z --format html > /tmp/quick.html
  v6lab report results/quick-20261122T141949Z --write`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cli.IsSurvey(args[0]) {
				return cli.Report(cmd.OutOrStdout(), args[0], format, write)
			}
			render := renderers[format]
			if render == nil {
				return &exitError{code: 2, err: fmt.Errorf("--format: %q is not text, json, csv or html", format)}
			}
			if write {
				if _, err := report.WriteAll(args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "rewrote %s: %s, %s, %s, %s\n", args[0], report.SummaryFile, report.TextFile, report.CSVFile, report.HTMLFile)
				return nil
			}
			s, err := report.Open(args[0])
			if err != nil {
				return err
			}
			return render(cmd.OutOrStdout(), s)
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text, json, csv or html")
	cmd.Flags().BoolVar(&write, "write", false, "rewrite summary.json, report.txt, results.csv and report.html in RESULTS_DIR")
	return cmd
}

func newCompareCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "compare DIR_A DIR_B",
		Short: "Set two result sets side by side, cell by cell, with the difference and its significance",
		Long: `compare recomputes both result sets from their samples and, for every cell (protocol,
path, connections) the two share, prints A's and B's mean response time, B - A with its
95% CI, the confidence level that they differ (1 - Welch p over the run means) and the
Mann-Whitney p. Cells only one side has are listed; notes name the conditions that differ
(lab, machine, servers; per group HTTP version, engine, dialer, kept/resumed). Use it for "did the upgrade change
IPv6 performance?": run the same experiment before and after, then compare. Two surveys'
results (v6lab survey) are compared as surveys: each verdict's share and the study's
measures in A and B with B - A and its 95% CI, and the sites whose verdict changed.
Two paths to one result (one directory, a link to it, or a copy of its samples) are said
to be the same result, with no table (exit 0: no difference).`,
		Example: `  v6lab compare results/quick-before results/quick-after
  v6lab compare results/a results/b --format json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 2 {
				return fmt.Errorf("give two result directories, A then B (v6lab compare results/before results/after), not %s", stats.Count(len(args), "argument"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return &exitError{code: 2, err: fmt.Errorf("--format: %q is not text or json", format)}
			}
			v := report.SameVersus(args[0], args[1], result.Same(args[0], args[1]))
			if v.Same == "" && (cli.IsSurvey(args[0]) || cli.IsSurvey(args[1])) {
				return cli.Compare(cmd.OutOrStdout(), args[0], args[1], format)
			}
			if v.Same == "" {
				a, err := report.Open(args[0])
				if err != nil {
					return err
				}
				b, err := report.Open(args[1])
				if err != nil {
					return err
				}
				if v = report.CompareSummaries(args[0], a, args[1], b); len(v.Cells) == 0 {
					return fmt.Errorf("%s and %s share no cell (protocol, path and connection count)", args[0], args[1])
				}
			}
			if format == "json" {
				return report.VersusJSON(cmd.OutOrStdout(), v)
			}
			return report.VersusText(cmd.OutOrStdout(), v)
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text or json")
	return cmd
}
