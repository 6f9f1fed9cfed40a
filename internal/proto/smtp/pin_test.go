package smtp

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"v6lab/internal/path"
	"v6lab/internal/proto"
	"v6lab/internal/proto/prototest"
)

// TestTLSPinOfANamedServer: a cell naming a server (where: hosts) with
// tls_pin upgrades with STARTTLS and accepts exactly that certificate, as
// v6lab serve smtp printed it; another pin fails the transaction; a pin
// without starttls is refused by Check.
func TestTLSPinOfANamedServer(t *testing.T) {
	s, err := Listen(context.Background(), []netip.Addr{path.IPv4.Loopback()}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	send := func(pin string) string {
		o := proto.Options{URL: fmt.Sprintf("smtp://127.0.0.1:%d", s.Port), StartTLS: true, TLSPin: pin}
		smp := prototest.Once(t, Protocol{}, o, "hosts", path.IPv4)
		if smp.OK() {
			return ""
		}
		return smp.Err
	}
	if e := send(strings.ToUpper(s.CertSHA256())); e != "" {
		t.Errorf("the served certificate's pin: %s", e)
	}
	if e := send(strings.Repeat("ab", 32)); !strings.Contains(e, "not the one pinned") {
		t.Errorf("another pin: %q", e)
	}
	if s.Accepted.Load() != 1 {
		t.Errorf("%d messages accepted, want 1 (the pinned one)", s.Accepted.Load())
	}
	o := proto.Options{URL: "smtp://127.0.0.1:25", TLSPin: s.CertSHA256()}
	if err := (Protocol{}).Check(&o, "hosts", nil); err == nil || !strings.Contains(err.Error(), "give starttls too") {
		t.Errorf("a pin without starttls: %v", err)
	}
}
