package http_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"testing"

	"github.com/quic-go/quic-go/http3"

	"v6lab/internal/lab/servers"
	"v6lab/internal/proto"
	httpp "v6lab/internal/proto/http"
	"v6lab/internal/testutil"
)

// loopbacks are both families' loopback addresses.
var loopbacks = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}

// certFor is a certificate made as the embedded servers' are, in PEM, on
// port, and its DER.
func certFor(t *testing.T, port int) (*servers.TLS, []byte) {
	t.Helper()
	cfg, err := proto.SelfSigned([]string{"localhost", "www.v6lab.test"}, loopbacks)
	if err != nil {
		t.Fatal(err)
	}
	c := &servers.TLS{Port: port}
	if c.Cert, c.Key, err = proto.PEM(cfg); err != nil {
		t.Fatal(err)
	}
	return c, cfg.Certificates[0].Certificate[0]
}

// get fetches url with rt and says which protocol answered, with what
// body and certificate.
func get(t *testing.T, rt http.RoundTripper, url string) (proto string, body []byte, cert []byte) {
	t.Helper()
	resp, err := (&http.Client{Transport: rt}).Get(url)
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
		cert = resp.TLS.PeerCertificates[0].Raw
	}
	return resp.Proto, body, cert
}

// TestNginxServesHTTP2OverTLS: with a certificate nginx serves HTTPS on a
// port of its own, HTTP/2 by ALPN, on both families, showing that
// certificate; plain HTTP stays on its port.
func TestNginxServesHTTP2OverTLS(t *testing.T) {
	testutil.RequireRoot(t, "real servers bind privileged ports and change user")
	port, tlsPort := testutil.FreePort(t), testutil.FreePort(t)
	c, der := certFor(t, tlsPort)
	s, err := servers.StartNginx(context.Background(), servers.Place{}, loopbacks, port,
		servers.Content{"/index.html": []byte("<html>hello</html>")}, nil, c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	h2 := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	defer h2.CloseIdleConnections()
	for _, host := range []string{"127.0.0.1", "[::1]"} {
		p, body, cert := get(t, h2, "https://"+host+":"+strconv.Itoa(tlsPort)+"/")
		if p != "HTTP/2.0" || string(body) != "<html>hello</html>" || !bytes.Equal(cert, der) {
			t.Errorf("%s: %s, %q, the certificate given: %v", host, p, body, bytes.Equal(cert, der))
		}
		if p, _, _ := get(t, http.DefaultTransport, "http://"+host+":"+strconv.Itoa(port)+"/"); p != "HTTP/1.1" {
			t.Errorf("%s plain: %s", host, p)
		}
	}
}

// TestCaddyServesHTTP3: Caddy (Debian's) serves the files over HTTP/3 on
// the port's UDP, on both families, with the certificate given, and over
// TCP (HTTP/2) on the same port.
func TestCaddyServesHTTP3(t *testing.T) {
	testutil.RequireRoot(t, "the real servers run as root in the lab")
	if err := servers.CheckInstalled([]servers.Program{{Name: "caddy", Package: "caddy"}}); err != nil {
		t.Skip(err)
	}
	port := testutil.FreePort(t)
	c, der := certFor(t, port)
	s, err := httpp.StartCaddy(context.Background(), servers.Place{}, loopbacks, "www.v6lab.test",
		servers.Content{"/index.html": []byte("<html>hello</html>"), "/obj/0": []byte("x")},
		servers.Generated{"/files/100K": {Size: 100 << 10, Fill: func(p []byte, off int64) {
			for i := range p {
				p[i] = byte(off + int64(i))
			}
		}}}, c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if len(s.Version) < len("Caddy 2") || s.Version[:7] != "Caddy 2" {
		t.Errorf("version %q", s.Version)
	}
	h3 := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer h3.Close()
	for _, host := range []string{"127.0.0.1", "[::1]"} {
		base := "https://" + host + ":" + strconv.Itoa(port)
		p, body, cert := get(t, h3, base+"/")
		if p != "HTTP/3.0" || string(body) != "<html>hello</html>" || !bytes.Equal(cert, der) {
			t.Errorf("%s: %s, %q, the certificate given: %v", host, p, body, bytes.Equal(cert, der))
		}
		if _, body, _ := get(t, h3, base+"/files/100K"); len(body) != 100<<10 || body[300] != byte(300%256) {
			t.Errorf("%s: generated file of %d bytes", host, len(body))
		}
		h2 := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
		if p, _, _ := get(t, h2, base+"/obj/0"); p != "HTTP/2.0" {
			t.Errorf("%s over TCP: %s", host, p)
		}
		h2.CloseIdleConnections()
	}
}
