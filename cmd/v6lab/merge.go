package main

import (
	"cmp"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"v6lab/internal/proto/all"
	"v6lab/internal/report"
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/run/merge"
	"v6lab/internal/run/survey/cli"
)

func newMergeCmd() *cobra.Command {
	var results, name string
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Join the result directories of a split run's segments into one result",
		Long: `merge joins the result directories of the segments of one split run (v6lab run
--segment I/N on N client hosts) into one new result directory. It checks first that
they are every segment of one experiment: the same spec and seed, the same N, each index
once, none missing, one --start-at schedule; otherwise it names what differs or is
missing. Every figure is computed from all segments' samples as if one host had run every
user (without a --start-at schedule, no rate/s: their runs were not at once); report.txt
and summary.json add each segment's counts and means (a slow client host shows there).
A run one segment never finished, or the segments did not run together, is left out, named.
A segment a running v6lab still writes is refused (exit 2): merge when its run ends.

A DIR that is not itself a result directory stands for every result directory in it
(as a shared volume holds them).`,
		Example: `  v6lab merge results/web-seg0-* results/web-seg1-* results/web-seg2-*
  v6lab merge /results/web-v6 --results /results --name web-v6-merged`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := merge.NotWritten(args); err != nil {
				return &exitError{code: 2, err: err}
			}
			if cli.IsSurvey(args[0]) {
				return cli.Merge(cmd, args, results, name)
			}
			segs, err := merge.Read(args)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := cmp.Or(merge.Check(segs), result.CheckRoot(results)); err != nil {
				return &exitError{code: 2, err: err}
			}
			dir, s, err := merge.Write(segs, results, name, all.RedactArgs(os.Args), time.Now())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !quiet(cmd) {
				if err := report.Text(out, s); err != nil {
					return err
				}
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "merged %s: %s (samples.jsonl.zst, summary.json, report.txt, results.csv, report.html)\n", stats.Count(len(segs), "segment"), dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&results, "results", "results", "directory that receives the merged result directory (made if missing; its parent must exist)")
	cmd.Flags().StringVar(&name, "name", "", "name of the merged result directory (default: the experiment's, with -merged)")
	return cmd
}
