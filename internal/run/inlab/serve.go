package inlab

import (
	"bufio"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"v6lab/internal/lab"
)

// process is an embedded server running as `v6lab serve KEY` in a
// namespace (proto.Running).
type process struct {
	c     *exec.Cmd
	port  int
	addrs []netip.AddrPort
}

func (p *process) Port() int               { return p.port }
func (p *process) Addrs() []netip.AddrPort { return p.addrs }

func (p *process) Close() error {
	p.c.Process.Signal(syscall.SIGTERM)
	return p.c.Wait()
}

// serveInNamespace starts `v6lab serve KEY` inside network namespace ns on
// the given addresses (one port chosen for all) and returns it once it
// serves; the lab's record names it, so a killed run's leftovers are found.
func serveInNamespace(rec *lab.Record, ns, key string, addrs []netip.Addr) (*process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"netns", "exec", ns, exe, "serve", key}
	for _, a := range addrs {
		args = append(args, "--listen", netip.AddrPortFrom(a, 0).String())
	}
	c := exec.Command("ip", args...)
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := c.Start(); err != nil {
		return nil, err
	}
	p := &process{c: c}
	if err := rec.AddDaemon(c.Process.Pid, "v6lab serve "+key); err != nil {
		p.Close()
		return nil, err
	}
	ports := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			rest, ok := strings.CutPrefix(sc.Text(), "serving "+key+" on ")
			if ap, err := netip.ParseAddrPort(strings.Fields(rest + " ")[0]); ok && err == nil && !sent {
				ports <- int(ap.Port())
				sent = true
			}
		}
		if !sent {
			close(ports)
		}
	}()
	select {
	case port, ok := <-ports:
		if ok {
			p.port = port
			for _, a := range addrs {
				p.addrs = append(p.addrs, netip.AddrPortFrom(a, uint16(port)))
			}
			return p, nil
		}
	case <-time.After(10 * time.Second):
	}
	p.Close()
	return nil, fmt.Errorf("the %s server in %s did not start: %s", key, ns, strings.TrimSpace(stderr.String()))
}
