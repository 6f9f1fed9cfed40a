package load

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"v6lab/internal/sock/path"
)

// TestLookupWithoutQueryHasNoTime: a name given its address (--resolve)
// or a literal sends no query: the transaction's time starts after it and
// its resolve_ns is 0, not the client's own moments before it (a
// goroutine that waited to run on a loaded machine booked them as the
// lookup's).
func TestLookupWithoutQueryHasNoTime(t *testing.T) {
	res := &path.Resolver{Hosts: map[string][]netip.Addr{"www.v6lab.test": {netip.MustParseAddr("192.0.2.1")}}}
	for _, host := range []string{"www.v6lab.test", "192.0.2.1"} {
		tr := Begin("http", path.IPv4)
		time.Sleep(20 * time.Millisecond) // the client's own delay before its lookup
		ip, err := tr.Lookup(context.Background(), res, host, path.IPv4)
		if err != nil || ip != netip.MustParseAddr("192.0.2.1") {
			t.Fatalf("%s: %v %v", host, ip, err)
		}
		tr.Mark(&tr.S.ResolveNS)
		if tr.S.ResolveNS != 0 {
			t.Errorf("%s: resolve_ns %v, want 0 (no query was sent)", host, time.Duration(tr.S.ResolveNS))
		}
		if since := time.Duration(tr.Since()); since >= 20*time.Millisecond {
			t.Errorf("%s: the transaction's time includes the %v before its lookup", host, since)
		}
	}
}
