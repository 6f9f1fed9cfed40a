package smtp

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"v6lab/internal/result"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/prototest"
)

// TestTLSPinOfANamedServer: a cell naming a server (where: hosts) with
// tls_pin upgrades with STARTTLS and accepts exactly that certificate, as
// v6lab serve smtp printed it; another pin fails the transaction; a pin
// without starttls is refused by Check.
func TestTLSPinOfANamedServer(t *testing.T) {
	s, err := Listen(context.Background(), []netip.Addr{path.IPv4.Loopback(), path.IPv6.Loopback()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Each path pinned to its family: the address literal of each.
	send := func(pin string, p path.Path) string {
		o := &Options{StartTLS: true}
		o.URL, o.TLSPin = fmt.Sprintf("smtp://%s", netip.AddrPortFrom(p.Loopback(), uint16(s.Port))), pin
		smp := prototest.Once(t, o, result.Hosts, p)
		if smp.OK() {
			if got := path.OfAddr(netip.MustParseAddrPort(smp.Remote).Addr()); got != p {
				return fmt.Sprintf("sent over %s", got)
			}
			return ""
		}
		return smp.Err
	}
	for _, p := range []path.Path{path.IPv4, path.IPv6} {
		if e := send(strings.ToUpper(s.CertSHA256()), p); e != "" {
			t.Errorf("%s: the served certificate's pin: %s", p, e)
		}
		if e := send(strings.Repeat("ab", 32), p); !strings.Contains(e, "not the one pinned") {
			t.Errorf("%s: another pin: %q", p, e)
		}
	}
	if s.Accepted.Load() != 2 {
		t.Errorf("%d messages accepted, want 2 (the pinned ones)", s.Accepted.Load())
	}
	o := &Options{}
	o.URL, o.TLSPin = "smtp://127.0.0.1:25", s.CertSHA256()
	if err := o.Check(result.Hosts, func(string) bool { return false }); err == nil || !strings.Contains(err.Error(), "give starttls too") {
		t.Errorf("a pin without starttls: %v", err)
	}
}
