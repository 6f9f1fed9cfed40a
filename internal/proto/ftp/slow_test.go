package ftp

import (
	"context"
	"net/netip"
	"testing"

	"v6lab/internal/proto/guard/guardtest"
)

// TestSlowAndSilentClientsAreCutOff: a client trickling a command a byte
// at a time, or saying nothing, does not hold a connection of the
// embedded server past its limits (slowloris).
func TestSlowAndSilentClientsAreCutOff(t *testing.T) {
	guardtest.Run(t, &Limits, func() (string, func(), error) {
		s, err := Listen(context.Background(), []netip.Addr{netip.MustParseAddr("127.0.0.1")}, 0)
		if err != nil {
			return "", nil, err
		}
		return s.Addrs()[0].String(), s.Close, nil
	})
}
