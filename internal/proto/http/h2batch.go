package http

import (
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"
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
//
// Closed, it lets go of the connection (detach): Go 1.26's net/http keeps
// every HTTP/2 client connection reachable after Close (about 20 KB of
// its own, in a test of net/http alone), and what it kept of v6lab's
// (the TLS connection, its buffers as large as the largest record read,
// the socket) no longer is.
type batchConn struct {
	inner   atomic.Pointer[net.Conn]
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
		return b.conn().Write(p)
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) >= maxHeld {
		b.flushLocked()
	}
	return len(p), nil
}

func newBatchConn(c net.Conn) *batchConn {
	b := &batchConn{}
	b.inner.Store(&c)
	return b
}

func (b *batchConn) conn() net.Conn { return *b.inner.Load() }

// detach lets go of the connection, closed (net.ErrClosed from then on).
func (b *batchConn) detach() {
	c := b.conn()
	var gone net.Conn = closedConn{local: c.LocalAddr(), remote: c.RemoteAddr()}
	b.inner.Store(&gone)
	b.mu.Lock()
	b.buf = nil
	b.mu.Unlock()
}

func (b *batchConn) Read(p []byte) (int, error)         { return b.conn().Read(p) }
func (b *batchConn) Close() error                       { return b.conn().Close() }
func (b *batchConn) LocalAddr() net.Addr                { return b.conn().LocalAddr() }
func (b *batchConn) RemoteAddr() net.Addr               { return b.conn().RemoteAddr() }
func (b *batchConn) SetDeadline(t time.Time) error      { return b.conn().SetDeadline(t) }
func (b *batchConn) SetReadDeadline(t time.Time) error  { return b.conn().SetReadDeadline(t) }
func (b *batchConn) SetWriteDeadline(t time.Time) error { return b.conn().SetWriteDeadline(t) }

// ConnectionState is the TLS connection's state (zero in the clear).
func (b *batchConn) ConnectionState() tls.ConnectionState {
	if tc, ok := b.conn().(*tls.Conn); ok {
		return tc.ConnectionState()
	}
	return tls.ConnectionState{}
}

// closedConn is a detached connection.
type closedConn struct{ local, remote net.Addr }

func (closedConn) Read([]byte) (int, error)         { return 0, net.ErrClosed }
func (closedConn) Write([]byte) (int, error)        { return 0, net.ErrClosed }
func (closedConn) Close() error                     { return nil }
func (c closedConn) LocalAddr() net.Addr            { return c.local }
func (c closedConn) RemoteAddr() net.Addr           { return c.remote }
func (closedConn) SetDeadline(time.Time) error      { return nil }
func (closedConn) SetReadDeadline(time.Time) error  { return nil }
func (closedConn) SetWriteDeadline(time.Time) error { return nil }

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
	_, err := b.conn().Write(b.buf)
	b.buf = b.buf[:0]
	if err != nil {
		b.err = err // the next write says so; the reads fail as well
	}
}
