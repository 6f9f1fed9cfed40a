package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"sync"
	"testing"
	"time"

	"v6lab/internal/proto/dns"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/sock/path"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve starts a serve subcommand until the test ends and returns the
// addresses it printed.
func serve(t *testing.T, want int, args ...string) []netip.AddrPort {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot()
	out := &syncBuffer{}
	root.SetOut(out)
	root.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	re := regexp.MustCompile(`on (\S+)`)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindAllStringSubmatch(out.String(), -1); len(m) == want {
			var addrs []netip.AddrPort
			for _, x := range m {
				addrs = append(addrs, netip.MustParseAddrPort(x[1]))
			}
			return addrs
		}
	}
	t.Fatalf("server did not start: %q", out.String())
	return nil
}

func TestServeHTTPAndDNSAnswerOnBothFamilies(t *testing.T) {
	hs := serve(t, 2, "serve", "http", "--listen", "127.0.0.1:0", "--listen", "[::1]:0", "--objects", "2")
	ds := serve(t, 2, "serve", "dns", "--listen", "127.0.0.1:0", "--listen", "[::1]:0",
		"--record", "www.served.test=127.0.0.1", "--record", "www.served.test=::1")
	if hs[0].Port() != hs[1].Port() || ds[0].Port() != ds[1].Port() {
		t.Errorf("ports differ between families: %v %v", hs, ds)
	}
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		u, _ := httpp.ParseURL(fmt.Sprintf("http://www.served.test:%d/", hs[0].Port()))
		c := &httpp.Client{URL: u, Path: p, Resolver: &path.Resolver{Servers: ds}, Objects: true}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s := c.Do(ctx, 0)
		cancel()
		if !s.OK() || s.Marker != "200 OK, 2 objects" {
			t.Errorf("%s: %+v", p, s)
		}
		q := &dns.Client{Name: "www.served.test", Server: ds[0], Path: path.IPv4, Type: p.RecordType()}
		if s := q.Do(context.Background(), 0); !s.OK() {
			t.Errorf("dns %s: %s", p, s.Err)
		}
	}
}
