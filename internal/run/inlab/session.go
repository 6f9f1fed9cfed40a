// Package inlab runs an experiment in a lab: it builds the lab, starts
// the embedded or real servers in its server namespace, opens the wire
// check's capture, runs the measuring process inside the client namespace
// (so every client socket is born there), and tears everything down. The
// measuring side (Child) settles each path, then hands a measure.Job to
// measure.Do.
//
// It takes what it needs as values (writers, a config) and returns typed
// errors; the CLI maps them to exit codes and messages. It imports
// nothing of the CLI.
package inlab

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"v6lab/internal/gen/congestion"
	"v6lab/internal/lab"
	"v6lab/internal/lab/keep"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/run/experiment"
	"v6lab/internal/run/host"
	"v6lab/internal/run/measure"
	"v6lab/internal/sock/path"
	"v6lab/internal/wire/capture"
)

// Session is an experiment to run in a lab of its own.
type Session struct {
	Exp *experiment.Experiment
	Lab lab.Config
	// Results is the directory that receives the result directory.
	Results string
	// Keep leaves the lab up afterwards; Pcap writes the wire check's
	// frames to capture.pcap.
	Keep, Pcap bool
	// Resume, when set, continues the experiment in ResumeDir.
	Resume    *experiment.Resume
	ResumeDir string
	// Command is the user's command line, for the header.
	Command []string
	// Quiet prints only the result directory; Rootless notes that the
	// lab runs in a user namespace of its own.
	Quiet, Rootless bool
	// Strict: the measuring process fails (status 3) when counted runs
	// were left out (measure.Output.Strict).
	Strict bool
	// Out and Err receive the measuring process's output and this one's
	// messages.
	Out, Err io.Writer
}

// Job is what the measuring process in the client namespace is handed, as
// plain data (a JSON file it reads once).
type Job struct {
	Command []string `json:"command"`
	// Somaxconn is the server host's net.core.somaxconn (per namespace).
	Somaxconn int                    `json:"somaxconn,omitempty"`
	Exp       *experiment.Experiment `json:"experiment"`
	// Endpoints are where every server answers on every path.
	Endpoints proto.Endpoints `json:"endpoints"`
	// Ports are the wire check's port per server key (0: every port);
	// Lookups the port of the DNS server each key's transactions ask.
	Ports   map[string]uint16 `json:"ports"`
	Lookups map[string]uint16 `json:"lookups,omitempty"`
	// Nat64 are the lab's nat64 prefixes, when it has the path: the
	// wire check counts their packets as that path's.
	Nat64   []netip.Prefix    `json:"nat64,omitempty"`
	Servers map[string]string `json:"servers"`
	// ServerRoles are the real servers' roles (proto.RealRunning.Roles),
	// for the header (result.Header.ServerRoles).
	ServerRoles map[string][]string `json:"server_roles,omitempty"`
	Notes       []string            `json:"notes"`
	Lab         map[string]string   `json:"lab"`
	Results     string              `json:"results"`
	Pcap        bool                `json:"pcap"`
	// Gen are the background traffic hosts (cells with a background).
	Gen congestion.Hosts `json:"gen,omitempty"`
	// ServerCapture: fd 4 is a packet socket on the server's interface.
	ServerCapture bool `json:"server_capture,omitempty"`
	// ClientSideFD, when set, is a packet socket on r1's link to the
	// client (the IPv6-only access link of nat64, 464xlat and dslite).
	ClientSideFD int `json:"client_side_fd,omitempty"`
	// NATs are the NATs on the lab's paths whose exhausted pools name
	// their runs' failures.
	NATs map[path.Path]NAT `json:"nats,omitempty"`
	// Datapaths are the programs whose counters each run of a path
	// records.
	Datapaths map[path.Path][]lab.Datapath `json:"datapaths,omitempty"`
	// LinkShaping is the lab's own shaping of each link (rate and queue
	// limit, by link name), given when cell groups set their own rate
	// (link_rate) and the lab returns to it.
	LinkShaping map[string]lab.Shaping `json:"link_shaping,omitempty"`
	// PMTU, when set, is what the run does about path MTU (pmtuJob).
	PMTU *PMTUJob `json:"pmtu,omitempty"`
	// Done and Dir resume an interrupted experiment.
	Done map[int]bool `json:"done,omitempty"`
	// Rewarmed are the re-warm runs in Dir's file (Resume.Rewarmed).
	Rewarmed map[int]bool `json:"rewarmed,omitempty"`
	Dir      string       `json:"dir,omitempty"`
	// Made is the new result directory the parent made for the child,
	// so that it can report what the child wrote if the child is killed.
	Made string `json:"made,omitempty"`
}

