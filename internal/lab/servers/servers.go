// Package servers starts the real servers the studies used (or their
// successors) with configurations it generates: nginx for HTTP and Unbound
// for DNS. Each runs in the foreground under a command prefix the caller
// gives (in the lab: `ip netns exec <server namespace>`), listens on the
// given addresses, and is stopped with its process group.
//
// It imports nothing of v6lab: the lab records its daemons through Recorder.
package servers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The package starts nginx for HTTP, Unbound for DNS, ProFTPD for FTP,
// Postfix for SMTP and Dovecot for IMAP.

// Program is a server program and the Debian package that installs it.
type Program struct {
	Name, Package string
	// Role is the name a result's header gives the server it runs (h3,
	// dns64); empty: its protocol's.
	Role string
}

// ErrMissing is wrapped when a server program is not installed.
var ErrMissing = errors.New("not installed")

// Server is a running real server.
type Server struct {
	Name    string // nginx, unbound
	Version string
	Port    int
	dir     string
	cmd     *exec.Cmd
	done    chan error
	// pidFile, when set, names a daemon that left the process group
	// (Postfix's master calls setsid): it is stopped by its pid too.
	pidFile string
}

// Place says where a server runs: under a command prefix (ip netns exec
// NS), and who records what it makes so a killed caller leaves nothing
// unnamed (the lab's owner record; nil records nothing).
type Place struct {
	Prefix []string
	Rec    Recorder
}

// Recorder is told of every daemon and directory as it is made.
type Recorder interface {
	AddDaemon(pid int, what string) error
	AddDir(dir string) error
}

