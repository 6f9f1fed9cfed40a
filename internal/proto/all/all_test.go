package all_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"v6lab/internal/proto"
	"v6lab/internal/proto/all"
	"v6lab/internal/proto/trial"
	"v6lab/internal/result"
	"v6lab/internal/run/experiment"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/prototest"
)

// TestListIsConsistent: names are unique, every protocol is answered by a
// server in Servers, and every flag of every command sets an option the
// options know (a typo would fail here, not at a user's command line).
func TestListIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range all.List {
		if seen[p.Name()] {
			t.Errorf("%s is listed twice", p.Name())
		}
		seen[p.Name()] = true
		if _, ok := all.Server(all.ServerKey(p.Name())); !ok {
			t.Errorf("%s: no embedded server %q", p.Name(), all.ServerKey(p.Name()))
		}
		tg, ok := p.(proto.Targeted)
		if !ok {
			t.Errorf("%s has no command", p.Name())
			continue
		}
		for _, f := range tg.Command().Flags {
			var o proto.Options
			if err := o.Set(f.Option, proto.Or(f.Default, "1")); err != nil {
				t.Errorf("%s --%s: %v", p.Name(), f.Name, err)
			}
		}
	}
	var o proto.Options
	if err := o.Set("no_such_option", "1"); err == nil {
		t.Error("an unknown option was set")
	}
	if all.ServerKey("tcp") != trial.ServerKey || all.ServerKey("udp") != trial.ServerKey || all.ServerKey("http") != "http" {
		t.Errorf("server keys: tcp %s, udp %s", all.ServerKey("tcp"), all.ServerKey("udp"))
	}
	if !all.WireAnyPort("ftp") || !all.WireAnyPort("real/ftp") || !all.WireAnyPort(trial.ServerKey) || all.WireAnyPort("http") {
		t.Error("wire ports: ftp and transport count every port, http its own")
	}
}

// TestEveryProtocolOverEveryLoopbackPath is the recipe's end to end proof:
// the servers all.Start starts, the endpoints they give, and each
// protocol's probe from the list complete a transaction on both paths.
func TestEveryProtocolOverEveryLoopbackPath(t *testing.T) {
	paths := []path.Path{path.IPv4, path.IPv6}
	at, err := experiment.LoopbackPlace(paths)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range all.Servers {
		keys = append(keys, s.Key)
	}
	st, err := all.Start(context.Background(), keys, at)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eps := st.Endpoints(nil)
	for _, p := range all.List {
		var o proto.Options
		if p.Name() == "tcp" || p.Name() == "udp" {
			o.Trial = &proto.TrialInput{Time: 200 * time.Millisecond}
		}
		if err := p.Check(&o, "loopback", func(string) bool { return false }); err != nil {
			t.Fatalf("%s: %v", p.Name(), err)
		}
		for _, pth := range paths {
			ep, ok := eps.Get(all.ServerKey(p.Name()), pth)
			if !ok {
				t.Fatalf("%s: no endpoint on %s", p.Name(), pth)
			}
			pr, err := p.Probe(&o, ep, pth)
			if err != nil {
				t.Fatalf("%s over %s: %v", p.Name(), pth, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s := pr.Do(ctx, 0)
			cancel()
			if !s.OK() {
				t.Errorf("%s over %s: %s", p.Name(), pth, s.Err)
			}
			// Every protocol that looks a name up, and a DNS query itself,
			// has its wire time from the kernel's stamps: within its total.
			if stamped := p.Name() != "tcp" && p.Name() != "udp"; stamped && (s.WireNS <= 0 || s.WireNS > s.TotalNS) {
				t.Errorf("%s over %s: wire %v of a total %v", p.Name(), pth, time.Duration(s.WireNS), time.Duration(s.TotalNS))
			}
			// The first reply byte's stamp, where loopback gave one, lies
			// within the wire time.
			if s.WireFirstByteNS < 0 || s.WireFirstByteNS > s.WireNS {
				t.Errorf("%s over %s: wire first byte %v of wire %v", p.Name(), pth, time.Duration(s.WireFirstByteNS), time.Duration(s.WireNS))
			}
			if s.Remote != "" {
				if ap, err := netip.ParseAddrPort(s.Remote); err == nil && !pth.Accepts(ap.Addr()) {
					t.Errorf("%s over %s reached %s", p.Name(), pth, s.Remote)
				}
			}
		}
	}
	// A file cell over plain http runs on the event loop: its wire time
	// comes from the loop's own reads.
	hp := all.MustGet("http")
	var fo proto.Options
	fo.File = "64K"
	if err := hp.Check(&fo, "loopback", func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	for _, pth := range paths {
		ep, _ := eps.Get("http", pth)
		pr, err := hp.Probe(&fo, ep, pth)
		if err != nil {
			t.Fatal(err)
		}
		s := pr.Do(context.Background(), 0)
		if !s.OK() || s.WireNS <= 0 || s.WireNS > s.TotalNS {
			t.Errorf("http file over %s (evloop): %s, wire %v of %v", pth, s.Err, time.Duration(s.WireNS), time.Duration(s.TotalNS))
		}
	}
	desc := st.Describe("")
	for _, k := range keys {
		if desc[k] == "" {
			t.Errorf("server %s is not described", k)
		}
	}
}

// TestStartTLSPinsTheEmbeddedCertificate: the embedded SMTP server offers
// STARTTLS with a self-signed certificate, its endpoints pin it, and a
// cell with starttls completes over each path, counting the client's turns
// (the handshake's included); a certificate other than the pinned one is
// refused by name.
func TestStartTLSPinsTheEmbeddedCertificate(t *testing.T) {
	paths := []path.Path{path.IPv4, path.IPv6}
	at, err := experiment.LoopbackPlace(paths)
	if err != nil {
		t.Fatal(err)
	}
	st, err := all.Start(context.Background(), []string{"smtp"}, at)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	smtp, _ := all.Get("smtp")
	o := proto.Options{StartTLS: true}
	do := func(ep proto.Endpoint, p path.Path) result.Sample { return prototest.Do(t, smtp, &o, ep, p) }
	for _, p := range paths {
		ep, _ := st.Endpoints(nil).Get("smtp", p)
		if len(ep.CertSHA256) != 64 {
			t.Fatalf("%s: endpoint pins %q", p, ep.CertSHA256)
		}
		if s := do(ep, p); !s.OK() || s.TLSNS == 0 || s.ClientTurnNS <= 0 || s.ClientTurnNS > s.WireNS {
			t.Errorf("%s: %+v", p, s)
		}
		ep.CertSHA256 = strings.Repeat("0", 64)
		if s := do(ep, p); s.OK() || !strings.Contains(s.Err, "not the one pinned") {
			t.Errorf("%s, another pin: %q", p, s.Err)
		}
	}
}
