package servers_test

// The real daemons, each answering v6lab's own client over both families.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"v6lab/internal/lab/servers"
	"v6lab/internal/proto/ftp"
	"v6lab/internal/proto/imap"
	"v6lab/internal/proto/smtp"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil"
)

func TestNginxServesTheContent(t *testing.T) {
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	port := testutil.FreePort(t)
	s, err := servers.StartNginx(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		servers.Content{"/index.html": []byte("<html>hello</html>"), "/obj/0": []byte("x")},
		// A generated file larger than any write, streamed to disk in chunks.
		servers.Generated{"/files/3M": {Size: 3<<20 + 7, Fill: func(p []byte, off int64) {
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
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/files/3M")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(body) != 3<<20+7 || body[0] != 'a' || body[3<<20+6] != byte('a'+(3<<20+6)%26) {
		t.Errorf("generated file: %d bytes", len(body))
	}
	for _, u := range []string{"http://127.0.0.1:%d/", "http://[::1]:%d/obj/0"} {
		resp, err := http.Get(strings.Replace(u, "%d", strconv.Itoa(port), 1))
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

func TestUnboundAnswersWithViews(t *testing.T) {
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	port := testutil.FreePort(t)
	v4, v6, tun := netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:46::10")
	s, err := servers.StartUnbound(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
		"v6lab.test", []servers.Record{{"www.v6lab.test", v4}, {"www.v6lab.test", v6}},
		[]servers.View{{Name: "tunnel", Clients: netip.MustParsePrefix("::1/128"), Records: []servers.Record{{"www.v6lab.test", tun}}}})
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
	p := strconv.Itoa(port)
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

func TestProFTPDServesSparseFiles(t *testing.T) {
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	if err := servers.CheckInstalled([]servers.Program{{Name: "proftpd", Package: "proftpd-core"}}); err != nil {
		t.Skip(err)
	}
	port := testutil.FreePort(t)
	s, err := servers.StartProFTPD(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
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
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	if err := servers.CheckInstalled([]servers.Program{{Name: "dovecot", Package: "dovecot-imapd"}}); err != nil {
		t.Skip(err)
	}
	port := testutil.FreePort(t)
	s, err := servers.StartDovecot(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port,
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
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	if err := servers.CheckInstalled([]servers.Program{{Name: "postfix", Package: "postfix"}}); err != nil {
		t.Skip(err)
	}
	port := testutil.FreePort(t)
	s, err := servers.StartPostfix(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, port, "v6lab.test")
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

// TestProFTPDAnswersBackToBackSessions: one user's sessions one after
// another, as a one-connection cell runs them. Standalone ProFTPD slept
// 0.2 s (more than once) before accepting a connection that arrived right
// after a session ended: 0.4-1.4 s a transaction on loopback. From inetd
// each is answered at once.
func TestProFTPDAnswersBackToBackSessions(t *testing.T) {
	testutil.RequireRoot(t, "ProFTPD binds as root and changes user")
	if err := servers.CheckInstalled([]servers.Program{{Name: "proftpd", Package: "proftpd-core"}}); err != nil {
		t.Skip(err)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s, err := servers.StartProFTPD(context.Background(), servers.Place{}, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, port, map[string]int64{"1K": 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if !strings.HasSuffix(s.Version, "(from inetd)") {
		t.Errorf("version %q does not say how ProFTPD runs", s.Version)
	}
	c := &ftp.Client{Host: "127.0.0.1", Port: port, File: "/1K", Path: path.IPv4, Resolver: &path.Resolver{}}
	var took []time.Duration
	for range 9 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		smp := c.Do(ctx, 0)
		cancel()
		if !smp.OK() || smp.BytesIn != 1<<10 {
			t.Fatalf("transaction %d: %q", len(took), smp.Err)
		}
		took = append(took, smp.Total())
	}
	slices.Sort(took)
	// The median is far from 0.2 s either way: a few ms from inetd,
	// 0.4 s or more standalone.
	if took[len(took)/2] > 100*time.Millisecond {
		t.Errorf("back-to-back sessions took %v (sorted): ProFTPD waits before it accepts", took)
	}
}