// Mkdir makes the server's working directory, recorded before it is
// filled, and readable by the unprivileged users the daemons run as.
func (at Place) Mkdir(name string) (string, error) {
	dir, err := os.MkdirTemp("", "v6lab-"+name+"-")
	if err != nil {
		return "", err
	}
	if at.Rec != nil {
		if err := at.Rec.AddDir(dir); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	os.Chmod(dir, 0o755)
	return dir, nil
}

func (at Place) record(pid int, what string) error {
	if at.Rec == nil {
		return nil
	}
	return at.Rec.AddDaemon(pid, what)
}

// daemonPid is the pid in pidFile, if the server has one.
func (s *Server) daemonPid() int {
	if s.pidFile == "" {
		return 0
	}
	b, err := os.ReadFile(s.pidFile)
	if err != nil {
		return 0
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
		return pid
	}
	return 0
}

// Stop ends the server and removes its files.
func (s *Server) Stop() {
	if pid := s.daemonPid(); pid > 0 {
		syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if s.cmd.Process != nil {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
			<-s.done
		}
	}
	os.RemoveAll(s.dir)
}

// CheckInstalled checks every program a run needs at once, and names all
// that are missing, their Debian packages and the script that installs
// them: one error, not one install-and-retry round per server.
func CheckInstalled(need []Program) error {
	var missing, pkgs []string
	for _, p := range need {
		if slices.Contains(missing, p.Name) {
			continue
		}
		if _, err := look(p.Name); err != nil {
			missing = append(missing, p.Name)
			pkgs = append(pkgs, p.Package)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("servers: real servers %w: %s; install them with scripts/install-deps --real (or apt-get install %s)",
		ErrMissing, strings.Join(missing, ", "), strings.Join(pkgs, " "))
}

// look finds a program (tests replace it).
var look = LookPath

func LookPath(program string) (string, error) {
	p, err := exec.LookPath(program)
	if err != nil {
		for _, dir := range []string{"/usr/sbin", "/sbin"} {
			if st, e := os.Stat(filepath.Join(dir, program)); e == nil && !st.IsDir() {
				return filepath.Join(dir, program), nil
			}
		}
		return "", fmt.Errorf("servers: %s is %w", program, ErrMissing)
	}
	return p, nil
}

// Version runs the program's version flag and returns its first line
// that names a version.
func Version(bin string, args ...string) string {
	out, _ := exec.Command(bin, args...).CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); strings.Contains(strings.ToLower(l), "version") {
			return l
		}
	}
	return "unknown version"
}

// Start runs bin with args under prefix, in a process group of its own,
// and waits until it accepts TCP connections on addr.
func Start(ctx context.Context, name, dir, pidFile string, at Place, ready netip.AddrPort, bin string, args ...string) (*Server, error) {
	prefix := at.Prefix
	argv := append(append([]string{}, prefix...), append([]string{bin}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	logf, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("servers: %s: %w", name, err)
	}
	s := &Server{Name: name, Port: int(ready.Port()), dir: dir, cmd: cmd, done: make(chan error, 1), pidFile: pidFile}
	go func() { s.done <- cmd.Wait() }()
	if err := at.record(cmd.Process.Pid, name); err != nil {
		s.Stop()
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-s.done:
			s.done <- err
			out, _ := os.ReadFile(filepath.Join(dir, name+".out"))
			s.Stop() // a daemon that left the group, and the files
			return nil, fmt.Errorf("servers: %s exited (%v): %s", name, err, strings.TrimSpace(string(out)))
		default:
		}
		if probe(ctx, prefix, ready) == nil {
			if pid := s.daemonPid(); pid > 0 {
				// A daemon that left the group: recorded by its own pid.
				if err := at.record(pid, name+" (daemon)"); err != nil {
					s.Stop()
					return nil, err
				}
			}
			return s, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.Stop()
			return nil, fmt.Errorf("servers: %s did not start listening on %s", name, ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probe checks that something accepts TCP on addr. With a namespace prefix
// the check runs there (a tiny shell TCP connect through bash's /dev/tcp
// would need bash; the ip tool's own exec of this binary is heavier), so it
// uses `ip netns exec … true` only to know the namespace exists and then
// relies on the server's log; without a prefix it dials.
func probe(ctx context.Context, prefix []string, addr netip.AddrPort) error {
	if len(prefix) == 0 {
		d := net.Dialer{Timeout: 200 * time.Millisecond}
		network := "tcp4" // pinned to the address's family, as every v6lab socket
		if addr.Addr().Is6() {
			network = "tcp6"
		}
		c, err := d.DialContext(ctx, network, addr.String())
		if err == nil {
			c.Close()
		}
		return err
	}
	// Inside a namespace: look for the listening socket in its /proc.
	argv := append(append([]string{}, prefix...), "cat", "/proc/net/tcp", "/proc/net/tcp6")
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return err
	}
	want := fmt.Sprintf(":%04X ", addr.Port())
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && f[3] == "0A" && strings.HasSuffix(f[1]+" ", want) { // 0A: LISTEN
			return nil
		}
	}
	return errors.New("not listening yet")
}

// Content is what nginx serves: files by path under its root.
type Content map[string][]byte

// Generated are files of any size nginx serves, written once to its root
// in chunks by their Fill (never held in memory whole), by path.
type Generated map[string]GeneratedFile

// GeneratedFile is Size bytes, byte o of which Fill writes (content.Fill).
type GeneratedFile struct {
	Size int64
	Fill func(p []byte, off int64)
}

// writeGenerated streams one generated file to p.
func writeGenerated(p string, g GeneratedFile) error {
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for off := int64(0); off < g.Size; {
		n := min(int64(len(buf)), g.Size-off)
		g.Fill(buf[:n], off)
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		off += n
	}
	return f.Close()
}

// TLS is a server's certificate and key (PEM) and the port it serves
// TLS on (nginx: HTTP/1.1 and HTTP/2 by ALPN; Caddy: HTTP/3 too).
type TLS struct {
	Port      int
	Cert, Key []byte
}

// Write writes a server's certificate and key into dir: cert.pem and
// key.pem (readable by root alone: the daemons read it before they drop
// their privileges).
func (t *TLS) Write(dir string) (cert, key string, err error) {
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(cert, t.Cert, 0o644); err != nil {
		return "", "", err
	}
	return cert, key, os.WriteFile(key, t.Key, 0o600)
}

// WriteRoot writes content and generated files under root.
func WriteRoot(root string, content Content, gen Generated) error {
	for name, b := range content {
		p := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(name, "/")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	for name, g := range gen {
		p := filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(name, "/")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := writeGenerated(p, g); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// StartNginx serves content and generated files on every address at
// port, and with tls over TLS (HTTP/1.1 and HTTP/2 by ALPN) at its port.
func StartNginx(ctx context.Context, at Place, addrs []netip.Addr, port int, content Content, gen Generated, tls *TLS) (*Server, error) {
	bin, err := LookPath("nginx")
	if err != nil {
		return nil, err
	}
	dir, err := at.Mkdir("nginx")
	if err != nil {
		return nil, err
	}
	if err := WriteRoot(filepath.Join(dir, "www"), content, gen); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("nginx: %w", err)
	}
	listens, err := nginxListens(dir, addrs, port, tls)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	conf := fmt.Sprintf(`# generated by v6lab
daemon off;
worker_processes auto;
worker_rlimit_nofile 65536;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 16384; multi_accept on; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 30;
  types { text/html html; image/png png; application/octet-stream bin; }
  default_type application/octet-stream;
  client_body_temp_path %[1]s/tmp-body;
  proxy_temp_path %[1]s/tmp-proxy;
  fastcgi_temp_path %[1]s/tmp-fastcgi;
  uwsgi_temp_path %[1]s/tmp-uwsgi;
  scgi_temp_path %[1]s/tmp-scgi;
  server {
%[2]s    root %[1]s/www;
    index index.html;
  }
}
`, dir, listens)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	s, err := Start(ctx, "nginx", dir, "", at, netip.AddrPortFrom(addrs[0], uint16(port)), bin, "-c", cf, "-e", filepath.Join(dir, "error.log"))
	if err != nil {
		return nil, err
	}
	s.Version = strings.TrimPrefix(Version(bin, "-v"), "nginx version: ")
	return s, nil
}

// nginxListens are nginx's listen lines: plain HTTP at port on every
// address, each pinned to its family, and with tls HTTPS at its port (h2
// and HTTP/1.1 by ALPN) with its certificate.
func nginxListens(dir string, addrs []netip.Addr, port int, tls *TLS) (string, error) {
	var b strings.Builder
	listen := func(a netip.Addr, port int, more string) {
		if a.Is4() {
			fmt.Fprintf(&b, "    listen %s:%d%s backlog=65535;\n", a, port, more)
		} else {
			fmt.Fprintf(&b, "    listen [%s]:%d%s ipv6only=on backlog=65535;\n", a, port, more)
		}
	}
	for _, a := range addrs {
		listen(a, port, "")
	}
	if tls == nil {
		return b.String(), nil
	}
	for _, a := range addrs {
		listen(a, tls.Port, " ssl http2")
	}
	cert, key, err := tls.Write(dir)
	if err != nil {
		return "", err
	}
	// Tickets on (nginx's default), so users that resume can; 1.2 and 1.3
	// as Go's server offers; keepalive_requests as high as HTTP/2's kept
	// connections need (nginx's 1,000 would end them mid-run with GOAWAY).
	fmt.Fprintf(&b, "    ssl_certificate %s;\n    ssl_certificate_key %s;\n    ssl_protocols TLSv1.2 TLSv1.3;\n    ssl_session_cache shared:v6lab:10m;\n    keepalive_requests 1000000;\n", cert, key)
	return b.String(), nil
}

// Record is one A or AAAA record Unbound serves.
type Record struct {
	Name string
	Addr netip.Addr
	// Type and Data, when Type is set, are a record of another type in
	// presentation form instead of the address ("HTTPS", "1 . alpn=h2").
	Type, Data string
	// TXT, when set, makes it a TXT record of one string instead (Addr
	// unused).
	TXT string
}

// rtype is the record's type and its data as a zone file writes them.
func (r Record) rtype() (string, string) {
	switch {
	case r.Type != "": // HTTPS records go unquoted: alpn=h3,h2
		return r.Type, strings.ReplaceAll(r.Data, `"`, "")
	case r.TXT != "":
		return "TXT", strconv.Quote(r.TXT)
	case r.Addr.Is6():
		return "AAAA", r.Addr.String()
	}
	return "A", r.Addr.String()
}

// View answers the clients of Prefix with Records instead of the default
// ones (the lab's tunnel clients get the tunnel address).
type View struct {
	Name    string
	Clients netip.Prefix
	Records []Record
}

// StartUnbound answers records (and views) on every address at port, over
// UDP and TCP, without recursion.
func StartUnbound(ctx context.Context, at Place, addrs []netip.Addr, port int, zone string, records []Record, views []View) (*Server, error) {
	return runUnbound(ctx, at, "unbound", addrs, port, "iterator", func(dir string, b *strings.Builder) error {
		fmt.Fprintf(b, "  local-zone: \"%s.\" static\n", strings.TrimSuffix(zone, "."))
		for _, r := range records {
			b.WriteString(localData(r))
		}
		for _, v := range views {
			fmt.Fprintf(b, "  access-control-view: %s %s\n", v.Clients, v.Name)
		}
		for _, v := range views {
			fmt.Fprintf(b, "view:\n  name: %q\n  view-first: no\n  local-zone: \"%s.\" static\n", v.Name, strings.TrimSuffix(zone, "."))
			for _, r := range v.Records {
				b.WriteString(localData(r))
			}
		}
		return nil
	})
}

// StartUnboundDNS64 is a DNS64 resolver (RFC 6147) on addr at port:
// Unbound's own dns64 module, synthesising AAAA records under prefix for
// the zone's names that have only A records. The zone is served to the
// resolver itself as an authoritative zone it reads from a file (local
// data would bypass the module).
func StartUnboundDNS64(ctx context.Context, at Place, addr netip.Addr, port int, zone string, records []Record, prefix netip.Prefix) (*Server, error) {
	zone = strings.TrimSuffix(zone, ".")
	return runUnbound(ctx, at, "unbound-dns64", []netip.Addr{addr}, port, "dns64 iterator", func(dir string, b *strings.Builder) error {
		var zf strings.Builder
		fmt.Fprintf(&zf, "$ORIGIN %s.\n$TTL 60\n@ IN SOA ns.%s. hostmaster.%s. 1 3600 600 86400 60\n@ IN NS ns.%s.\nns IN A 192.0.2.53\n", zone, zone, zone, zone)
		for _, r := range records {
			t, data := r.rtype()
			fmt.Fprintf(&zf, "%s. IN %s %s\n", strings.TrimSuffix(r.Name, "."), t, data)
		}
		file := filepath.Join(dir, zone+".zone")
		if err := os.WriteFile(file, []byte(zf.String()), 0o644); err != nil {
			return err
		}
		// test. is a special-use name Unbound answers NXDOMAIN for by
		// default; nodefault lets the zone through.
		fmt.Fprintf(b, "  dns64-prefix: %s\n  local-zone: \"test.\" nodefault\nauth-zone:\n  name: \"%s.\"\n  zonefile: %q\n  for-downstream: no\n  for-upstream: yes\n", prefix, zone, file)
		return nil
	})
}

func localData(r Record) string {
	t, data := r.rtype()
	return fmt.Sprintf("  local-data: '%s. %s %s'\n", strings.TrimSuffix(r.Name, "."), t, data)
}

// runUnbound writes an Unbound configuration (the common part, then what
// more adds) in a directory of its own named name, checks it and starts
// the daemon.
func runUnbound(ctx context.Context, at Place, name string, addrs []netip.Addr, port int, modules string, more func(dir string, b *strings.Builder) error) (*Server, error) {
	bin, err := LookPath("unbound")
	if err != nil {
		return nil, err
	}
	dir, err := at.Mkdir(name)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# generated by v6lab\nserver:\n  directory: %q\n  chroot: \"\"\n  username: \"\"\n  pidfile: %q\n", dir, filepath.Join(dir, "unbound.pid"))
	b.WriteString("  do-daemonize: no\n  use-syslog: no\n  logfile: \"\"\n  verbosity: 0\n  do-ip4: yes\n  do-ip6: yes\n  do-udp: yes\n  do-tcp: yes\n")
	fmt.Fprintf(&b, "  num-threads: 2\n  so-rcvbuf: 8m\n  access-control: 0.0.0.0/0 allow\n  access-control: ::/0 allow\n  module-config: %q\n", modules)
	// Answers up to 4096 bytes over UDP when the query's EDNS allows (the
	// large name's: it comes in IP fragments), whatever this Unbound's
	// defaults are (1.17's: max-udp-size 4096, edns-buffer-size 1232,
	// DNS Flag Day 2020's size).
	b.WriteString("  max-udp-size: 4096\n  edns-buffer-size: 4096\n")
	fmt.Fprintf(&b, "  port: %d\n", port)
	for _, a := range addrs {
		fmt.Fprintf(&b, "  interface: %s\n", a)
	}
	if err := more(dir, &b); err != nil {
		return nil, err
	}
	b.WriteString("remote-control:\n  control-enable: no\n")
	cf := filepath.Join(dir, "unbound.conf")
	if err := os.WriteFile(cf, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	if out, err := exec.Command(filepath.Join(filepath.Dir(bin), "unbound-checkconf"), cf).CombinedOutput(); err != nil && !errors.Is(err, exec.ErrNotFound) {
		if _, statErr := os.Stat(filepath.Join(filepath.Dir(bin), "unbound-checkconf")); statErr == nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("servers: unbound config: %s", strings.TrimSpace(string(out)))
		}
	}
	s, err := Start(ctx, name, dir, "", at, netip.AddrPortFrom(addrs[0], uint16(port)), bin, "-d", "-c", cf)
	if err != nil {
		return nil, err
	}
	s.Version = "unbound " + strings.TrimPrefix(Version(bin, "-V"), "Version ")
	return s, nil
}

// WaitUDP waits until a UDP socket is bound to addr's port (in the
// namespace of prefix, or here), for 5 s at most.
func WaitUDP(ctx context.Context, prefix []string, addr netip.AddrPort) error {
	want := fmt.Sprintf(":%04X ", addr.Port())
	deadline := time.Now().Add(5 * time.Second)
	for {
		argv := append(append([]string{}, prefix...), "cat", "/proc/net/udp", "/proc/net/udp6")
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 3 && strings.HasSuffix(f[1]+" ", want) {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("no UDP socket bound on " + addr.String() + ": HTTP/3 is not served")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
