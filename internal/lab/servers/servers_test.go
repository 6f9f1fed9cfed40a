package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
	"v6lab/internal/testutil"

	"github.com/miekg/dns"

	"v6lab/internal/proto/ftp"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/sock/path"
)

func requireRoot(t *testing.T) {
	t.Helper()
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
}

// freePort picks a port that is free now on both loopback addresses.
func freePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		p := 20000 + int(time.Now().UnixNano()%20000)
		l4, err4 := net.Listen("tcp4", "127.0.0.1:"+itoa(p))
		l6, err6 := net.Listen("tcp6", "[::1]:"+itoa(p))
		u4, erru := net.ListenPacket("udp4", "127.0.0.1:"+itoa(p))
		for _, c := range []interface{ Close() error }{l4, l6, u4} {
			if c != nil {
				c.Close()
			}
		}
		if err4 == nil && err6 == nil && erru == nil {
			return p
		}
	}
	t.Fatal("no free port")
	return 0
}

func TestNginxServesTheContent(t *testing.T) {
	requireRoot(t)
	port := freePort(t)
	s, err := StartNginx(context.Background(), Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		Content{"/index.html": []byte("<html>hello</html>"), "/obj/0": []byte("x")},
		// A generated file larger than any write, streamed to disk in chunks.
		Generated{"/files/3M": {Size: 3<<20 + 7, Fill: func(p []byte, off int64) {
			for i := range p {
				p[i] = byte('a' + (off+int64(i))%26)
			}
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.Contains(s.Version, "nginx/") {
		t.Errorf("version %q", s.Version)
	}
	resp, err := http.Get("http://127.0.0.1:" + itoa(port) + "/files/3M")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(body) != 3<<20+7 || body[0] != 'a' || body[3<<20+6] != byte('a'+(3<<20+6)%26) {
		t.Errorf("generated file: %d bytes", len(body))
	}
	for _, u := range []string{"http://127.0.0.1:%d/", "http://[::1]:%d/obj/0"} {
		resp, err := http.Get(strings.Replace(u, "%d", itoa(port), 1))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) == 0 {
			t.Errorf("%s: %d %q", u, resp.StatusCode, b)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestUnboundAnswersWithViews(t *testing.T) {
	requireRoot(t)
	port := freePort(t)
	v4, v6, tun := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:46::10")
	s, err := StartUnbound(context.Background(), Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		"v6lab.test", []Record{{"www.v6lab.test", v4}, {"www.v6lab.test", v6}},
		[]View{{Name: "tunnel", Clients: netip.MustParsePrefix("::1/128"), Records: []Record{{"www.v6lab.test", tun}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.Contains(s.Version, "unbound") {
		t.Errorf("version %q", s.Version)
	}
	ask := func(server string, qt uint16) string {
		m := new(dns.Msg)
		m.SetQuestion("www.v6lab.test.", qt)
		r, err := dns.Exchange(m, server)
		if err != nil || len(r.Answer) == 0 {
			return "error"
		}
		return r.Answer[0].String()
	}
	p := itoa(port)
	if got := ask("127.0.0.1:"+p, dns.TypeA); !strings.HasSuffix(got, "192.0.2.10") {
		t.Errorf("A from 127.0.0.1: %s", got)
	}
	if got := ask("127.0.0.1:"+p, dns.TypeAAAA); !strings.HasSuffix(got, "2001:db8::10") {
		t.Errorf("AAAA from 127.0.0.1: %s", got)
	}
	if got := ask("[::1]:"+p, dns.TypeAAAA); !strings.HasSuffix(got, "2001:db8:46::10") {
		t.Errorf("AAAA from the view's client ::1: %s", got)
	}
}

func TestMissingProgramNamesThePackage(t *testing.T) {
	_, err := lookPath("no-such-server-v6lab")
	if err == nil || !strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("%v", err)
	}
}

func TestProFTPDServesSparseFiles(t *testing.T) {
	requireRoot(t)
	if _, err := lookPath("proftpd"); err != nil {
		t.Skip(err)
	}
	port := freePort(t)
	s, err := StartProFTPD(context.Background(), Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		map[string]int64{"1M": 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.Contains(s.Version, "ProFTPD") {
		t.Errorf("version %q", s.Version)
	}
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		for _, active := range []bool{false, true} {
			c := &ftp.Client{Host: p.Loopback().String(), Port: port, File: "/1M", Path: p, Resolver: &path.Resolver{}, Active: active}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			smp := c.Do(ctx, 0)
			cancel()
			if !smp.OK() || smp.BytesIn != 1<<20 || !strings.HasPrefix(smp.Marker, "226") {
				t.Errorf("%s active=%v: %q %q", p, active, smp.Err, smp.Marker)
			}
		}
	}
}

func TestDovecotServesEachUsersMessage(t *testing.T) {
	requireRoot(t)
	if _, err := lookPath("dovecot"); err != nil {
		t.Skip(err)
	}
	port := freePort(t)
	s, err := StartDovecot(context.Background(), Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		20, "secret", []byte("From: <a@v6lab.test>\r\nSubject: x\r\n\r\nhello\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.HasPrefix(s.Version, "Dovecot 2.") {
		t.Errorf("version %q", s.Version)
	}
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		c := &imap.Client{Host: p.Loopback().String(), Port: port, Path: p, Resolver: &path.Resolver{}, Users: 20, Password: "secret"}
		for u := range 20 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			smp := c.Do(ctx, u)
			cancel()
			if !smp.OK() || !strings.HasSuffix(smp.Marker, fmt.Sprintf("of user%d", u+1)) {
				t.Errorf("%s user %d: %q %q", p, u, smp.Err, smp.Marker)
			}
		}
	}
}

func TestPostfixAcceptsMail(t *testing.T) {
	requireRoot(t)
	if _, err := lookPath("postfix"); err != nil {
		t.Skip(err)
	}
	port := freePort(t)
	s, err := StartPostfix(context.Background(), Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port, "v6lab.test")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.HasPrefix(s.Version, "Postfix 3") {
		t.Errorf("version %q", s.Version)
	}
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		c := &smtp.Client{Host: p.Loopback().String(), Port: port, Path: p, Resolver: &path.Resolver{}, From: "a@v6lab.test", To: "user%d@v6lab.test"}
		for u := range 5 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			smp := c.Do(ctx, u)
			cancel()
			if !smp.OK() || !strings.Contains(smp.Marker, "queued as") {
				t.Errorf("%s user %d: %q %q", p, u, smp.Err, smp.Marker)
			}
		}
	}
}

// TestMissingServersAreNamedAtOnce: every missing daemon, its package and
// the install script in one error.
func TestMissingServersAreNamedAtOnce(t *testing.T) {
	defer func(f func(string) (string, error)) { look = f }(look)
	look = func(p string) (string, error) {
		if p == "unbound" || p == "proftpd" {
			return "", ErrMissing
		}
		return "/usr/sbin/" + p, nil
	}
	err := CheckInstalled([]string{"http", "dns", "ftp", "smtp", "ftp"})
	want := "servers: real servers not installed: unbound, proftpd; install them with scripts/install-deps --real (or apt-get install unbound proftpd-core)"
	if err == nil || err.Error() != want || !errors.Is(err, ErrMissing) {
		t.Errorf("got %v\nwant %s", err, want)
	}
	look = func(p string) (string, error) { return "/usr/sbin/" + p, nil }
	if err := CheckInstalled([]string{"http", "imap"}); err != nil {
		t.Errorf("all installed: %v", err)
	}
}
