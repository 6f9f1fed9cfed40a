package main

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/spf13/cobra"

	"v6lab/internal/gen/traffic"
	"v6lab/internal/sock/path"
)

// DefaultTrafficPort is the port of `v6lab serve traffic`.
const DefaultTrafficPort = 5302

func newTrafficCmd() *cobra.Command {
	var level string
	var to []string
	var dur time.Duration
	cmd := &cobra.Command{
		Use:   "traffic --level C1B..C6B --to ADDR4 --to ADDR6",
		Short: "Generate background traffic (the Towson study's congestion levels) to traffic sinks",
		Long: `traffic sends the congestion level's 10 flows — per family four TCP flows (Poisson) and one
UDP flow (periodic), 90% TCP and 10% UDP, IPv4:IPv6 as the level says, 1460-byte payloads
over IPv4 and 1440 over IPv6 — to the sinks given with --to (v6lab serve traffic, port 5302
unless given), for --time, then prints what each flow offered and managed to send. A flow
that sent less than it offered was held back (congestion, or an overloaded generator).

Levels (Table I of the study): C1B, C2B, C3B at 75 Mbit/s with IPv4:IPv6 at 50:50, 25:75
and 75:25; C4B, C5B, C6B the same at 100 Mbit/s.`,
		Example: `  v6lab serve traffic --listen 0.0.0.0:5302 --listen [::]:5302     # on the far side
  v6lab traffic --level C2B --to 192.0.2.9 --to 2001:db8::9 --time 60s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := traffic.LevelByName(level)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			v4, v6, err := traffic.ParseSinks(to, DefaultTrafficPort)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--to: %w", err)}
			}
			if dur <= 0 || dur > traffic.MaxDuration {
				return &exitError{code: 2, err: fmt.Errorf("--time: want more than 0 and at most %v", traffic.MaxDuration)}
			}
			reps, err := traffic.Run(cmd.Context(), l.Flows(v4, v6, nil), dur)
			if err != nil {
				return err
			}
			return traffic.WriteReports(cmd.OutOrStdout(), l, reps)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&level, "level", "C1B", "congestion level: C1B to C6B")
	fl.StringArrayVar(&to, "to", nil, "traffic sink ADDR[:PORT], one per family (repeat)")
	fl.DurationVarP(&dur, "time", "t", 10*time.Second, "how long to send")
	return cmd
}

func newServeTrafficCmd() *cobra.Command {
	var listen []string
	cmd := &cobra.Command{
		Use:   "traffic",
		Short: "Receive background traffic and count it per flow",
		Long: `serve traffic receives v6lab traffic flows (TCP and UDP on one port) on every --listen
address until interrupted, then prints the bytes each flow delivered.`,
		Example: `  v6lab serve traffic --listen 0.0.0.0:5302 --listen [::]:5302`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addrs, port, err := path.ParseListen(listen)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			s, err := traffic.ListenSink(cmd.Context(), addrs, port)
			if err != nil {
				return err
			}
			for _, a := range addrs {
				fmt.Fprintf(cmd.OutOrStdout(), "serving traffic on %s\n", netip.AddrPortFrom(a, uint16(s.Port)))
			}
			waitSignal(cmd)
			s.Close()
			for id := 1; id <= traffic.MaxFlows; id++ {
				if n := s.Delivered(id); n > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "flow %d delivered %d bytes\n", id, n)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&listen, "listen", []string{"127.0.0.1:5302", "[::1]:5302"}, "ADDR:PORT to listen on (repeat; one port for all)")
	return cmd
}
