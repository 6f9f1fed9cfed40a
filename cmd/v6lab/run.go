package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"v6lab/internal/experiment"
	httpp "v6lab/internal/proto/http"
)

func newRunCmd() *cobra.Command {
	var lf loadFlags
	var objects int
	cmd := &cobra.Command{
		Use:   "run [quick]",
		Short: "Run the main job: HTTP response time over IPv4 and IPv6 on embedded servers",
		Long: `run measures HTTP response time — a full page retrieval with its embedded objects,
including the DNS lookup of the server's name — over IPv4 and IPv6, against embedded
HTTP and DNS servers on the loopback addresses (127.0.0.1 and ::1). Each cell
(path x connection count) runs 11 times, paths interleaved run by run; the first run
is a warm-up. It prints the study's tables and writes a result directory.`,
		Example: `  v6lab run
  v6lab run --conns 1,10,100,1000 --runs 21
  v6lab run --quiet --results /tmp/v6`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && args[0] != "quick" {
				return &exitError{code: 2, err: fmt.Errorf("unknown experiment %q: only the built-in \"quick\" exists so far", args[0])}
			}
			spec, err := lf.spec("quick", "http", "")
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if objects < 0 {
				return &exitError{code: 2, err: fmt.Errorf("--objects must not be negative")}
			}
			cfg := httpp.DefaultServerConfig
			cfg.Objects = objects
			local, err := experiment.StartLocal(cmd.Context(), spec.Paths, cfg)
			if err != nil {
				return err
			}
			defer local.Close()
			spec.Target = local.URL.String()
			spec.Params = map[string]string{"page": fmt.Sprintf("%d bytes + %d objects of %d bytes", cfg.PageSize, cfg.Objects, cfg.ObjectSize),
				"dns": "embedded, query over the path's family"}
			_, err = execute(cmd, job{
				spec:      spec,
				probe:     experiment.HTTPProbes{URL: local.URL, Resolver: local.Resolver, Objects: true}.Probe,
				target:    "loopback",
				servers:   map[string]string{"http": "embedded (Go net/http)", "dns": "embedded (miekg/dns)"},
				notes:     []string{"ran on loopback: the lab is not available yet, so only ipv4 and ipv6 are measured"},
				serverFDs: 1,
				results:   lf.results,
			})
			return err
		},
	}
	lf.register(cmd, "1,10,100", 11)
	cmd.Flags().IntVar(&objects, "objects", httpp.DefaultServerConfig.Objects, "embedded objects on the served page")
	return cmd
}
