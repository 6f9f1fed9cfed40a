package http

import (
	"v6lab/internal/load"
	"v6lab/internal/path"
)

func newTrace() *load.Trace { return load.Begin("http", path.IPv4) }
