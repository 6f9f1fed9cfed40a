package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ProFTPD runs from inetd, not standalone: its standalone master, woken
// from select by the SIGCHLD of a session that ended, sleeps
// PR_TUNABLE_EINTR_RETRY_INTERVAL (0.2 s, built in) before it accepts
// again, so a closed-loop benchmark's next connection waited 0.2–1.4 s
// every time (docs/experiments.md). From inetd each connection gets a
// ProFTPD of its own at once, as Debian's proftpd package offers.

// InetdCommand is the command that runs InetdMain as a process of its
// own: the running executable's hidden `inetd` subcommand (v6lab's; the
// package's tests answer it in TestMain).
var InetdCommand = func() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("servers: inetd: %w", err)
	}
	return []string{exe, "inetd"}, nil
}

// InetdUsage is the inetd command line InetdMain takes.
const InetdUsage = "inetd --listen ADDR:PORT [--listen ADDR:PORT ...] -- PROGRAM [ARG ...]"

// InetdMain is a minimal inetd ("nowait" TCP service): it listens on every
// --listen address and starts PROGRAM for each connection it accepts,
// with the connection as its standard input and output and its own
// standard error as the program's. It runs until SIGTERM or SIGINT and
// returns the process's exit code.
func InetdMain(args []string, stderr io.Writer) int {
	addrs, argv, err := parseInetd(args)
	if err != nil {
		fmt.Fprintf(stderr, "v6lab inetd: %v\nusage: v6lab %s\n", err, InetdUsage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := Inetd(ctx, addrs, argv, stderr); err != nil {
		fmt.Fprintf(stderr, "v6lab inetd: %v\n", err)
		return 1
	}
	return 0
}

func parseInetd(args []string) ([]netip.AddrPort, []string, error) {
	var addrs []netip.AddrPort
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--":
			if len(addrs) == 0 {
				return nil, nil, errors.New("no --listen address")
			}
			if i+1 == len(args) {
				return nil, nil, errors.New("no program after --")
			}
			return addrs, args[i+1:], nil
		case a == "--listen" && i+1 < len(args):
			ap, err := netip.ParseAddrPort(args[i+1])
			if err != nil {
				return nil, nil, fmt.Errorf("--listen: %q is not ADDR:PORT", args[i+1])
			}
			addrs = append(addrs, ap)
			i++
		default:
			return nil, nil, fmt.Errorf("unexpected argument %q", a)
		}
	}
	return nil, nil, errors.New("no -- before the program")
}

// Inetd serves until ctx ends: every connection accepted on addrs goes to
// a new process of argv (started directly, no shell). A program that
// cannot start closes the connection and is logged to logw.
func Inetd(ctx context.Context, addrs []netip.AddrPort, argv []string, logw io.Writer) error {
	// Sessions still running when the inetd ends are ended with it, as a
	// standalone master ends its children: after the listeners close
	// (deferred calls run last first), so none starts in between.
	var kids children
	defer kids.term()
	var lns []*net.TCPListener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for _, a := range addrs {
		network := "tcp4" // pinned to the address's family, as every v6lab socket
		if a.Addr().Is6() {
			network = "tcp6"
		}
		l, err := net.ListenTCP(network, net.TCPAddrFromAddrPort(a))
		if err != nil {
			return err
		}
		lns = append(lns, l)
	}
	errc := make(chan error, len(lns))
	for _, l := range lns {
		go func() { errc <- acceptLoop(l, argv, logw, &kids) }()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

// children are the running programs the inetd started.
type children struct {
	mu    sync.Mutex
	set   map[*os.Process]bool
	ended bool // term was called: one started since is ended at once
}

// start starts cmd as a child, unless the inetd is ending. Starting and
// recording are one step under the lock: a child started just before the
// end but recorded after it would outlive the inetd (os.Exit does not
// wait for the goroutine that records it), holding its session open.
func (k *children) start(cmd *exec.Cmd) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ended {
		return errors.New("the inetd is ending")
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	if k.set == nil {
		k.set = map[*os.Process]bool{}
	}
	k.set[cmd.Process] = true
	return nil
}

func (k *children) done(p *os.Process) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.set, p)
}

func (k *children) term() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ended = true
	for p := range k.set {
		p.Signal(syscall.SIGTERM)
	}
}

func acceptLoop(l *net.TCPListener, argv []string, logw io.Writer, kids *children) error {
	for {
		c, err := l.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			// Out of descriptors or a reset before accept: the
			// connection is lost, the service goes on.
			fmt.Fprintf(logw, "v6lab inetd: accept: %v\n", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err := spawn(c, argv, logw, kids); err != nil {
			fmt.Fprintf(logw, "v6lab inetd: %s for %s: %v\n", strings.Join(argv, " "), c.RemoteAddr(), err)
		}
	}
}

// spawn hands the connection to a new process of argv and reaps it.
func spawn(c *net.TCPConn, argv []string, logw io.Writer, kids *children) error {
	f, err := c.File() // a duplicate; the program gets it as fd 0 and 1
	c.Close()
	if err != nil {
		return err
	}
	defer f.Close()
	// The program reads and writes the socket as a blocking descriptor,
	// as from inetd.
	if err := syscall.SetNonblock(int(f.Fd()), false); err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, f, logw
	if err := kids.start(cmd); err != nil {
		return err
	}
	go func() {
		cmd.Wait()
		kids.done(cmd.Process)
	}()
	return nil
}
