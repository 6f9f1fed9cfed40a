package proto

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"v6lab/internal/sock/path"
)

func TestRequireNamesTheOptionsAndWhy(t *testing.T) {
	err := Require("the server to ask", "query", "dns_servers")
	oe, ok := AsOptionError(err)
	if !ok || len(oe.Need) != 2 || oe.Why != "the server to ask" ||
		err.Error() != "query and dns_servers are required with where: hosts (the server to ask)" {
		t.Fatalf("%v %+v", err, oe)
	}
	if err := Require("x", "url"); !strings.Contains(err.Error(), "url is required") {
		t.Error(err)
	}
}

func TestSetDecodesTextAsFlagsGiveIt(t *testing.T) {
	var o Options
	for _, kv := range [][2]string{{"users", "7"}, {"active", "true"}, {"transport", "true"}, {"dns_servers", "192.0.2.1"},
		{"dns_servers", "2001:db8::1"}, {"time", "2s"}, {"size", "1000"}, {"reverse", "true"}} {
		if err := o.Set(kv[0], kv[1]); err != nil {
			t.Fatalf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
	if o.Users != 7 || !o.Active || o.Transport != "tcp" || len(o.DNSServers) != 2 || o.Trial.Time.Seconds() != 2 ||
		o.Size != 1000 || o.Trial.Size != 1000 || !o.Trial.Reverse {
		t.Errorf("%+v %+v", o, o.Trial)
	}
	for _, kv := range [][2]string{{"users", "many"}, {"active", "perhaps"}, {"time", "soon"}} {
		err := o.Set(kv[0], kv[1])
		if oe, ok := AsOptionError(err); !ok || oe.Option != kv[0] {
			t.Errorf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
}

func TestHostPortTargets(t *testing.T) {
	e, err := HostPortTarget(ServerURL("smtp", "::1"), "smtp", 25, nil, "")
	if err != nil || e.Host != "::1" || e.Port != 25 || e.DNS != nil {
		t.Fatalf("%+v %v", e, err)
	}
	e, err = HostPortTarget(ServerURL("imap", "mail.test:1143"), "imap", 143, []string{"192.0.2.53"}, "ipv4")
	if err != nil || e.Host != "mail.test" || e.Port != 1143 || len(e.DNS) != 1 || e.DNSOver != path.IPv4 {
		t.Fatalf("%+v %v", e, err)
	}
	if _, err := HostPortTarget("smtp://h:99999", "smtp", 25, nil, ""); err == nil || !strings.Contains(err.Error(), "bad port") {
		t.Errorf("bad port: %v", err)
	}
	if ap, err := (Endpoint{Host: "[::1]", Port: 53}).AddrPort(); err != nil || ap != netip.MustParseAddrPort("[::1]:53") {
		t.Errorf("%v %v", ap, err)
	}
}

func TestPlaceListensOncePerAddress(t *testing.T) {
	a := netip.MustParseAddr("192.0.2.1")
	pl := Place{Addrs: map[path.Path]netip.Addr{path.IPv4: a, path.IPv6: netip.MustParseAddr("2001:db8::1"), path.SixIn4: netip.MustParseAddr("2001:db8:6::1")}}
	if got := pl.Listen(); len(got) != 3 || got[0] != a {
		t.Errorf("%v", got)
	}
	pl.ListenOn = []netip.Addr{a}
	if got := pl.Listen(); len(got) != 1 {
		t.Errorf("ListenOn ignored: %v", got)
	}
	if pl.Setting("x", "d") != "d" {
		t.Error("default setting")
	}
}

// TestDelayedName: the aaaa-delay label names a delay and the name it
// stands for; anything else, or a delay out of bounds, is no delay.
func TestDelayedName(t *testing.T) {
	for _, c := range []struct {
		in, name string
		d        time.Duration
	}{
		{"aaaa-delay-300ms.www.v6lab.test.", "www.v6lab.test.", 300 * time.Millisecond},
		{"AAAA-Delay-1s.x.test.", "x.test.", time.Second},
		{"www.v6lab.test.", "www.v6lab.test.", 0},
		{"aaaa-delay-10s.x.test.", "aaaa-delay-10s.x.test.", 0}, // above MaxAAAADelay
		{"aaaa-delay-soon.x.test.", "aaaa-delay-soon.x.test.", 0},
		{"aaaa-delay-1s", "aaaa-delay-1s", 0},
	} {
		if name, d := DelayedName(c.in); name != c.name || d != c.d {
			t.Errorf("DelayedName(%q) = %q, %v; want %q, %v", c.in, name, d, c.name, c.d)
		}
	}
}
