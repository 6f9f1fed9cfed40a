// Package guard bounds what a slow or silent client can hold of an
// embedded server: every connection accepted through Listener gets an idle
// timeout (no byte for Idle), a command timeout (a line must end within
// Line of its first byte, so one byte a minute never keeps a connection
// open), and a write timeout. It imports nothing of v6lab.
package guard

import (
	"bytes"
	"net"
	"sync"
	"time"
)

// Limits are the timeouts of one server's connections.
type Limits struct {
	// Idle: a connection that sends nothing for this long is closed.
	Idle time.Duration
	// Line: a command line must be complete (its newline read) this long
	// after its first byte arrived.
	Line time.Duration
	// Write: a write that cannot finish in this long fails (a client that
	// never reads).
	Write time.Duration
}

// Listener wraps ln so every connection it accepts keeps to l.
func Listener(ln net.Listener, l Limits) net.Listener { return listener{ln, l} }

type listener struct {
	net.Listener
	l Limits
}

func (ln listener) Accept() (net.Conn, error) {
	c, err := ln.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, l: ln.l}, nil
}

// conn applies the limits on every read and write; deadlines the server
// sets itself are kept and the earliest wins.
type conn struct {
	net.Conn
	l         Limits
	mu        sync.Mutex
	readDL    time.Time // the server's own read deadline
	writeDL   time.Time
	lineStart time.Time // zero: no command line in progress
	lastByte  time.Time
}

// readDeadline is the earliest of the idle, line and server deadlines.
func (c *conn) readDeadline(now time.Time) time.Time {
	dl := now.Add(c.l.Idle)
	if !c.lastByte.IsZero() {
		dl = c.lastByte.Add(c.l.Idle)
	}
	if !c.lineStart.IsZero() {
		dl = earlier(dl, c.lineStart.Add(c.l.Line))
	}
	if !c.readDL.IsZero() {
		dl = earlier(dl, c.readDL)
	}
	return dl
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (c *conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	now := time.Now()
	if c.lastByte.IsZero() {
		c.lastByte = now
	}
	err := c.Conn.SetReadDeadline(c.readDeadline(now))
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		now = time.Now()
		c.lastByte = now
		switch nl := bytes.LastIndexByte(p[:n], '\n'); {
		case nl == n-1:
			c.lineStart = time.Time{}
		case nl >= 0 || c.lineStart.IsZero():
			c.lineStart = now
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	dl := time.Now().Add(c.l.Write)
	if !c.writeDL.IsZero() {
		dl = earlier(dl, c.writeDL)
	}
	err := c.Conn.SetWriteDeadline(dl)
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// SetReadDeadline keeps the server's deadline, and applies at once the
// earliest deadline (so a server that wakes a blocked read still can).
func (c *conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readDL = t
	return c.Conn.SetReadDeadline(c.readDeadline(time.Now()))
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.writeDL = t
	c.mu.Unlock()
	if t.IsZero() {
		return nil // applied with the write limit at the next write
	}
	return c.Conn.SetWriteDeadline(t)
}

func (c *conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}
