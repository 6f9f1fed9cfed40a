package converse

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"v6lab/internal/gen/load"
	"v6lab/internal/sock/evloop"
	"v6lab/internal/sock/path"
	"v6lab/internal/testutil/dnstest"
)

// lossyServer answers www.test's A with 127.0.0.1 over UDP after
// dropping the first drop queries (every one when drop is negative); it
// counts the queries.
func lossyServer(t *testing.T, drop int64) (netip.AddrPort, *atomic.Int64) {
	return dnstest.Lossy(t, drop, netip.MustParseAddr("127.0.0.1"))
}

// run is exchange with a resolver of server and stub.
func run(t *testing.T, server netip.AddrPort, stub path.Stub, host string, port uint16, timeout time.Duration) (*load.Trace, evloop.Result) {
	t.Helper()
	tr, _, r := exchangeWith(t, &path.Resolver{Servers: []netip.AddrPort{server}, Stub: stub}, host, port, timeout)
	return tr, r
}

// TestTheLoopsLookupSaysItsQueries: a lookup on the loop follows its
// resolver's Stub (a lost query sent again after its timeout, not
// path.FirstRetry's second) and the sample says how many queries went
// (dns_queries): 2 after one was lost, 2 for a truncated answer asked
// again over TCP, 1 for an answered query, none for a literal. A Stub
// whose attempts are spent fails the lookup saying so, with the queries
// counted.
func TestTheLoopsLookupSaysItsQueries(t *testing.T) {
	port := greeter(t)
	lossy, got := lossyServer(t, 1)
	stub := path.Stub{Timeout: 50 * time.Millisecond, Attempts: 3}
	tr, r := run(t, lossy, stub, "www.test", port, 900*time.Millisecond)
	if r.Err != nil || got.Load() != 2 || r.Resent != 1 || tr.S.Metrics[load.MetricQueries] != 2 {
		t.Fatalf("one query lost: %s: %v; server got %d, resent %d, dns_queries %v", r.Phase, r.Err, got.Load(), r.Resent, tr.S.Metrics)
	}
	for _, c := range []struct {
		name   string
		server netip.AddrPort
		host   string
		want   float64
	}{{"answered", nameServer(t, false), "www.test", 1}, {"truncated", nameServer(t, true), "www.test", 2}, {"literal", nameServer(t, false), "127.0.0.1", 0}} {
		port = greeter(t)
		tr, r = run(t, c.server, stub, c.host, port, 2*time.Second)
		if q, ok := tr.S.Metrics[load.MetricQueries]; r.Err != nil || q != c.want || ok != (c.want > 0) {
			t.Errorf("%s: %s: %v; dns_queries %v, want %v", c.name, r.Phase, r.Err, tr.S.Metrics, c.want)
		}
	}
	silent, got := lossyServer(t, -1)
	tr, r = run(t, silent, path.Stub{Timeout: 30 * time.Millisecond, Attempts: 2}, "www.test", port, 2*time.Second)
	smp := tr.Fail(context.Background(), r.Phase, r.Err)
	if r.Phase != "resolve" || got.Load() != 2 || smp.Metrics[load.MetricQueries] != 2 ||
		!strings.Contains(smp.Err, "www.test A via "+silent.String()+": no answer to 2 queries") || !strings.Contains(smp.Err, "attempts:2") {
		t.Errorf("attempts spent: %s; server got %d; dns_queries %v", smp.Err, got.Load(), smp.Metrics)
	}
}
