// Package keep keeps labs between commands: the background process that
// holds a lab built by v6lab lab up (Detach, Hold), stopping it (Down),
// and the text of lab status. It imports lab only.
package keep

import (
	"bufio"
	"context"
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

	"v6lab/internal/lab"
)

// Detach starts `v6lab lab up --foreground` as a detached process that
// holds the lab (Hold), and waits until it says the lab is ready (or why
// it failed); pid is the holder's.
func Detach(cfg lab.Config) (pid int, ready string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, "", err
	}
	logf, err := lab.CreateLog(cfg.Name)
	if err != nil {
		return 0, "", err
	}
	logName := logf.Name()
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return 0, "", err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return 0, "", err
	}
	args := []string{"lab", "up", "--foreground", "--config-json", string(b)}
	c := exec.Command(exe, args...)
	c.Stdout, c.Stderr = logf, logf
	c.ExtraFiles = []*os.File{w} // fd 3: the ready line
	c.Env = append(os.Environ(), "V6LAB_READY_FD=3")
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return 0, "", err
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
		return 0, "", errors.New(strings.TrimPrefix(line, "error: "))
	}
	pid = c.Process.Pid
	c.Process.Release()
	return pid, strings.TrimSpace(strings.TrimPrefix(line, "ready")), nil
}

// Serve starts what a kept lab serves beyond the lab itself (a lab of
// sites' servers, cfg.Sites) and says what it started; stop ends it.
type Serve func(l *lab.Lab) (stop func(), what string, err error)

// Hold builds the lab, starts serve in it (nil: nothing), and holds it in
// this process until a signal or ctx ends; the process that Detach
// started says ready on fd 3.
func Hold(ctx context.Context, cfg lab.Config, log io.Writer, serve Serve) error {
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
	l, err := lab.Up(ctx, cfg)
	if err != nil {
		say("error: " + err.Error())
		return err
	}
	defer l.Close()
	state := "tunnel " + l.TunnelImpl + ", MTU " + fmt.Sprint(l.TunnelMTU)
	if serve != nil {
		stop, what, err := serve(l)
		if err != nil {
			say("error: " + err.Error())
			return err
		}
		defer stop()
		if what != "" {
			state += "; " + what
		}
	}
	fmt.Fprintf(log, "%s lab %q up, %s\n", time.Now().UTC().Format(time.RFC3339), cfg.Name, state)
	say("ready " + state)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case <-ctx.Done():
	}
	fmt.Fprintf(log, "%s lab %q going down\n", time.Now().UTC().Format(time.RFC3339), cfg.Name)
	return nil
}

