package http

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/prototest"
)

// httpsRig is a rig whose embedded server speaks HTTPS with a self-signed
// certificate for www.v6lab.test and the loopback addresses.
func httpsRig(t *testing.T) *rig {
	t.Helper()
	cfg := DefaultServerConfig
	tc, err := proto.SelfSigned([]string{"www.v6lab.test"}, []netip.Addr{lo4, lo6})
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS = tc
	return newRig(t, cfg)
}

// TestHTTPSWithAndWithoutResumption: the embedded server speaks HTTPS on
// each path; without a session cache every user's handshake is full, with
// one (ResumeTLS) every user after the first resumes; each sample's marker
// names the TLS version and cipher and which handshake it was.
func TestHTTPSWithAndWithoutResumption(t *testing.T) {
	r := httpsRig(t)
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		for _, resume := range []bool{false, true} {
			c := r.client(t, p, "https://www.v6lab.test:%d/")
			groups, _ := TLSGroups(GroupsClassic)
			c.TLS = &tls.Config{InsecureSkipVerify: true, CurvePreferences: groups}
			if resume {
				c.TLS = ResumeTLS(c.TLS)
			}
			for i := range 4 {
				s := do(c, 5e9)
				if !s.OK() || s.TLSNS <= s.ConnectNS || !strings.Contains(s.Marker, "4 objects, TLS 1.3 TLS_") || !strings.Contains(s.Marker, " X25519 ") {
					t.Fatalf("%s resume=%v #%d: %+v", p, resume, i, s)
				}
				wantResumed := resume && i > 0
				if s.TLS != "TLS 1.3" || s.Resumed != wantResumed {
					t.Errorf("%s resume=%v #%d: typed fields tls %q resumed %v", p, resume, i, s.TLS, s.Resumed)
				}
				if got := strings.HasSuffix(s.Marker, " resumed"); got != wantResumed {
					t.Errorf("%s resume=%v #%d: marker %q", p, resume, i, s.Marker)
				}
			}
		}
	}
	// The post-quantum hybrid, when offered, is what the server picks.
	pq, _ := TLSGroups(GroupsPQ)
	c := r.client(t, path.IPv4, "https://www.v6lab.test:%d/")
	c.TLS = &tls.Config{InsecureSkipVerify: true, CurvePreferences: pq}
	if s := do(c, 5e9); !s.OK() || !strings.Contains(s.Marker, "X25519MLKEM768") {
		t.Errorf("pq groups: %+v", s)
	}
	if _, err := TLSGroups("quantum"); err == nil {
		t.Error("an unknown group choice was accepted")
	}
	// A client that trusts no one refuses the self-signed certificate.
	c = r.client(t, path.IPv4, "https://www.v6lab.test:%d/")
	if s := do(c, 5e9); s.OK() || !strings.Contains(s.Err, "certificate") {
		t.Errorf("an unverified certificate was accepted: %+v", s)
	}
}

// TestHTTPSCountsClientTurns: an https page on Go's net package counts
// the client's turns (the lookup's, TLS's flights, the objects'
// requests): some time, all of it inside the wire time.
func TestHTTPSCountsClientTurns(t *testing.T) {
	r := httpsRig(t)
	c := r.client(t, path.IPv4, "https://www.v6lab.test:%d/")
	c.TLS = &tls.Config{InsecureSkipVerify: true}
	for range 3 { // the kernel's receive stamps may come on late (kstamp.Hold)
		s := do(c, 5e9)
		if !s.OK() {
			t.Fatal(s.Err)
		}
		if s.ClientTurnNS == 0 || s.WireNS == 0 {
			continue
		}
		if s.ClientTurnNS >= s.WireNS {
			t.Errorf("client turns %v, wire %v: want the turns inside the wire time", time.Duration(s.ClientTurnNS), time.Duration(s.WireNS))
		}
		return
	}
	t.Error("no https transaction counted client turns")
}

// TestServerWithoutTickets: serve http --tls --tls-tickets=false gives no
// tickets, so even a client with a session cache makes full handshakes;
// --tls-tickets without --tls is refused by name.
func TestServerWithoutTickets(t *testing.T) {
	set := defaultSettings()
	set.TLS, set.TLSTickets = true, false
	at := proto.Place{ListenOn: []netip.Addr{lo4}, Settings: set}
	cfg, err := ServerConfigOf(at)
	if err != nil || !cfg.TLS.SessionTicketsDisabled {
		t.Fatalf("config %+v, %v", cfg.TLS, err)
	}
	r := newRig(t, cfg)
	c := r.client(t, path.IPv4, "https://www.v6lab.test:%d/")
	c.TLS = ResumeTLS(&tls.Config{InsecureSkipVerify: true})
	for i := range 3 {
		if s := do(c, 5e9); !s.OK() || strings.HasSuffix(s.Marker, " resumed") {
			t.Errorf("#%d: %q %s", i, s.Marker, s.Err)
		}
	}
	noTLS := defaultSettings()
	noTLS.TLSTickets = false
	_, err = ServerConfigOf(proto.Place{Settings: noTLS})
	if oe, ok := proto.AsOptionError(err); !ok || oe.Option != "tls_tickets" {
		t.Errorf("tls_tickets without tls: %v", err)
	}
}

