// Package scripted serves one scripted TCP connection on 127.0.0.1, for
// tests that play a broken or hostile server to a protocol client.
package scripted

import (
	"bufio"
	"net"
	"testing"
)

// Serve accepts one connection and runs script on it (the connection and
// a reader of what the client sends); it returns the port. The listener
// and the connection close when the script returns or the test ends.
func Serve(t *testing.T, script func(c net.Conn, in *bufio.Reader)) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		script(c, bufio.NewReader(c))
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