// ChildExitError is the measuring process's exit status: it has already
// said what happened (interrupted, or why it failed, and where the
// finished runs are).
type ChildExitError struct{ Code int }

func (e *ChildExitError) Error() string {
	return fmt.Sprintf("the measuring process exited with %d", e.Code)
}

// ServerStartError is a server that did not start, so that it never reads
// as a failed measurement.
type ServerStartError struct {
	Which string
	Err   error
}

func (e *ServerStartError) Error() string {
	return fmt.Sprintf("the lab's %s servers did not start, so nothing was measured (the lab is removed; check the server's installation with scripts/install-deps): %v", e.Which, e.Err)
}

func (e *ServerStartError) Unwrap() error { return e.Err }

// CanLab says whether this process may build a lab, and if not, why.
func CanLab() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root: a lab needs CAP_NET_ADMIN and CAP_SYS_ADMIN to create named network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("iproute2's ip command is missing (apt-get install iproute2)")
	}
	return nil
}

// Do builds the lab, starts the servers and runs the measuring process in
// the client namespace; the lab is removed afterwards unless Keep.
func (r *Session) Do(ctx context.Context) error {
	if !r.Quiet {
		keep.NoteOrphans(r.Err, "")
	}
	cfg := r.Lab
	if r.Exp.Background() {
		cfg.Generators = true
	}
	if r.Keep && cfg.BPFHook == "" {
		// A kept lab outlives this process; TCX links would close with
		// it, cls_bpf filters stay with the namespaces.
		cfg.BPFHook = "clsact"
	}
	// Ctrl-C before the measuring process starts stops the run once what
	// was built is removed (without this the default action killed this
	// process, leaving the lab, or, where the shell ignored SIGINT, the run
	// went on); from the child's start, host.RunChild passes it on.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	l, err := lab.Up(ctx, cfg)
	if err != nil {
		return err
	}
	// lab.Up recorded this process as the lab's owner, so that, if it is
	// killed, the next run or lab command finds the owner dead and removes
	// everything the record names.
	if r.Keep {
		if err := l.Keep(); err != nil {
			l.Close()
			return err
		}
		defer fmt.Fprintf(r.Err, "v6lab: the lab %q is kept up: v6lab lab status --name %s; remove it with v6lab lab down --name %s\n", l.Name, l.Name, l.Name)
	} else {
		defer l.Close()
	}
	for _, p := range r.Exp.Paths() {
		if !p.Kind().LabOnly || l.Addr.Server(p).IsValid() {
			continue
		}
		why := l.XlatWhy
		if p == path.NAT64 {
			why = l.Nat64Why
		} else if p == path.SixIn4 {
			why = "the lab has no 6in4 tunnel"
		}
		return fmt.Errorf("path %s: %s", p, why)
	}
	job, files, stop, err := r.prepare(ctx, l, cfg)
	defer stop()
	if err != nil {
		return err
	}
	if len(sig) > 0 {
		if !r.Quiet && !r.Keep {
			defer fmt.Fprintf(r.Err, "v6lab: the lab %q is removed\n", l.Name)
		}
		return &measure.InterruptedError{}
	}
	err = r.child(l, job, files)
	var ce *ChildExitError
	var ke *ChildKilledError
	var ie *measure.InterruptedError
	if (errors.As(err, &ce) || errors.As(err, &ke) || errors.As(err, &ie)) && !r.Quiet && !r.Keep {
		fmt.Fprintf(r.Err, "v6lab: the lab %q is removed\n", l.Name)
	}
	return err
}

