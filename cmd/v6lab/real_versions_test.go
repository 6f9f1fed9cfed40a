package main

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"v6lab/internal/gen/content"
	"v6lab/internal/lab/servers"
	"v6lab/internal/proto"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/report"
	"v6lab/internal/testutil"
)

// requireCaddy skips a test without Caddy (Debian's caddy package).
func requireCaddy(t *testing.T) {
	t.Helper()
	if err := servers.CheckInstalled([]servers.Program{{Name: "caddy", Package: "caddy"}}); err != nil {
		t.Skipf("Caddy is not installed (scripts/install-deps --real installs it): %v", err)
	}
}

// TestProbeHTTP3AgainstCaddy: probe http https://HOST/ --http-version 3
// --paths ipv4,ipv6 against Caddy (started as the lab starts it, on both
// loopbacks): every transaction speaks h3 to Caddy over the path's family,
// the page and its objects, Caddy's certificate pinned.
func TestProbeHTTP3AgainstCaddy(t *testing.T) {
	testutil.RequireRoot(t, "Caddy runs as root, as in the lab")
	requireCaddy(t)
	port := testutil.FreePort(t)
	loop := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
	cfg, err := proto.SelfSigned([]string{"www.caddy.test"}, loop)
	if err != nil {
		t.Fatal(err)
	}
	cert := &servers.TLS{Port: port}
	if cert.Cert, cert.Key, err = proto.PEM(cfg); err != nil {
		t.Fatal(err)
	}
	page := httpp.DefaultServerConfig
	files := servers.Content{"/index.html": httpp.Page(page)}
	for i := range page.Objects {
		files[fmt.Sprintf("/obj/%d", i)] = content.Bytes(page.ObjectSize)
	}
	s, err := httpp.StartCaddy(context.Background(), servers.Place{}, loop, "www.caddy.test", files, nil, cert)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	root := t.TempDir()
	out, err := v6lab(t, "probe", "http", "https://www.caddy.test:"+strconv.Itoa(port)+"/", "--http-version", "3",
		"--paths", "ipv4,ipv6", "--resolve", "www.caddy.test=127.0.0.1,::1", "--tls-pin", proto.CertSHA256(cfg),
		"--conns", "1,4", "--runs", "3", "--warmup", "1", "--results", root)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f, _, err := report.Load(onlyDir(t, root))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	want := fmt.Sprintf("200 OK, %d objects, h3, QUIC v1", page.Objects)
	for _, smp := range f.Samples {
		n++
		family := "127.0.0.1:"
		if smp.Path == "ipv6" {
			family = "[::1]:"
		}
		if !smp.OK() || smp.Negotiated != "h3" || !strings.HasPrefix(smp.Marker, want) || !strings.HasPrefix(smp.Remote, family) {
			t.Errorf("%s/%d: %q %q %q to %s", smp.Path, smp.Conns, smp.Err, smp.Negotiated, smp.Marker, smp.Remote)
		}
	}
	if n != 2*3*(1+4) {
		t.Errorf("%d samples", n)
	}
}

