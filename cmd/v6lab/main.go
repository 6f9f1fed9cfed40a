// Command v6lab measures whether applications perform the same over IPv4,
// native IPv6 and IPv6 tunneled in IPv4.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"v6lab/internal/lab/servers"
	"v6lab/internal/run/cmdline"
	"v6lab/internal/run/survey/cli"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// toolVersion adds the VCS revision when the binary carries one.
func toolVersion() string {
	v := version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
			if s.Key == "vcs.modified" && s.Value == "true" {
				v += "-dirty"
			}
		}
	}
	return v
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

func main() {
	root := newRoot()
	if err := root.Execute(); err != nil {
		code := 1
		var ee interface{ ExitCode() int } // exitError, survey's cli.Exit
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if !errors.Is(err, errSilent) && err.Error() != "" {
			fmt.Fprintln(os.Stderr, "v6lab:", err)
		}
		os.Exit(code)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "v6lab",
		Short: "Measure application performance over IPv4, IPv6 and IPv6-in-IPv4",
		Long: `v6lab runs the same transactions (HTTP, DNS, …) over each IP path, pinned to one
family and verified, repeats them in interleaved runs, keeps every raw sample, and
reports each path's difference from IPv4 with its confidence.`,
		Example: `  v6lab run                                  # the main job on embedded servers
  v6lab probe http https://example.org/ --conns 1,10 --runs 11
  v6lab probe dns www.example.org --server 192.0.2.53 --server 2001:db8::53
  v6lab serve http --listen 0.0.0.0:8080 --listen [::]:8080
  v6lab run mitre2004 --scale 0.1            # a built-in study (v6lab run --list)
  v6lab report results/quick-20261122T141949Z --format html > quick.html
  v6lab compare results/before results/after
  v6lab lab up study.yaml`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       toolVersion(),
	}
	root.PersistentFlags().BoolP("quiet", "q", false, "print only errors and the final location of results")
	root.PersistentFlags().String("cpuprofile", "", "write a CPU profile of the command to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if os.Getenv(usernsEnv) == "1" {
			if err := privateRun(); err != nil {
				return err
			}
			os.Setenv(usernsEnv, "private") // children (the lab's) keep this /run
		}
		if f, _ := cmd.Flags().GetString("cpuprofile"); f != "" {
			return startProfile(f)
		}
		return nil
	}
	root.PersistentPostRun = func(*cobra.Command, []string) { stopProfile() }
	root.AddCommand(newRunCmd(), newProbeCmd())
	root.AddCommand(topLevelProbes()...)
	root.AddCommand(newTrafficCmd(), newServeCmd(), newReportCmd(), newExportCmd(), newMergeCmd(), newCompareCmd(), newLabCmd(), cli.Command(toolVersion()))
	root.AddCommand(newInetdCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &exitError{code: 2, err: cmdline.FlagTypo(c, err)} })
	usageArgs(root)
	cmdline.Groups(root)
	return root
}

// usageArgs makes a wrong number of arguments a usage error (exit 2), like
// a bad flag.
func usageArgs(c *cobra.Command) {
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return &exitError{code: 2, err: err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}

func quiet(cmd *cobra.Command) bool {
	q, _ := cmd.Flags().GetBool("quiet")
	return q
}

// newInetdCmd is the inetd the lab runs real ProFTPD from (servers.InetdMain);
// hidden: v6lab starts it itself.
func newInetdCmd() *cobra.Command {
	return &cobra.Command{
		Use:                servers.InetdUsage,
		Short:              "Start a program for every TCP connection (the lab's inetd for real servers that need one)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if code := servers.InetdMain(args, os.Stderr); code != 0 {
				return &exitError{code: code, err: errSilent}
			}
			return nil
		},
	}
}
