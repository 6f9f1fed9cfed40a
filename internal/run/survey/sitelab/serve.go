package sitelab

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	mdns "github.com/miekg/dns"

	"v6lab/internal/lab"
	"v6lab/internal/proto"
	"v6lab/internal/report/stats"
	"v6lab/internal/run/host"
	"v6lab/internal/sock/path"
)

// Lab is a lab of sites serving: its DNS servers (one per family) and its
// web servers (every site's addresses, ports 80 and 443).
type Lab struct {
	Sites Sites
	// DNS are the servers that know the sites' names.
	DNS   []netip.AddrPort
	addrs map[string][2]netip.Addr
	index map[string]int
	certs sync.Map // name -> *tls.Certificate
	stop  []func()
}

// DNSPort is the lab's DNS servers' port.
const DNSPort = 53

// place is where a lab of sites serves: in opens its sockets in the
// network namespace (they stay there whichever thread serves them), and
// its DNS servers listen on dns.
type place struct {
	in  func(func() error) error
	dns []netip.Addr
}

// here is this process's own namespace, with its DNS on loopback.
var here = place{in: func(f func() error) error { return f() }, dns: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}}

// Start serves sites in this process's network namespace, which
// lab.SitesHere readied. Close stops it.
func Start(s Sites) (*Lab, error) { return start(s, here) }

