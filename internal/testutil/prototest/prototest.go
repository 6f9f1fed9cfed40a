// Package prototest runs one transaction of a protocol as a cell would,
// for the tests of protocol packages.
package prototest

import (
	"context"
	"testing"
	"time"

	"v6lab/internal/proto"
	"v6lab/internal/result"
	"v6lab/internal/sock/path"
)

// Once checks o as a cell's options (where: the experiment's), finds the
// server it names (Target) and runs one transaction over p (Do).
func Once(tb testing.TB, o proto.Options, where result.Where, p path.Path) result.Sample {
	tb.Helper()
	if err := o.Check(where, func(string) bool { return false }); err != nil {
		tb.Fatal(err)
	}
	ep, err := o.Target(p)
	if err != nil {
		tb.Fatal(err)
	}
	return Do(tb, o, ep, p)
}

// Do makes the probe of o over p to the server at ep and runs one
// transaction of user 0, bounded by 10 s.
func Do(tb testing.TB, o proto.Options, ep proto.Endpoint, p path.Path) result.Sample {
	tb.Helper()
	probe, err := o.Probe(ep, p)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return probe.Do(ctx, 0)
}
