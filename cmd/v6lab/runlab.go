package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"v6lab/internal/capture"
	"v6lab/internal/congestion"
	contentpkg "v6lab/internal/content"
	"v6lab/internal/experiment"
	"v6lab/internal/host"
	"v6lab/internal/lab"
	"v6lab/internal/load"
	"v6lab/internal/path"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/proto/imap"
	"v6lab/internal/servers"
	"v6lab/internal/tcpflow"
	"v6lab/internal/units"
)

// labJob is what the measuring child in the client namespace needs.
type labJob struct {
	// Command is the command line the user typed (the header's command).
	Command []string `json:"command"`
	// Somaxconn is the server host's net.core.somaxconn (per namespace).
	Somaxconn int                          `json:"somaxconn,omitempty"`
	Exp       *experiment.Experiment       `json:"experiment"`
	URL       string                       `json:"url"`
	Resolvers map[path.Path]labResolver    `json:"resolvers"`
	Sources   map[path.Path]netip.Addr     `json:"sources"`
	Transport map[path.Path]netip.AddrPort `json:"transport"`
	FTPPort   int                          `json:"ftp_port,omitempty"`
	SMTPPort  int                          `json:"smtp_port,omitempty"`
	IMAPPort  int                          `json:"imap_port,omitempty"`
	Ports     map[string]uint16            `json:"ports"`
	Servers   map[string]string            `json:"servers"`
	Notes     []string                     `json:"notes"`
	Lab       map[string]string            `json:"lab"`
	Results   string                       `json:"results"`
	Pcap      bool                         `json:"pcap"`
	// Real is where the real servers are, for cells that measure them.
	Real *labEndpoints `json:"real,omitempty"`
	// Gen are the background traffic hosts (cells with a background).
	Gen congestion.Hosts `json:"gen,omitempty"`
	// ServerCapture: fd 4 is a packet socket on the server's interface.
	ServerCapture bool `json:"server_capture,omitempty"`
	// Done and Dir resume an interrupted experiment.
	Done map[int]bool `json:"done,omitempty"`
	Dir  string       `json:"dir,omitempty"`
}

// labEndpoints are the servers a cell reaches: URL (host and HTTP port),
// resolvers per path, and the other protocols' ports.
type labEndpoints struct {
	URL       string                    `json:"url"`
	Resolvers map[path.Path]labResolver `json:"resolvers"`
	FTPPort   int                       `json:"ftp_port,omitempty"`
	SMTPPort  int                       `json:"smtp_port,omitempty"`
	IMAPPort  int                       `json:"imap_port,omitempty"`
}

type labResolver struct {
	Servers []netip.AddrPort `json:"servers"`
	Source  netip.Addr       `json:"source"`
}

// canLab says whether this process may build a lab, and if not, why.
func canLab() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root: a lab needs CAP_NET_ADMIN and CAP_SYS_ADMIN to create named network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("iproute2's ip command is missing (apt-get install iproute2)")
	}
	return nil
}

