package proto

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"v6lab/internal/gen/load"
	"v6lab/internal/result"
)

// Bulk adds a file transfer's size and rate to each completed sample of pr
// (docs/metrics.md): a file cell's probe.
func Bulk(pr load.Probe) load.Probe { return bulk{pr} }

// bulk counts the body's length where the probe measured one (an HTTP
// reply's BytesIn has its headers too), else the bytes received.
type bulk struct{ load.Probe }

func (b bulk) Do(ctx context.Context, user int) result.Sample {
	s := b.Probe.Do(ctx, user)
	if s.OK() && s.TotalNS > 0 {
		secs := float64(s.TotalNS) / 1e9
		if s.Metrics == nil {
			s.Metrics = map[string]float64{}
		}
		size, ok := s.Metrics["body_bytes"]
		if !ok {
			size = float64(s.BytesIn)
		}
		delete(s.Metrics, "body_bytes")
		s.Metrics["file_bytes"] = size
		s.Metrics["mbytes_per_s"] = size / 1e6 / secs
		s.Metrics["throughput_mbps"] = size * 8 / 1e6 / secs
	}
	return s
}

// Record passes on what the wrapped probe records (Recorder).
func (b bulk) Record() map[string]string {
	if r, ok := b.Probe.(Recorder); ok {
		return r.Record()
	}
	return nil
}

// Recorder is a probe that says how it runs, for the result's record of
// its cell group (params in the header's spec): http, its engine.
type Recorder interface {
	Record() map[string]string
}

// Close closes the wrapped probe when it holds resources.
func (b bulk) Close() error {
	if c, ok := b.Probe.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// FileResource is the resource of a cell's file on an embedded or lab
// server, below dir ("/files/" for HTTP, "/" for FTP).
func FileResource(dir, file string) string {
	return dir + strings.TrimPrefix(file, "/")
}

// URLOf is the URL of ep's resource.
func URLOf(ep Endpoint, resource string) *url.URL {
	host := ep.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return &url.URL{Scheme: Or(ep.Scheme, "http"), Host: fmt.Sprintf("%s:%d", host, ep.Port), Path: resource}
}

// Streams forwards the wrapped probe's workers a user (load.Multiplexer).
func (b bulk) Streams() int {
	if m, ok := b.Probe.(load.Multiplexer); ok {
		return m.Streams()
	}
	return 1
}

// Warm forwards to the wrapped probe (load.Warmer).
func (b bulk) Warm(user int) {
	if w, ok := b.Probe.(load.Warmer); ok {
		w.Warm(user)
	}
}
