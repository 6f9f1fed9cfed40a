package path

import (
	"fmt"
	"net/netip"
)

// ParseListen reads --listen values ADDR:PORT ([IPV6]:PORT), which must
// share one port (0: one chosen for all).
func ParseListen(vals []string) ([]netip.Addr, int, error) {
	var addrs []netip.Addr
	port := -1
	for _, v := range vals {
		ap, err := netip.ParseAddrPort(v)
		if err != nil {
			return nil, 0, fmt.Errorf("--listen: %q is not ADDR:PORT (IPv6 as [ADDR]:PORT)", v)
		}
		if port >= 0 && int(ap.Port()) != port {
			return nil, 0, fmt.Errorf("--listen: every address must use the same port (%d and %d)", port, ap.Port())
		}
		port = int(ap.Port())
		addrs = append(addrs, ap.Addr())
	}
	return addrs, port, nil
}