// runInLab builds a lab, starts the servers in its server namespace, and
// runs the measurement as a child process inside the client namespace, so
// that every client socket is born there.
func runInLab(cmd *cobra.Command, exp *experiment.Experiment, cfg lab.Config, results string, keep, pcap bool, rs *experiment.Resume, resumeDir string) error {
	ctx := cmd.Context()
	if reaped, err := lab.Reap(); err == nil && len(reaped) > 0 && !quiet(cmd) {
		fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: removed labs left by killed processes: %v\n", reaped)
	}
	if exp.Background() {
		cfg.Generators = true
	}
	if keep && cfg.BPFHook == "" {
		// A kept lab outlives this process; TCX links would close with
		// it, cls_bpf filters stay with the namespaces.
		cfg.BPFHook = "clsact"
	}
	l, err := lab.Up(ctx, cfg)
	if err != nil {
		return err
	}
	// lab.Up recorded this process as the lab's owner, so that, if it is
	// killed, the next run or lab command finds the owner dead and removes
	// everything the record names.
	if keep {
		if err := l.Keep(); err != nil {
			l.Close()
			return err
		}
		defer fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: the lab %q is kept up: v6lab lab status --name %s; remove it with v6lab lab down --name %s\n", l.Name, l.Name, l.Name)
	}
	defer func() {
		if !keep {
			l.Close()
		}
	}()
	in, err := experiment.StartInLab(ctx, l, localServerConfig())
	if err != nil {
		return serverStartError("embedded", err)
	}
	defer in.Close()
	// The FTP library opens passive listeners from its own goroutines, so
	// its server runs as a process of its own inside the server namespace.
	ftpPort := 0
	if slices.Contains(exp.EmbeddedProtocols(), "ftp") { // only what a cell uses
		a := l.Addr
		stopFTP, port, err := serveInNamespace(l.Record(), lab.NS(l.Name, lab.Server), "ftp",
			netip.AddrPortFrom(a.ServerV4, 0), netip.AddrPortFrom(a.ServerV6, 0), netip.AddrPortFrom(a.ServerTun6, 0))
		if err != nil {
			return serverStartError("embedded FTP", err)
		}
		defer stopFTP()
		ftpPort = port
	}
	var capFD int
	if err := lab.Do(lab.NS(l.Name, lab.R1), func() error {
		var err error
		capFD, err = capture.OpenSocket(l.Addr.WireIf)
		return err
	}); err != nil {
		return err
	}
	capFile := os.NewFile(uintptr(capFD), "capture")
	defer capFile.Close()
	files := []*os.File{capFile}
	if exp.ServerCapture() {
		var fd int
		if err := lab.Do(lab.NS(l.Name, lab.Server), func() error {
			var err error
			fd, err = capture.OpenSocket(l.Addr.ServerIf)
			return err
		}); err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), "server capture")
		defer f.Close()
		files = append(files, f)
	}

	cfgJSON, _ := json.Marshal(cfg)
	somax := 0
	_ = lab.Do(lab.NS(l.Name, lab.Server), func() error {
		if v, err := host.ReadSysctl("net.core.somaxconn"); err == nil {
			fmt.Sscan(v, &somax)
		}
		return nil
	})
	job := labJob{Command: os.Args, Somaxconn: somax, Exp: exp, URL: in.URL.String(), Resolvers: map[path.Path]labResolver{}, Sources: in.Sources,
		Transport: in.TransportAddr, FTPPort: ftpPort, SMTPPort: in.SMTP.Port, IMAPPort: in.IMAP.Port,
		// tcp and udp are absent: port 0 counts every TCP and UDP packet,
		// data streams (on ports chosen per test) included.
		Ports: map[string]uint16{"http": uint16(in.HTTP.Port), "dns": uint16(in.DNS.Port), "smtp": uint16(in.SMTP.Port), "imap": uint16(in.IMAP.Port)},
		Servers: map[string]string{"http": "embedded (Go net/http) in the server namespace", "dns": "embedded (miekg/dns) in the server namespace, a view per tunnel address",
			"transport": "embedded v6lab transport server in the server namespace",
			"ftp":       "embedded (ftpserverlib, generated files), a process in the server namespace",
			"smtp":      "embedded (go-smtp, every message kept) in the server namespace",
			"imap":      "embedded (go-imap v2, 500 users with one message each) in the server namespace"},
		Lab: map[string]string{"name": l.Name, "topology": "client - r1 - r2 - server (veth), 6in4 tunnel r1-r2",
			"tunnel": l.TunnelImpl, "tunnel_mtu": strconv.Itoa(l.TunnelMTU), "wire_check": "r1 " + l.Addr.WireIf,
			"links": cfg.LinkSummary(), "config": string(cfgJSON), "pcap": strconv.FormatBool(pcap)},
		Results: results, Pcap: pcap, Dir: resumeDir}
	if rs != nil {
		job.Done = rs.Done
	}
	if cfg.Generators {
		if job.Gen, err = congestion.LabHosts(l); err != nil {
			return err
		}
		job.Lab["generators"] = "gen4c, gen6c on r1; gen4s, gen6s on r2 (background TCP toward the client side, UDP back)"
	}
	if cfg.BareServer {
		job.Lab["server_tcp"] = "bare: SACK, timestamps and window scaling off in the server host"
	}
	if exp.ServerCapture() {
		job.ServerCapture = true
		job.Lab["server_capture"] = "server " + l.Addr.ServerIf
	}
	for p, r := range in.Resolvers {
		job.Resolvers[p] = labResolver{Servers: r.Servers, Source: r.Source}
	}
	if exp.Real() {
		stop, err := startRealServers(ctx, l, exp, &job)
		if err != nil {
			return serverStartError("real", err)
		}
		defer stop()
	}
	// Name only the servers that answered the experiment's cells: the
	// embedded one of a protocol that some cell measures on it (dns: every
	// lookup), the real ones their cells.
	emb := exp.EmbeddedProtocols()
	for k := range job.Servers {
		proto, real := strings.CutSuffix(k, " (real)")
		used := slices.Contains(emb, proto) || proto == "dns" && len(emb) > 0
		if proto == "transport" {
			used = slices.Contains(emb, "tcp") || slices.Contains(emb, "udp")
		}
		if real {
			used = slices.Contains(exp.RealProtocols(), proto) || proto == "dns"
		}
		if !used {
			delete(job.Servers, k)
		}
	}
	if rootless() {
		job.Notes = append(job.Notes, "rootless: the lab ran inside a user namespace of its own (no root)")
		job.Lab["privilege"] = "user namespace"
	}
	if l.TunnelImpl == "none" {
		job.Notes = append(job.Notes, "the lab had no 6in4 tunnel (this user can make none): ipv4 and ipv6 only")
	}
	if l.TunnelImpl == lab.TunnelUserspace {
		why := "it was asked for"
		if l.TunnelWhy != "" {
			why = l.TunnelWhy
		}
		job.Notes = append(job.Notes, "6in4 ran through v6lab's userspace tunnel ("+why+"): its figures include the userspace tunnel's own cost, see docs/PERFORMANCE.md")
	}
	if l.TunnelImpl == lab.TunnelBPF {
		job.Lab["tunnel_hook"] = l.TunnelHook
	}
	if l.TunnelWhy != "" {
		job.Lab["tunnel_why"] = l.TunnelWhy
	}
	if l.LossImpl != "" {
		job.Lab["loss"] = l.LossImpl
	}
	job.Lab["congestion"] = l.Congestion
	// What the wire check counts: each protocol's port, and for every
	// transaction the DNS server's too (its lookup); 0 counts every port.
	var wp []string
	for k, v := range job.Ports {
		wp = append(wp, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(wp)
	job.Lab["wire_check_ports"] = strings.Join(wp, " ")
	for _, name := range lab.LinkNames {
		if cfg.Link(name).Shaping.Rate > 0 {
			job.Lab["shaping"] = lab.ShapingRule
		}
	}
	if l.CongestionNote != "" {
		job.Lab["sysctl_changed"] = l.CongestionNote
		job.Notes = append(job.Notes, "v6lab "+l.CongestionNote)
	}
	dir, err := os.MkdirTemp("", "v6lab-job-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := l.Record().AddDir(dir); err != nil {
		return err
	}
	jobFile := filepath.Join(dir, "job.json")
	b, _ := json.Marshal(job)
	if err := os.WriteFile(jobFile, b, 0o600); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"netns", "exec", lab.NS(l.Name, lab.Client), exe, "run", "--lab-child", jobFile}
	if quiet(cmd) {
		args = append(args, "--quiet")
	}
	child := exec.Command("ip", args...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
	child.ExtraFiles = files
	// If this process dies, the child is interrupted too: it keeps its
	// finished runs instead of measuring servers that are gone.
	child.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
	// Ctrl-C reaches the child too; this process waits for it, then
	// tears the lab down.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	if err := child.Start(); err != nil {
		return err
	}
	go func() {
		for s := range sig {
			child.Process.Signal(s)
		}
	}()
	err = child.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		// The measuring child already said what happened (interrupted, or
		// why it failed, and where the finished runs are): say no more
		// than that the lab is gone, and keep its exit code.
		if !quiet(cmd) && !keep {
			fmt.Fprintf(cmd.ErrOrStderr(), "v6lab: the lab %q is removed\n", l.Name)
		}
		return &exitError{code: ee.ExitCode(), err: errSilent}
	}
	return err
}

