package all_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"slices"
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

// loadFlags are the flags every measuring command has beside its
// protocol's (cmd/v6lab's loadFlags).
var loadFlags = []string{"paths", "conns", "runs", "warmup", "timeout", "pause", "duration", "results", "name", "spin", "strict"}

// TestListIsConsistent: names and server keys are unique, every protocol
// is answered by a listed server and has a command, every option's flag
// is its own and its default parses, and what results record of an option
// is under its own name (a typo would fail here, not at a user's command
// line or in a result).
func TestListIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range all.List {
		if seen[p.Name] {
			t.Errorf("%s is listed twice", p.Name)
		}
		seen[p.Name] = true
		if _, ok := all.Server(p.ServerKey()); !ok {
			t.Errorf("%s: no embedded server %q", p.Name, p.ServerKey())
		}
		if p.Server != nil && !slices.Contains(all.Servers, p.Server) {
			t.Errorf("%s: its server is not in all.Servers", p.Name)
		}
		if p.Command.Short == "" || p.Command.SetArg == nil {
			t.Errorf("%s has no command", p.Name)
		}
		checkFields(t, p.Name, p.New())
		// What a result records reads back as it was (a lab run hands its
		// cells to its measuring process so; resume reads the header so).
		b, err := json.Marshal(filled(p.New()))
		back := p.New()
		if err == nil {
			err = json.Unmarshal(b, back)
		}
		if b2, _ := json.Marshal(back); err != nil || string(b2) != string(b) {
			t.Errorf("%s: options recorded as %s read back as %s (%v)", p.Name, b, b2, err)
		}
		o := p.New()
		p.Command.SetArg(o, "x")
		if o.Destination() == "" {
			t.Errorf("%s: the command's argument is not where it sends", p.Name)
		}
	}
	keys := map[string]bool{}
	for _, s := range all.Servers {
		if keys[s.Key] {
			t.Errorf("server %s is listed twice", s.Key)
		}
		keys[s.Key] = true
		if s.Settings != nil {
			checkFields(t, "serve "+s.Key, s.Settings())
		}
	}
	if all.ServerKey("tcp") != trial.ServerKey || all.ServerKey("udp") != trial.ServerKey || all.ServerKey("http") != "http" {
		t.Errorf("server keys: tcp %s, udp %s", all.ServerKey("tcp"), all.ServerKey("udp"))
	}
	if !all.WireAnyPort("ftp") || !all.WireAnyPort("real/ftp") || !all.WireAnyPort(trial.ServerKey) || all.WireAnyPort("http") {
		t.Error("wire ports: ftp and transport count every port, http its own")
	}
}

// checkFields checks one options (or settings) struct's tags.
func checkFields(t *testing.T, what string, v any) {
	t.Helper()
	flags := map[string]bool{}
	for _, f := range proto.Fields(v) {
		if f.Flag != "" {
			if flags[f.Flag] || slices.Contains(loadFlags, f.Flag) {
				t.Errorf("%s: flag --%s twice", what, f.Flag)
			}
			flags[f.Flag] = true
		}
		if f.Default != "" {
			if err := f.Set(f.Default); err != nil {
				t.Errorf("%s: option %s's default: %v", what, f.Name, err)
			}
		}
	}
	// What results record: a file option's json name is its own.
	b, err := json.Marshal(filled(v))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var rec map[string]any
	json.Unmarshal(b, &rec)
	for _, f := range proto.Fields(v) {
		if _, ok := rec[f.Name]; f.File && !ok && !strings.HasPrefix(what, "serve ") && !isTrialInput(f.Name) {
			t.Errorf("%s: option %s is not recorded under its name (%s)", what, f.Name, b)
		}
	}
}

// isTrialInput: a trial records the test its options make (test), not
// the options as given.
func isTrialInput(name string) bool {
	return slices.Contains([]string{"time", "omit", "interval", "sndbuf", "rcvbuf", "reverse", "bytes", "window", "mss", "streams", "congestion", "bottleneck", "rate", "size"}, name)
}

// filled sets every option of v to a value (its default, or one of its
// kind), so that none is left out of its JSON as empty.
func filled(v any) any {
	for _, f := range proto.Fields(v) {
		text := map[string]string{proto.KindBool: "true", proto.KindInt: "3", proto.KindDuration: "1s", proto.KindList: "192.0.2.1"}[f.Kind()]
		if text == "" {
			text = proto.Or(f.Default, "1")
		}
		_ = f.Set(text)
	}
	return v
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
		o := p.New()
		if p.SingleTest {
			if err := proto.Set(o, "time", "200ms"); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.Check(result.Loopback, func(string) bool { return false }); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		for _, pth := range paths {
			ep, ok := eps.Get(p.ServerKey(), pth)
			if !ok {
				t.Fatalf("%s: no endpoint on %s", p.Name, pth)
			}
			pr, err := o.Probe(ep, pth)
			if err != nil {
				t.Fatalf("%s over %s: %v", p.Name, pth, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s := pr.Do(ctx, 0)
			cancel()
			if !s.OK() {
				t.Errorf("%s over %s: %s", p.Name, pth, s.Err)
			}
			// Every protocol that looks a name up, and a DNS query itself,
			// has its wire time from the kernel's stamps: within its total.
			if stamped := !p.SingleTest; stamped && (s.WireNS <= 0 || s.WireNS > s.TotalNS) {
				t.Errorf("%s over %s: wire %v of a total %v", p.Name, pth, time.Duration(s.WireNS), time.Duration(s.TotalNS))
			}
			// The first reply byte's stamp, where loopback gave one, lies
			// within the wire time.
			if s.WireFirstByteNS < 0 || s.WireFirstByteNS > s.WireNS {
				t.Errorf("%s over %s: wire first byte %v of wire %v", p.Name, pth, time.Duration(s.WireFirstByteNS), time.Duration(s.WireNS))
			}
			if s.Remote != "" {
				if ap, err := netip.ParseAddrPort(s.Remote); err == nil && !pth.Accepts(ap.Addr()) {
					t.Errorf("%s over %s reached %s", p.Name, pth, s.Remote)
				}
			}
		}
	}
	// A file cell over plain http runs on the event loop: its wire time
	// comes from the loop's own reads.
	fo := all.MustGet("http").New()
	if err := proto.Set(fo, "file", "64K"); err != nil {
		t.Fatal(err)
	}
	if err := fo.Check(result.Loopback, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	for _, pth := range paths {
		ep, _ := eps.Get("http", pth)
		pr, err := fo.Probe(ep, pth)
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
	o := all.MustGet("smtp").New()
	if err := proto.Set(o, "starttls", "true"); err != nil {
		t.Fatal(err)
	}
	do := func(ep proto.Endpoint, p path.Path) result.Sample { return prototest.Do(t, o, ep, p) }
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
