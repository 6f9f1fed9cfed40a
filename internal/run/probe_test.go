package run

import (
	"net/netip"
	"testing"

	"v6lab/internal/proto"
	"v6lab/internal/sock/path"
)

// TestDNSSourceSaysWhatHappened: a URL that names a host whose addresses
// --resolve gave is not an IP literal (trial4: "none (IP literal)" was
// recorded for https://localhost:18443/ given with --resolve).
func TestDNSSourceSaysWhatHappened(t *testing.T) {
	dns := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:53")}
	given := map[string][]netip.Addr{"localhost": {netip.MustParseAddr("127.0.0.1")}}
	for _, tc := range []struct {
		ep   proto.Endpoint
		flag bool
		want string
	}{
		{proto.Endpoint{Host: "localhost", Hosts: given}, false, "none (--resolve gave localhost's addresses)"},
		{proto.Endpoint{Host: "LocalHost", Hosts: given}, false, "none (--resolve gave LocalHost's addresses)"},
		{proto.Endpoint{Host: "127.0.0.1"}, false, "none (IP literal)"},
		{proto.Endpoint{Host: "::1"}, false, "none (IP literal)"},
		{proto.Endpoint{Host: "www.example.test", DNS: dns}, true, "--dns-server"},
		{proto.Endpoint{Host: "www.example.test", DNS: dns}, false, "/etc/resolv.conf"},
		{proto.Endpoint{Host: "www.example.test", DNS: dns, DNSStub: path.GlibcStub}, false, "/etc/resolv.conf (options timeout:5s attempts:2)"},
	} {
		if got := (Probe{DNSFlag: tc.flag}).dnsSource(tc.ep); got != tc.want {
			t.Errorf("%s (hosts %v): dns_source %q, want %q", tc.ep.Host, tc.ep.Hosts, got, tc.want)
		}
	}
}