// serverStartError says that a server did not start, so that it never
// reads as a failed measurement.
func serverStartError(which string, err error) error {
	return fmt.Errorf("the lab's %s servers did not start, so nothing was measured (the lab is removed; check the server's installation with scripts/install-deps): %w", which, err)
}

// runLabChild is the measuring side, inside the client namespace.
func runLabChild(cmd *cobra.Command, jobFile string) error {
	b, err := os.ReadFile(jobFile)
	if err != nil {
		return err
	}
	// The job is read once: remove it now, so that a parent killed
	// before it could clean up leaves nothing behind.
	if dir := filepath.Dir(jobFile); strings.HasPrefix(filepath.Base(dir), "v6lab-job-") {
		os.RemoveAll(dir)
	}
	var j labJob
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("lab job %s: %w", jobFile, err)
	}
	u, err := url.Parse(j.URL)
	if err != nil {
		return err
	}
	env := experiment.Env{URL: u, Resolvers: map[path.Path]*path.Resolver{}, Sources: j.Sources, Transport: j.Transport, FTPPort: j.FTPPort, SMTPPort: j.SMTPPort, IMAPPort: j.IMAPPort}
	for p, r := range j.Resolvers {
		env.Resolvers[p] = &path.Resolver{Servers: r.Servers, Source: r.Source}
	}
	probe := env.Probe
	if j.Real != nil {
		ru, err := url.Parse(j.Real.URL)
		if err != nil {
			return err
		}
		realEnv := experiment.Env{URL: ru, Resolvers: map[path.Path]*path.Resolver{}, Sources: j.Sources, Transport: j.Transport,
			FTPPort: j.Real.FTPPort, SMTPPort: j.Real.SMTPPort, IMAPPort: j.Real.IMAPPort}
		for p, r := range j.Real.Resolvers {
			realEnv.Resolvers[p] = &path.Resolver{Servers: r.Servers, Source: r.Source}
		}
		probe = func(s *experiment.Spec, p path.Path) (load.Probe, error) {
			if s.Server == "real" {
				return realEnv.Probe(s, p)
			}
			return env.Probe(s, p)
		}
	}
	for i := range j.Exp.Cells {
		if err := settle(cmd, &j.Exp.Cells[i], probe); err != nil {
			return err
		}
	}
	cp := capture.FromFD(3, capture.Filter{})
	defer cp.Close()
	var rec *capture.Capture
	if j.Pcap {
		rec = cp
	}
	cond := &labConditions{ports: j.Ports}
	if len(j.Gen) > 0 {
		if cond.bg, err = congestion.Start(cmd.Context(), j.Gen); err != nil {
			return err
		}
		defer cond.bg.Close()
	}
	if j.ServerCapture {
		cond.tracker = tcpflow.New(0)
		cond.server = capture.FromFD(4, capture.Filter{})
		cond.server.Tap(cond.tracker.Frame)
		defer cond.server.Close()
	}
	jb := job{
		exp: j.Exp, probe: probe, target: "lab", servers: j.Servers, notes: j.Notes,
		serverFDs: 0, somaxconn: j.Somaxconn, command: j.Command, results: j.Results, wire: capture.Check{C: cp, Ports: j.Ports}, lab: j.Lab, pcap: rec,
		conditions: cond,
	}
	if j.Dir != "" {
		jb.resume, jb.resumeDir = &experiment.Resume{Exp: j.Exp, Done: j.Done}, j.Dir
	}
	_, err = execute(cmd, jb)
	return err
}

