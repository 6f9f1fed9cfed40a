package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"v6lab/internal/experiment"
	httpp "v6lab/internal/proto/http"
)

func newRunCmd() *cobra.Command {
	var lf loadFlags
	var objects int
	var loopback, keep, pcap bool
	var labChild, topology string
	var lflags labFlags
	cmd := &cobra.Command{
		Use:   "run [quick]",
		Short: "Run the main job: HTTP response time over IPv4 and IPv6 on embedded servers",
		Long: `run measures HTTP response time — a full page retrieval with its embedded objects,
including the DNS lookup of the server's name — against embedded HTTP and DNS servers.
Each cell (path x connection count) runs 11 times, paths interleaved run by run; the
first run is a warm-up. It prints the study's tables and writes a result directory.

As root it builds a lab (client, two routers, server; see v6lab lab --help) and measures
ipv4, ipv6 and 6in4 across the routers, proving each run's path on the wire; the lab is
removed afterwards unless --keep. Otherwise it measures ipv4 and ipv6 on loopback
(127.0.0.1 and ::1) and says so.`,
		Example: `  v6lab run
  v6lab run --conns 1,10,100,1000 --runs 21
  v6lab run --rate 100M --tunnel-mtu 1280
  v6lab run --loopback --quiet --results /tmp/v6`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if labChild != "" {
				return runLabChild(cmd, labChild)
			}
			if len(args) == 1 && args[0] != "quick" {
				return &exitError{code: 2, err: fmt.Errorf("unknown experiment %q: only the built-in \"quick\" exists so far", args[0])}
			}
			// The lab's settings are checked first, even when no lab will
			// be built, so a bad file or flag is never silently ignored.
			labCfg, err := lflags.config(cmd, topology, "run")
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			// A run's lab is its own: a kept lab of the file's name is
			// never touched.
			labCfg.Name = fmt.Sprintf("run%d", os.Getpid()%100000)
			if loopback && pcap {
				return &exitError{code: 2, err: fmt.Errorf("--pcap needs the lab; --loopback has no wire to capture")}
			}
			useLab := false
			if !loopback {
				if why := canLab(); why == nil {
					useLab = true
				} else if topology != "" || pcap {
					return fmt.Errorf("--topology and --pcap need a lab, but %v", why)
				} else if !quiet(cmd) {
					fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: no lab (%v): measuring ipv4 and ipv6 on loopback\n", why)
				}
			}
			if useLab && !cmd.Flags().Changed("paths") {
				lf.paths = "ipv4,ipv6,6in4"
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
			spec.Params = map[string]string{"page": fmt.Sprintf("%d bytes + %d objects of %d bytes", cfg.PageSize, cfg.Objects, cfg.ObjectSize),
				"dns": "embedded, query over the path's family"}
			if useLab {
				return runInLab(cmd, spec, labCfg, cfg, lf.results, keep, pcap)
			}
			local, err := experiment.StartLocal(cmd.Context(), spec.Paths, cfg)
			if err != nil {
				return err
			}
			defer local.Close()
			spec.Target = local.URL.String()
			_, err = execute(cmd, job{
				spec:      spec,
				probe:     experiment.HTTPProbes{URL: local.URL, Resolver: local.Resolver, Objects: true}.Probe,
				target:    "loopback",
				servers:   map[string]string{"http": "embedded (Go net/http)", "dns": "embedded (miekg/dns)"},
				notes:     []string{"ran on loopback (no lab): only ipv4 and ipv6 exist there"},
				serverFDs: 1,
				results:   lf.results,
			})
			return err
		},
	}
	lf.register(cmd, "1,10,100", 11)
	fl := cmd.Flags()
	fl.IntVar(&objects, "objects", httpp.DefaultServerConfig.Objects, "embedded objects on the served page")
	fl.BoolVar(&loopback, "loopback", false, "measure on loopback even when a lab could be built")
	fl.BoolVar(&keep, "keep", false, "leave the lab up after the run, for debugging")
	fl.BoolVar(&pcap, "pcap", false, "also write the measured packets (headers) seen by the lab's wire check to capture.pcap")
	fl.StringVar(&topology, "topology", "", "lab topology file (see docs/lab.md); default: the built-in lab")
	lflags.register(cmd, false)
	fl.StringVar(&labChild, "lab-child", "", "")
	_ = fl.MarkHidden("lab-child")
	return cmd
}