func start(s Sites, p place) (*Lab, error) {
	l := &Lab{Sites: s, addrs: map[string][2]netip.Addr{}, index: map[string]int{}}
	for i, x := range s {
		v4, v6 := lab.SiteAddrs(i, x.Blackhole6)
		l.addrs[x.Name], l.index[x.Name] = [2]netip.Addr{v4, v6}, i
	}
	err := p.in(func() error {
		if err := l.startDNS(p.dns); err != nil {
			return err
		}
		return l.startWeb()
	})
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// Close stops every server.
func (l *Lab) Close() {
	for _, f := range l.stop {
		f()
	}
	l.stop = nil
}

// startDNS answers A and AAAA for the sites (NXDOMAIN for other names)
// over UDP and TCP on addrs, port 53, each socket pinned to its family.
func (l *Lab) startDNS(addrs []netip.Addr) error {
	socks, _, err := path.ListenBothSamePort(context.Background(), addrs, DNSPort)
	if err != nil {
		return fmt.Errorf("lab sites: dns: %w", err)
	}
	h := mdns.HandlerFunc(l.answer)
	for i, b := range socks {
		for _, srv := range []*mdns.Server{{PacketConn: b.UDP, Handler: h}, {Listener: b.TCP, Handler: h}} {
			started := make(chan error, 1)
			srv.NotifyStartedFunc = func() { started <- nil }
			go func() { started <- srv.ActivateAndServe() }()
			if err := <-started; err != nil {
				return fmt.Errorf("lab sites: dns on %s: %w", addrs[i], err)
			}
			l.stop = append(l.stop, func() { srv.Shutdown() })
		}
		l.DNS = append(l.DNS, netip.AddrPortFrom(addrs[i], DNSPort))
	}
	return nil
}

// answer answers one query.
func (l *Lab) answer(w mdns.ResponseWriter, req *mdns.Msg) {
	m := new(mdns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	if len(req.Question) != 1 {
		m.SetRcode(req, mdns.RcodeNotImplemented)
		w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	name := strings.TrimSuffix(strings.ToLower(q.Name), ".")
	s, ok := l.site(name)
	if !ok {
		m.SetRcode(req, mdns.RcodeNameError)
		w.WriteMsg(m)
		return
	}
	hdr := mdns.RR_Header{Name: q.Name, Class: mdns.ClassINET, Ttl: 60, Rrtype: q.Qtype}
	a := l.addrs[name]
	switch {
	case q.Qtype == mdns.TypeA:
		m.Answer = append(m.Answer, &mdns.A{Hdr: hdr, A: net.IP(a[0].AsSlice())})
	case q.Qtype == mdns.TypeAAAA && !s.NoAAAA:
		m.Answer = append(m.Answer, &mdns.AAAA{Hdr: hdr, AAAA: net.IP(a[1].AsSlice())})
	}
	w.WriteMsg(m)
}

// certificate is the site's own certificate, made at its first
// handshake (a lab of 10,000 sites makes only those surveyed).
func (l *Lab) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := strings.ToLower(hello.ServerName)
	if _, ok := l.index[name]; !ok {
		return nil, nil // the default certificate
	}
	if c, ok := l.certs.Load(name); ok {
		return c.(*tls.Certificate), nil
	}
	cfg, err := proto.SelfSigned([]string{name}, nil)
	if err != nil {
		return nil, err
	}
	c, _ := l.certs.LoadOrStore(name, &cfg.Certificates[0])
	return c.(*tls.Certificate), nil
}

// site finds a site by name.
func (l *Lab) site(name string) (Site, bool) {
	i, ok := l.index[name]
	if !ok {
		return Site{}, false
	}
	return l.Sites[i], true
}

// startWeb serves every site over HTTP (port 80) and HTTPS (443, a
// self-signed certificate of the site's own, as a real site's is one
// name's and small: a survey of the lab is --insecure) on the wildcard
// addresses, which hold every site's: one listener per family, each
// pinned to it (an IPv4 client is never an IPv4-mapped one here).
func (l *Lab) startWeb() error {
	cfg, err := proto.SelfSigned([]string{"v6lab.test"}, nil)
	if err != nil {
		return fmt.Errorf("lab sites: %w", err)
	}
	cfg.GetCertificate = l.certificate
	for _, port := range []int{80, 443} {
		lns, _, err := path.ListenSamePort(context.Background(), []netip.Addr{netip.IPv4Unspecified(), netip.IPv6Unspecified()}, port)
		if err != nil {
			return fmt.Errorf("lab sites: %w", err)
		}
		srv := &http.Server{Handler: l, ReadHeaderTimeout: 10 * time.Second}
		if port == 443 {
			srv.TLSConfig = cfg.Clone()
			srv.TLSConfig.NextProtos = []string{"h2", "http/1.1"}
		}
		var wg sync.WaitGroup
		for _, ln := range lns {
			if srv.TLSConfig != nil {
				ln = tls.NewListener(ln, srv.TLSConfig)
			}
			wg.Go(func() { srv.Serve(ln) })
		}
		l.stop = append(l.stop, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if srv.Shutdown(ctx) != nil {
				srv.Close()
			}
			wg.Wait()
		})
	}
	return nil
}

// ServeHTTP answers as the site the request names, over the family it
// arrived on: its delay first, then its page (its objects embedded), an
// object, a redirect of its loop, or nothing ever (hang).
func (l *Lab) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	s, ok := l.site(strings.ToLower(host))
	if !ok {
		http.Error(w, "no such site in this lab", http.StatusNotFound)
		return
	}
	fam := 0
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && path.AddrOf(la).Unmap().Is6() {
		fam = 1
	}
	if !sleep(r.Context(), s.Delay[fam]) {
		return
	}
	switch {
	case s.Hang:
		<-r.Context().Done()
	case s.Literal:
		other := l.addrs[s.Name][1-fam].String()
		if fam == 0 {
			other = "[" + other + "]"
		}
		http.Redirect(w, r, scheme(r)+"://"+other+"/", http.StatusFound)
	case s.Loop && r.URL.Path == "/":
		http.Redirect(w, r, "/loop", http.StatusFound)
	case s.Loop:
		http.Redirect(w, r, "/", http.StatusFound)
	case r.URL.Path == "/":
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, l.page(s, scheme(r)))
	default:
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "%s %s\n%s", s.Name, r.URL.Path, strings.Repeat("v6lab ", 100))
	}
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// page is a site's page: a stylesheet of its own and an object on each
// of its object sites.
func (l *Lab) page(s Site, scheme string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!doctype html><html><head><title>%s</title><link rel=stylesheet href=/style.css></head><body>\n", s.Name)
	for _, o := range s.Objects {
		fmt.Fprintf(&b, "<script src=\"%s://%s/object.js\"></script>\n", scheme, o)
	}
	fmt.Fprintf(&b, "<p>%s: a site of a v6lab lab of sites.</p>%s</body></html>\n", s.Name, strings.Repeat("<!-- v6lab -->", 64))
	return b.String()
}