// settle does unrecorded transactions on every path until one completes, so
// neighbour discovery and every cache on the way are warm before the first
// run, and a path that cannot work fails here with its reason.
func settle(cmd *cobra.Command, c *experiment.Spec, probe func(*experiment.Spec, path.Path) (load.Probe, error)) error {
	if c.Test != nil { // a short trial is enough to warm a path
		short := *c
		o := *c.Test
		o.Duration, o.Omit, o.Bytes, o.Interval = 200*time.Millisecond, 0, 0, 100*time.Millisecond
		short.Test, c = &o, &short
	}
	if c.File != "" {
		// A small file of the same protocol and client warms the path and
		// proves the server: never the cell's own file, which may take
		// minutes on a slow link (a 2 GB Regensburg file at 10 Mbit/s).
		short := *c
		short.File, c = settleFile, &short
	}
	// The cell's own timeout, never a fixed one shorter than it.
	timeout := min(max(time.Duration(c.Timeout), 5*time.Second), 2*time.Minute)
	for _, p := range c.Paths {
		pr, err := probe(c, p)
		if err != nil {
			return err
		}
		var last string
		ok := false
		for try := 0; try < 5 && !ok; try++ {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			s := pr.Do(ctx, 0)
			cancel()
			ok, last = s.OK(), s.Err
		}
		if !ok {
			return fmt.Errorf("%s over path %s does not work in the lab: %s", c.CellName(), p, last)
		}
	}
	return nil
}

