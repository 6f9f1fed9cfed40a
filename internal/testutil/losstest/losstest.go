// Package losstest drops packets on a test's loopback, in a network
// namespace of its own (testutil.InOwnNetns), for tests of what loss does
// to a connection. It is apart from testutil, which lab/bpf's own tests
// import.
package losstest

import (
	"testing"

	"github.com/vishvananda/netlink"

	"v6lab/internal/lab/bpf"
)

// Arriving drops percent % of the packets arriving on the current
// network namespace's loopback (at ingress, as the lab routers' loss is
// to the hosts: a drop at egress is a local one, which TCP sends again in
// order), until the test ends.
func Arriving(t *testing.T, percent float64) {
	t.Helper()
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	loss, err := bpf.NewLoss(percent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { loss.Close() })
	if err := loss.Attach(lo.Attrs().Index, false, bpf.TCX); err != nil {
		t.Fatal(err)
	}
}
