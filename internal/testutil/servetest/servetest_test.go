package servetest

import (
	"io"
	"net"
	"testing"
)

// TestEachServesConnectionsAtOnceAndClosesThem: two clients are served
// together (the first is still open when the second is answered), each
// connection is closed after its handler, and the listener at the end.
func TestEachServesConnectionsAtOnceAndClosesThem(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	t.Run("serve", func(t *testing.T) {
		Each(t, ln, func(c net.Conn) {
			var b [1]byte
			c.Read(b[:])
			if b[0] == 'w' {
				<-release
			}
			c.Write(b[:])
		})
		dial := func(b byte) net.Conn {
			c, err := net.Dial("tcp4", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte{b})
			return c
		}
		waiting := dial('w')
		defer waiting.Close()
		quick := dial('q')
		defer quick.Close()
		if got, err := io.ReadAll(quick); err != nil || string(got) != "q" {
			t.Errorf("second client read %q, %v: want its byte, then the close", got, err)
		}
		close(release)
		if got, _ := io.ReadAll(waiting); string(got) != "w" {
			t.Errorf("first client read %q", got)
		}
	})
	if _, err := net.Dial("tcp4", ln.Addr().String()); err == nil {
		t.Error("the listener is still open after the test")
	}
}