// spinBelow is the delay under which sleep spins rather than sets a
// timer: a timer's wake-up is late by up to a millisecond on a loaded
// machine (a 700 µs delay took about 1.1 ms), which would hide a site the
// file sets at most 1 ms slower.
const spinBelow = 2 * time.Millisecond

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	if d < spinBelow {
		for end := time.Now().Add(d); time.Now().Before(end); {
			runtime.Gosched()
		}
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// childEnv marks the re-run of v6lab survey --lab-sites in its own
// network namespace, or of survey --lab in a kept lab's client host.
const childEnv = "V6LAB_SITES_NETNS"

// ReexecInLab runs this command again in kept lab name's client host
// (ip netns exec, which gives it the lab's resolv.conf: the sites' DNS
// servers) and returns its exit code. The lab must serve sites (v6lab lab
// up --sites).
func ReexecInLab(name string) (int, error) {
	if err := CheckLab(name); err != nil {
		return 0, err
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	c := exec.Command("ip", append([]string{"netns", "exec", lab.NS(name, lab.Client), exe}, os.Args[1:]...)...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), childEnv+"=lab")
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGINT}
	return host.RunChild(c, nil)
}

// CheckLab says why lab name cannot be surveyed from (a bad name, an
// orphan whose keeper is gone, no such lab up, or one that serves no
// sites), or nil.
func CheckLab(name string) error {
	if err := lab.CheckName(name); err != nil {
		return err
	}
	if r, err := lab.ReadRecord(name); err == nil && !r.Alive() {
		return fmt.Errorf("lab sites: lab %q is an orphan: its owner process %d is gone, and with it the sites' web and DNS servers, so it serves no sites; v6lab lab down --name %s, then v6lab lab up --sites FILE --name %s", name, r.PID, name, name)
	}
	if _, err := os.Stat(filepath.Join(lab.NetnsDir, lab.NS(name, lab.Client))); err != nil {
		return fmt.Errorf("lab sites: no lab %s is up (v6lab lab up --sites FILE --name %s; v6lab lab status lists the labs)", name, name)
	}
	if _, err := os.Stat(lab.SitesResolvConf(name)); err != nil {
		return fmt.Errorf("lab sites: lab %q serves no sites (v6lab lab up --sites FILE --name %s; v6lab lab status lists the labs)", name, name)
	}
	return nil
}

// Check reads a sites file as lab up --sites is given it, before the lab
// is built (its errors name the file and line), and returns its absolute
// name, which the lab's keeper reads again.
func Check(file string) (string, error) {
	if _, err := Load(file); err != nil {
		return "", err
	}
	return filepath.Abs(file)
}

// InNamespace says whether this process is that re-run.
func InNamespace() bool { return os.Getenv(childEnv) != "" }

// Reexec runs this command again in a new network namespace (and, without
// root, a user namespace where it is root) and returns its exit code: the
// lab of sites lives only as long as that process, and vanishes with it
// even if it is killed.
func Reexec() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	c := exec.Command(exe, os.Args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	c.Env = append(os.Environ(), childEnv+"=1")
	c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGINT}
	if os.Geteuid() != 0 {
		c.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		c.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		c.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
	}
	code, err := host.RunChild(c, nil)
	if errors.Is(err, host.ErrStart) {
		return 0, fmt.Errorf("lab sites: a network namespace of its own: %w (run as root, or where the kernel allows user namespaces)", err)
	}
	return code, err
}

// Up readies this namespace and serves the sites of file in it.
func Up(file string) (*Lab, error) {
	s, err := Load(file)
	if err != nil {
		return nil, err
	}
	if err := lab.SitesHere(); err != nil {
		return nil, err
	}
	return Start(s)
}

// Serve serves the sites of l's file (lab.Config.Sites, v6lab lab up
// --sites) in l's server host: DNS on the server's addresses, the sites
// on the addresses lab.AddSites routed to it. It is keep.Hold's Serve.
func Serve(l *lab.Lab) (stop func(), what string, err error) {
	if l.Sites == "" {
		return func() {}, "", nil
	}
	s, err := Load(l.Sites)
	if err != nil {
		return nil, "", err
	}
	in := func(f func() error) error { return lab.Do(lab.NS(l.Name, lab.Server), f) }
	x, err := start(s, place{in: in, dns: []netip.Addr{l.Addr.ServerV4, l.Addr.ServerV6}})
	if err != nil {
		return nil, "", err
	}
	return x.Close, fmt.Sprintf("%s of %s, their DNS on %s and %s", stats.Count(len(s), "site"), l.Sites, l.Addr.ServerV4, l.Addr.ServerV6), nil
}