// prepare starts the servers and captures and writes down the job; stop
// undoes what it started, whatever it returns.
func (r *Session) prepare(ctx context.Context, l *lab.Lab, cfg lab.Config) (*Job, []*os.File, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	at := experiment.LabPlace(l)
	at.Measured = r.Exp.Paths()
	emb, err := experiment.StartEmbedded(ctx, r.Exp, at)
	if err != nil {
		return nil, nil, stop, &ServerStartError{Which: "embedded", Err: err}
	}
	stops = append(stops, func() { emb.Close() })
	servers := emb.Describe("in the server namespace")
	// A server whose library opens sockets from goroutines of its own runs
	// as a process of its own inside the server namespace.
	for _, key := range r.Exp.EmbeddedServers() {
		s, _ := all.Server(key)
		if !s.OwnProcess {
			continue
		}
		run, err := serveInNamespace(l.Record(), lab.NS(l.Name, lab.Server), key, at.Listen())
		if err != nil {
			return nil, nil, stop, &ServerStartError{Which: "embedded " + key, Err: err}
		}
		stops = append(stops, func() { run.Close() })
		emb.Add(key, run)
		servers[key] = s.About + ", a process in the server namespace"
	}
	job := &Job{Command: r.Command, Somaxconn: somaxconn(l), Exp: r.Exp, Endpoints: emb.Endpoints(experiment.LabSources(l)),
		Servers: servers, Lab: labHeader(l, cfg, r.Pcap), Results: r.Results, Pcap: r.Pcap, Dir: r.ResumeDir}
	if r.Resume != nil {
		job.Done, job.Rewarmed = r.Resume.Done, r.Resume.Rewarmed
	}
	if r.Exp.Real() {
		stopReal, err := startReal(ctx, l, r.Exp, job)
		if err != nil {
			return nil, nil, stop, &ServerStartError{Which: "real", Err: err}
		}
		stops = append(stops, stopReal)
	}
	job.Ports = wirePorts(job.Endpoints)
	job.Lookups = lookupPorts(job.Ports)
	r.translated(l, job)
	for _, c := range r.Exp.Groups {
		for _, n := range c.Opts().Notes(c.Paths) {
			job.Notes = append(job.Notes, c.NoteName()+": "+n)
		}
	}
	if r.Exp.LinkRates() {
		if job.LinkShaping, err = ownShaping(r.Exp, cfg); err != nil {
			return nil, nil, stop, err
		}
		job.Lab["link_rates"] = "cell groups with link_rate reshape every link for their runs (each run record's links, read back from the kernel)"
	}
	if job.PMTU = pmtuJob(cfg, r.Exp); job.PMTU != nil {
		describePMTU(job.PMTU, cfg, job.Lab)
	}
	if err := r.describe(l, cfg, job); err != nil {
		return nil, nil, stop, err
	}
	access := slices.ContainsFunc(r.Exp.Paths(), func(p path.Path) bool { return p.Kind().Access != "" })
	files, closeFiles, err := captures(l, r.Exp.ServerCapture(), access)
	stops = append(stops, closeFiles)
	if err != nil {
		return nil, nil, stop, err
	}
	if access {
		job.ClientSideFD = 2 + len(files) // the last one opened
		job.Lab["wire_check"] += "; nat64, 464xlat and dslite runs also on r1 " + lab.R1ClientIf + " (the client's IPv6-only access link)"
	}
	if r.Exp.ServerCapture() {
		job.ServerCapture = true
		job.Lab["server_capture"] = "server " + l.Addr.ServerIf
	}
	return job, files, stop, nil
}

// translated writes down how the lab builds its nat64, 464xlat and dslite
// paths, their wire prefixes, their NATs and their datapaths' counters.
func (r *Session) translated(l *lab.Lab, job *Job) {
	if l.Addr.ServerNat64.IsValid() {
		job.Nat64 = l.Addr.Wire64
		job.Lab["nat64"] = describeNat64(l)
	}
	if l.Addr.AFTR4.IsValid() {
		job.Lab["464xlat"], job.Lab["dslite"] = describeXlat(l)
	}
	job.NATs = labNATs(l, r.Exp.Paths())
	job.Datapaths = l.Datapaths()
}

