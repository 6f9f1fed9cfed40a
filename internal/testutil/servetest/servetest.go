// Package servetest answers a test's connections: the accept loop that
// many packages' tests need, in one place. For tests only; it imports
// nothing of v6lab.
package servetest

import (
	"net"
	"testing"
)

// Each accepts on ln until the test ends (when ln is closed) and serves
// every connection with handle on a goroutine of its own, closing the
// connection when handle returns.
func Each(tb testing.TB, ln net.Listener, handle func(net.Conn)) {
	tb.Helper()
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
}