// settleFile is the file settle fetches for file cells; every server kind
// serves it (the embedded ones any size, the real ones are given it).
const settleFile = "/1K"

// serveInNamespace starts `v6lab serve KIND` inside network namespace ns on
// the given addresses (port 0: one port chosen for all) and returns its
// port once it serves, and a function that stops it.
func serveInNamespace(rec *lab.Record, ns, kind string, addrs ...netip.AddrPort) (func(), int, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	args := []string{"netns", "exec", ns, exe, "serve", kind}
	for _, a := range addrs {
		args = append(args, "--listen", a.String())
	}
	c := exec.Command("ip", args...)
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := c.Start(); err != nil {
		return nil, 0, err
	}
	stop := func() {
		c.Process.Signal(syscall.SIGTERM)
		c.Wait()
	}
	if err := rec.AddDaemon(c.Process.Pid, "v6lab serve "+kind); err != nil {
		stop()
		return nil, 0, err
	}
	ports := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			rest, ok := strings.CutPrefix(sc.Text(), "serving "+kind+" on ")
			if ap, err := netip.ParseAddrPort(rest); ok && err == nil && !sent {
				ports <- int(ap.Port())
				sent = true
			}
		}
		if !sent {
			close(ports)
		}
	}()
	select {
	case p, ok := <-ports:
		if ok {
			return stop, p, nil
		}
	case <-time.After(10 * time.Second):
	}
	stop()
	return nil, 0, fmt.Errorf("the %s server in %s did not start: %s", kind, ns, strings.TrimSpace(stderr.String()))
}

