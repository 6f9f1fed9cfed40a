package imap

import (
	"context"
	"net/netip"
	"testing"

	"v6lab/internal/proto/guard"
	"v6lab/internal/proto/guard/guardtest"
)

// TestSlowAndSilentClientsAreCutOff: a client trickling a command a byte
// at a time, or saying nothing, does not hold a connection of the
// embedded server past its limits (slowloris).
func TestSlowAndSilentClientsAreCutOff(t *testing.T) {
	defer func(l guard.Limits) { Limits = l }(Limits)
	Limits = guard.Limits{Idle: guardtest.Idle, Line: guardtest.Line, Write: Limits.Write}
	s, err := Listen(context.Background(), []netip.Addr{netip.MustParseAddr("127.0.0.1")}, 0, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := s.Addrs()[0].String()
	t.Run("slow", func(t *testing.T) { guardtest.Slow(t, addr) })
	t.Run("silent", func(t *testing.T) { guardtest.Silent(t, addr) })
}
