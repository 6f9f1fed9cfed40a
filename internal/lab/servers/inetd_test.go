package servers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"v6lab/internal/testutil"
)

// TestMain answers InetdCommand: ProFTPD's tests run this test binary as
// their inetd, as v6lab runs itself.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "inetd" {
		os.Exit(InetdMain(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

func TestInetdArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no -- before the program"},
		{[]string{"--", "cat"}, "no --listen address"},
		{[]string{"--listen", "127.0.0.1:1", "--"}, "no program after --"},
		{[]string{"--listen", "localhost:21", "--", "cat"}, `--listen: "localhost:21" is not ADDR:PORT`},
		{[]string{"--port", "21", "--", "cat"}, `unexpected argument "--port"`},
	} {
		var out strings.Builder
		if code := InetdMain(c.args, &out); code != 2 || !strings.Contains(out.String(), c.want) || !strings.Contains(out.String(), "usage: v6lab inetd") {
			t.Errorf("%q: exit %d, %q; want 2 and %q", c.args, code, out.String(), c.want)
		}
	}
	var out strings.Builder
	if code := InetdMain([]string{"--listen", "192.0.2.1:1", "--", "cat"}, &out); code != 1 || !strings.Contains(out.String(), "192.0.2.1") {
		t.Errorf("an address the host does not have: exit %d, %q", code, out.String())
	}
}

// TestInetdGivesEachConnectionItsProgram runs the inetd as a process (as
// the lab does) with cat as the service: each connection, on each family,
// is echoed by a cat of its own, and the process ends on SIGTERM.
func TestInetdGivesEachConnectionItsProgram(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip(err)
	}
	port := testutil.FreePort(t)
	argv, err := InetdCommand()
	if err != nil {
		t.Fatal(err)
	}
	argv = append(argv, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--listen", fmt.Sprintf("[::1]:%d", port), "--", cat)
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			<-done
		}
	}()
	dial := func(addr string) net.Conn {
		for range 100 {
			if c, err := net.Dial("tcp", addr); err == nil {
				return c
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("inetd does not accept on %s: %s", addr, stderr.String())
		return nil
	}
	var conns []net.Conn
	for _, a := range []string{"127.0.0.1", "::1", "127.0.0.1"} {
		conns = append(conns, dial(netip.AddrPortFrom(netip.MustParseAddr(a), uint16(port)).String()))
	}
	// All three open at once: each has its own cat.
	for i, c := range conns {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "line %d from %s\n", i, c.LocalAddr())
	}
	for i, c := range conns {
		got, err := bufio.NewReader(c).ReadString('\n')
		if want := fmt.Sprintf("line %d from %s\n", i, c.LocalAddr()); err != nil || got != want {
			t.Errorf("connection %d: %q, %v; want %q", i, got, err, want)
		}
		c.Close()
	}
	// A session still open when the inetd ends is ended with it.
	open := dial(fmt.Sprintf("127.0.0.1:%d", port))
	defer open.Close()
	fmt.Fprintf(open, "hello\n")
	open.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(open)
	if l, err := r.ReadString('\n'); err != nil || l != "hello\n" {
		t.Fatalf("the open session: %q, %v", l, err)
	}
	cmd.Process.Signal(os.Interrupt)
	if _, err := r.ReadString('\n'); err != io.EOF {
		t.Errorf("the session open when the inetd ended: %v, want EOF (its program ended)", err)
	}
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Errorf("inetd after SIGINT: %v (%s)", err, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Error("inetd still runs 5 s after SIGINT")
	}
}
