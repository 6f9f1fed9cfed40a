package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"v6lab/internal/report"
)

func newReportCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "report RESULTS_DIR",
		Short: "Re-render a result directory's tables from its raw samples",
		Long: `report recomputes every figure from RESULTS_DIR/samples.jsonl alone and prints it as
text (the study's tables), json (the summary.json format) or csv (results.csv). A samples
file cut off by a killed run is read up to its last complete line.`,
		Example: `  v6lab report results/quick-20261122T141949Z
  v6lab report results/quick-20261122T141949Z --format csv > quick.csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			render := map[string]func(*cobra.Command, *report.Summary) error{
				"text": func(c *cobra.Command, s *report.Summary) error { return report.Text(c.OutOrStdout(), s) },
				"json": func(c *cobra.Command, s *report.Summary) error { return report.JSON(c.OutOrStdout(), s) },
				"csv":  func(c *cobra.Command, s *report.Summary) error { return report.CSV(c.OutOrStdout(), s) },
			}[format]
			if render == nil {
				return &exitError{code: 2, err: fmt.Errorf("--format: %q is not text, json or csv", format)}
			}
			_, s, err := report.Load(args[0])
			if err != nil {
				return err
			}
			return render(cmd, s)
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text, json or csv")
	return cmd
}
