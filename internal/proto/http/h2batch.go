package http

import (
	"crypto/tls"
	"net"
	"sync"
)

// batchConn is an HTTP/2 connection as Go's client writes it (over TLS,
// or in the clear), whose writes of a transaction go in batches: Go's
// HTTP/2 client writes each request's HEADERS frame, and each
// WINDOW_UPDATE, in a write of its own (and over TLS a record of its
// own), where h2load sends a page's object requests in one. From the
// page's first reply byte on (hold), the writes are kept; once the
// objects' requests are all written (wroteHeaders, await of them) they
// go in one write, and the WINDOW_UPDATEs of the objects' replies go at
// the transaction's end (release). Nothing the server waits for is held:
// the requests go as soon as the last of them is written, a request
// written later (waiting for a stream the server allows later) goes as it
// is written, and a request that fails flushes the batch.
//
// It is not a *tls.Conn: net/http then speaks HTTP/2 on it by prior
// knowledge (the TLS handshake, with ALPN h2, is v6lab's, done before),
// and ConnectionState gives the replies their TLS state.
type batchConn struct {
	net.Conn
	mu      sync.Mutex
	holding bool
	await   int
	buf     []byte
	err     error
}

// maxHeld bounds the bytes held: a long reply's WINDOW_UPDATEs (13 bytes
// per 4 KiB read) go before it has read 2 MiB of the 4 MiB window Go's
// client gives each stream, so a reply never waits for its held window.
const maxHeld = 8 << 10

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	if !b.holding {
		return b.Conn.Write(p)
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) >= maxHeld {
		b.flushLocked()
	}
	return len(p), nil
}

// ConnectionState is the TLS connection's state (zero in the clear).
func (b *batchConn) ConnectionState() tls.ConnectionState {
	if tc, ok := b.Conn.(*tls.Conn); ok {
		return tc.ConnectionState()
	}
	return tls.ConnectionState{}
}

// hold keeps the connection's writes until await requests' headers are
// written (wroteHeaders), or release.
func (b *batchConn) hold(await int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.holding, b.await = true, await
	b.mu.Unlock()
}

// wroteHeaders counts a request written: the last one awaited sends the
// batch, and so does each one written after it.
func (b *batchConn) wroteHeaders() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.await > 0 {
		b.await--
	}
	if b.await == 0 {
		b.flushLocked()
	}
}

// release sends what is kept and ends the holding.
func (b *batchConn) release() {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.holding, b.await = false, 0
	b.flushLocked()
	b.mu.Unlock()
}

func (b *batchConn) flushLocked() {
	if len(b.buf) == 0 || b.err != nil {
		return
	}
	_, err := b.Conn.Write(b.buf)
	b.buf = b.buf[:0]
	if err != nil {
		b.err = err // the next write says so; the reads fail as well
	}
}
