package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"v6lab/internal/gen/load"
	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// The recipe of docs/ARCHITECTURE.md, followed by a test: a protocol
// ("echo": a word sent, the same word back) is its options, its probe, its
// embedded server and one descriptor, put in the list. Nothing else in
// v6lab learns of it, yet files, flags, loopback runs and reports take it.

// echoOptions are an echo cell's: the word, and with where: hosts the
// server (the probe command's argument).
type echoOptions struct {
	proto.Common
	Server string `json:"server_addr,omitempty" opt:"server_addr,fileonly"`
	Word   string `json:"word,omitempty" opt:"word,default=hello" usage:"the word the server sends back"`
}

func (o *echoOptions) Check(where result.Where, given proto.Given) error {
	if strings.ContainsAny(o.Word, " \r\n") {
		return proto.Errorf("word", "%q is not one word", o.Word)
	}
	if (where == result.Hosts) != (o.Server != "") {
		return proto.Errorf("server_addr", "the server's address, with where: hosts only")
	}
	return nil
}

func (o *echoOptions) Destination() string { return o.Server }

func (o *echoOptions) Target(p path.Path) (proto.Endpoint, error) {
	ap, err := netip.ParseAddrPort(o.Server)
	if err != nil {
		return proto.Endpoint{}, err
	}
	return proto.Endpoint{Host: ap.Addr().String(), Port: int(ap.Port())}, nil
}

func (o *echoOptions) Probe(ep proto.Endpoint, p path.Path) (load.Probe, error) {
	return echoProbe{word: proto.Or(o.Word, "hello"), ep: ep, p: p}, nil
}

type echoProbe struct {
	word string
	ep   proto.Endpoint
	p    path.Path
}

func (e echoProbe) Do(ctx context.Context, _ int) result.Sample {
	tr := load.Begin("echo", e.p)
	conn, release, failed := tr.Open(ctx, e.ep.Resolver(), e.ep.Host, e.ep.Port, path.Dialer{Path: e.p, Source: e.ep.Source})
	if failed != nil {
		return *failed
	}
	defer release()
	fmt.Fprintln(conn, e.word)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return tr.Fail(ctx, "reply", err)
	}
	if got := strings.TrimSpace(line); got != e.word {
		return tr.Fail(ctx, "protocol", fmt.Errorf("echo: sent %q, got %q", e.word, got))
	}
	return tr.Done("echoed " + e.word)
}

// echoServe answers every line with itself.
func echoServe(ctx context.Context, at proto.Place) (proto.Running, error) {
	ls, port, err := path.ListenSamePort(ctx, at.Listen(), at.Port)
	if err != nil {
		return nil, err
	}
	for _, l := range ls {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					sc := bufio.NewScanner(c)
					for sc.Scan() {
						fmt.Fprintln(c, sc.Text())
					}
				}()
			}
		}()
	}
	return echoRunning{ls, port}, nil
}

type echoRunning struct {
	ls   []net.Listener
	port int
}

func (r echoRunning) Port() int { return r.port }
func (r echoRunning) Addrs() []netip.AddrPort {
	var out []netip.AddrPort
	for _, l := range r.ls {
		out = append(out, l.Addr().(*net.TCPAddr).AddrPort())
	}
	return out
}
func (r echoRunning) Close() error {
	var errs []error
	for _, l := range r.ls {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}

// echoProtocol is the descriptor: the one line the list gets.
var echoProtocol = proto.Protocol{
	Name: "echo",
	New:  func() proto.Options { return &echoOptions{} },
	Command: proto.Command{Arg: "ADDR:PORT", Short: "Measure a word echoed back",
		SetArg: func(o proto.Options, arg string) { o.(*echoOptions).Server = arg }},
	Server: &proto.Server{Key: "echo", About: "embedded echo server", Serve: echoServe,
		Command: proto.ServeCommand{Short: "Echo every line", Listen: []string{"127.0.0.1:0", "[::1]:0"}}},
}

// TestTheRecipeAddsAProtocol: with its descriptor in the list, the echo
// protocol is decoded from an experiment file (its option, and its option
// refused for another protocol naming it) and from flags, runs over both
// loopback paths, and its figures are in report.txt.
func TestTheRecipeAddsAProtocol(t *testing.T) {
	list, servers := all.List, all.Servers
	all.List, all.Servers = append(list[:len(list):len(list)], &echoProtocol), append(servers[:len(servers):len(servers)], echoProtocol.Server)
	t.Cleanup(func() { all.List, all.Servers = list, servers })

	dir := t.TempDir()
	file := filepath.Join(dir, "echo.yaml")
	os.WriteFile(file, []byte("name: recipe\nwhere: loopback\ncells:\n  - {protocol: echo, word: ping, conns: [1, 3], runs: 3}\n"), 0o644)
	results := filepath.Join(dir, "results")
	if _, err := v6lab(t, "run", file, "--results", results, "-q"); err != nil {
		t.Fatal(err)
	}
	txt := readReport(t, results)
	for _, want := range []string{"ECHO: average response time", "ipv4  mean", "ipv6  mean", "100.0% (6/6)"} {
		if !strings.Contains(txt, want) {
			t.Errorf("report.txt lacks %q:\n%s", want, txt)
		}
	}
	// Its option is its own: another protocol given it names echo.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\ncells:\n  - {protocol: dns, word: ping, conns: [1]}\n"), 0o644)
	if _, err := v6lab(t, "run", bad, "--dry-run"); err == nil || !strings.Contains(err.Error(), "bad.yaml:3: cells[0].word: does not apply to protocol dns: word is an option of echo") {
		t.Errorf("echo's option on dns: %v", err)
	}
	// Its flags, from the same tags, on its probe command.
	srv, err := echoServe(context.Background(), proto.Place{ListenOn: []netip.Addr{path.IPv4.Loopback()}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	out, err := v6lab(t, "probe", "echo", srv.Addrs()[0].String(), "--word", "pong", "--paths", "ipv4", "--conns", "1", "--runs", "2", "--results", results)
	if err != nil || !strings.Contains(out, "ECHO: average response time") {
		t.Fatalf("probe echo: %v\n%s", err, out)
	}
	if _, err := v6lab(t, "probe", "echo", srv.Addrs()[0].String(), "--word", "two words", "--paths", "ipv4"); err == nil || !strings.Contains(err.Error(), `--word: "two words" is not one word`) {
		t.Errorf("a bad --word: %v", err)
	}
}

// readReport is the report.txt of the one result under results.
func readReport(t *testing.T, results string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(results, "*", "report.txt"))
	if len(m) != 1 {
		t.Fatalf("%d results under %s", len(m), results)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
