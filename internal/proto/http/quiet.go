package http

import (
	"io"
	"log"
)

// quietLog drops the server's per-connection errors: under thousands of
// users, reset connections are expected and the client records them.
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
