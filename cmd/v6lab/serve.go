package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
)

func waitSignal(cmd *cobra.Command) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(ch)
	select {
	case <-ch:
	case <-cmd.Context().Done():
	}
}

// serveEmbedded runs an embedded server on the --listen addresses until
// interrupted (proto.Server.Serve: the one way every server starts, here,
// in a lab and in tests), with the command's settings.
func serveEmbedded(cmd *cobra.Command, srv *proto.Server, listen []string, settings any, verbose bool) error {
	addrs, port, err := path.ParseListen(listen)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	at := proto.Place{ListenOn: addrs, Port: port, Name: experiment.LocalName, Settings: settings}
	if verbose {
		at.Log = cmd.ErrOrStderr()
	}
	r, err := srv.Serve(cmd.Context(), at)
	if err != nil {
		if oe, ok := proto.AsOptionError(err); ok && oe.Option != "" {
			return &exitError{code: 2, err: proto.FlagError(err, settings)}
		}
		return err
	}
	for _, l := range proto.Announce(srv.Key, r) {
		fmt.Fprintln(cmd.OutOrStdout(), l)
	}
	waitSignal(cmd)
	err = r.Close()
	if s, ok := r.(proto.Summarized); ok {
		fmt.Fprintln(cmd.OutOrStdout(), s.Summary())
	}
	return err
}

func newServeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run an embedded server (" + strings.Join(all.ServeKeys(), ", ") + ", traffic) for tests between two hosts",
		Example: `  v6lab serve http --listen 0.0.0.0:8080 --listen [::]:8080
  v6lab serve dns --listen 192.0.2.1:53 --listen [2001:db8::1]:53 --record www.lab.test=192.0.2.1 --record www.lab.test=2001:db8::1`,
	}
	for _, s := range all.Servers {
		if s.Command.Short != "" {
			cmd.AddCommand(newServeProtoCmd(s))
		}
	}
	cmd.AddCommand(newServeTrafficCmd())
	return cmd
}

// newServeProtoCmd is v6lab serve KEY, built from the server's command and
// its settings' tags.
func newServeProtoCmd(s *proto.Server) *cobra.Command {
	c := s.Command
	var listen []string
	var verbose bool
	cmd := &cobra.Command{
		Use: s.Key, Short: c.Short, Long: c.Long, Example: c.Example,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var settings any
			if s.Settings != nil {
				settings = s.Settings()
				if c.Require != "" {
					if f, _ := proto.FieldOf(settings, c.Require); !cmd.Flags().Changed(f.Flag) {
						return &exitError{code: 2, err: fmt.Errorf("--%s is required", f.Flag)}
					}
				}
				if err := proto.ApplyFlags(cmd.Flags(), settings); err != nil {
					return &exitError{code: 2, err: err}
				}
			}
			return serveEmbedded(cmd, s, listen, settings, verbose)
		},
	}
	cmd.Flags().StringArrayVar(&listen, "listen", c.Listen, "ADDR:PORT to listen on (repeat; one port for all)")
	if c.Verbose != "" {
		cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, c.Verbose)
	}
	if s.Settings != nil {
		proto.RegisterFlags(cmd.Flags(), s.Settings())
	}
	return cmd
}