// ownShaping is the lab's shaping of each link, which a cell group's
// link_rate replaces for its runs; a lab that emulates delay or loss
// cannot be reshaped so (its netem or BPF would be lost): the refusal
// names the first group of exp with a link_rate, where its file gave it.
func ownShaping(exp *experiment.Experiment, cfg lab.Config) (map[string]lab.Shaping, error) {
	out := map[string]lab.Shaping{}
	for _, name := range lab.LinkNames {
		sh := cfg.Link(name).Shaping
		if sh.Delay > 0 || sh.Jitter > 0 || sh.Loss > 0 {
			msg := fmt.Sprintf("reshapes the lab's links, but the lab's link %s emulates delay or loss (from its topology, --loss, --delay or --jitter), which reshaping would drop: give the rates in the topology instead", name)
			for i := range exp.Groups {
				if exp.Groups[i].LinkRate > 0 {
					return nil, exp.Groups[i].LinkRateError(msg)
				}
			}
			return nil, errors.New("link_rate " + msg)
		}
		out[name] = sh
	}
	return out, nil
}

// wirePorts are the wire check's ports per server key: each server's
// port, 0 (every port) for those whose data uses ports chosen per
// transaction.
func wirePorts(eps proto.Endpoints) map[string]uint16 {
	out := map[string]uint16{}
	for key, byPath := range eps {
		for _, ep := range byPath {
			out[key] = uint16(ep.Port)
			break
		}
		if all.WireAnyPort(key) {
			out[key] = 0
		}
		if all.WireUDP(key) { // the same port's TCP, for the runs that speak it there
			out[key+experiment.TCPWire] = out[key]
		}
	}
	return out
}

// wireUDP says which servers' traffic the wire check counts as UDP alone
// (all.WireUDP: HTTP/3's).
func wireUDP(ports map[string]uint16) map[string]bool {
	out := map[string]bool{}
	for key := range ports {
		if all.WireUDP(key) {
			out[key] = true
		}
	}
	return out
}

// lookupPorts are, per server key, the port of the DNS server of the same
// kind (embedded, or real/) that its transactions ask first.
func lookupPorts(ports map[string]uint16) map[string]uint16 {
	out := map[string]uint16{}
	for key := range ports {
		name := all.NameServer
		if strings.HasPrefix(key, "real/") {
			name = "real/" + name
		}
		if key != name {
			out[key] = ports[name]
		}
	}
	return out
}

func somaxconn(l *lab.Lab) int {
	somax := 0
	_ = lab.Do(lab.NS(l.Name, lab.Server), func() error {
		if v, err := host.ReadSysctl("net.core.somaxconn"); err == nil {
			fmt.Sscan(v, &somax)
		}
		return nil
	})
	return somax
}

// captures opens the wire check's packet socket on r1's checked link (the
// child's fd 3), for server-side figures one in the server host (fd 4),
// and for nat64 one on r1's link to the client, last.
func captures(l *lab.Lab, server, nat64 bool) ([]*os.File, func(), error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	open := func(ns, ifname, name string) error {
		return lab.Do(lab.NS(l.Name, ns), func() error {
			fd, err := capture.OpenSocket(ifname)
			if err == nil {
				files = append(files, os.NewFile(uintptr(fd), name))
			}
			return err
		})
	}
	if err := open(lab.R1, l.Addr.WireIf, "capture"); err != nil {
		return nil, closeAll, err
	}
	if server {
		if err := open(lab.Server, l.Addr.ServerIf, "server capture"); err != nil {
			return nil, closeAll, err
		}
	}
	if nat64 {
		if err := open(lab.R1, lab.R1ClientIf, "client-side capture"); err != nil {
			return nil, closeAll, err
		}
	}
	return files, closeAll, nil
}

