package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"v6lab/experiments"
	"v6lab/internal/lab"
	"v6lab/internal/units"
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
process. Choose one with --tunnel. Needs root.`,
		Example: `  v6lab lab up
  v6lab lab up --name b --tunnel bpf --tunnel-mtu 1280
  v6lab lab up --name c --tunnel userspace
  v6lab lab status
  v6lab lab down --all`,
	}
	cmd.AddCommand(newLabUpCmd(), newLabStatusCmd(), newLabDownCmd())
	return cmd
}

func newLabUpCmd() *cobra.Command {
	var lf labFlags
	var foreground bool
	var configJSON string
	cmd := &cobra.Command{
		Use:   "up [TOPOLOGY.yaml]",
		Short: "Build a lab and keep it up until lab down",
		Long: `lab up builds the lab and returns once it is ready; a background v6lab process keeps it
(it holds the bpf or userspace tunnel) until lab down.

A topology file (see docs/lab.md) sets the lab's name, the tunnel, and each link's rate,
queue limit, MTU, delay, jitter and loss; flags given on the command line win over it and
apply to every link. --rate shapes links in both directions with tc tbf; --loss uses netem
where the kernel has it, else a tc BPF program; --delay and --jitter need netem and fail
with a clear error where the kernel has none.`,
		Example: `  v6lab lab up
  v6lab lab up my-topology.yaml
  v6lab lab up --name second --tunnel-mtu 1280
  v6lab lab up --rate 100M`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if foreground {
				var cfg lab.Config
				if err := json.Unmarshal([]byte(configJSON), &cfg); err != nil {
					return fmt.Errorf("lab up --foreground: bad config: %w", err)
				}
				return labForeground(cmd, cfg)
			}
			file := ""
			if len(args) == 1 {
				file = args[0]
			}
			cfg, err := lf.config(cmd, file, "default")
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if os.Geteuid() != 0 {
				return fmt.Errorf("%w to keep a lab for other commands; you are uid %d (without root, v6lab run builds a private lab for the run alone in a user namespace)", lab.ErrPrivilege, os.Geteuid())
			}
			if reaped, err := lab.Reap(); err == nil && len(reaped) > 0 && !quiet(cmd) {
				fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: removed labs left by killed processes: %v\n", reaped)
			}
			if pid := lab.Owner(cfg.Name); pid != 0 {
				return fmt.Errorf("lab %q is already up (process %d); run v6lab lab down --name %s first", cfg.Name, pid, cfg.Name)
			}
			return labDetach(cmd, cfg)
		},
	}
	lf.register(cmd, true)
	fl := cmd.Flags()
	fl.BoolVar(&foreground, "foreground", false, "build the lab and hold it in this process until interrupted")
	fl.StringVar(&configJSON, "config-json", "", "the lab's config (with --foreground)")
	_ = fl.MarkHidden("foreground")
	_ = fl.MarkHidden("config-json")
	return cmd
}

// builtinLab prefixes the topology of a built-in experiment (experiments/labs).
const builtinLab = "built-in:"

// labFlags are the lab settings lab up and run share.
type labFlags struct {
	hasName                        bool // --name is the lab's (lab up), not the results' (run)
	name, tunnel, rate, queueLimit string
	congestion                     string
	tunnelMTU                      int
	delay, jitter                  time.Duration
	loss                           float64
	bareServer                     bool
}

func (f *labFlags) register(cmd *cobra.Command, withName bool) {
	fl := cmd.Flags()
	f.hasName = withName
	if withName {
		fl.StringVar(&f.name, "name", "default", "lab name (namespaces are v6lab-NAME-ROLE)")
	}
	fl.IntVar(&f.tunnelMTU, "tunnel-mtu", lab.DefaultTunnelMTU, "MTU of the lab's 6in4 tunnel (1280 to 1480)")
	fl.StringVar(&f.tunnel, "tunnel", "auto", "6in4 implementation: auto, sit, bpf or userspace (auto: sit where the kernel has it, else bpf, else userspace)")
	fl.StringVar(&f.rate, "rate", "", "shape every lab link to this rate (e.g. 10M, 100M); default unshaped")
	fl.StringVar(&f.queueLimit, "queue-limit", "", "queue limit of each shaped link, bytes (e.g. 64K; default: 50 ms of the rate)")
	fl.DurationVar(&f.delay, "delay", 0, "one-way delay added by each link (needs netem)")
	fl.DurationVar(&f.jitter, "jitter", 0, "jitter around --delay (needs netem)")
	fl.Float64Var(&f.loss, "loss", 0, "packet loss in percent on each link (netem where the kernel has it, else tc BPF)")
	fl.StringVar(&f.congestion, "congestion", lab.DefaultCongestion, "TCP congestion control of every lab host (cubic, reno, bbr, …; the kernel's available ones)")
	fl.BoolVar(&f.bareServer, "bare-server", false, "turn SACK, timestamps and window scaling off in the server host (the Towson study's bare-PC server)")
}

// config reads the topology file (if any) and lays the flags the user gave
// over it; flags apply to every link.
func (f *labFlags) config(cmd *cobra.Command, file, defName string) (lab.Config, error) {
	cfg := lab.Config{Name: defName, TunnelMTU: lab.DefaultTunnelMTU}
	if file != "" {
		var err error
		if name, ok := strings.CutPrefix(file, builtinLab); ok {
			var data []byte
			if data, err = experiments.Lab(name); err == nil {
				cfg, err = lab.ParseTopology("built-in lab "+name, data)
			}
		} else {
			cfg, err = lab.LoadTopology(file)
		}
		if err != nil {
			return cfg, err
		}
		if cfg.Name == "" {
			cfg.Name = defName
		}
	}
	ch := cmd.Flags().Changed
	if f.hasName && ch("name") {
		cfg.Name = f.name
	}
	if ch("tunnel-mtu") {
		cfg.TunnelMTU = f.tunnelMTU
	}
	if ch("tunnel") {
		cfg.Tunnel = f.tunnel
	}
	if ch("bare-server") {
		cfg.BareServer = f.bareServer
	}
	if ch("congestion") {
		cfg.Congestion = f.congestion
	}
	var set []func(*lab.Shaping)
	if ch("rate") {
		r, err := units.ParseRate(f.rate)
		if err != nil {
			return cfg, fmt.Errorf("--rate: %w", err)
		}
		set = append(set, func(s *lab.Shaping) { s.Rate = r })
	}
	if ch("queue-limit") {
		q, err := units.ParseSize(f.queueLimit)
		if err != nil || q > 1<<30 {
			return cfg, fmt.Errorf("--queue-limit: want bytes up to 1G such as 64K, not %q", f.queueLimit)
		}
		set = append(set, func(s *lab.Shaping) { s.QueueLimit = uint32(q) })
	}
	if ch("delay") {
		set = append(set, func(s *lab.Shaping) { s.Delay = f.delay })
	}
	if ch("jitter") {
		set = append(set, func(s *lab.Shaping) { s.Jitter = f.jitter })
	}
	if ch("loss") {
		set = append(set, func(s *lab.Shaping) { s.Loss = f.loss })
	}
	for _, fn := range set {
		fn(&cfg.Shaping)
		for name, l := range cfg.Links {
			fn(&l.Shaping)
			cfg.Links[name] = l
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// labDetach starts `lab up --foreground` as a detached process and waits
// until it says the lab is ready (or why it failed).
func labDetach(cmd *cobra.Command, cfg lab.Config) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(lab.StateDir, 0o755); err != nil {
		return err
	}
	logName, err := lab.LogFile(cfg.Name)
	if err != nil {
		return err
	}
	logf, err := os.Create(logName)
	if err != nil {
		return err
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	args := []string{"lab", "up", "--foreground", "--config-json", string(b)}
	c := exec.Command(exe, args...)
	c.Stdout, c.Stderr = logf, logf
	c.ExtraFiles = []*os.File{w} // fd 3: the ready line
	c.Env = append(os.Environ(), "V6LAB_READY_FD=3")
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return err
	}
	w.Close()
	line, _ := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
	r.Close()
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "ready") {
		c.Wait()
		if line == "" {
			line = "the lab process exited without a word; see " + logName
		}
		return errors.New(strings.TrimPrefix(line, "error: "))
	}
	pid := c.Process.Pid
	c.Process.Release()
	if !quiet(cmd) {
		fmt.Fprintf(cmd.OutOrStdout(), "lab %q is up (%s); process %d keeps it; remove it with: v6lab lab down --name %s\n",
			cfg.Name, strings.TrimSpace(strings.TrimPrefix(line, "ready")), pid, cfg.Name)
	}
	return nil
}

func labForeground(cmd *cobra.Command, cfg lab.Config) error {
	var ready *os.File
	if os.Getenv("V6LAB_READY_FD") == "3" {
		ready = os.NewFile(3, "ready")
	}
	say := func(s string) {
		if ready != nil {
			fmt.Fprintln(ready, s)
			ready.Close()
			ready = nil
		}
	}
	l, err := lab.Up(cmd.Context(), cfg)
	if err != nil {
		say("error: " + err.Error())
		return err
	}
	defer l.Close()
	fmt.Fprintf(cmd.OutOrStdout(), "%s lab %q up, tunnel %s, MTU %d\n", time.Now().UTC().Format(time.RFC3339), cfg.Name, l.TunnelImpl, l.TunnelMTU)
	say("ready tunnel " + l.TunnelImpl + ", MTU " + fmt.Sprint(l.TunnelMTU))
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case <-cmd.Context().Done():
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s lab %q going down\n", time.Now().UTC().Format(time.RFC3339), cfg.Name)
	return nil
}

func newLabDownCmd() *cobra.Command {
	var name string
	var all bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Remove a lab (or all of them), including ones a killed process left",
		Long: `lab down stops the lab's owner process and removes everything the lab's owner record
