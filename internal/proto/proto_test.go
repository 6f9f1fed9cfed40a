package proto

import (
	"encoding/json"
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

// testOptions has an option of every kind the tags name.
type testOptions struct {
	Common
	Named
	Users   int          `json:"users,omitempty" opt:"users,default=500" usage:"users"`
	Active  bool         `json:"active,omitempty" opt:"active"`
	Objects *int         `json:"objects,omitempty" opt:"objects,fileonly"`
	Time    Duration     `json:"-" opt:"time,short=t,default=10s"`
	Engine  string       `json:"-" opt:"engine,flagonly,default=auto"`
	Servers []string     `json:"servers,omitempty" opt:"dns_server_list,flag=server"`
	Derived *testOptions `json:"-"`
}

// TestFieldsReadTheTags: every tagged field is an option with its flag,
// short form, default and place (files, flags), those of embedded structs
// included; text sets each kind as a flag gives it, and a bad one names
// its option.
func TestFieldsReadTheTags(t *testing.T) {
	var o testOptions
	got := map[string]Field{}
	var names []string
	for _, f := range Fields(&o) {
		got[f.Name] = f
		names = append(names, f.Name)
	}
	if strings.Join(names, " ") != "url dns_servers dns_over resolve users active objects time engine dns_server_list" {
		t.Fatalf("fields %v", names)
	}
	for name, want := range map[string]struct {
		flag, short, def, kind string
		file                   bool
	}{
		"url":             {"", "", "", KindString, true},
		"dns_servers":     {"dns-server", "", "", KindList, true},
		"dns_over":        {"dns-over", "", "path", KindString, false},
		"users":           {"users", "", "500", KindInt, true},
		"active":          {"active", "", "", KindBool, true},
		"objects":         {"", "", "", KindInt, true},
		"time":            {"time", "t", "10s", KindDuration, true},
		"engine":          {"engine", "", "auto", KindString, false},
		"dns_server_list": {"server", "", "", KindList, true},
	} {
		f := got[name]
		if f.Flag != want.flag || f.Short != want.short || f.Default != want.def || f.Kind() != want.kind || f.File != want.file {
			t.Errorf("%s: %+v kind %s, want %+v", name, f, f.Kind(), want)
		}
	}
	if fn := FileNames(&o); strings.Join(fn, " ") != "url dns_servers resolve users active objects time dns_server_list" {
		t.Errorf("file names %v", fn)
	}
	for _, kv := range [][2]string{{"users", "7"}, {"active", "true"}, {"dns_servers", "192.0.2.1"},
		{"dns_servers", "2001:db8::1"}, {"time", "2s"}, {"objects", "3"}, {"engine", "go"}} {
		if err := Set(&o, kv[0], kv[1]); err != nil {
			t.Fatalf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
	if o.Users != 7 || !o.Active || len(o.DNSServers) != 2 || time.Duration(o.Time) != 2*time.Second || *o.Objects != 3 || o.Engine != "go" {
		t.Errorf("%+v", o)
	}
	if f, _ := FieldOf(&o, "time"); f.Text() != "2s" {
		t.Errorf("time as text: %q", f.Text())
	}
	for _, kv := range [][2]string{{"users", "many"}, {"active", "perhaps"}, {"time", "soon"}, {"objects", "x"}} {
		err := Set(&o, kv[0], kv[1])
		if oe, ok := AsOptionError(err); !ok || oe.Option != kv[0] {
			t.Errorf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
	if err := Set(&o, "no_such_option", "1"); err == nil {
		t.Error("an unknown option was set")
	}
}

func TestHostPortTargets(t *testing.T) {
	e, err := HostPortTarget(&Named{URL: ServerURL("smtp", "::1")}, "smtp", 25, path.IPv6)
	if err != nil || e.Host != "::1" || e.Port != 25 || e.DNS != nil {
		t.Fatalf("%+v %v", e, err)
	}
	e, err = HostPortTarget(&Named{URL: ServerURL("imap", "mail.test:1143"), DNSServers: []string{"192.0.2.53"}, DNSOver: "ipv4"}, "imap", 143, path.IPv6)
	if err != nil || e.Host != "mail.test" || e.Port != 1143 || len(e.DNS) != 1 || e.DNSOver != path.IPv4 {
		t.Fatalf("%+v %v", e, err)
	}
	if _, err := HostPortTarget(&Named{URL: "smtp://h:99999"}, "smtp", 25, path.IPv4); err == nil || !strings.Contains(err.Error(), "bad port") {
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

// TestHostResolverNeedsAServerOfTheLookupsFamily: DNS servers of one
// family cannot look up a path's name over the other (every transaction
// would fail): it is an error that names both and --dns-over.
func TestHostResolverNeedsAServerOfTheLookupsFamily(t *testing.T) {
	_, err := HostResolver("www.example.test", []string{"192.0.2.53"}, "", path.IPv6)
	if err == nil || !strings.Contains(err.Error(), "no IPv6 DNS server") || !strings.Contains(err.Error(), "--dns-over") {
		t.Errorf("ipv6 lookups with an IPv4 server: %v", err)
	}
	if _, err := HostResolver("www.example.test", []string{"192.0.2.53"}, path.IPv4, path.IPv6); err != nil {
		t.Errorf("ipv6 path, lookups over ipv4: %v", err)
	}
	if dns, err := HostResolver("2001:db8::1", []string{"192.0.2.53"}, "", path.IPv6); err != nil || dns.Servers != nil {
		t.Errorf("an address needs no lookup: %v %v", dns, err)
	}
}

// TestTheSystemsResolvConfSetsTheStub: with no DNS server given, the
// endpoint's lookups go to /etc/resolv.conf's servers and resend a lost
// query as its options say (the resolver the measuring process builds
// from the endpoint keeps them); servers given keep v6lab's own schedule.
func TestTheSystemsResolvConfSetsTheStub(t *testing.T) {
	glibc := path.Stub{Timeout: 2 * time.Second, Attempts: 3}
	old := systemResolvConf
	systemResolvConf = func() (path.ResolvConf, error) {
		return path.ResolvConf{Servers: []netip.AddrPort{netip.MustParseAddrPort("192.0.2.53:53")}, Stub: glibc}, nil
	}
	t.Cleanup(func() { systemResolvConf = old })
	n := &Named{URL: "http://www.example.test/"}
	e, err := n.Endpoint("www.example.test", path.IPv4)
	if err != nil || e.DNSStub != glibc || e.Resolver().Stub != glibc || len(e.DNS) != 1 {
		t.Fatalf("from resolv.conf: %+v, %v", e, err)
	}
	var back Endpoint // as a lab run hands it to its measuring process
	if b, err := json.Marshal(e); err != nil || json.Unmarshal(b, &back) != nil || back.DNSStub != glibc {
		t.Errorf("through JSON: %s -> %+v (%v)", b, back.DNSStub, err)
	}
	n.DNSServers = []string{"192.0.2.54"}
	if e, err = n.Endpoint("www.example.test", path.IPv4); err != nil || e.DNSStub != (path.Stub{}) {
		t.Errorf("servers given: stub %+v, %v", e.DNSStub, err)
	}
}