// labHeader describes the lab for the result's header.
func labHeader(l *lab.Lab, cfg lab.Config, pcap bool) map[string]string {
	cfgJSON, _ := json.Marshal(cfg)
	return map[string]string{"name": l.Name, "topology": "client - r1 - r2 - server (veth), 6in4 tunnel r1-r2",
		"tunnel": l.TunnelImpl, "tunnel_mtu": strconv.Itoa(l.TunnelMTU), "wire_check": "r1 " + l.Addr.WireIf,
		"links": cfg.LinkSummary(), "config": string(cfgJSON), "pcap": strconv.FormatBool(pcap)}
}

// describe completes the job's lab header and notes: how the lab was
// made, the generator hosts, what the wire check counts.
func (r *Session) describe(l *lab.Lab, cfg lab.Config, job *Job) error {
	if cfg.Generators {
		var err error
		if job.Gen, err = congestion.LabHosts(l); err != nil {
			return err
		}
		job.Lab["generators"] = "gen4c, gen6c on r1; gen4s, gen6s on r2 (background TCP toward the client side, UDP back)"
	}
	if cfg.BareServer {
		job.Lab["server_tcp"] = "bare: SACK, timestamps and window scaling off in the server host"
	}
	if r.Rootless {
		job.Notes = append(job.Notes, "rootless: the lab ran inside a user namespace of its own (no root)")
		job.Lab["privilege"] = "user namespace"
	}
	switch l.TunnelImpl {
	case "none":
		job.Notes = append(job.Notes, "the lab had no 6in4 tunnel (this user can make none): ipv4 and ipv6 only")
	case lab.TunnelUserspace:
		why := proto.Or(l.TunnelWhy, "it was asked for")
		job.Notes = append(job.Notes, "6in4 ran through v6lab's userspace tunnel ("+why+"): its figures include the userspace tunnel's own cost, see docs/performance-history.md")
	case lab.TunnelBPF:
		job.Lab["tunnel_hook"] = l.TunnelHook
	}
	if l.TunnelWhy != "" {
		job.Lab["tunnel_why"] = l.TunnelWhy
	}
	if l.LossImpl != "" {
		job.Lab["loss"] = l.LossImpl
	}
	job.Lab["congestion"] = l.Congestion
	// What the wire check counts: each server's port, and for every
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
	return nil
}

// child writes the job down and runs `v6lab run --lab-child JOB` in the
// client namespace, the captures as its fds 3 and 4.
func (r *Session) child(l *lab.Lab, job *Job, files []*os.File) error {
	dir, err := os.MkdirTemp("", "v6lab-job-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := l.Record().AddDir(dir); err != nil {
		return err
	}
	results, err := r.resultDir(job)
	if err != nil {
		return err
	}
	jobFile := filepath.Join(dir, "job.json")
	b, _ := json.Marshal(job)
	exe, err := os.Executable()
	if err = cmp.Or(err, os.WriteFile(jobFile, b, 0o600)); err != nil {
		return r.afterChild(job, results, err)
	}
	args := []string{"netns", "exec", lab.NS(l.Name, lab.Client), exe, "run", "--lab-child", jobFile}
	if r.Quiet {
		args = append(args, "--quiet")
	}
	if r.Strict {
		args = append(args, "--strict")
	}
	c := exec.Command("ip", args...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, r.Out, r.Err
	c.ExtraFiles = files
	// If this process dies, the child is interrupted too: it keeps its
	// finished runs instead of measuring servers that are gone.
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
	// Ctrl-C reaches the child too; this process waits for it, then
	// tears the lab down. Recorded, so that lab down of an orphan stops it
	// too (it ends by itself when this process is killed, but only after
	// its last run).
	var recErr error
	code, err := host.RunChild(c, func(pid int) { recErr = l.Record().AddDaemon(pid, "v6lab run --lab-child (measuring)") })
	if err == nil && recErr != nil {
		return recErr
	}
	if err == nil && code != 0 {
		err = &ChildExitError{Code: code}
	}
	return r.afterChild(job, results, err)
}