names: namespaces (with their links and tunnels), real-server daemons and their working
directories. Only the named lab is touched: lab "a" never matches lab "a-b".`,
		Example: `  v6lab lab down
  v6lab lab down --name second
  v6lab lab down --all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lab.CheckName(name); err != nil {
				return &exitError{code: 2, err: err}
			}
			if os.Geteuid() != 0 {
				return fmt.Errorf("%w; you are uid %d", lab.ErrPrivilege, os.Geteuid())
			}
			names := []string{name}
			if all {
				var err error
				if names, err = lab.Names(); err != nil {
					return err
				}
			} else if !cmd.Flags().Changed("name") && !labExists(name) {
				if hint := orphanHint(); hint != "" {
					return fmt.Errorf("lab %q is not up; %s", name, hint)
				}
			}
			var errs []error
			for _, n := range names {
				if err := labDown(n); err != nil {
					errs = append(errs, err)
				} else if !quiet(cmd) {
					fmt.Fprintf(cmd.OutOrStdout(), "lab %q is down\n", n)
				}
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().StringVar(&name, "name", "default", "lab to remove")
	cmd.Flags().BoolVar(&all, "all", false, "remove every v6lab lab on this machine")
	return cmd
}

// labExists says whether lab name has a namespace or an owner record.
func labExists(name string) bool {
	names, _ := lab.Names()
	return slices.Contains(names, name)
}

