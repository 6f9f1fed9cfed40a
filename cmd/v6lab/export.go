package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"v6lab/internal/report"
	"v6lab/internal/report/stats"
	"v6lab/internal/result"
	"v6lab/internal/run/cmdline"
)

func newExportCmd() *cobra.Command {
	var format, output string
	cmd := &cobra.Command{
		Use:   "export RESULTS_DIR",
		Short: "Write a result directory's samples as Parquet, for DuckDB, pandas or polars",
		Long: `export writes every sample of RESULTS_DIR as one row of a Parquet file (zstd pages),
one typed column per sample field (docs/formats.md), and counted: whether the sample's
run counts in the figures. It streams: its memory is one row group, whatever the number
of samples. The file goes to RESULTS_DIR/samples.parquet unless --output says otherwise;
it is a new file or an earlier export, never a result's own file (refused, exit 2).
A result a running v6lab still writes is refused (exit 2): export it when that run ends.
run --resume removes RESULTS_DIR/samples.parquet, which would lack the runs it adds, and
says so: export again when it ends.`,
		Example: `  v6lab export results/dns-20261126T154147Z
  duckdb -c "SELECT path, conns, avg(total_ns)/1e6 FROM 'results/dns-20261126T154147Z/samples.parquet' WHERE counted AND err = '' GROUP BY ALL"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "parquet" {
				return &exitError{code: 2, err: fmt.Errorf("--format: %q is not parquet, the one format export writes; the figures per cell as CSV are results.csv in the result directory (v6lab report DIR --format csv prints them)", format)}
			}
			name, err := result.SamplesPath(args[0])
			if err == nil {
				err = report.NotWritten(args[0], "export")
			}
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := checkExportOutput(output); err != nil {
				return err
			}
			if output == "" {
				output = filepath.Join(args[0], result.ParquetName)
			}
			if err := result.CheckParquetOutput(output, args[0]); err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--output: %w", err)}
			}
			rows, err := report.WriteParquet(name, output)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s to %s\n", stats.Count(rows, "sample"), output)
			return nil
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "parquet", "output format: parquet")
	cmd.Flags().StringVarP(&output, "output", "o", "", "file to write (default: RESULTS_DIR/samples.parquet)")
	return cmd
}

// checkExportOutput refuses, before the export starts, an --output that
// cannot be written as a file (cmdline.CheckOutputFile).
func checkExportOutput(output string) error {
	return cmdline.CheckOutputFile("output", output)
}
