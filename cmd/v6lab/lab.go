package main

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"v6lab/experiments"
	"v6lab/internal/lab"
	"v6lab/internal/lab/keep"
	"v6lab/internal/run/survey/sitelab"
)

func newLabCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Build, inspect and remove the namespace lab (client, two routers, server, 6in4 tunnel)",
		Long: `The lab is four network namespaces in a line — client, r1, r2, server — joined by veth
links that each carry IPv4 and IPv6 (documentation addresses), with a 6in4 tunnel between
the routers that carries the 6in4 path: IPv6 from client to server inside IPv4 protocol 41.
The tunnel is the kernel's sit device where the kernel has it, else v6lab's tc BPF programs
on the routers' link (the kernel datapath, as fast as sit), else a userspace tunnel (TUN
and a raw protocol-41 socket, much slower: it measures itself) kept by a background v6lab
process. Choose one with --tunnel. r1 also translates for the nat64 path (an IPv6-only
client) and the 464xlat path (a CLAT on the client), and r2 is the AFTR of the dslite path
(IPv4 in IPv6 from the client's B4): docs/lab.md. Needs root.`,
		Example: `  v6lab lab up
  v6lab lab up --name b --tunnel bpf --tunnel-mtu 1280
  v6lab lab up --name c --tunnel userspace
  v6lab lab status
  v6lab lab down --orphans
  v6lab lab down --all`,
	}
	cmd.AddCommand(newLabUpCmd(), newLabStatusCmd(), newLabDownCmd())
	return cmd
}

func newLabUpCmd() *cobra.Command {
	var lf labFlags
	var foreground bool
	var configJSON, sites string
	cmd := &cobra.Command{
		Use:   "up [TOPOLOGY.yaml]",
		Short: "Build a lab and keep it up until lab down",
		Long: `lab up builds the lab and returns once it is ready; a background v6lab process keeps it
(it holds the bpf or userspace tunnel) until lab down.

A topology file (see docs/lab.md) sets the lab's name, the tunnel, each link's rate,
queue limit, MTU, delay, jitter and loss, and r1's NAT64 (nat64: stateful shares a pool
by port, RFC 6146; its prefix, pool and ports); flags given on the command line win over it and
apply to every link. --rate shapes links in both directions with tc tbf; --loss uses netem
where the kernel has it, else a tc BPF program; --delay and --jitter need netem and fail
with a clear error where the kernel has none. --ptb-blackhole drops the ICMP errors path
MTU discovery needs and --fragments IP fragments, at the routers, per family, each
dropped packet counted (lab status); --tcp-mtu-probing and --mss-clamp are the
mitigations. They matter where a link is smaller than the hosts' (a topology's
links: {r1-r2: {mtu: 1400}}, as the built-in lab built-in:pmtu.yaml has): docs/lab.md,
"Path MTU".`,
		Example: `  v6lab lab up
  v6lab lab up my-topology.yaml
  v6lab lab up built-in:ipv6only.yaml          # the ipv6only preset's lab: a stateful NAT64
  v6lab lab up --name second --tunnel-mtu 1280
  v6lab lab up --rate 100M
  v6lab lab up built-in:pmtu.yaml --ptb-blackhole ipv6   # r1-r2 carries 1400 bytes
  v6lab lab up --sites docs/examples/lab.sites             # then: v6lab survey --lab default docs/examples/lab.sites`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if foreground {
				var cfg lab.Config
				if err := json.Unmarshal([]byte(configJSON), &cfg); err != nil {
					return fmt.Errorf("lab up --foreground: bad config: %w", err)
				}
				return keep.Hold(cmd.Context(), cfg, cmd.OutOrStdout(), sitelab.Serve)
			}
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			cfg, err := lf.config(file, "default")
			if err == nil && sites != "" {
				cfg.Sites, err = sitelab.Check(sites)
			}
			err = cmp.Or(err, lab.CheckKernel(cfg)) // what building it would refuse
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := keep.CanKeep(cfg.Name, cmd.ErrOrStderr(), quiet(cmd)); err != nil {
				return err
			}
			pid, ready, err := keep.Detach(cfg)
			if err == nil && !quiet(cmd) {
				fmt.Fprintf(cmd.OutOrStdout(), "lab %q is up (%s); process %d keeps it; remove it with: v6lab lab down --name %s\n",
					cfg.Name, ready, pid, cfg.Name)
			}
			return err
		},
	}
	lf.register(cmd, true)
	fl := cmd.Flags()
	fl.StringVar(&sites, "sites", "", "also serve the lab of sites `FILE` lists from the server host, their names in its DNS (docs/survey.md; then: v6lab survey --lab NAME FILE)")
	fl.BoolVar(&foreground, "foreground", false, "build the lab and hold it in this process until interrupted")
	fl.StringVar(&configJSON, "config-json", "", "the lab's config (with --foreground)")
	_ = fl.MarkHidden("foreground")
	_ = fl.MarkHidden("config-json")
	return cmd
}

// labFlags are the lab settings lab up and run share.
type labFlags struct{ lab.Flags }

func (f *labFlags) register(cmd *cobra.Command, withName bool) { f.Register(cmd.Flags(), withName) }

// config reads the topology file (if any) and lays the flags the user gave
// over it; flags apply to every link.
func (f *labFlags) config(file, defName string) (lab.Config, error) {
	cfg, err := experiments.Topology(file, defName)
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Override(f.Overrides())
}

func newLabDownCmd() *cobra.Command {
	var name string
	var all, orphans bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Remove a lab (or all of them), including ones a killed process left",
		Long: `lab down stops the lab's owner process and removes everything the lab's owner record
names: namespaces (with their links and tunnels), real-server daemons and their working
directories. Only the named lab is touched: lab "a" never matches lab "a-b". --orphans
removes every lab whose owner is gone and that was not kept, whoever made it (run and lab
up never do so unasked); not with --name (one orphan goes with its --name alone).`,
		Example: `  v6lab lab down
  v6lab lab down --name second
  v6lab lab down --orphans`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := keep.CheckDown(name, cmd.Flags().Changed("name"), all, orphans); err != nil {
				return &exitError{code: 2, err: err}
			}
			return keep.Remove(name, all, orphans, cmd.OutOrStdout(), quiet(cmd))
		},
	}
	cmd.Flags().StringVar(&name, "name", "default", "lab to remove (not with --orphans or --all)")
	cmd.Flags().BoolVar(&all, "all", false, "remove every v6lab lab on this machine")
	cmd.Flags().BoolVar(&orphans, "orphans", false, "remove every lab whose owner process is gone (left by a killed run or lab up)")
	cmd.MarkFlagsMutuallyExclusive("all", "orphans")
	return cmd
}

func newLabStatusCmd() *cobra.Command {
	var name string
	var all bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show labs: hosts, links, addresses, routes, shaping and the tunnel",
		Example: `  v6lab lab status --name default
  v6lab lab status --all     # also labs whose owner process is gone, and what they left`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name != "" {
				if err := lab.CheckName(name); err != nil {
					return &exitError{code: 2, err: err}
				}
			}
			return keep.Status(cmd.OutOrStdout(), name, all)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "lab to show (default: every lab)")
	cmd.Flags().BoolVar(&all, "all", false, "also list labs whose owner process is gone (orphans) and what they left")
	return cmd
}

// given is v when the user gave flag, else nil: an override that is set
// only when asked for.
func given[T any](cmd *cobra.Command, flag string, v *T) *T {
	if cmd.Flags().Changed(flag) {
		return v
	}
	return nil
}