// orphanHint names the labs a plain lab down could have meant: those whose
// owner is gone.
func orphanHint() string {
	orphans, _ := lab.Orphans()
	switch len(orphans) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("one lab is left without its owner process: %q; remove it with v6lab lab down --name %s", orphans[0].Name, orphans[0].Name)
	}
	var ns []string
	for _, o := range orphans {
		ns = append(ns, o.Name)
	}
	return fmt.Sprintf("labs left without their owner process: %s; remove one with v6lab lab down --name NAME, or all with --all", strings.Join(ns, ", "))
}

// labDown stops the lab's owner (which tears the lab down), then removes
// whatever its record still names.
func labDown(name string) error {
	if pid := lab.Owner(name); pid != 0 {
		syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 50 && lab.Owner(name) == pid; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return lab.Down(name)
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
			out := cmd.OutOrStdout()
			names := []string{name}
			if name != "" {
				if err := lab.CheckName(name); err != nil {
					return &exitError{code: 2, err: err}
				}
			} else {
				var err error
				if names, err = lab.Names(); err != nil {
					return err
				}
				if len(names) == 0 {
					fmt.Fprintln(out, "no lab is up (v6lab lab up builds one)")
					return nil
				}
			}
			orphans, _ := lab.Orphans()
			for _, n := range names {
				if o := orphanNamed(orphans, n); o != nil {
					if !all && name == "" && !o.Kept {
						continue
					}
					printOrphan(out, o)
					if len(o.Namespaces) == 0 {
						continue
					}
				}
				st, err := lab.Inspect(n)
				if err != nil {
					return err
				}
				printStatus(out, st)
			}
			if !all && name == "" {
				n := 0
				for _, o := range orphans {
					if !o.Kept {
						n++
					}
				}
				if n > 0 {
					fmt.Fprintf(out, "%d lab(s) without an owner process are not shown: v6lab lab status --all\n", n)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "lab to show (default: every lab)")
	cmd.Flags().BoolVar(&all, "all", false, "also list labs whose owner process is gone (orphans) and what they left")
	return cmd
}

func orphanNamed(os []lab.Orphan, name string) *lab.Orphan {
	for i := range os {
		if os[i].Name == name {
			return &os[i]
		}
	}
	return nil
}

// printOrphan shows what a lab without a live owner left behind.
func printOrphan(w io.Writer, o *lab.Orphan) {
	why := "no owner record"
	if o.PID != 0 {
		why = fmt.Sprintf("owner process %d is gone", o.PID)
	}
	if o.Kept {
		why += ", kept on purpose (run --keep)"
	}
	fmt.Fprintf(w, "lab %q: orphan (%s); remove it with v6lab lab down --name %s\n", o.Name, why, o.Name)
	if len(o.Namespaces) > 0 {
		fmt.Fprintf(w, "  namespaces: %s\n", strings.Join(o.Namespaces, ", "))
	}
	for _, d := range o.Daemons {
		fmt.Fprintf(w, "  daemon: %s (pid %d)\n", d.What, d.PID)
	}
	for _, d := range o.Dirs {
		fmt.Fprintf(w, "  directory: %s\n", d)
	}
}

func printStatus(w io.Writer, st *lab.Status) {
	owner := "no process (a userspace tunnel is down; run v6lab lab down and up again)"
	if st.Owner != 0 {
		owner = fmt.Sprintf("process %d", st.Owner)
	}
	if st.Tunnel == "sit" && st.Owner == 0 {
		owner = "none needed"
	}
	if st.Tunnel == "bpf" && st.Owner == 0 {
		owner = "no process (the bpf tunnel's programs are held by cls_bpf filters only)"
	}
	fmt.Fprintf(w, "lab %q: tunnel %s, kept by %s\n", st.Name, st.Tunnel, owner)
	for _, h := range st.Hosts {
		fmt.Fprintf(w, "  %-6s (%s)\n", h.Role, h.Namespace)
		for _, i := range h.Ifaces {
			state := "down"
			if i.Up {
				state = "up"
			}
			q := ""
			if i.Qdisc != "" && i.Qdisc != "noqueue" {
				q = ", qdisc " + i.Qdisc
			}
			fmt.Fprintf(w, "    %-11s %-7s mtu %-5d %s%s  %s\n", i.Name, i.Type, i.MTU, state, q, strings.Join(i.Addrs, " "))
		}
		for _, r := range h.Routes {
			via := ""
			if r.Via != "" {
				via = " via " + r.Via
			}
			mtu := ""
			if r.MTU > 0 {
				mtu = fmt.Sprintf(" mtu %d", r.MTU)
			}
			fmt.Fprintf(w, "    route %s%s dev %s%s\n", r.Dst, via, r.Dev, mtu)
		}
		for _, p := range h.BPF {
			fmt.Fprintf(w, "    bpf %s\n", p.Describe())
		}
		if len(h.TCPOff) > 0 {
			fmt.Fprintf(w, "    tcp off: %s\n", strings.Join(h.TCPOff, ", "))
		}
	}
}