// TestRunHTTPVersionsAgainstRealServersInTheLab: server: real cells of
// http_version 1.1 over TLS, 2 and 3 over every path fetch from nginx
// (https, h2 by ALPN) and Caddy (h3), started in the lab's server host
// with a certificate v6lab pins; every run is proven on the wire (h3's as
// UDP alone, on Caddy's port), the header names both daemons.
func TestRunHTTPVersionsAgainstRealServersInTheLab(t *testing.T) {
	requireCaddy(t)
	bin, file := labFile(t, "realversions.yaml", `name: realversions
servers: real
paths: [ipv4, ipv6, 6in4, nat64]
runs: 3
warmup: 1
pause: 100ms
cells:
  - protocol: http
    tls: true
    http_version: [1.1, 2, 3]
    conns: [1, 10]
`)
	_, f, s, out, runErr := runLoaded(t, bin, "run", file, "--tunnel-mtu", "1280", "--strict")
	if runErr != nil {
		t.Fatalf("run: %v\n%s", runErr, out)
	}
	srv := f.Header.Servers
	if !strings.Contains(srv["http (real)"], "nginx/") || !strings.Contains(srv["http (real)"], "HTTP/2 by ALPN") ||
		!strings.HasPrefix(srv["h3 (real)"], "Caddy 2") {
		t.Errorf("servers %v", srv)
	}
	for k := range srv {
		if !strings.HasSuffix(k, "(real)") && k != "dns" {
			t.Errorf("an embedded %s server answered: %s", k, srv[k])
		}
	}
	// What compare pairs the embedded servers with (trial9 N3): nginx
	// stands for the embedded http and https servers, the DNS64 Unbound
	// for the embedded dns server's DNS64 view.
	roles := f.Header.ServerRoles
	if fmt.Sprint(roles["http (real)"]) != "[http https]" || fmt.Sprint(roles["dns64 (real)"]) != "[dns]" || len(roles) != 2 {
		t.Errorf("server roles %v (servers %v)", roles, srv)
	}
	want := map[string]string{"https": "http/1.1", "http/2": "h2", "http/3": "h3"}
	for _, smp := range f.Samples {
		if !smp.OK() || smp.Negotiated != want[smp.Protocol] {
			t.Errorf("%s/%s/%d: %q spoke %q (%s)", smp.Protocol, smp.Path, smp.Conns, smp.Err, smp.Negotiated, smp.Marker)
		}
	}
	for _, r := range f.Runs {
		if r.Wire == nil || r.Err != "" || r.Wire.IPv4+r.Wire.IPv6+r.Wire.SixIn4+r.Wire.NAT64 == 0 {
			t.Errorf("run %s/%s/%d: wire %v err %q", r.Cell, r.Path, r.Run, r.Wire, r.Err)
		}
	}
	if len(s.Cells) != 3*4*2 {
		t.Errorf("%d cells", len(s.Cells))
	}
	for _, c := range s.Cells {
		if c.Failed != 0 || c.Completed == 0 {
			t.Errorf("%s/%s/%d: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
	}
}

// TestV3CellAgainstRealServers (trial8 F10): a dialer v3 cell naming no
// http_version, alone, against the real servers: Caddy is started for it
// (its dual path races to HTTP/3), and serves its pinned ipv4 over TCP,
// whose packets the wire check counts. Unbound gives Caddy's port in the
// name's HTTPS record (trial9 N12), so the dual row races QUIC and speaks
// h3, as with the embedded servers, and a v3 cell of http_version 3 (QUIC
// alone, offered by that record) runs.
func TestV3CellAgainstRealServers(t *testing.T) {
	requireLab(t)
	requireCaddy(t)
	_, f, s, out, err := labRun(t, `name: v3r
where: lab
paths: [ipv4, dual]
runs: 2
warmup: 1
timeout: 10s
cells:
  - {protocol: http, conns: [1], tls: true, dialer: v3, server: real}
  - {protocol: http, label: v3h3, conns: [1], tls: true, dialer: v3, http_version: 3, server: real}
`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, c := range s.Cells {
		if c.Failed != 0 || c.Completed != 1 {
			t.Errorf("%s/%s/%d: %d completed, %d failed (%s)", c.Protocol, c.Path, c.Conns, c.Completed, c.Failed, c.FirstError)
		}
		if (c.Path == "dual" || c.Protocol == "v3h3") && c.Negotiated["h3"] != 1 || c.Path == "dual" && c.Winners["ipv6/quic"] != 1 {
			t.Errorf("dual spoke %v, winners %v: want h3 over QUIC (Unbound's HTTPS record for port 8443)", c.Negotiated, c.Winners)
		}
	}
	for _, r := range f.Runs {
		if r.Path == "ipv4" && strings.HasPrefix(r.Cell, "v3/") && (r.Wire == nil || r.Wire.IPv4 < 15) {
			t.Errorf("run %s#%d: wire %+v, want the TCP connection's packets counted", r.Cell, r.Run, r.Wire)
		}
	}
	if len(s.Cells) != 4 {
		t.Errorf("%d cells, want v3 and v3h3 over ipv4 and dual", len(s.Cells))
	}
	// Only the servers a cell and path use (trial10 T8): every cell
	// fetched from Caddy, none over nat64, so no nginx and no DNS64
	// Unbound was started, nor named in the header.
	srv := f.Header.Servers
	if _, ok := srv["http (real)"]; ok || srv["dns64 (real)"] != "" || !strings.HasPrefix(srv["h3 (real)"], "Caddy") || srv["dns (real)"] == "" {
		t.Errorf("servers %v: want Caddy and Unbound alone", srv)
	}
}
