package proto

import (
	"testing"
	"time"
)

// TestAskedName: the impairment labels stack in any order and read back
// as they were written; the first label that is none ends them.
func TestAskedName(t *testing.T) {
	a := NameAsk{A: 50 * time.Millisecond, AAAA: 300 * time.Millisecond, HTTPS: time.Second, NoHints: true}
	name := a.Labels() + "www.v6lab.test."
	if got, back := AskedName(name); got != "www.v6lab.test." || back != a {
		t.Errorf("AskedName(%q) = %q, %+v; want www.v6lab.test., %+v", name, got, back, a)
	}
	for _, c := range []struct {
		in, name string
		ask      NameAsk
	}{
		{"https-none.www.v6lab.test.", "www.v6lab.test.", NameAsk{NoHTTPS: true}},
		{"a-delay-1s.x.a-delay-2s.test.", "x.a-delay-2s.test.", NameAsk{A: time.Second}},
		{"a-delay-1s.a-delay-2s.test.", "a-delay-2s.test.", NameAsk{A: time.Second}}, // one delay per type
		{"https-delay-10s.x.test.", "https-delay-10s.x.test.", NameAsk{}},
		{"https-none", "https-none", NameAsk{}},
	} {
		if got, ask := AskedName(c.in); got != c.name || ask != c.ask {
			t.Errorf("AskedName(%q) = %q, %+v; want %q, %+v", c.in, got, ask, c.name, c.ask)
		}
	}
	if d := a.Delay("HTTPS"); d != time.Second {
		t.Errorf("Delay(HTTPS) = %v", d)
	}
}

// TestHTTPSName: RFC 9460 §9.1's port prefix, both ways.
func TestHTTPSName(t *testing.T) {
	for _, c := range []struct {
		host string
		port int
		name string
	}{{"www.x.test", 443, "www.x.test"}, {"www.x.test", 8443, "_8443._https.www.x.test"}} {
		if got := HTTPSName(c.host, c.port); got != c.name {
			t.Errorf("HTTPSName(%s, %d) = %s", c.host, c.port, got)
		}
		if h, p := HTTPSOwner(c.name); h != c.host || p != c.port {
			t.Errorf("HTTPSOwner(%s) = %s, %d", c.name, h, p)
		}
	}
	for _, name := range []string{"_x._https.a.test", "_8443._tcp.a.test", "_99999._https.a.test"} {
		if h, p := HTTPSOwner(name); h != name || p != 443 {
			t.Errorf("HTTPSOwner(%s) = %s, %d: want it as it is", name, h, p)
		}
	}
}
