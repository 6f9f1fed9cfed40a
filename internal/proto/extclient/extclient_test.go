package extclient_test

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"v6lab/internal/proto/extclient"
	"v6lab/internal/proto/ftp"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/sock/path"
)

func TestCurlAndWgetDownloadOverEachPath(t *testing.T) {
	addrs := []netip.Addr{path.IPv4.Loopback(), path.IPv6.Loopback()}
	hs, err := httpp.Listen(context.Background(), httpp.DefaultServerConfig, addrs, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	fs, err := ftp.Listen(context.Background(), addrs, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	for _, prog := range extclient.Programs {
		if err := extclient.Check(prog); err != nil {
			t.Skip(err)
		}
		for _, p := range []path.Path{path.IPv4, path.IPv6} {
			for _, raw := range []string{fmt.Sprintf("http://localhost:%d/files/1M", hs.Port), fmt.Sprintf("ftp://localhost:%d/1M", fs.Port)} {
				u, _ := url.Parse(raw)
				u.Host = strings.Replace(u.Host, "localhost", p.Loopback().String(), 1)
				if p == path.IPv6 {
					u.Host = fmt.Sprintf("[::1]:%s", u.Port())
				}
				c := &extclient.Client{Program: prog, URL: u, Path: p, Resolver: &path.Resolver{}, Expect: 1 << 20}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				s := c.Do(ctx, 0)
				cancel()
				if !s.OK() || s.BytesIn != 1<<20 || s.TotalNS <= 0 {
					t.Errorf("%s %s %s: %q %+v", prog, p, u, s.Err, s)
				}
				// (curl's FTP connect time counts the data connection.)
				if prog == "curl" && (s.ConnectNS <= 0 || (u.Scheme == "http" && s.FirstByteNS < s.ConnectNS)) {
					t.Errorf("curl phases: connect %d first byte %d", s.ConnectNS, s.FirstByteNS)
				}
			}
		}
		// A missing file fails the sample with the program's own words.
		u, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d/files/nonsense", hs.Port))
		if s := (&extclient.Client{Program: prog, URL: u, Path: path.IPv4, Resolver: &path.Resolver{}}).Do(context.Background(), 0); s.OK() {
			t.Errorf("%s: a 400 reply counted as a download", prog)
		}
	}
	if err := extclient.Check("no-such-program-v6lab"); err == nil || !strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("Check: %v", err)
	}
}
