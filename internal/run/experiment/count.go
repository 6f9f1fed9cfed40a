package experiment

import "sync/atomic"

// counter counts samples, safe for the concurrent emit callbacks.
type counter struct{ n atomic.Int64 }

func (c *counter) add()     { c.n.Add(1) }
func (c *counter) get() int { return int(c.n.Load()) }
