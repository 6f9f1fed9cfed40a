package http

import (
	"v6lab/internal/gen/load"
	"v6lab/internal/sock/path"
)

func newTrace() *load.Trace { return load.Begin("http", path.IPv4) }