// TestKeepaliveRequestsOption: serve http --keepalive-requests takes a
// count of 0 or more and names itself when given anything else.
func TestKeepaliveRequestsOption(t *testing.T) {
	for _, bad := range []string{"-1", "five"} {
		set := defaultSettings()
		err := proto.Set(set, "keepalive_requests", bad)
		if err == nil {
			_, err = ServerConfigOf(proto.Place{Settings: set})
		}
		if oe, ok := proto.AsOptionError(err); !ok || oe.Option != "keepalive_requests" {
			t.Errorf("keepalive_requests %q: %v", bad, err)
		}
	}
	set := defaultSettings()
	set.KeepaliveRequests = 5
	cfg, err := ServerConfigOf(proto.Place{Settings: set})
	if err != nil || cfg.KeepaliveRequests != 5 {
		t.Errorf("keepalive_requests 5: %+v %v", cfg, err)
	}
}

// TestTLSPinTrustsExactlyTheServedCertificate: v6lab serve http --tls
// (Protocol.Serve) says which certificate it shows; a client given that
// SHA-256 (tls_pin, --tls-pin) completes over https, one given any other
// fails every transaction with ErrPin, and the option's rules hold.
func TestTLSPinTrustsExactlyTheServedCertificate(t *testing.T) {
	r, err := EmbeddedTLS.Serve(t.Context(), proto.Place{ListenOn: []netip.Addr{lo4, lo6}, Name: "www.v6lab.test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	pin := r.(proto.Pinner).CertSHA256()
	if d := r.(proto.Detailed).Detail(); len(pin) != 64 || !strings.Contains(d, pin) {
		t.Fatalf("pin %q, detail %q", pin, d)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/", r.Port())
	// Each path pinned to its family: the address literal of each.
	probe := func(given string, p path.Path, version ...string) result.Sample {
		u := fmt.Sprintf("https://%s/", netip.AddrPortFrom(p.Loopback(), uint16(r.Port())))
		o := &Options{}
		o.URL, o.TLSPin = u, given
		if len(version) > 0 {
			o.HTTPVersion = version[0]
		}
		return prototest.Once(t, o, result.Hosts, p)
	}
	// As openssl prints a fingerprint: upper case, pairs split by colons.
	var colons []string
	for i := 0; i < len(pin); i += 2 {
		colons = append(colons, strings.ToUpper(pin[i:i+2]))
	}
	other := strings.Repeat("0", 64)
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		if s := probe(strings.Join(colons, ":"), p); !s.OK() || !strings.Contains(s.Marker, "TLS 1.3") || path.OfAddr(netip.MustParseAddrPort(s.Remote).Addr()) != p {
			t.Errorf("%s: the served certificate's pin: %+v", p, s)
		}
		if s := probe(other, p); s.OK() || !strings.Contains(s.Err, "not the one pinned") || !strings.Contains(s.Err, other) {
			t.Errorf("%s: another pin: %+v", p, s)
		}
		// Over QUIC too, and the failure names the pin, not the server.
		if s := probe(other, p, Version3); s.OK() || !strings.Contains(s.Err, "not the one pinned") || strings.Contains(s.Err, "ALPN") {
			t.Errorf("%s: another pin over HTTP/3: %+v", p, s)
		}
	}
	opts := func(url, pin string, insecure bool, client string) *Options {
		o := &Options{}
		o.URL, o.TLSPin, o.Insecure, o.Client = url, pin, insecure, client
		return o
	}
	for o, want := range map[*Options]string{
		opts(url, "abc", false, ""):                 "64 hex digits",
		opts("http://127.0.0.1:1/", pin, false, ""): "the url is not https://",
		opts(url, pin, true, ""):                    "pin the certificate or accept any",
		opts(url, pin, false, "curl"):               "curl verifies certificates its own way",
	} {
		err := o.Check(result.Hosts, func(string) bool { return false })
		if oe, ok := proto.AsOptionError(err); !ok || oe.Option != proto.OptTLSPin || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", *o, err, want)
		}
	}
	if err := opts("", pin, false, "").Check(result.Lab, func(string) bool { return false }); err == nil || !strings.Contains(err.Error(), "v6lab pins its embedded servers' own") {
		t.Errorf("a pin in the lab: %v", err)
	}
}
