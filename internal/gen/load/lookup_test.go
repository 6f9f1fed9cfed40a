package load

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/dnstest"
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

// TestLookupSaysItsQueries: a lookup whose first query was lost records
// dns_queries 2 (the query sent again, as the resolver's Stub says); a
// lookup that sent none records nothing.
func TestLookupSaysItsQueries(t *testing.T) {
	server, n := dnstest.Lossy(t, 1, netip.MustParseAddr("192.0.2.1")) // the first query is lost
	res := &path.Resolver{Servers: []netip.AddrPort{server}, Stub: path.Stub{Timeout: 50 * time.Millisecond, Attempts: 2}}
	tr := Begin("http", path.IPv4)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := tr.Lookup(ctx, res, "www.v6lab.test", path.IPv4); err != nil || tr.S.Metrics[MetricQueries] != 2 || n.Load() != 2 {
		t.Fatalf("%v; dns_queries %v, server got %d", err, tr.S.Metrics, n.Load())
	}
	tr = Begin("http", path.IPv4)
	if _, err := tr.Lookup(ctx, res, "192.0.2.1", path.IPv4); err != nil || tr.S.Metrics != nil {
		t.Errorf("a literal: %v; metrics %v", err, tr.S.Metrics)
	}
}