// NoteOrphans names on w the labs (but mine) whose recorded owner process
// is gone and that were not kept: v6lab removes none of them unasked.
func NoteOrphans(w io.Writer, mine string) {
	orphans, _ := lab.Orphans()
	var names []string
	for _, o := range orphans {
		if o.PID != 0 && !o.Kept && o.Name != mine {
			names = append(names, o.Name)
		}
	}
	if len(names) > 0 {
		fmt.Fprintf(w, "v6lab: left by killed processes and not removed: %s %s (v6lab lab status --all shows what; v6lab lab down --orphans removes them)\n",
			plural(len(names), "lab", "labs"), strings.Join(names, ", "))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Exists says whether lab name has a namespace or an owner record.
func Exists(name string) bool {
	names, _ := lab.Names()
	return slices.Contains(names, name)
}

// OrphanHint names the labs a plain lab down could have meant: those whose
// owner is gone.
func OrphanHint() string {
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

// CheckDown says why lab down's flags are refused: a bad name, or a name
// given (named) with orphans or all, which remove other labs too.
func CheckDown(name string, named, all, orphans bool) error {
	if err := lab.CheckName(name); err != nil {
		return err
	}
	if named && (all || orphans) {
		return fmt.Errorf("lab down: --name %s removes that lab only, --orphans and --all remove others too: give one of them (a lab left by a killed process goes with lab down --name %s alone)", name, name)
	}
	return nil
}

// Remove takes lab name down, or every lab on this machine with all, or
// every orphan with orphans (RemoveOrphans), saying on w (unless quiet)
// each one that went; a name with nothing of it here is an error (saying
// it is down would hide a typo), which names the labs left without their
// owner.
func Remove(name string, all, orphans bool, w io.Writer, quiet bool) error {
	if orphans {
		return RemoveOrphans(w, quiet)
	}
	gone := func(n string) {
		if !quiet {
			fmt.Fprintf(w, "lab %q is down\n", n)
		}
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
	} else if !Exists(name) {
		if hint := OrphanHint(); hint != "" {
			return fmt.Errorf("lab %q is not up; %s", name, hint)
		}
		return fmt.Errorf("lab %q is not up: nothing of it is on this machine (v6lab lab status lists the labs)", name)
	}
	var errs []error
	for _, n := range names {
		if err := Down(n); err != nil {
			errs = append(errs, err)
		} else {
			gone(n)
		}
	}
	return errors.Join(errs...)
}

// RemoveOrphans removes every lab whose recorded owner process is gone and
// that was not kept (lab.Reap), naming each on w unless quiet.
func RemoveOrphans(w io.Writer, quiet bool) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w; you are uid %d", lab.ErrPrivilege, os.Geteuid())
	}
	reaped, err := lab.Reap()
	if !quiet {
		for _, n := range reaped {
			fmt.Fprintf(w, "lab %q is down (its owner process was gone)\n", n)
		}
		if len(reaped) == 0 && err == nil {
			fmt.Fprintln(w, "no lab is left by a killed process")
		}
	}
	return err
}

// Down stops the lab's owner (which tears the lab down), then removes
// whatever its record still names.
func Down(name string) error {
	if pid := lab.Owner(name); pid != 0 {
		syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 50 && lab.Owner(name) == pid; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return lab.Down(name)
}

// OrphanNamed finds lab name among orphans.
func OrphanNamed(os []lab.Orphan, name string) *lab.Orphan {
	for i := range os {
		if os[i].Name == name {
			return &os[i]
		}
	}
	return nil
}

// WriteOrphan shows what a lab without a live owner left behind.
func WriteOrphan(w io.Writer, o *lab.Orphan) { writeOrphan(w, o, true) }

// writeOrphan shows an orphan, its namespaces only when asked (its status
// lists them as hosts).
func writeOrphan(w io.Writer, o *lab.Orphan, namespaces bool) {
	why := "no owner record"
	if o.PID != 0 {
		why = fmt.Sprintf("owner process %d is gone", o.PID)
	}
	if o.Kept {
		why += ", kept on purpose (run --keep)"
	}
	fmt.Fprintf(w, "lab %q: orphan (%s); remove it with v6lab lab down --name %s\n", o.Name, why, o.Name)
	if namespaces && len(o.Namespaces) > 0 {
		fmt.Fprintf(w, "  namespaces: %s\n", strings.Join(o.Namespaces, ", "))
	}
	for _, d := range o.Daemons {
		state := ""
		if !d.Running() {
			state = ", exited"
		}
		fmt.Fprintf(w, "  daemon: %s (pid %d%s)\n", d.What, d.PID, state)
	}
	for _, d := range o.Dirs {
		fmt.Fprintf(w, "  directory: %s\n", d)
	}
}

// WriteStatus shows a lab: hosts, links, addresses, routes, shaping, the
// tunnel and its programs, after a line of what it is configured with.
func WriteStatus(w io.Writer, st *lab.Status) { writeStatus(w, st, nil) }

// writeStatus shows a lab; an orphan's (o) under its orphan line, once.
func writeStatus(w io.Writer, st *lab.Status, o *lab.Orphan) {
	if o != nil {
		writeOrphan(w, o, false)
		fmt.Fprintf(w, "  tunnel %s, kept by %s\n", st.Tunnel, keeper(st))
	} else {
		fmt.Fprintf(w, "lab %q: tunnel %s, kept by %s\n", st.Name, st.Tunnel, keeper(st))
	}
	fmt.Fprintf(w, "  configured: %s\n", st.Summary())
	switch {
	case st.Sites != "" && o != nil:
		fmt.Fprintf(w, "  does not serve the sites of %s now: its keeper (their web and DNS servers) is gone; v6lab lab down --name %s, then v6lab lab up --sites %s --name %s\n", st.Sites, st.Name, st.Sites, st.Name)
	case st.Sites != "":
		fmt.Fprintf(w, "  serves the sites of %s (survey them: v6lab survey --lab %s %s)\n", st.Sites, st.Name, st.Sites)
	}
	writeHosts(w, st)
}

// keeper says what keeps the lab up.
func keeper(st *lab.Status) string {
	owner := "no process (a userspace tunnel is down; run v6lab lab down and up again)"
	switch {
	case st.Tunnel == "missing" && st.Built == lab.TunnelBPF:
		owner = "no process (the bpf tunnel's programs ended with their owner: its TCX links close with the process; run v6lab lab down and up again)"
	case st.Tunnel == "missing" && st.Built != "" && st.Built != lab.TunnelUserspace:
		owner = fmt.Sprintf("no process (the %s tunnel is gone; run v6lab lab down and up again)", st.Built)
	}
	if st.Owner != 0 {
		owner = fmt.Sprintf("process %d", st.Owner)
	}
	if st.Tunnel == "sit" && st.Owner == 0 {
		owner = "none needed"
	}
	if st.Tunnel == "bpf" && st.Owner == 0 {
		owner = "no process (the bpf tunnel's programs are held by cls_bpf filters only)"
	}
	return owner
}

// writeHosts shows each host of the lab.
func writeHosts(w io.Writer, st *lab.Status) {
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
		for _, r := range h.Rules {
			fmt.Fprintf(w, "    rule %s\n", r)
		}
		for _, p := range h.BPF {
			fmt.Fprintf(w, "    bpf %s\n", p.Describe())
		}
		if h.NAT != "" {
			fmt.Fprintf(w, "    nat %s\n", h.NAT)
		}
		for _, m := range h.PMTU {
			fmt.Fprintf(w, "    pmtu %s\n", m)
		}
		if len(h.TCPOff) > 0 {
			fmt.Fprintf(w, "    tcp off: %s\n", strings.Join(h.TCPOff, ", "))
		}
	}
}

// Status writes lab status: lab name, or every lab (name empty); labs
// without a live owner only when asked for by name, kept on purpose, or
// all.
func Status(out io.Writer, name string, all bool) error {
	names := []string{name}
	if name == "" {
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
		o := OrphanNamed(orphans, n)
		if o != nil {
			if !all && name == "" && !o.Kept {
				continue
			}
			if len(o.Namespaces) == 0 {
				WriteOrphan(out, o)
				continue
			}
		}
		st, err := lab.Inspect(n)
		if err != nil && name == "" && !Exists(n) {
			continue // removed since it was listed (a run that ended)
		}
		if err != nil {
			return err
		}
		writeStatus(out, st, o)
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
}

// CanKeep says whether this process may keep lab name up for other
// commands: root, and no lab of that name up. A lab of that very name
// left by a killed process is removed first, and said so on w; other
// labs left by killed processes (perhaps another user's) are only named
// (NoteOrphans), unless quiet.
func CanKeep(name string, w io.Writer, quiet bool) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w to keep a lab for other commands; you are uid %d (without root, v6lab run builds a private lab for the run alone in a user namespace)", lab.ErrPrivilege, os.Geteuid())
	}
	pid, err := lab.ReapNamed(name)
	if err != nil {
		return fmt.Errorf("removing lab %q left by process %d: %w", name, pid, err)
	}
	if pid != 0 && !quiet {
		fmt.Fprintf(w, "v6lab: removed lab %q left by process %d, which is gone\n", name, pid)
	}
	if !quiet {
		NoteOrphans(w, name)
	}
	if pid := lab.Owner(name); pid != 0 {
		return fmt.Errorf("lab %q is already up (process %d); run v6lab lab down --name %s first", name, pid, name)
	}
	return nil
}