// startRealServers starts nginx and Unbound in the lab's server namespace
// (ports 80 and 53, free there) and points the job's HTTP URL and
// resolvers at them instead of the embedded servers.
func startRealServers(ctx context.Context, l *lab.Lab, exp *experiment.Experiment, job *labJob) (func(), error) {
	// nginx and Unbound always (the page and its name), the others as
	// cells ask for them: all checked before any starts.
	if err := servers.CheckInstalled(append([]string{"http", "dns"}, exp.RealProtocols()...)); err != nil {
		return nil, err
	}
	a := l.Addr
	prefix := servers.Place{Prefix: []string{"ip", "netns", "exec", lab.NS(l.Name, lab.Server)}, Rec: l.Record()}
	addrs := []netip.Addr{a.ServerV4, a.ServerV6, a.ServerTun6}
	cfg := localServerConfig()
	content := servers.Content{"/index.html": httpp.Page(cfg)}
	for i := range cfg.Objects {
		content[fmt.Sprintf("/obj/%d", i)] = contentpkg.Bytes(cfg.ObjectSize)
	}
	// The files of http file cells, at the embedded server's paths, and
	// the small one settle fetches.
	content["/files"+settleFile] = contentpkg.Bytes(1 << 10)
	for _, c := range exp.Cells {
		if c.Protocol == "http" && c.Server == "real" && c.File != "" {
			name := strings.TrimPrefix(c.File, "/")
			size, err := units.ParseSize(name)
			if err != nil {
				return nil, err
			}
			content["/files/"+name] = contentpkg.Bytes(size) // what the embedded server generates
		}
	}
	ng, err := servers.StartNginx(ctx, prefix, addrs, 80, content)
	if err != nil {
		return nil, err
	}
	ub, err := servers.StartUnbound(ctx, prefix, addrs, 53, "v6lab.test",
		[]servers.Record{{Name: experiment.LocalName, Addr: a.ServerV4}, {Name: experiment.LocalName, Addr: a.ServerV6}},
		[]servers.View{{Name: "tunnel", Clients: netip.PrefixFrom(a.ClientTun6, 64).Masked(),
			Records: []servers.Record{{Name: experiment.LocalName, Addr: a.ServerV4}, {Name: experiment.LocalName, Addr: a.ServerTun6}}}})
	if err != nil {
		ng.Stop()
		return nil, err
	}
	stops := []func(){ng.Stop, ub.Stop}
	real := &labEndpoints{}
	job.Real = real
	if slices.Contains(exp.RealProtocols(), "ftp") {
		files := map[string]int64{strings.TrimPrefix(settleFile, "/"): 1 << 10}
		for _, c := range exp.Cells {
			if c.Protocol == "ftp" && c.Server == "real" {
				name := strings.TrimPrefix(cmpOr(c.File, "1M"), "/")
				size, err := units.ParseSize(name)
				if err != nil {
					return nil, err
				}
				files[name] = size
			}
		}
		pf, err := servers.StartProFTPD(ctx, prefix, addrs, 21, files)
		if err != nil {
			for _, stop := range stops {
				stop()
			}
			return nil, err
		}
		stops = append(stops, pf.Stop)
		real.FTPPort = 21
		job.Ports["real/ftp"] = 0 // passive data ports: count every TCP packet
		job.Servers["ftp (real)"] = pf.Version + " in the server namespace, anonymous, sparse files"
	}
	if slices.Contains(exp.RealProtocols(), "smtp") {
		pf, err := servers.StartPostfix(ctx, prefix, addrs, 25, "v6lab.test")
		if err != nil {
			for _, stop := range stops {
				stop()
			}
			return nil, err
		}
		stops = append(stops, pf.Stop)
		real.SMTPPort = 25
		job.Ports["real/smtp"] = 25
		job.Servers["smtp (real)"] = pf.Version + " in the server namespace, an instance of its own; accepted mail is discarded"
	}
	if slices.Contains(exp.RealProtocols(), "imap") {
		users := imap.DefaultUsers
		for _, c := range exp.Cells {
			if c.Protocol == "imap" && c.Users > 0 {
				users = max(users, c.Users)
			}
		}
		dv, err := servers.StartDovecot(ctx, prefix, addrs, 143, users, imap.Password, imap.Message(4<<10))
		if err != nil {
			for _, stop := range stops {
				stop()
			}
			return nil, err
		}
		stops = append(stops, dv.Stop)
		real.IMAPPort = 143
		job.Ports["real/imap"] = 143
		job.Servers["imap (real)"] = fmt.Sprintf("%s in the server namespace, %d Maildir users", dv.Version, users)
	}
	real.URL = "http://" + experiment.LocalName + ":80/"
	real.Resolvers = map[path.Path]labResolver{}
	for _, p := range a.Paths() {
		real.Resolvers[p] = labResolver{Servers: []netip.AddrPort{netip.AddrPortFrom(a.Server(p), 53)}, Source: a.Source(p)}
	}
	job.Ports["real/http"], job.Ports["real/dns"] = 80, 53
	job.Servers["http (real)"] = ng.Version + " in the server namespace"
	job.Servers["dns (real)"] = ub.Version + " in the server namespace, a view for the tunnel's clients"
	return func() {
		for _, stop := range stops {
			stop()
		}
	}, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
